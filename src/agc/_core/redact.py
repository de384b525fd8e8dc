"""The one secret detector: finds credentials in text and JSON values and replaces them.

Every feature that writes what an agent saw or did (resume snapshots, the turn ledger,
later features) passes its strings through :func:`redact_text` or :func:`redact_value`;
nothing else in agc decides what a secret is.

Where the rules come from
    The token formats follow gitleaks' rule catalogue (``config/gitleaks.toml`` of
    github.com/gitleaks/gitleaks, MIT): the most actively maintained public catalogue,
    one rule per provider token with its documented prefix, alphabet and length, and a
    list of keywords that must occur before the rule's pattern is tried. The rules here
    are our own code, re-expressed for Python's :mod:`re` and for what agc redacts
    (JSON-escaped text, tokens wrapped across lines, secrets glued to CJK text), with
    formats gitleaks lacks taken from the providers' documentation (OpenRouter, Groq,
    Docker, Azure storage keys, AWS secret keys by name). Each rule names its source in
    :data:`RULE_SOURCES`; ``docs/secrets.md`` lists them all.

    detect-secrets (Yelp) was considered as a dependency and not taken: its plugins
    report a secret's *value* per line, not its position, so a PEM key's body (on other
    lines than its ``BEGIN`` line) cannot be found; it lacks half of the formats agc
    must catch (Anthropic, Google, Hugging Face, Groq, OpenRouter, DigitalOcean,
    Shopify, Databricks, Docker, credentials in database URLs); and its last release
    is from 2024.

How a text is scanned
    1. Pre-filter: every rule lists lower-case keywords (a token's prefix, a variable
       name's word). One Aho-Corasick pass (the ``ahocorasick-rs`` library) finds every
       keyword in the lower-cased text at once; a rule runs only when one of its
       keywords occurs, and a token rule only tries the places where its prefix does.
       Text shorter than 8 characters, or with no keyword at all, is returned as is.
       Text with line breaks gets a second pass with its breaks taken out, so that a
       prefix cut by a break (``sk-pr`` / ``oj-…``) is found too (:func:`_cut_keywords`).
    2. Each rule yields spans; overlapping spans are merged (the earlier rule in
       :data:`SECRET_KINDS` names the merged span) and each is replaced by
       ``[REDACTED:<kind>]``. Context (``Bearer ``, ``PASSWORD=``, a URL's user name
       and host) is kept; only the secret itself is replaced.
    3. The result is scanned again until nothing is found (at most 4 passes), so
       redaction is idempotent and never leaves a secret that a replacement completed.

Placements handled: a secret glued to other text (a token's start may follow CJK
text, punctuation or a JSON escape such as ``\\n`` or ``\\u00e9``; right after an ASCII
letter or digit, as inside a base64 blob, only in its provider's documented format and
when random base64 holds that format with a chance of 2^-28 per character or less, see
:data:`_DOCUMENTED`), JSON-escaped any number of times (characters written as
``\\uXXXX`` escapes too: ``\\u0073k-proj-…``), cut by line breaks (raw or JSON-escaped,
anywhere, the prefix too, as a terminal wraps a token), in a URL, a header, a ``.env``
line, a command-line flag, and as the value of a JSON key that names a secret
(``"password"``, ``"SecretAccessKey"``) in :func:`redact_value`. Not found: a token
glued after a letter or digit in a weaker format, the last few characters of a token of
no documented length (a JWT signed with RSA) on the next line, a password of only
letters and spaces, a password or named value wrapped across lines.

A PEM ``BEGIN … PRIVATE KEY`` header is redacted only with the key material after it
(32 or more base64 characters, up to its ``END`` line, or to where the material stops
when it was cut off), so a header quoted in source code is left alone.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import json
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import ahocorasick_rs

__all__ = [
    "DEFAULT_MARKER",
    "RULE_SOURCES",
    "SECRET_KINDS",
    "RedactionStats",
    "contains_secret",
    "credential_variable",
    "distinct_names",
    "redact_text",
    "redact_value",
]

DEFAULT_MARKER: Final = "[REDACTED:{kind}]"
"""What replaces a secret; ``{kind}`` is the rule's kind (``github-token`` …)."""

_MIN_CHARS: Final = 8
_MAX_PASSES: Final = 4
_ALNUM: Final = frozenset(string.ascii_letters + string.digits)
_HEX: Final = frozenset(string.hexdigits)
# A line break inside a token: raw, or JSON-escaped once or more (\n, \\n, \r\n …).
# Written so that the regex engine skips to the next "\\", "\r" or "\n" at once.
# A run of backslashes is tried once, from its first (a match from inside the run can
# always start at its first instead): a megabyte of backslashes stays linear.
_BREAK: Final = re.compile(r"[\\\r\n](?:(?<=\\)(?<!\\\\)\\*(?:r\\+)?n|(?<=\r)\n|(?<=\n))")
# The characters a token is made of, as far as joining it across line breaks goes.
_TOKEN_RUN: Final = re.compile(r"[A-Za-z0-9_.~+/=:-]{0,512}")
_MAX_WRAPS: Final = 4
_MIN_WRAP_WIDTH: Final = 20
_MARKER_RE: Final = re.compile(r"\[(?:REDACTED:[a-z0-9-]+|secret)\]")

Span = tuple[int, int, str]


# -- shared checks ---------------------------------------------------------------------


def _after_escape(text: str, index: int) -> bool:
    """True if ``text[:index]`` ends with a JSON escape (``\\n``, ``\\t``, ``\\u00e9`` …)."""
    if index >= 2 and text[index - 2] == "\\" and text[index - 1] in "nrtbf":
        return True
    return (
        index >= 6
        and text[index - 6] == "\\"
        and text[index - 5] == "u"
        and all(c in _HEX for c in text[index - 4 : index])
    )


def _starts_word(text: str, index: int, word: frozenset[str] = _ALNUM) -> bool:
    """A token may start here: not right after a character of ``word`` (ASCII letters
    and digits by default), unless that character ends a JSON escape."""
    return index == 0 or text[index - 1] not in word or _after_escape(text, index)


def _looks_random(value: str) -> bool:
    """Letters and digits, or upper- and lower-case letters: not a plain word."""
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    # Upper case after the first character: "aB3x", "AbCd", not "Whitespace".
    mixed = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    return (has_digit and has_alpha) or mixed


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


# fmt: off
_STOPWORDS: Final = frozenset((
    "true", "false", "null", "none", "nil", "undefined", "yes", "no", "on", "off",
    "required", "optional", "string", "str", "bytes", "int", "integer", "number",
    "boolean", "bool", "object", "any", "secret", "secrets", "password", "passwd",
    "passphrase", "pass", "token", "tokens", "key", "keys", "value", "values", "hidden",
    "redacted", "masked", "empty", "default", "inherit", "env", "environment", "example",
    "sample", "test", "dummy", "placeholder", "changeit", "xxx", "final", "classvar",
))
# fmt: on
_PLACEHOLDER_PREFIX: Final = re.compile(
    r"(?i)(?:your|my|insert|enter|example|sample|dummy|fake|placeholder|replace)[-_ .]"
)
_ENV_NAME_VALUE: Final = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_DOTTED_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_VERSION: Final = re.compile(r"[\^~<>=v]*[0-9]+(?:\.[0-9x*]+)+(?:[-+][0-9A-Za-z.]+)?")
_CAMEL_CASE: Final = re.compile(r"(?:[A-Z][a-z0-9]+){2,}")
_DRIVE_PATH: Final = re.compile(r"[A-Za-z]:[\\/]")


def _is_placeholder(value: str, *, paths: bool = True) -> bool:
    """A reference, a template, a type name or an example, not a credential.
    ``paths``: a value that starts like a path is one (not for a bearer token, whose
    base64 may start with ``/``)."""
    low = value.lower()
    return (
        not low
        or low[0] in "$%<{[@*#&"
        or low[-1] in ">}]"
        or "..." in low
        or "\u2026" in low
        or len(set(low)) <= 2
        or low in _STOPWORDS
        or _PLACEHOLDER_PREFIX.match(value) is not None
        or _ENV_NAME_VALUE.fullmatch(value) is not None
        or (paths and low.startswith(("/", "./", "../", "~/")))
        or low.startswith(("http://", "https://", "file:"))
        or _DRIVE_PATH.match(value) is not None
        or _VERSION.fullmatch(value) is not None
    )


# -- rules -----------------------------------------------------------------------------


Finder = Callable[[str, list[int]], Iterator[Span]]


@dataclass(frozen=True)
class _Rule:
    """One detector: ``find(text, hits)`` yields ``(start, end, kind)`` of each secret.

    It runs only when one of ``keywords`` (lower case) occurs in the lower-cased text;
    ``hits`` are the positions where they occur, in order.
    """

    kind: str
    keywords: tuple[str, ...]
    find: Finder
    source: str


def _scanning(find: Callable[[str], Iterator[Span]]) -> Finder:
    """A finder that scans the whole text itself (its keywords only gate it)."""

    def gated(text: str, hits: list[int]) -> Iterator[Span]:  # noqa: ARG001 - one signature
        return find(text)

    return gated


@dataclass(frozen=True)
class _Documented:
    """A provider's documented token format, beyond a prefix: ``rest`` is the exact
    length and alphabet after the prefix; ``glued`` whether a token of this format is
    found glued right after an ASCII letter or digit (inside a base64 blob): only when
    the format leaves random base64 too little chance to hold it by accident (2^-28
    per character, see :data:`_DOCUMENTED`); ``check`` a checksum the whole token must pass."""

    rest: str
    glued: bool = True
    check: Callable[[str], bool] | None = None
    left: str | None = None
    """A stricter format for a token glued on its left, when ``rest`` is too weak."""


def _token_rule(
    kind: str,
    prefix: str,
    rest: str,
    body: str,
    *,
    keywords: tuple[str, ...],
    source: str,
    fixed: bool = False,
    word: frozenset[str] = _ALNUM,
    anchored: bool = True,
    documented: _Documented | None = None,
) -> _Rule:
    """A token with a documented prefix: ``prefix`` (a regex that starts with the
    literal prefix) then ``rest``; ``body`` is the character class the token is made
    of (to take the rest of a token wrapped across lines); ``fixed`` when it has one
    length. A group named ``s`` in ``rest``, if any, is the part replaced. ``anchored``:
    each keyword is the start of the prefix, so only keyword hits are tried.

    ``documented``: the provider's exact format. A token that starts right after an
    ASCII letter or digit is found only in that format (and only when
    ``documented.glued``); a token followed by letters or digits (glued on the right)
    ends where the format does; a token cut by a line break is joined to that length."""
    start = re.compile(prefix)
    token = re.compile(prefix + rest)
    tail = re.compile(f"{body}+")
    group = "s" if "s" in token.groupindex else 0
    exact = left_exact = None
    check = None
    if documented is not None:
        exact = left_exact = re.compile(f"{prefix}(?:{documented.rest})")
        if documented.left is not None:
            left_exact = re.compile(f"{prefix}(?:{documented.left})")
        check = documented.check
    exact_group = "s" if exact is not None and "s" in exact.groupindex else 0
    glued = documented is not None and documented.glued

    def find(text: str, hits: list[int]) -> Iterator[Span]:
        covered = 0
        candidates = hits
        if not anchored:
            candidates = [m.start() for m in start.finditer(text)]
            candidates += [cut for cut, _ in _across_a_break(text, start, 16)]
            candidates.sort()
        for index in candidates:
            if index < covered:
                continue
            # Right after a token of this rule (two pasted back to back) counts as a start.
            at_start = index == covered or _starts_word(text, index, word)
            if not at_start and not glued:
                continue
            span = _token_span(text, index, token, tail, group, fixed=fixed) if at_start else None
            if exact is not None and left_exact is not None:
                pattern = exact if at_start else left_exact
                whole = _token_span(
                    text, index, pattern, tail, exact_group, fixed=True, longest=True
                )
                if whole is not None and (check is None or check(_joined(text, *whole))):
                    if span is None or (span[0] == whole[0] and whole[1] > span[1]):
                        span = whole
                    elif not at_start:
                        span = None
                elif not at_start:
                    span = None
            if span is None:
                continue
            start_at, end = span
            # A greedy body must not swallow the next token of the same kind.
            again = start.search(text, index + 1, end)
            if again is not None and token.fullmatch(text, index, again.start()):
                end = again.start()
            covered = end
            yield start_at, end, kind

    return _Rule(kind, keywords, find, source)


def _across_a_break(text: str, pattern: re.Pattern[str], reach: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` in ``text`` of each match of ``pattern`` that a line break cuts:
    ``reach`` characters on each side of every break are joined and searched (linear:
    each character is read at most twice per break it is within ``reach`` of)."""
    for line_break in _BREAK.finditer(text):
        cut, resume = line_break.span()
        left = text[max(0, cut - reach) : cut]
        for match in pattern.finditer(left + text[resume : resume + reach]):
            if match.start() < len(left) < match.end():
                yield cut - len(left) + match.start(), resume + match.end() - len(left)


def _joined(text: str, start: int, end: int) -> str:
    """``text[start:end]`` without its line breaks."""
    return _BREAK.sub("", text[start:end])


def _token_span(
    text: str,
    index: int,
    token: re.Pattern[str],
    tail: re.Pattern[str],
    group: str | int,
    *,
    fixed: bool,
    longest: bool = False,
) -> tuple[int, int] | None:
    """Where the token that starts at ``index`` is, wrapped across lines or not.
    ``longest``: when the text is cut by a line break, the longer of the token on its
    first line and the token joined across the break (a documented format with
    alternative lengths)."""
    whole = token.match(text, index)
    if whole is not None:
        start, end = whole.span(group)
        if not fixed:
            end = _swallow_wrapped_tail(text, end, tail)
        if longest:
            joined = _joined_span(text, index, token, group)
            if joined is not None and joined[1] > end:
                return joined
        return start, end
    return _joined_span(text, index, token, group)


def _joined_span(
    text: str, index: int, token: re.Pattern[str], group: str | int
) -> tuple[int, int] | None:
    """The token that starts at ``index`` with the line breaks in it taken out."""
    # Cut by line breaks (anywhere, its prefix too): join the lines and match again.
    pieces: list[str] = []
    starts: list[int] = []  # where each piece starts in text
    offsets: list[int] = []  # and in the joined text
    size = 0
    at = index
    for _ in range(_MAX_WRAPS + 1):
        run = _TOKEN_RUN.match(text, at)
        assert run is not None
        pieces.append(run.group())
        starts.append(at)
        offsets.append(size)
        size += len(run.group())
        line_break = _BREAK.match(text, run.end())
        # A line in the middle of a wrapped token is all token, and as long as a
        # terminal is wide (not a list of words, one a line).
        if line_break is None or (len(pieces) > 1 and len(run.group()) < _MIN_WRAP_WIDTH):
            break
        at = line_break.end()
    if len(pieces) == 1:
        return None
    joined = "".join(pieces)
    again = token.match(joined)
    if again is None or again.end() <= offsets[1] or not _looks_random(again.group()):
        return None
    start, end = again.span(group)

    def back(offset: int, *, closing: bool) -> int:
        piece = bisect.bisect_right(offsets, offset - 1 if closing else offset) - 1
        return starts[piece] + offset - offsets[piece]

    return back(start, closing=False), back(end, closing=True)


def _swallow_wrapped_tail(text: str, end: int, tail: re.Pattern[str]) -> int:
    """A variable-length token that ends at a line break may go on on the next lines:
    take each next line's first run of token characters while it looks random, not a
    word (a line filled by the token goes on to the next one, up to 4 lines)."""
    for _ in range(_MAX_WRAPS):
        line_break = _BREAK.match(text, end)
        if line_break is None:
            return end
        rest = tail.match(text, line_break.end())
        if rest is None or len(rest.group()) < 6 or not _looks_random(rest.group()):
            return end
        after = rest.end()
        if after < len(text) and text[after] not in " \t\r\n\"'`,;)]}>.\\":
            return end
        end = after
    return end


# Tokens: (kind, prefix regex, rest regex, body class, fixed length, keywords, source).
_B62: Final = "[A-Za-z0-9]"
_B64URL: Final = "[A-Za-z0-9_-]"
# fmt: off
_TOKENS: Final[tuple[tuple[str, str, str, str, bool, tuple[str, ...], str], ...]] = (
    ("anthropic-key", "sk-ant-", "[A-Za-z0-9_-]{20,}", _B64URL, False, ("sk-ant-",),
     "gitleaks anthropic-api-key, anthropic-admin-api-key"),
    ("openrouter-key", "sk-or-v[0-9]-", "[A-Za-z0-9]{32,}", _B62, False, ("sk-or-",),
     "OpenRouter API keys: sk-or-v1- + 64 hex"),
    ("openai-key", "sk-(?:proj|svcacct|admin|None)-", "[A-Za-z0-9_-]{20,}", _B64URL, False,
     ("sk-",), "gitleaks openai-api-key (project, service account and admin keys)"),
    ("openai-key", "sk-", "[A-Za-z0-9]{20,}(?![A-Za-z0-9_-])", _B62, False, ("sk-",),
     "gitleaks openai-api-key (legacy sk- + 48; also OpenAI-compatible providers)"),
    ("groq-key", "gsk_", "[A-Za-z0-9]{40,}", _B62, False, ("gsk_",),
     "Groq API keys: gsk_ + 52"),
    ("xai-key", "xai-", "[A-Za-z0-9]{60,}", _B62, False, ("xai-",), "xAI API keys: xai- + 80"),
    ("perplexity-key", "pplx-", "[A-Za-z0-9]{40,}", _B62, False, ("pplx-",),
     "gitleaks perplexity-api-key"),
    ("huggingface-token", "(?:hf_|api_org_)", "[A-Za-z0-9]{34}", _B62, True,
     ("hf_", "api_org_"), "gitleaks huggingface-access-token, -organization-api-token"),
    ("replicate-token", "r8_", "[A-Za-z0-9]{37}", _B62, True, ("r8_",),
     "Replicate API tokens: r8_ + 37"),
    ("langsmith-key", "lsv2_(?:pt|sk)_", "[a-f0-9]{32}_[a-f0-9]{10}", "[a-f0-9_]", True,
     ("lsv2_",), "LangSmith API keys"),
    ("github-token", "gh[pousr]_", "[A-Za-z0-9]{36,255}", _B62, False,
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
     "gitleaks github-pat, github-oauth, github-app-token, github-refresh-token"),
    ("github-token", "github_pat_", "[A-Za-z0-9_]{22,255}", "[A-Za-z0-9_]", False,
     ("github_pat_",), "gitleaks github-fine-grained-pat"),
    ("gitlab-token", "gl(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat|ffct)-",
     "[A-Za-z0-9_.-]{20,}", "[A-Za-z0-9_.-]", False,
     ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glft-", "glimt-", "glagent-",
      "gloas-", "glsoat-", "glffct-"), "gitleaks gitlab-* (13 token types)"),
    ("gitlab-token", "GR1348941", "[A-Za-z0-9_-]{20,}", _B64URL, False, ("gr1348941",),
     "gitleaks gitlab-rrt (runner registration token)"),
    # Lenient on purpose: "xoxb-" and 10 token characters is a Slack token or its
    # placeholder; gitleaks' stricter digit groups would let a malformed real one by.
    ("slack-token", "xox[abposre]-", "[A-Za-z0-9-]{10,}", "[A-Za-z0-9-]", False,
     ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-"),
     "gitleaks slack-bot-token, slack-user-token, slack-legacy-*"),
    ("slack-token", r"xoxe\.xox[bp]-", "[A-Za-z0-9-]{10,}", "[A-Za-z0-9-]", False,
     ("xoxe.",), "gitleaks slack-config-access-token"),
    ("slack-token", "xapp-", "[0-9]-[A-Za-z0-9-]{10,}", "[A-Za-z0-9-]", False, ("xapp-",),
     "gitleaks slack-app-token"),
    ("slack-webhook", r"hooks\.slack\.com/",
     "(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9+/_-]{20,})", "[A-Za-z0-9+/_-]", False,
     ("hooks.slack.com",), "gitleaks slack-webhook-url"),
    ("discord-webhook", r"discord(?:app)?\.com/api/webhooks/",
     "(?P<s>[0-9]{10,20}/[A-Za-z0-9_-]{40,})", "[A-Za-z0-9/_-]", False, ("discord",),
     "Discord webhook URLs"),
    ("stripe-key", "(?:sk|rk)_(?:live|test|prod)_", "[A-Za-z0-9]{10,}", _B62, False,
     ("sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"),
     "gitleaks stripe-access-token"),
    ("stripe-key", "whsec_", "[A-Za-z0-9]{24,}", _B62, False, ("whsec_",),
     "Stripe webhook signing secrets"),
    ("google-api-key", "AIza", "[0-9A-Za-z_-]{35}", _B64URL, True, ("aiza",),
     "gitleaks gcp-api-key"),
    ("google-oauth-token", r"ya29\.", "[0-9A-Za-z_-]{20,}", _B64URL, False, ("ya29.",),
     "Google OAuth 2.0 access tokens"),
    ("google-oauth-token", "GOCSPX-", "[A-Za-z0-9_-]{28}", _B64URL, True, ("gocspx-",),
     "Google OAuth client secrets"),
    ("npm-token", "npm_", "[A-Za-z0-9]{36}", _B62, True, ("npm_",),
     "gitleaks npm-access-token"),
    ("pypi-token", "pypi-AgE", "[A-Za-z0-9_-]{50,}", _B64URL, False, ("pypi-age",),
     "gitleaks pypi-upload-token (pypi.org and test.pypi.org macaroons)"),
    ("twilio-key", "SK", "[0-9a-fA-F]{32}(?![A-Za-z0-9])", "[0-9a-fA-F]", True, ("sk",),
     "gitleaks twilio-api-key"),
    ("sendgrid-key", r"SG\.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", "[A-Za-z0-9_.-]", True,
     ("sg.",), "gitleaks sendgrid-api-token"),
    ("mailgun-key", "key-", "[0-9a-f]{32}(?![A-Za-z0-9])", "[0-9a-f]", True, ("key-",),
     "gitleaks mailgun-private-api-token"),
    ("digitalocean-token", "do[opr]_v1_", "[a-f0-9]{64}", "[a-f0-9]", True,
     ("dop_v1_", "doo_v1_", "dor_v1_"), "gitleaks digitalocean-pat, -access-token, -refresh-token"),
    ("shopify-token", "shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]{32}", "[a-fA-F0-9]", True,
     ("shpat_", "shpca_", "shppa_", "shpss_"), "gitleaks shopify-*"),
    ("databricks-token", "dapi", "[a-f0-9]{32}(?:-[0-9])?", "[a-f0-9-]", True, ("dapi",),
     "gitleaks databricks-api-token"),
    ("docker-token", "dckr_(?:pat|oat)_", "[A-Za-z0-9_-]{27,}", _B64URL, False, ("dckr_",),
     "Docker Hub personal and organization access tokens"),
    ("age-secret-key", "AGE-SECRET-KEY-1", "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
     "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]", True, ("age-secret-key-1",), "gitleaks age-secret-key"),
    ("onepassword-token", "ops_eyJ", "[A-Za-z0-9+/=_-]{100,}", "[A-Za-z0-9+/=_-]", False,
     ("ops_eyj",), "gitleaks 1password-service-account-token"),
    ("mapbox-token", r"sk\.eyJ", r"[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", "[A-Za-z0-9_.-]",
     False, ("sk.eyj",), "Mapbox secret tokens"),
    ("jwt", "eyJ",
     r"[A-Za-z0-9_-]{8,}={0,2}\.eyJ[A-Za-z0-9_-]{8,}={0,2}(?:\.[A-Za-z0-9_-]*={0,2})?",
     "[A-Za-z0-9_.=-]", False, ("eyj",), "gitleaks jwt (RFC 7519 compact form)"),
    ("grafana-token", "glc_", "[A-Za-z0-9+/]{32,}={0,2}", "[A-Za-z0-9+/=]", False, ("glc_",),
     "gitleaks grafana-cloud-api-token"),
    ("grafana-token", "glsa_", "[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}", "[A-Za-z0-9_]", True,
     ("glsa_",), "gitleaks grafana-service-account-token"),
    ("vault-token", r"hv[sb]\.", "[A-Za-z0-9_-]{24,}", _B64URL, False, ("hvs.", "hvb."),
     "gitleaks vault-service-token, vault-batch-token"),
    ("linear-key", "lin_api_", "[A-Za-z0-9]{40}", _B62, True, ("lin_api_",),
     "gitleaks linear-api-key"),
    ("notion-token", "ntn_", "[0-9]{11}[A-Za-z0-9]{35}", _B62, True, ("ntn_",),
     "gitleaks notion-api-token"),
    ("postman-key", "PMAK-", "[a-f0-9]{24}-[a-f0-9]{34}", "[a-f0-9-]", True, ("pmak-",),
     "gitleaks postman-api-token"),
    ("prefect-key", "pnu_", "[A-Za-z0-9]{36}", _B62, True, ("pnu_",),
     "gitleaks prefect-api-token"),
    ("pulumi-token", "pul-", "[a-f0-9]{40}", "[a-f0-9]", True, ("pul-",),
     "gitleaks pulumi-api-token"),
    ("rubygems-key", "rubygems_", "[a-f0-9]{48}", "[a-f0-9]", True, ("rubygems_",),
     "gitleaks rubygems-api-token"),
    ("sentry-token", "sntry[su]_", "[A-Za-z0-9+/=_-]{40,}", "[A-Za-z0-9+/=_-]", False,
     ("sntrys_", "sntryu_"), "gitleaks sentry-org-token, sentry-user-token"),
    ("doppler-token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.", "[A-Za-z0-9]{40,}", _B62, False,
     ("dp.",), "gitleaks doppler-api-token"),
    ("flyio-token", "fo1_", "[A-Za-z0-9_-]{43}", _B64URL, True, ("fo1_",),
     "gitleaks flyio-access-token"),
    ("atlassian-token", "ATATT3", "[A-Za-z0-9_=-]{100,}", "[A-Za-z0-9_=-]", False, ("atatt3",),
     "gitleaks atlassian-api-token"),
    ("brevo-key", "xkeysib-", "[a-f0-9]{64}-[A-Za-z0-9]{16}", "[A-Za-z0-9-]", True,
     ("xkeysib-",), "gitleaks sendinblue-api-token"),
    ("square-token", "sq0(?:atp|csp)-", "[A-Za-z0-9_-]{22,}", _B64URL, False, ("sq0",),
     "gitleaks square-access-token"),
    ("dynatrace-token", r"dt0c01\.", r"[A-Z0-9]{24}\.[A-Z0-9]{64}", "[A-Z0-9.]", True,
     ("dt0c01.",), "gitleaks dynatrace-api-token"),
    ("newrelic-key", "NRAK-", "[A-Z0-9]{27}", "[A-Z0-9]", True, ("nrak-",),
     "gitleaks new-relic-user-api-key"),
    ("planetscale-token", "pscale_(?:tkn|oauth|pw)_", "[A-Za-z0-9_.=-]{32,}",
     "[A-Za-z0-9_.=-]", False, ("pscale_",), "gitleaks planetscale-*"),
    ("openshift-token", "sha256~", "[A-Za-z0-9_-]{43}", _B64URL, True, ("sha256~",),
     "gitleaks openshift-user-token"),
    ("aws-bedrock-key", "ABSK", "[A-Za-z0-9+/]{109,269}={0,2}", "[A-Za-z0-9+/=]", False,
     ("absk",), "gitleaks aws-amazon-bedrock-api-key-long-lived"),
    ("heroku-key", "HRKU-AA", "[A-Za-z0-9_-]{58}", _B64URL, True, ("hrku-",),
     "gitleaks heroku-api-key-v2"),
    ("supabase-token", "sbp_", "[a-f0-9]{40}", "[a-f0-9]", True, ("sbp_",),
     "Supabase personal access tokens"),
    ("netlify-token", "nfp_", "[A-Za-z0-9]{36}", _B62, True, ("nfp_",),
     "Netlify personal access tokens"),
    ("tailscale-key", "tskey-(?:auth|api|client|scim|webhook)-",
     "[A-Za-z0-9]{8,}-[A-Za-z0-9]{16,}", "[A-Za-z0-9-]", False, ("tskey-",),
     "Tailscale API and auth keys"),
    ("airtable-token", r"pat(?=[A-Za-z0-9]{14}\.)", r"[A-Za-z0-9]{14}\.[a-f0-9]{64}",
     "[A-Za-z0-9.]", True, ("pat",), "gitleaks airtable-personnal-access-token"),
    ("figma-token", "figd_", "[A-Za-z0-9_-]{40}", _B64URL, True, ("figd_",),
     "Figma personal access tokens"),
)
# fmt: on


# -- documented formats: glued tokens, tokens cut by line breaks -----------------------

_BASE62: Final = string.digits + string.ascii_uppercase + string.ascii_lowercase


def _crc32_base62(token: str) -> bool:
    """GitHub's and npm's token checksum: after the prefix, 30 random base62 characters
    and the CRC32 of those 30, written as 6 base62 digits (0-9A-Za-z, most significant
    first). Sources: "Behind GitHub's new authentication token formats" (GitHub blog,
    2021-04-05); "Announcing npm's new access token format" (GitHub blog, 2021-09-23)."""
    body = token[token.index("_") + 1 :]
    if len(body) != 36:
        return False
    value = binascii.crc32(body[:30].encode("ascii"))
    digits = []
    for _ in range(6):
        value, digit = divmod(value, 62)
        digits.append(_BASE62[digit])
    return value == 0 and "".join(reversed(digits)) == body[30:]


# A token found glued right after a letter or digit must be one that random base64 (or
# base64url, or hex) holds by accident with a chance of 2^-28 per character or less
# (about once in 256 MiB): its prefix holds a character outside base64 ("SG.", "hvs."),
# or prefix and format together carry 28 bits or more ("glpat-" is 36 bits, "dapi" and
# 32 hex digits 88), or a checksum vouches for it (GitHub, npm). Weaker formats
# ("sk-" and 48 letters or digits: 20 bits; "gsk_", "r8_", "fo1_", "nfp_", "pnu_", "glc_",
# "ABSK" and base64) are found glued on the right only.

# Prefix regex of a token rule -> the provider's documented format after it (exact
# length and alphabet). Fixed-length rules are their own documented format.
# fmt: off
_DOCUMENTED: Final[dict[str, _Documented]] = {
    # gitleaks anthropic-api-key: sk-ant-api03- + 93 + AA
    "sk-ant-": _Documented("(?:api03|admin01)-[A-Za-z0-9_-]{93}AA"),
    # OpenRouter: sk-or-v1- + 64 hex
    "sk-or-v[0-9]-": _Documented("[0-9a-f]{64}"),
    # gitleaks openai-api-key: 74 or 58, "T3BlbkFJ" (base64 of "OpenAI"), 74 or 58
    "sk-(?:proj|svcacct|admin|None)-": _Documented(
        "(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})"),
    # gitleaks openai-api-key (legacy): 48 = 20, "T3BlbkFJ", 20; glued on the left only
    # with "T3BlbkFJ" (without it, 20 bits)
    "sk-": _Documented("[A-Za-z0-9]{48}", left="[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"),
    "gsk_": _Documented("[A-Za-z0-9]{52}", glued=False),  # Groq: gsk_ + 52
    "xai-": _Documented("[A-Za-z0-9]{80}", glued=False),  # xAI: xai- + 80 (27.7 bits)
    "pplx-": _Documented("[A-Za-z0-9]{48}"),  # gitleaks perplexity-api-key
    # gitleaks huggingface-access-token: hf_ + 34 letters
    "(?:hf_|api_org_)": _Documented("[A-Za-z]{34}"),
    "r8_": _Documented("[A-Za-z0-9]{37}", glued=False),
    # GitHub: 30 random base62 and a CRC32 checksum (see _crc32_base62)
    "gh[pousr]_": _Documented("[A-Za-z0-9]{36}", check=_crc32_base62),
    # gitleaks github-fine-grained-pat: github_pat_ + 82
    "github_pat_": _Documented("[A-Za-z0-9]{22}_[A-Za-z0-9]{59}"),
    # gitleaks gitlab-pat and siblings: 20 after the prefix
    "gl(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat|ffct)-": _Documented("[A-Za-z0-9_-]{20}"),
    "GR1348941": _Documented("[A-Za-z0-9_-]{20}"),
    # gitleaks slack-bot-token / slack-user-token: digit groups, then the secret
    "xox[abposre]-": _Documented("[0-9]{10,13}(?:-[0-9]{10,13}){1,2}-[A-Za-z0-9]{24,34}"),
    "xapp-": _Documented("[0-9]-[A-Z0-9]{8,}-[0-9]{10,}-[a-z0-9]{32,}"),  # gitleaks slack-app-token
    "(?:sk|rk)_(?:live|test|prod)_": _Documented("[A-Za-z0-9]{24,99}"),  # gitleaks stripe
    "whsec_": _Documented("[A-Za-z0-9]{32}"),  # Stripe webhook signing secrets
    # Slack incoming webhooks: services/T<team id>/B<bot id>/<24 letters and digits>
    r"hooks\.slack\.com/": _Documented(
        "services/(?P<s>T[A-Z0-9]{8,12}/B[A-Z0-9]{8,12}/[A-Za-z0-9]{24})"),
    # gitleaks gcp-api-key: AIza + 35; Google's keys all go on with "Sy", which is what
    # gives a glued one enough bits (AIza and 35 base64url characters: 24 bits).
    "AIza": _Documented("Sy[0-9A-Za-z_-]{33}"),
    r"ya29\.": _Documented("[0-9A-Za-z_-]{60,}"),  # Google OAuth 2.0 access tokens
    "npm_": _Documented("[A-Za-z0-9]{36}", check=_crc32_base62),  # as GitHub's
    # gitleaks pypi-upload-token: a macaroon for pypi.org or test.pypi.org
    "pypi-AgE": _Documented("(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}"),
    "SK": _Documented("[0-9a-f]{32}"),  # gitleaks twilio-api-key
    "key-": _Documented("[0-9a-f]{32}"),  # gitleaks mailgun-private-api-token
    "dckr_(?:pat|oat)_": _Documented("[A-Za-z0-9_-]{27}"),  # Docker Hub access tokens
    r"hv[sb]\.": _Documented("[A-Za-z0-9_-]{90,120}"),  # gitleaks vault-service-token
    r"dp\.(?:pt|st|sa|ct|scim|audit)\.": _Documented("[A-Za-z0-9]{43}"),  # gitleaks doppler
    "ATATT3": _Documented("[A-Za-z0-9_=-]{186}"),  # gitleaks atlassian-api-token
    "sq0(?:atp|csp)-": _Documented("[A-Za-z0-9_-]{22,60}"),  # gitleaks square-access-token
    "pscale_(?:tkn|oauth|pw)_": _Documented("[A-Za-z0-9_.=-]{32,64}"),  # gitleaks planetscale
    # Fixed-length formats that random base64 holds by accident too often to be found
    # glued (prefix and format: 28 bits or fewer).
    "glc_": _Documented("[A-Za-z0-9+/]{32,}={0,2}", glued=False),
    "pnu_": _Documented("[A-Za-z0-9]{36}", glued=False),
    "fo1_": _Documented("[A-Za-z0-9_-]{43}", glued=False),
    "nfp_": _Documented("[A-Za-z0-9]{36}", glued=False),
    "ABSK": _Documented("[A-Za-z0-9+/]{109,269}={0,2}", glued=False),
}
# fmt: on
# JSON Web Tokens ("eyJ") are never found glued: base64 of JSON inside base64 is common.
_NEVER_GLUED: Final = frozenset({"eyJ"})


def _documented(prefix: str, rest: str, *, fixed: bool) -> _Documented | None:
    """The documented format of a token rule (its own ``rest`` when fixed)."""
    if prefix in _NEVER_GLUED:
        return None
    if prefix in _DOCUMENTED:
        return _DOCUMENTED[prefix]
    return _Documented(rest) if fixed else None


def _aws_access_key_rule() -> _Rule:
    # Upper-case only around it: glued lower-case text ("keyAKIA…") does not hide it.
    return _token_rule(
        "aws-access-key",
        "(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)",
        "[A-Z0-9]{16}(?![A-Z0-9])",
        "[A-Z0-9]",
        keywords=("akia", "asia", "abia", "acca", "a3t"),
        source="gitleaks aws-access-token",
        fixed=True,
        word=frozenset(string.ascii_uppercase + string.digits),
        # gitleaks aws-access-token: 16 base32 characters (A-Z, 2-7). Glued on the left:
        # AKIA (IAM user) and ASIA (STS) only, with a digit (ABIA and ACCA are hex
        # letters: upper-case hex holds them).
        documented=_Documented(
            "[A-Z2-7]{16}", left="(?<=AKIA|ASIA)(?=[A-Z]{0,15}[2-7])[A-Z2-7]{16}"
        ),
    )


def _telegram_rule() -> _Rule:
    return _token_rule(
        "telegram-bot-token",
        "[0-9]{8,10}:AA",
        "[A-Za-z0-9_-]{33}",
        _B64URL,
        keywords=(":aa",),
        source="gitleaks telegram-bot-api-token (bot id, colon, AA + 33)",
        fixed=True,
        anchored=False,
    )


def _azure_client_secret_rule() -> _Rule:
    # 40 characters (as Microsoft Entra ID issues them) may be glued on the right.
    pattern = re.compile(
        r"[A-Za-z0-9_~.]{3}[0-9]Q~(?:[A-Za-z0-9_~.-]{34}|[A-Za-z0-9_~.-]{31,33}(?![A-Za-z0-9_~-]))"
    )
    word = frozenset(string.ascii_letters + string.digits + "_~.")

    def find(text: str) -> Iterator[Span]:
        for match in pattern.finditer(text):
            if _starts_word(text, match.start(), word):
                yield match.start(), match.end(), "azure-client-secret"
        for start, end in _across_a_break(text, pattern, 48):
            if _starts_word(text, start, word):
                yield start, end, "azure-client-secret"

    return _Rule("azure-client-secret", ("q~",), _scanning(find), "gitleaks azure-ad-client-secret")


# Signature size in bytes of each JWS algorithm whose signature has one size: RFC 7518
# section 3.2 (HMAC: the hash's size), 3.4 (ECDSA: R and S, 2 x 32, 48, 66 bytes) and
# RFC 8037 section 3.1 (Ed25519).
_JWS_SIGNATURE_BYTES: Final = {
    "HS256": 32, "HS384": 48, "HS512": 64,
    "ES256": 64, "ES384": 96, "ES512": 132, "EdDSA": 64,
}  # fmt: skip
_B64URL_RUN: Final = re.compile(r"[A-Za-z0-9_-]*")


def _with_jws_signature(find: Finder) -> Finder:
    """A JWT finder whose tokens, cut by a line break inside their signature, take the
    rest of the signature from the next line, however short, when the header names an
    algorithm with one signature size."""

    def complete(text: str, hits: list[int]) -> Iterator[Span]:
        for start, end, kind in find(text, hits):
            yield start, _jws_signature_end(text, start, end), kind

    return complete


def _jws_signature_end(text: str, start: int, end: int) -> int:
    parts = _joined(text, start, end).split(".")
    if len(parts) != 3:
        return end
    try:
        header = json.loads(base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)))
    except (ValueError, RecursionError):  # binascii.Error is a ValueError
        return end
    alg = header.get("alg") if isinstance(header, dict) else None
    size = _JWS_SIGNATURE_BYTES.get(alg) if isinstance(alg, str) else None
    line_break = _BREAK.match(text, end)
    if size is None or line_break is None:
        return end
    need = -(-size * 4 // 3) - len(parts[2].rstrip("="))  # base64url, unpadded
    rest = _B64URL_RUN.match(text, line_break.end())
    if need <= 0 or rest is None or len(rest.group()) != need:
        return end
    return rest.end()


# -- PEM private keys (RFC 7468, RFC 1421 headers, RFC 4880 armor, RFC 4716) -----------

_PEM_BEGIN: Final = re.compile(
    r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
)
_PEM_END: Final = re.compile(
    r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|---- END SSH2 ENCRYPTED PRIVATE KEY ----"
)
# Between base64 runs: whitespace, escaped line breaks, or the quotes of string
# literals joined across lines ("MIIE…\n" + "AAAB…").
_PEM_GAP: Final = r"(?:\s|\\+[nrt]|\\*[\"']\s*\+?(?:\s|\\+[nrt])*\\*[\"'])"
# "Proc-Type: 4,ENCRYPTED", "DEK-Info: …", "Version: …", 'Comment: "…"'.
_PEM_HEADERS: Final = re.compile(rf"(?:{_PEM_GAP}+[A-Za-z][A-Za-z0-9-]*:(?:[^\n\r\\]|\\\")*)*+")
_PEM_PIECE: Final = re.compile(rf"(?P<gap>{_PEM_GAP}+)|(?P<b64>[A-Za-z0-9+/=]+)")
_PEM_MIN_BODY: Final = 32


def _find_pem(text: str) -> Iterator[Span]:
    covered = 0
    for begin in _PEM_BEGIN.finditer(text):
        if begin.start() < covered:
            continue
        headers = _PEM_HEADERS.match(text, begin.end())
        index = headers.end() if headers is not None else begin.end()
        body = 0
        last_key_end = index
        end: int | None = None
        while True:
            footer = _PEM_END.match(text, index)
            if footer is not None:
                end = footer.end()
                break
            piece = _PEM_PIECE.match(text, index)
            if piece is None:
                break
            run = piece.group("b64")
            if run is not None:
                if len(run) < 16 and not _ends_key_material(text, piece.end(), run):
                    break  # a word after a cut-off key, not key material
                body += len(run)
                last_key_end = piece.end()
            index = piece.end()
        if body < _PEM_MIN_BODY:
            continue
        stop = end if end is not None else last_key_end
        covered = stop
        yield begin.start(), stop, "private-key"


def _ends_key_material(text: str, end: int, run: str) -> bool:
    """A short base64 run is the last line of a key (``=``-padded, or followed by the
    END line, a closing quote or the end of the text)."""
    if run.endswith("="):
        return True
    rest = text[end : end + 80].lstrip(" \t\r\n")
    rest = re.sub(r"^(?:\\+[nrt])+", "", rest)
    return not rest or rest[0] in "\"'\\-"


# -- credentials in URLs ------------------------------------------------------------

_URL_USERINFO: Final = re.compile(
    r"://(?P<user>[^\s:/@'\"\\<>]*):"
    # the password, cut by one line break (raw or JSON-escaped) or not
    r"(?P<s>[^\s@/'\"\\<>]+(?:(?:\r?\n|\\+n)[^\s@/'\"\\<>]+)?)@(?=[A-Za-z0-9\[._-])"
)
_SCHEME_END: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}\Z")


def _find_url_password(text: str) -> Iterator[Span]:
    for match in _URL_USERINFO.finditer(text):
        start = match.start()
        if _SCHEME_END.search(text[max(0, start - 32) : start]) is None:
            continue
        if _is_placeholder(match.group("s")):
            continue
        yield match.start("s"), match.end("s"), "url-password"


_URL_QUERY: Final = re.compile(
    r"[?&](?i:access_token|refresh_token|id_token|auth_token|token|api_key|apikey|api-key"
    r"|client_secret|secret|password|passwd|sig|signature|x-amz-signature"
    r"|x-amz-security-token|x-goog-signature)=(?P<s>[^&#\s'\"\\<>]{8,})"
)


def _find_url_query(text: str) -> Iterator[Span]:
    for match in _URL_QUERY.finditer(text):
        value = match.group("s")
        if not _is_placeholder(value) and _looks_random(value):
            yield match.start("s"), match.end("s"), "url-token"


# -- headers -----------------------------------------------------------------------------

# An optional quote, JSON-escaped any number of times (a lone backslash is no quote).
_QUOTE: Final = r"(?:\\*[\"'`])?"
_AUTH_HEADER: Final = re.compile(
    rf"(?i:(?:proxy-)?authorization){_QUOTE}[ \t]*[:=][ \t]*{_QUOTE}"
    r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9_-]*)[ \t]+)?(?P<s>[^\s\"'`\\,;()\[\]{}<>]{8,})"
)


def _find_auth_header(text: str) -> Iterator[Span]:
    for match in _AUTH_HEADER.finditer(text):
        value = match.group("s")
        scheme = (match.group("scheme") or "").lower()
        code = _DOTTED_NAME.fullmatch(value) is not None  # authorization = base64.b64…
        if _is_placeholder(value, paths=bool(scheme)) or not (
            scheme or (_looks_random(value) and not code)
        ):
            continue
        kind = {"bearer": "bearer-token", "basic": "basic-auth"}.get(scheme, "auth-header")
        yield match.start("s"), match.end("s"), kind


_BEARER: Final = re.compile(r"(?i:bearer)[ \t]+(?P<s>[A-Za-z0-9._~+/-]{16,}=*)")


def _find_bearer(text: str) -> Iterator[Span]:
    for match in _BEARER.finditer(text):
        value = match.group("s")
        if not _starts_word(text, match.start()) or _is_placeholder(value, paths=False):
            continue
        if len(value) >= 20 or _looks_random(value):
            yield match.start("s"), match.end("s"), "bearer-token"


_BASIC: Final = re.compile(r"(?i:basic)[ \t]+(?P<s>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")


def _find_basic(text: str) -> Iterator[Span]:
    """``Basic <base64 of user:password>`` (RFC 7617): the decoding must hold a colon."""
    for match in _BASIC.finditer(text):
        if _starts_word(text, match.start()) and _is_basic_credential(match.group("s")):
            yield match.start("s"), match.end("s"), "basic-auth"


def _is_basic_credential(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return ":" in text and text.isprintable()


_CURL_USER: Final = re.compile(
    r"(?<!\S)(?:-u|--user)(?:[ \t]+|=)(?:\\*[\"'])?(?P<user>[^\s:'\"\\]+):(?P<s>[^\s'\"\\]{3,})"
)


def _find_curl_user(text: str) -> Iterator[Span]:
    for match in _CURL_USER.finditer(text):
        if not _is_placeholder(match.group("s")):
            yield match.start("s"), match.end("s"), "basic-auth"


_API_KEY_HEADER: Final = re.compile(
    r"(?i:x-api-key|api-key|x-auth-token|x-access-token|private-token|x-goog-api-key"
    r"|ocp-apim-subscription-key|x-api-token|x-functions-key|x-vault-token|apikey)"
    rf"{_QUOTE}[ \t]*:[ \t]*{_QUOTE}(?P<s>[A-Za-z0-9._~+/=-]{{8,}})"
)


def _find_api_key_header(text: str) -> Iterator[Span]:
    for match in _API_KEY_HEADER.finditer(text):
        value = match.group("s")
        if not _is_placeholder(value) and (len(value) >= 16 or _looks_random(value)):
            yield match.start("s"), match.end("s"), "api-key-header"


# -- secrets named by their variable, key or flag ----------------------------------------

_NAME_RUN: Final = re.compile(r"[A-Za-z0-9_.-]*")
_NAME_WINDOW: Final = 64


def _names_at(text: str, hits: list[int]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each distinct name (ASCII letters, digits, ``_.-``) that
    holds a keyword hit; a JSON escape's letter before it (``\\n``, ``\\u00e9``) is not
    part of it."""
    covered = -1
    for hit in hits:
        if hit < covered:
            continue
        window = text[max(0, hit - _NAME_WINDOW) : hit][::-1]
        back = _NAME_RUN.match(window)
        start = hit - (back.end() if back is not None else 0)
        if start >= 2 and text[start - 1] == "\\" and text[start] in "nrtbf":
            start += 1
        elif start >= 1 and text[start - 1] == "\\" and text[start] == "u":
            start = min(start + 5, hit)
        forward = _NAME_RUN.match(text, hit)
        end = forward.end() if forward is not None else hit
        covered = end
        yield start, end


# After a name: its closing quote, the operator, the value's opening quote.
_OPERATOR: Final = re.compile(rf"(?P<q1>{_QUOTE})(?P<op>[ \t]*(?::=|=>|=|:)[ \t]*)(?P<q2>{_QUOTE})")
_OPTIONAL_OPERATOR: Final = re.compile(rf"{_QUOTE}(?:[ \t]*(?::=|=>|=|:)[ \t]*|[ \t]+){_QUOTE}")
_VALUE: Final = re.compile(r"[^\s\"'`\\,;&<>(){}\[\]|]+")
_B64_RUN: Final = re.compile(r"[A-Za-z0-9/+]*")

_AWS_SK_NAME: Final = r"(?i:(?:aws[_-]?)?secret[_-]?access[_-]?key|aws[_-]?secret(?:[_-]?key)?)"
_AWS_SK_NAME_END: Final = re.compile(_AWS_SK_NAME + r"\Z")
_AWS_SESSION_NAME_END: Final = re.compile(
    r"(?i:aws[_-]?session[_-]?token|sessiontoken|aws[_-]?security[_-]?token)\Z"
)
_AZURE_KEY_NAME_END: Final = re.compile(
    r"(?i:accountkey|sharedaccesskey|azure[_-]?storage[_-]?(?:account[_-]?)?key)\Z"
)
_AWS_SESSION_VALUE: Final = re.compile(r"[A-Za-z0-9/+=]{100,}")
_AZURE_KEY_VALUE: Final = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")


def _find_aws_secret(text: str, hits: list[int]) -> Iterator[Span]:
    """40 characters after ``aws_secret_access_key``, ``SecretAccessKey`` … (with or
    without ``=``/``:``: ``aws configure set aws_secret_access_key <key>``)."""
    for start, end in _names_at(text, hits):
        if _AWS_SK_NAME_END.search(text, start, end) is None:
            continue
        operator = _OPTIONAL_OPERATOR.match(text, end)
        if operator is None:
            continue
        span = _fixed_run(text, operator.end(), 40)
        if span is not None:
            yield span[0], span[1], "aws-secret-key"


def _fixed_run(text: str, start: int, size: int) -> tuple[int, int] | None:
    """``size`` base64 characters from ``start``, possibly wrapped by one line break."""
    first = _B64_RUN.match(text, start)
    assert first is not None
    if len(first.group()) >= size:
        return start, start + size
    line_break = _BREAK.match(text, first.end())
    if line_break is None or not first.group():
        return None
    second = _B64_RUN.match(text, line_break.end())
    assert second is not None
    need = size - len(first.group())
    if len(second.group()) < need:
        return None
    return start, line_break.end() + need


def _named_value(kind: str, name_end: re.Pattern[str], value: re.Pattern[str]) -> Finder:
    """A value of ``value``'s form after ``=`` or ``:`` and a name ending in ``name_end``."""

    def find(text: str, hits: list[int]) -> Iterator[Span]:
        for start, end in _names_at(text, hits):
            if name_end.search(text, start, end) is None:
                continue
            operator = _OPERATOR.match(text, end)
            found = value.match(text, operator.end()) if operator is not None else None
            if found is not None:
                yield found.start(), found.end(), kind

    return find


# Words that make a variable, key or flag name a secret's name, as its last word.
_NAME_WORDS: Final = (
    r"pass(?:word|wd|phrase)?|pwd|secret|token|credentials?|api[_.-]?key|apikey"
    r"|(?:secret|access|private|auth|signing|encryption|master|account|client|app)[_.-]?key"
    r"|_key"
)
_NAME_WORD_AT_END: Final = re.compile(rf"(?i:(?P<word>{_NAME_WORDS}))s?[0-9]*\Z")
# Names that end in a secret word but name no secret (pagination and language-model
# token counts, tokenizer special tokens, CSRF tokens, package names, non-secret keys).
_NOT_SECRET_STEMS: Final = (
    "page", "next", "continuation", "csrf", "xsrf", "sync", "cancel", "cancellation",
    "resume", "cursor", "max", "num", "input", "output", "prompt", "completion", "total",
    "cached", "cache", "reasoning", "start", "end", "stop", "special", "pad", "eos", "bos",
    "unk", "sep", "mask", "cls", "public", "publishable", "primary", "sort", "partition",
    "foreign", "idempotency", "lookup", "hash", "group", "route", "routing", "map", "by",
    "jsonweb",
)  # fmt: skip
_NOT_SECRET_NAMES: Final = frozenset({"pwd", "oldpwd", "key", "keys"})
_ENV_NAME: Final = re.compile(r"[A-Z][A-Z0-9_]*")
_NOT_ALNUM: Final = re.compile(r"[^a-z0-9]")


def _secret_name(name: str) -> tuple[str, str] | None:
    """``(kind, word)`` when ``name`` names a secret: the kind is
    ``password-assignment`` or ``secret-assignment``, the word its last secret word."""
    match = _NAME_WORD_AT_END.search(name)
    if match is None:
        return None
    word = match.group("word").lower()
    if _NOT_ALNUM.sub("", name.lower()) in _NOT_SECRET_NAMES:
        return None
    if _NOT_ALNUM.sub("", name[: match.start()].lower()).endswith(_NOT_SECRET_STEMS):
        return None
    if word == "pass" and match.start() > 0 and name[match.start() - 1] not in "_-.":
        return None  # bypass, compass
    password = word.startswith(("pass", "pwd"))
    return ("password-assignment" if password else "secret-assignment"), word


def _valid_assigned(value: str, *, word: str, env: bool, quoted: bool) -> bool:
    """Is ``value`` (assigned to a name that names a secret) a credential?"""
    if _is_placeholder(value):
        return False
    password = word.startswith(("pass", "pwd"))
    if value.isdigit() and not password:
        return False
    if word == "_key":  # only FOO_KEY=<random> in an environment file
        return env and len(value) >= 16 and _looks_random(value)
    if env:
        return len(value) >= 3
    if quoted:
        return len(value) >= 6 and (len(value) >= 10 or not value.isalpha())
    return (
        len(value) >= 8
        and _looks_random(value)
        and _DOTTED_NAME.fullmatch(value) is None
        and _CAMEL_CASE.fullmatch(value) is None  # a type: "signing_key: SigningKey"
        # a name in code ("token = _TokenType()", "passwd = HTTPPasswordMgr()")
        and not (value.isidentifier() and not any(c.isdigit() for c in value))
        and _entropy(value) >= 2.5
    )


def _find_assignment(text: str, hits: list[int]) -> Iterator[Span]:
    """``PASSWORD=…``, ``SECRET_KEY=…``, ``GITHUB_TOKEN: …``, ``"api_key": "…"``,
    ``--password=…``: the value of a variable, key or flag whose name names a secret.

    A name inside the value just read (``token=token=…``) is part of that value, judged
    with it, and not read again: each value is read once, so the time stays linear."""
    judged = -1  # where the last value read ends
    for name_start, name_end in _names_at(text, hits):
        if name_start < judged:
            continue
        operator = _OPERATOR.match(text, name_end)
        if operator is None:
            continue
        name = text[name_start:name_end].lstrip("-_.")
        named = _secret_name(name)
        if named is None:
            continue
        kind, word = named
        found = _VALUE.match(text, operator.end())
        if found is None:
            continue
        start, end = found.span()
        judged = end
        value = found.group()
        quote = operator.group("q2")
        # An environment file's NAME=value (no spaces around "="; "NAME: value" in a
        # compose file), not a constant in code (NAME = value).
        env = _ENV_NAME.fullmatch(name) is not None and operator.group("op") in {"=", ":", ": "}
        called = text[end : end + 1] in {"(", "["} and (
            not _looks_random(value) or (value.isidentifier() and "_" in value)
        )
        if not env and (called or _DOTTED_NAME.fullmatch(value)):
            continue  # a call, a subscript or an attribute: code, not a value
        if quote and word.startswith(("pass", "pwd")):
            end = _quoted_passphrase_end(text, start, end, quote)
            value = text[start:end]
        if _valid_assigned(value, word=word, env=env, quoted=bool(quote)):
            yield start, end, kind


def _quoted_passphrase_end(text: str, start: int, end: int, quote: str) -> int:
    """A quoted password may hold spaces: up to its closing quote on the same line (at
    most 5 spaces and 128 characters, and a digit or symbol in it)."""
    close = text.find(quote, start, start + 128)
    if close < 0:
        return end
    value = text[start:close]
    if "\n" in value or "\\" in value or value.count(" ") > 5:
        return end
    if " " in value and not any(not c.isalpha() and c != " " for c in value):
        return end
    return close


_FLAG: Final = re.compile(
    r"(?<![A-Za-z0-9-])--(?P<name>password|passwd|pass|token|api-key|apikey|secret"
    r"|client-secret|auth-token|access-token|private-token|secret-key)"
    r"[ \t]+(?:\\*[\"'])?(?P<s>[^\s\"'\\-][^\s\"'\\]{2,})"
)


def _find_flag(text: str) -> Iterator[Span]:
    """``--password hunter2``, ``--token <token>`` (the ``=`` form is an assignment)."""
    for match in _FLAG.finditer(text):
        value = match.group("s")
        if _is_placeholder(value) or not (len(value) >= 8 and _looks_random(value)):
            continue
        password = match.group("name").startswith("pass")
        kind = "password-assignment" if password else "secret-assignment"
        yield match.start("s"), match.end("s"), kind


_MYSQL_PASSWORD: Final = re.compile(
    r"mysql(?:dump|admin|sh)?(?![A-Za-z0-9_])[^\n]{0,200}?[ \t]-p(?P<s>[^\s'\"\\-][^\s'\"\\]{2,})"
)


def _find_mysql_password(text: str) -> Iterator[Span]:
    for match in _MYSQL_PASSWORD.finditer(text):
        if not _is_placeholder(match.group("s")):
            yield match.start("s"), match.end("s"), "password-assignment"


# fmt: off
def _build_rules() -> tuple[_Rule, ...]:
    pem = _Rule("private-key", ("-----begin", "---- begin"), _scanning(_find_pem),
                "gitleaks private-key; RFC 7468, RFC 4880, RFC 4716")
    tokens = [
        _token_rule(kind, prefix, rest, body, keywords=keywords, source=source, fixed=fixed,
                    documented=_documented(prefix, rest, fixed=fixed))
        for kind, prefix, rest, body, fixed, keywords, source in _TOKENS
    ]
    tokens = [_Rule(r.kind, r.keywords, _with_jws_signature(r.find), r.source)
              if r.kind == "jwt" else r for r in tokens]
    session = _named_value("aws-session-token", _AWS_SESSION_NAME_END, _AWS_SESSION_VALUE)
    azure = _named_value("azure-storage-key", _AZURE_KEY_NAME_END, _AZURE_KEY_VALUE)
    return (pem, *tokens,
        _aws_access_key_rule(),
        _telegram_rule(),
        _azure_client_secret_rule(),
        _Rule("aws-secret-key", ("secret",), _find_aws_secret,
              "AWS CLI config and credentials files; STS JSON SecretAccessKey"),
        _Rule("aws-session-token", ("session", "security"), session,
              "AWS CLI credentials files; STS JSON SessionToken"),
        _Rule("azure-storage-key", ("accountkey", "sharedaccesskey", "storage"), azure,
              "Azure Storage connection strings (AccountKey=, SharedAccessKey=)"),
        _Rule("url-password", ("://",), _scanning(_find_url_password),
              "RFC 3986 userinfo (https, postgres, mysql, mongodb, redis, amqp ...)"),
        _Rule("url-token",
              ("token=", "key=", "secret=", "password=", "passwd=", "sig=", "signature="),
              _scanning(_find_url_query),
              "gitleaks generic-api-key names, as URL query parameters (OAuth, SAS sig)"),
        _Rule("auth-header", ("authorization",), _scanning(_find_auth_header),
              "RFC 9110 Authorization and Proxy-Authorization"),
        _Rule("bearer-token", ("bearer",), _scanning(_find_bearer), "RFC 6750 bearer tokens"),
        _Rule("basic-auth", ("basic",), _scanning(_find_basic), "RFC 7617 Basic credentials"),
        _Rule("basic-auth", ("-u", "--user"), _scanning(_find_curl_user),
              "gitleaks curl-auth-user"),
        _Rule("api-key-header",
              ("api-key", "apikey", "-token", "subscription-key", "functions-key"),
              _scanning(_find_api_key_header),
              "gitleaks curl-auth-header (X-Api-Key and similar headers)"),
        _Rule("secret-assignment", ("pass", "pwd", "secret", "token", "credential", "key"),
              _find_assignment, "gitleaks generic-api-key (names, stop words); .env files"),
        _Rule("secret-assignment", ("--",), _scanning(_find_flag),
              "command-line flags named like secrets"),
        _Rule("password-assignment", ("mysql",), _scanning(_find_mysql_password),
              "MySQL client -p<password>"),
    )
# fmt: on


_RULES: Final = _build_rules()
_KEYWORDS: Final[tuple[str, ...]] = tuple(
    dict.fromkeys(k for rule in _RULES for k in rule.keywords)
)
_RULES_OF_KEYWORD: Final[tuple[tuple[int, ...], ...]] = tuple(
    tuple(i for i, rule in enumerate(_RULES) if keyword in rule.keywords) for keyword in _KEYWORDS
)
_AUTOMATON: Final = ahocorasick_rs.AhoCorasick(list(_KEYWORDS))
# The keywords of the rules that find a token cut by a line break (the token rules and
# the Azure client secret), without the common word "pat".
_CUT_KEYWORDS: Final[tuple[str, ...]] = tuple(
    dict.fromkeys(
        [k for *_, keywords, _source in _TOKENS for k in keywords if k != "pat"]
        + ["akia", "asia", "abia", "acca", "a3t", ":aa", "q~"]
    )
)
_CUT_TO_KEYWORD: Final = tuple(_KEYWORDS.index(k) for k in _CUT_KEYWORDS)
_CUT_AUTOMATON: Final = ahocorasick_rs.AhoCorasick(list(_CUT_KEYWORDS))
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_ASCII_LOWER: Final = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}

SECRET_KINDS: Final[tuple[str, ...]] = tuple(
    dict.fromkeys(
        [rule.kind for rule in _RULES]
        + ["password-assignment", "bearer-token", "basic-auth", "auth-header"]
    )
)
"""Every kind a replacement can name, the more specific first."""

RULE_SOURCES: Final[tuple[tuple[str, str], ...]] = tuple((r.kind, r.source) for r in _RULES)
"""``(kind, source)`` of each rule: the public catalogue entry or documentation it follows."""


# -- the API ---------------------------------------------------------------------------


@dataclass
class RedactionStats:
    """How many secrets of each kind were replaced (never the secrets themselves).

    Attributes:
        by_kind: kind (``openai-key`` …) -> number of replacements.
    """

    by_kind: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def to_dict(self) -> dict[str, int]:
        return dict(sorted(self.by_kind.items()))


def _found(text: str) -> list[tuple[int, int, int, str]]:
    """``(start, end, rule priority, kind)`` of every rule's span in ``text``."""
    if len(text) < _MIN_CHARS:
        return []
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lengthen: keep positions
        lowered = text.translate(_ASCII_LOWER)
    try:
        matches = _AUTOMATON.find_matches_as_indexes(lowered, overlapping=True)
    except UnicodeEncodeError:  # lone surrogates (valid in JSON escapes): same length
        lowered = _SURROGATE.sub("?", lowered)
        matches = _AUTOMATON.find_matches_as_indexes(lowered, overlapping=True)
    matches += _cut_keywords(lowered)
    if not matches:
        return []
    hits: dict[int, list[int]] = {}
    for keyword, start, _end in matches:
        for rule_id in _RULES_OF_KEYWORD[keyword]:
            hits.setdefault(rule_id, []).append(start)
    found: list[tuple[int, int, int, str]] = []
    for priority in sorted(hits):
        positions = sorted(set(hits[priority]))
        for start, end, kind in _RULES[priority].find(text, positions):
            if end > start and not _MARKER_RE.fullmatch(text, start, end):
                found.append((start, end, priority, kind))
    return found


def _cut_keywords(lowered: str) -> list[tuple[int, int, int]]:
    """``(keyword, start, end)`` in ``lowered`` of each token keyword that a line break
    cuts (``sk-pr`` / ``oj-…``, as a terminal wraps a token). Linear: one pass to join
    the lines, Aho-Corasick passes for the token keywords over the joined text and (when
    it holds any) the text itself, and the breaks' positions only when the joined text
    holds more."""
    if "\n" not in lowered and "\\" not in lowered:
        return []
    joined = _BREAK.sub("", lowered)
    if len(joined) == len(lowered):
        return []
    found = _CUT_AUTOMATON.find_matches_as_indexes(joined, overlapping=True)
    # Taking breaks out only adds matches: as many as in the text itself, none is cut.
    if not found or len(found) == len(
        _CUT_AUTOMATON.find_matches_as_indexes(lowered, overlapping=True)
    ):
        return []
    at: list[int] = []  # where each break was, in the joined text
    shift: list[int] = []  # characters removed up to and including it
    removed = 0
    for line_break in _BREAK.finditer(lowered):
        at.append(line_break.start() - removed)
        removed += line_break.end() - line_break.start()
        shift.append(removed)
    cut: list[tuple[int, int, int]] = []
    for keyword, start, end in found:
        first = bisect.bisect_right(at, start)  # the first break after the keyword's start
        if first < len(at) and at[first] < end:
            before = shift[first - 1] if first else 0
            after = shift[bisect.bisect_left(at, end) - 1]
            cut.append((_CUT_TO_KEYWORD[keyword], start + before, end + after))
    return cut


# A JSON \uXXXX escape, escaped any number of times (\\u0073 in a JSON string held in
# a JSON string): RFC 8259 lets any character be written so ("\u0073k-proj-…"); and
# its escaped solidus "\/" (PHP's json_encode writes every "/" so: "https:\/\/…").
_U_ESCAPE: Final = re.compile(r"(?<!\\)\\+(?:u([0-9A-Fa-f]{4})|/)")  # linear, as _BREAK


def _found_unescaped(text: str) -> list[tuple[int, int, int, str]]:
    """The spans found in ``text`` read with its ``\\uXXXX`` and ``\\/`` escapes decoded, in
    ``text``'s positions (a span covers each escape it holds whole)."""
    if "\\u" not in text and "\\/" not in text:
        return []
    pieces: list[str] = []
    starts: list[int] = []  # where each character of the view starts in text
    ends: list[int] = []  # and where it ends
    last = 0
    for match in _U_ESCAPE.finditer(text):
        begin = match.start()
        pieces.append(text[last:begin])
        starts.extend(range(last, begin))
        ends.extend(range(last + 1, begin + 1))
        hex_digits = match.group(1)
        pieces.append("/" if hex_digits is None else chr(int(hex_digits, 16)))
        starts.append(begin)
        ends.append(match.end())
        last = match.end()
    if not pieces:
        return []
    pieces.append(text[last:])
    starts.extend(range(last, len(text)))
    ends.extend(range(last + 1, len(text) + 1))
    view = "".join(pieces)
    return [(starts[a], ends[b - 1], p, kind) for a, b, p, kind in _found(view)]


def _scan(text: str) -> list[Span]:
    """The merged secret spans of ``text``, in order: as written, and as a reader that
    decodes its JSON ``\\uXXXX`` escapes sees it."""
    found = _found(text) + _found_unescaped(text)
    if not found:
        return []
    found.sort()
    merged: list[Span] = []
    cur_start, cur_end, cur_priority, cur_kind = found[0]
    for start, end, priority, kind in found[1:]:
        if start < cur_end:
            cur_end = max(cur_end, end)
            if priority < cur_priority:
                cur_priority, cur_kind = priority, kind
            continue
        merged.append((cur_start, cur_end, cur_kind))
        cur_start, cur_end, cur_priority, cur_kind = start, end, priority, kind
    merged.append((cur_start, cur_end, cur_kind))
    return merged


def _check_marker(marker: str) -> None:
    if any(c in marker for c in "\"'\\`") or not marker.isprintable():
        raise ValueError(f"marker {marker!r} must hold no quote, backslash or control character")


def redact_text(
    text: str, stats: RedactionStats | None = None, *, marker: str = DEFAULT_MARKER
) -> str:
    """Return ``text`` with every secret replaced by ``marker`` (``{kind}`` filled in).

    Args:
        text: any text: a message, a command, a JSON document held in a string.
        stats: counts replacements by kind when given.
        marker: the replacement, ``[REDACTED:{kind}]`` by default. It must hold no
            quote, backslash or control character, so that a JSON document held in
            the string (a tool call's ``arguments``) stays valid JSON.

    Raises:
        ValueError: ``marker`` holds a quote, backslash or control character.
    """
    if marker is not DEFAULT_MARKER:
        _check_marker(marker)
    for _ in range(_MAX_PASSES):
        spans = _scan(text)
        if not spans:
            return text
        pieces: list[str] = []
        last = 0
        for start, end, kind in spans:
            pieces.append(text[last:start])
            pieces.append(marker.format(kind=kind))
            last = end
            if stats is not None:
                stats.by_kind[kind] += 1
        pieces.append(text[last:])
        text = "".join(pieces)
    return text


def contains_secret(text: str) -> bool:
    """True when :func:`redact_text` would replace something in ``text``."""
    return bool(_scan(text))


def redact_value(
    value: Any, stats: RedactionStats | None = None, *, marker: str = DEFAULT_MARKER
) -> Any:
    """Return a copy of a JSON value with every string redacted (keys too).

    Every string is scanned, whatever its key (``id``, ``call_id``, ``signature`` …
    included: a provider's opaque id holds none of the patterns, and a secret placed
    there is still a secret). A string under a key that names a secret
    (``"password"``, ``"client_secret"``, ``"SecretAccessKey"`` …) is replaced whole
    when it looks like a credential rather than a placeholder.

    Shape: lists keep their length and order; an object keeps every member, in order.
    Keys that the redaction makes equal (``{"ghp_A…": 1, "ghp_B…": 2}``, or a redacted
    key and one that already read ``[REDACTED:github-token]``) are named apart by
    :func:`distinct_names`: ``[REDACTED:github-token]-1``, ``-2`` …; every other key is
    its redacted text. ``stats`` counts each secret replaced once (a renaming replaces
    nothing). Anything else (numbers, ``None``, non-string keys) is kept as it is.

    Raises:
        ValueError: as :func:`redact_text`.
    """
    if marker is not DEFAULT_MARKER:
        _check_marker(marker)
    return _redact(value, stats, marker)


def _redact(value: Any, stats: RedactionStats | None, marker: str) -> Any:
    """The redacted copy of ``value``, walked with an explicit stack: a value nested as
    deep as agc's JSON reader allows (or deeper, from Python) never exhausts Python's
    recursion limit. Members are visited in order, depth first, so the strings are
    redacted in the order a recursive walk takes; an object's keys are redacted when
    the object is reached, before its members' values."""
    top: list[Any] = [None]
    # (the value to copy, the container its copy goes in, the index or key there, and
    # whether it is already the text to put there)
    work: list[tuple[Any, Any, Any, bool]] = [(value, top, 0, False)]
    while work:
        source, into, slot, final = work.pop()
        if final:
            into[slot] = source
        elif isinstance(source, str):
            if len(source) >= _MIN_CHARS:
                source = redact_text(source, stats, marker=marker)
            into[slot] = source
        elif isinstance(source, list):
            copy: list[Any] = [None] * len(source)
            into[slot] = copy
            work.extend((source[i], copy, i, False) for i in range(len(source) - 1, -1, -1))
        elif isinstance(source, Mapping):
            out: dict[Any, Any] = {}
            into[slot] = out
            keys = _redacted_keys(source, stats, marker)
            members: list[tuple[Any, Any, Any, bool]] = []
            for new_key, (key, item) in zip(keys, source.items(), strict=True):
                named = isinstance(key, str) and isinstance(item, str)
                kind = _named_entry_kind(key, item) if named else None
                member = (item, out, new_key, False)
                if kind is not None:
                    if stats is not None:
                        stats.by_kind[kind] += 1
                    member = (marker.format(kind=kind), out, new_key, True)
                out[new_key] = None  # the key's place, filled when its member is copied
                members.append(member)
            work.extend(reversed(members))
        else:
            into[slot] = source
    return top[0]


def _redacted_keys(
    source: Mapping[Any, Any], stats: RedactionStats | None, marker: str
) -> list[Any]:
    """The keys of ``source`` as they are written, in order: each string key redacted,
    and those that only the redaction made equal named apart (:func:`distinct_names`),
    so that the copy has as many members as ``source``. Other keys are kept."""
    keys: list[Any] = []
    changed = False
    for key in source:
        new_key = key
        if isinstance(key, str) and len(key) >= _MIN_CHARS:
            new_key = redact_text(key, stats, marker=marker)
            changed = changed or new_key != key
        keys.append(new_key)
    # Only a key the redaction changed can meet another: the input's keys are distinct.
    if not changed or len(set(keys)) == len(keys):
        return keys
    renamed = distinct_names(
        (key, new_key) for key, new_key in zip(source, keys, strict=True) if isinstance(key, str)
    )
    return [
        renamed.get(key, new_key) if isinstance(key, str) else new_key
        for key, new_key in zip(source, keys, strict=True)
    ]


_Original = TypeVar("_Original", bound=Hashable)


def distinct_names(pairs: Iterable[tuple[_Original, str]]) -> dict[_Original, str]:
    """New names for the originals that only the redaction made equal.

    ``pairs`` are ``(original, redacted text)`` in order of appearance (an original
    may occur more than once, always with the same text). Every text shared by two or
    more different originals gives each of them ``<text>-<n>``: n = 1, 2 … in order of
    first appearance, skipping every text of ``pairs`` and every name already given,
    so a new name never equals another name of the same set, renamed or not. The new
    names are the redacted text and a number: they hold nothing the text did not.
    Resume snapshots name call ids apart so, and :func:`redact_value` an object's keys.

    Returns:
        original -> its new name, for the originals renamed only (empty when no two
        originals share a text).
    """
    sources: dict[str, dict[_Original, None]] = {}  # text -> its originals, in order
    for original, text in pairs:
        sources.setdefault(text, {})[original] = None
    taken = set(sources)
    renamed: dict[_Original, str] = {}
    for shared, originals in sources.items():
        if len(originals) < 2:
            continue
        number = 0
        for original in originals:
            number += 1
            while f"{shared}-{number}" in taken:
                number += 1
            renamed[original] = f"{shared}-{number}"
            taken.add(renamed[original])
    return renamed


@functools.lru_cache(maxsize=4096)
def _key_names(key: str) -> tuple[str, str] | None:
    """``(kind, word)`` for a JSON key that names a secret (cached: keys repeat)."""
    if len(key) > 64:
        return None
    if _AWS_SK_NAME_END.search(key):
        return "aws-secret-key", "secret"
    return _secret_name(key)


# Environment variables whose value is a credential although no secret word ends their
# name: an agent socket that signs with the user's keys (ssh-agent(1), gpg-agent(1)), a
# cluster configuration with its tokens (kubectl), an access key id (AWS), and the
# connection URLs and DSNs that carry a password (RFC 3986 userinfo; libpq, SQLAlchemy,
# Sentry, Heroku-style DATABASE_URL).
_CREDENTIAL_VARIABLES: Final = frozenset({
    "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "KUBECONFIG", "AWS_ACCESS_KEY_ID", "NETRC",
    "PGPASSFILE", "DOCKER_AUTH_CONFIG",
})  # fmt: skip
_CREDENTIAL_VARIABLE_ENDINGS: Final = (
    "DATABASE_URL", "DATABASE_URI", "_DSN", "CONNECTION_STRING", "REDIS_URL", "MONGODB_URI",
    "MONGO_URL", "AMQP_URL", "BROKER_URL",
)  # fmt: skip


def credential_variable(name: str) -> str | None:
    """The kind of credential an environment variable called ``name`` holds, or ``None``.

    A name that names a secret by its last word (``GITHUB_TOKEN``,
    ``AWS_SECRET_ACCESS_KEY``, ``DB_PASSWORD``; the rule :func:`redact_value` applies
    to a JSON key) is ``password-assignment``, ``secret-assignment`` or
    ``aws-secret-key``; a variable that grants access by other means (``SSH_AUTH_SOCK``,
    ``DATABASE_URL``, ``*_DSN``, ``KUBECONFIG``, ``AWS_ACCESS_KEY_ID``) is
    ``credential-variable``. Case-insensitive for the second group (environment names
    are upper case by convention, POSIX.1-2017 8.1).
    """
    upper = name.upper()
    if upper in _CREDENTIAL_VARIABLES or upper.endswith(_CREDENTIAL_VARIABLE_ENDINGS):
        return "credential-variable"
    named = _key_names(name)
    return named[0] if named is not None else None


def _named_entry_kind(key: str, item: str) -> str | None:
    """The kind when ``item`` is a credential stored under a key that names it."""
    named = _key_names(key)
    if named is None:
        return None
    stripped = item.strip()
    if _MARKER_RE.fullmatch(stripped):
        return None
    kind, word = named
    if kind == "aws-secret-key":
        if re.fullmatch(r"[A-Za-z0-9/+=]{40}", stripped):
            return kind
        kind, word = "secret-assignment", "secret"
    if "\n" in stripped or len(stripped) > 1024:
        return None
    if " " in stripped and not (
        word.startswith(("pass", "pwd"))
        and stripped.count(" ") <= 5
        and any(not c.isalpha() and c != " " for c in stripped)
    ):
        return None
    return kind if _valid_assigned(stripped, word=word, env=False, quoted=True) else None
