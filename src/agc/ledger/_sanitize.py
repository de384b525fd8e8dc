"""Pure cleaning of what an agent wrote: paths, commands, free text, names and ids.

Nothing that reaches a turn file may hold an absolute host path, a home directory, a
user name, a token or a URL signature. Paths are made project-relative POSIX or
rejected; a command whose paths cannot all be made relative is dropped whole
(``commandRedacted``); design text keeps its words and loses its host paths.

Host paths are looked for in what a reader could decode a text into
(:func:`decoded_view`): escaped, percent-encoded or look-alike separators, full-width
letters and ``$IFS`` do not hide one. A path field is kept only when it is a clean
project-relative path as written. Nothing here touches the disk (hashing is in
:mod:`agc.ledger._project`).
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from agc._core.redact import contains_secret, redact_text
from agc.errors import UsageError

__all__ = [
    "SCAN_LIMIT",
    "SECRET_MARK",
    "SENSITIVE_DIR_NAMES",
    "SENSITIVE_NAME_PATTERNS",
    "SYSTEM_PATH_PREFIXES",
    "CleanPath",
    "CleanText",
    "PathSanitizer",
    "RejectReason",
    "clean_media_type",
    "clean_name",
    "clean_token",
    "decoded_view",
    "decoded_views",
    "deny_reason",
    "sha256_text",
]

RejectReason = Literal[
    "invalid", "home", "unc", "url", "outside", "control-plane", "sensitive", "symlink-outside"
]

MAX_PATH_CHARS: Final = 1024
CONTROL_PLANE_DIRS: Final = frozenset({".agent", ".git"})
SENSITIVE_DIR_NAMES: Final = frozenset({".ssh", ".aws", ".gnupg", ".azure", ".kube", ".docker"})
SENSITIVE_NAME_PATTERNS: Final = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".npmrc",
    ".pypirc",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".htpasswd",
    "auth.json",
    "credentials",
    "credentials.json",
)
"""Base names never read, hashed or written (keys, credentials), case-insensitive."""

SECRET_MARK: Final = "[secret]"  # noqa: S105 - the marker, not a secret
"""What replaces a secret in ledger text (beside ``[path]`` and ``[url]``)."""

SYSTEM_PATH_PREFIXES: Final = (
    "/bin/",
    "/sbin/",
    "/usr/bin/",
    "/usr/sbin/",
    "/usr/local/bin/",
    "/opt/homebrew/bin/",
)
"""Absolute paths a command may keep: executables in standard system folders, which
name no host, home or user (``/bin/zsh -lc …`` is how Codex reports commands)."""
SYSTEM_PATHS: Final = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr"})

_DRIVE_RE: Final = re.compile(r"[A-Za-z]:")
_ENV_HOME_RE: Final = re.compile(
    r"\$\{?(?:HOME|USERPROFILE|HOMEPATH|HOMEDRIVE|USER|USERNAME|LOGNAME)\b|"
    r"%(?:HOME|USERPROFILE|HOMEPATH|HOMEDRIVE|USERNAME)%|\$env:",
    re.IGNORECASE,
)
# An environment reference to a home folder and the path that follows it.
_ENV_PATH_RE: Final = re.compile(
    r"(?:\$\{?(?:HOME|USERPROFILE|HOMEPATH|HOMEDRIVE|USER|USERNAME|LOGNAME)\b\}?|"
    r"%(?:HOME|USERPROFILE|HOMEPATH|HOMEDRIVE|USERNAME)%|\$env:\w*)"
    r"[^\s'\"`;|&<>(){}\[\],]*",
    re.IGNORECASE,
)
_URL_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,31}://[^\s'\"`<>|;&(){}\[\]]*")
# URL schemes that name a network resource: such a URL is kept unless it carries
# credentials, a query or a fragment. Any other scheme (file:, vscode:, cursor:, …)
# can name a file on this host and is treated as a host path.
_NETWORK_SCHEMES: Final = frozenset(
    {"http", "https", "ws", "wss", "ftp", "ftps", "git", "s3", "gs"}
)
# A home folder inside a URL's path (a local file server, a web IDE): a host path too.
_URL_HOME_RE: Final = re.compile(r"/(?:Users|home)/[^/]+/", re.IGNORECASE)
HOST_TOP_DIRS: Final = (
    "Users", "home", "root", "tmp", "private", "var", "etc", "opt", "mnt", "media",
    "Volumes", "usr", "proc", "Library", "System", "Applications", "nix", "cygdrive",
    "srv", "boot", "snap",
)  # fmt: skip
"""First folders of absolute host paths (homes, temp, mounts, services, system). A path
glued to a letter of another script ("见/Users/…") is taken for a host path when it
starts with one of these (or with the first folder of a project root) or with two
ASCII folders and a third component, so that "收集/射击/跑酷" or "素材/data/levels.json"
stay words; so is a path after ``a/`` or ``b/`` in a diff header."""
_TOKEN_RE: Final = re.compile(r"[A-Za-z0-9_.:@+-]{1,128}")
_MEDIA_TYPE_RE: Final = re.compile(
    r"[a-z0-9][a-z0-9!#$&^_.+-]{0,62}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"
)
SCAN_LIMIT: Final = 64 * 1024
"""Characters of a command or text that are cleaned: the ledger keeps at most 4000 of
them, so the rest never reaches a file and is not scanned (bounded time per field)."""

# -- what a reader could decode a text into ---------------------------------------------
#
# An agent's text can spell a separator in other ways than "/" and "\": escaped for
# JSON or a shell ("\/", "\\", "\u002f", "\x2f", printf's "\057"), percent-encoded
# (RFC 3986, also twice: "%252F"), as an HTML character reference ("&#47;", "&sol;"),
# with a look-alike character (Unicode UTS #39 confusables of U+002F and U+005C, the yen
# and won signs that Japanese and Korean Windows show for "\"), in full-width forms
# (NFKC), or behind the shell's field separator ("cat$IFS/home/…"). Paths are found in
# the decoded view; what is replaced is the span of the original text it came from.

_ENCODED_RE: Final = re.compile(
    r"(?P<pct>(?:%[0-9A-Fa-f]{2})+)"
    r"|\\u(?P<u>[0-9A-Fa-f]{4})"
    # printf's hex and octal escapes of a separator, a dot or "~" only: "C:\2024\x"
    # is a Windows path, not an escape
    r"|\\x(?P<x>2[fFeE]|5[cC]|7[eE]|3[aA])"
    r"|\\(?P<oct>057|134|056|176|072)"
    r"|\\(?P<esc>[\\/])"
    r"|&#(?P<dec>[0-9]{1,7});|&#[xX](?P<hex>[0-9A-Fa-f]{1,6});"
    r"|&(?P<name>sol|bsol|colon|period|tilde|dollar|lpar|rpar|quot|apos);"
    # "$IFS" / "${IFS%?}" is a separator; "$9", "$@", "${1}" are empty in a shell
    r"|(?P<ifs>\$\{IFS[^}\s]{0,8}\}|\$IFS(?![A-Za-z0-9_]))"
    r"|(?P<empty>\$\{[0-9@*]\}|\$[0-9@*])"
)
_ENTITY_NAMES: Final = {
    "sol": "/",
    "bsol": "\\",
    "colon": ":",
    "period": ".",
    "tilde": "~",
    "dollar": "$",
    "lpar": "(",
    "rpar": ")",
    "quot": '"',
    "apos": "'",
}
_SLASH_LOOKALIKES: Final = frozenset("\u2215\u2044\uff0f\u29f8\u2571\u27cb\u1735\u2cc6")
_BACKSLASH_LOOKALIKES: Final = frozenset(
    "\u2216\uff3c\u29f5\u29f9\ufe68\u2572\u27cd\u00a5\uffe5\u20a9"
)
# A decoded character in a path field that changes how the path splits or climbs.
_PATH_SIGNIFICANT: Final = frozenset("/\\.~%$@")
_MAYBE_ENCODED_RE: Final = re.compile(r"[%\\&$]|[^\x00-\x7f]")


@dataclass(frozen=True)
class _View:
    """A text as a reader could decode it: ``text[i]`` stands for
    ``source[starts[i]:ends[i]]``. ``disguised``: a separator, dot, ``~``, ``%``,
    ``$`` or ``@`` was spelled in another way (encoded, escaped, a look-alike)."""

    source: str
    text: str
    starts: tuple[int, ...] | None = None  # None: the identity
    ends: tuple[int, ...] | None = None
    disguised: bool = False

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The source span of ``text[start:end]`` (``end > start``)."""
        if self.starts is None or self.ends is None:
            return start, end
        return self.starts[start], self.ends[end - 1]


def _decode_round(text: str) -> tuple[str, list[tuple[int, int]]] | None:
    """One round of undoing escapes and encodings: the decoded text and, per decoded
    character, its span in ``text``; ``None`` when nothing was decoded."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    last = 0
    changed = False
    for match in _ENCODED_RE.finditer(text):
        start, end = match.span()
        for index in range(last, start):
            out.append(text[index])
            spans.append((index, index + 1))
        last = end
        group = match.lastgroup
        value = match.group(group) if group else ""
        if group == "pct":
            decoded = bytes.fromhex(value.replace("%", "")).decode("utf-8", "replace")
        elif group in {"u", "x"}:
            decoded = chr(int(value, 16))
        elif group == "oct":
            decoded = chr(int(value, 8))
        elif group == "esc":
            decoded = value
        elif group in {"dec", "hex"}:
            code = int(value, 10 if group == "dec" else 16)
            decoded = chr(code) if code < 0x110000 else ""
        elif group == "name":
            decoded = _ENTITY_NAMES[value]
        elif group == "ifs":
            decoded = " "
        else:
            decoded = ""
        if 0xD800 <= ord(decoded[:1] or "a") <= 0xDFFF:
            decoded = ""  # a lone surrogate decodes to nothing usable
        changed = True
        for ch in decoded:
            out.append(ch)
            spans.append((start, end))
    if not changed:
        return None
    for index in range(last, len(text)):
        out.append(text[index])
        spans.append((index, index + 1))
    return "".join(out), spans


@functools.lru_cache(maxsize=4096)
def _map_char(ch: str) -> str:
    if ch in _SLASH_LOOKALIKES:
        return "/"
    if ch in _BACKSLASH_LOOKALIKES:
        return "\\"
    if ch.isascii():
        return ch
    folded = unicodedata.normalize("NFKC", ch)
    if len(folded) == 1 and folded.isascii() and folded.isprintable():
        return folded
    return ch


def decoded_view(source: str) -> _View:
    """``source`` with escapes, encodings (up to three layers), ``$IFS`` and look-alike
    or full-width characters undone, and where each decoded character came from."""
    return decoded_views(source)[-1]


@functools.lru_cache(maxsize=64)  # a text is cleaned, then checked again: decode once
def decoded_views(source: str) -> tuple[_View, ...]:
    """``source`` as written, then after each layer of decoding (the last is
    :func:`decoded_view`). Every layer is looked at for host paths: undoing one layer
    can also hide a path that the layer before showed (``%5C%5Chost`` is the UNC
    ``\\\\host``, which read once more as an escape is a single ``\\``)."""
    identity = _View(source, source)
    if _MAYBE_ENCODED_RE.search(source) is None:
        return (identity,)
    views = [identity]
    # look-alikes first (a look-alike backslash can make an escape), then decoding,
    # then look-alikes again (a percent-encoded look-alike)
    text = "".join(_map_char(ch) for ch in source)
    spans = [(i, i + 1) for i in range(len(source))]
    if text != source:
        views.append(_make_view(source, text, spans))
    for _ in range(3):
        result = _decode_round(text)
        if result is None:
            break
        text, inner = result
        spans = [(spans[a][0], spans[b - 1][1]) for a, b in inner]
        views.append(_make_view(source, text, spans))
    mapped = "".join(_map_char(ch) for ch in text)
    if mapped != text:
        views.append(_make_view(source, mapped, spans))
    return tuple(views)


def _make_view(source: str, text: str, spans: list[tuple[int, int]]) -> _View:
    disguised = any(
        ch in _PATH_SIGNIFICANT and source[a:b] != ch
        for ch, (a, b) in zip(text, spans, strict=True)
    )
    return _View(
        source,
        text,
        tuple(a for a, _ in spans),
        tuple(b for _, b in spans),
        disguised=disguised,
    )


# -- where a host path starts ------------------------------------------------------------

SpanKind = Literal["path", "url", "remote", "home", "climb", "diff"]
_Mode = Literal["text", "command", "path"]
"""How strictly paths are looked for: free text (a path must look like one), a shell
command (any absolute path), or a path field's own words (any absolute path, but a
relative path may have folders in any script)."""

# Characters that end a path word (shell metacharacters, quotes, brackets, commas).
_BODY_RE: Final = re.compile(r"[^\s'\"`;|&<>(){}\[\],]*")
_START_RE: Final = re.compile(r"(?=([A-Za-z]:[\\/]|\\\\|//|/|~|\\))")
# Characters after which a path starts (the first ones of a path word in a shell).
_SEPARATORS: Final = frozenset("'\"`=(<>|;&,[{:@")
# ASCII characters that belong to a path word: a "/" right after one is inside a word
# ("a/b", "s/x/y/", "$HOME/x").
_WORD_CHARS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.~/\\$%-"
)
# Glob, brace and subshell ends: "game/*/index.html", "{a,b}/c".
_GLOB_ENDS: Final = frozenset("*?]})")
_COMPONENT_RE: Final = re.compile(r"[^\s/\\'\"`;|&<>(){}\[\],]+[\\/]")
# Two ASCII folder names and a separator after each: "/srv/u/…" glued to a letter.
_TWO_COMPONENTS_RE: Final = re.compile(r"(?:[A-Za-z0-9_.~@+-]+[\\/]){2}")
_ROOTED_WINDOWS_RE: Final = re.compile(r"\\[^\s\\/'\"`;|&<>(){}\[\],]+\\")
_HOME_TEXT_RE: Final = re.compile(r"~(?:[A-Za-z_][\w.-]*)?[\\/]")
_HOME_OPTION_RE: Final = re.compile(r"~[\\/A-Za-z_]")
# user@host:path (scp, rsync, git over ssh): names a user and a host, also glued to
# what precedes it ("-Cuser@host:…"). The user name starts at the first letter or digit
# of its run of name characters (the look-behind and possessive runs keep the scan
# linear: a long run of letters with no "@" is read once, not once per position).
_REMOTE_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_.-])[.-]*+"
    r"(?P<r>[A-Za-z0-9_][A-Za-z0-9_.-]*+@[A-Za-z0-9][A-Za-z0-9_.-]*+:"
    r"(?=[^\s:])[^\s'\"`;|&<>(){}\[\],]*+)"
)
# Unified and git diff headers print a path after "a/" / "b/" with its leading "/"
# dropped: "--- a/home/u/x" names /home/u/x. Looked for anywhere a word starts (a diff
# pasted into a brief may be quoted or indented), for paths that start with a host
# folder, a drive, "~" or a UNC "\\" (or "//", as a file URL spells it: "a///host/share").
_DIFF_PATH_RE: Final = re.compile(
    r"(?m)(?:^|(?<=[\s'\"`(\[{<=:,;|&]))[ab](?P<slashes>/+)(?P<rest>[^\s'\"`;|&<>(){}\[\],]+)"
)
_WORD_RE: Final = re.compile(r"[^\s'\"`;|&<>(){}\[\],=]+")
# A ".." right after a character that cannot be part of an ASCII path word, or right
# after a short option, climbs out of where it starts ("见../../x", "cat -f../x").
_GLUED_DOTDOT_RE: Final = re.compile(
    r"(?:(?<![A-Za-z0-9_.~/\\$%-])|(?<=(?<![A-Za-z0-9_.~/\\-])-[A-Za-z]))\.\.[/\\]"
)
# The rest of a path whose head was already replaced ("[path]&#47;u&#47;x" decodes to
# "[path]/u/x"): a host path too.
_MARK_TAIL_RE: Final = re.compile(r"\[(?:path|url)\](?=[\\/])[^\s'\"`;|&<>(){}\[\],]*")
_UNSAFE_IN_RELATIVE_RE: Final = re.compile(r"[:'\"`$]")


class _KeepOriginal:
    """Marks a candidate kept as written (a system executable, a network URL)."""


_ORIGINAL: Final = _KeepOriginal()


@dataclass(frozen=True)
class _Span:
    """A host-path candidate in a decoded view: ``kind`` and what it is kept as (a
    project-relative path, :data:`_ORIGINAL`, or ``None``: a host path that must go)."""

    start: int
    end: int
    kind: SpanKind
    keep: str | _KeepOriginal | None


def _boundary(text: str, index: int) -> Literal["strong", "option", "glob", "letter"] | None:
    """How a path starting at ``text[index]`` is separated from what precedes it."""
    if index == 0:
        return "strong"
    before = text[index - 1]
    if before.isspace() or before in _SEPARATORS:
        return "strong"
    if before in _WORD_CHARS:
        # right after a short option ("tar -C/home/…"), whose "-" starts a word
        if before.isascii() and before.isalpha() and index >= 2 and text[index - 2] == "-":
            if index < 3 or text[index - 3] not in _WORD_CHARS:
                return "option"
            return "glob"  # "-C-C/home/…", "x-C/home/…": only a host folder counts
        return None
    if before in _GLOB_ENDS:
        return "glob"
    if unicodedata.category(before)[0] in "LNM":
        return "letter"  # a letter of another script, as in CJK text: "见/Users/…"
    return "strong"  # other punctuation or symbols: "«/srv/…»", "#/srv/…", "「/tmp/…"


def _climbs(word: str) -> bool:
    """True if ``word`` is a relative path that climbs above its start with ``..``. A
    folder name that ends in ``..`` counts as ``..``: it is one glued to what precedes
    it ("see:../../x", "-C-C../x")."""
    parts = word.replace("\\", "/").split("/")
    parts = [".." if p.endswith("..") and i < len(parts) - 1 else p for i, p in enumerate(parts)]
    return bool(_GLUED_DOTDOT_RE.search(word)) or (
        ".." in parts and _split("/".join(parts).lstrip("/")) is None
    )


def sha256_text(text: str) -> str:
    """Lower-case hex SHA-256 of ``text`` as UTF-8 (lone surrogates kept as is)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _has_forbidden_chars(text: str, *, allow_newlines: bool) -> bool:
    for ch in text:
        if allow_newlines and ch in "\n\t\r":
            continue
        if unicodedata.category(ch) in {"Cc", "Cs", "Cf", "Co", "Cn"}:
            return True
    return False


def _strip_forbidden(text: str) -> str:
    """Drop control, format, surrogate and private characters (keep newline and tab).

    One right before a path start (``/``, ``\\``, ``~``) becomes a space, so that
    dropping it does not glue the path to the word before it (``see<NUL>/srv/x``).
    """
    out: list[str] = []
    for index, ch in enumerate(text):
        if ch in "\n\t" or unicodedata.category(ch) not in {"Cc", "Cs", "Cf", "Co", "Cn"}:
            out.append(ch)
        elif text[index + 1 : index + 2] in {"/", "\\", "~"} and out and not out[-1].isspace():
            out.append(" ")
    return "".join(out)


def deny_reason(parts: Sequence[str]) -> RejectReason | None:
    """``"control-plane"`` for ``.agent``/``.git``, ``"sensitive"`` for keys and secrets.

    ``parts`` are the components of a project-relative path.
    """
    for part in parts:
        folded = part.casefold()
        if folded in CONTROL_PLANE_DIRS:
            return "control-plane"
        if folded in SENSITIVE_DIR_NAMES:
            return "sensitive"
    if parts:
        name = parts[-1].casefold()
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in SENSITIVE_NAME_PATTERNS):
            return "sensitive"
    return None


@dataclass(frozen=True)
class CleanPath:
    """A cleaned path: ``path`` (project-relative POSIX, ``"."`` for the root) or
    ``rejected`` (the reason); never both."""

    path: str | None
    rejected: RejectReason | None = None


@dataclass(frozen=True)
class CleanText:
    """Cleaned text: ``text`` (``None`` when dropped), and what was done to it."""

    text: str | None
    redacted: bool = False
    truncated: bool = False


@dataclass(frozen=True)
class _Root:
    parts: tuple[str, ...]
    windows: bool


def _split(path: str) -> tuple[bool, tuple[str, ...]] | None:
    """Split a ``/``-separated path into (windows, components) after lexical
    normalization; ``None`` when ``..`` climbs above the start."""
    windows = _DRIVE_RE.match(path) is not None
    head: tuple[str, ...] = ()
    rest = path
    if windows:
        head, rest = (path[:2].upper(),), path[2:]
    parts: list[str] = []
    for part in rest.split("/"):
        if part in {"", "."}:
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(part)
    return windows, head + tuple(parts)


class PathSanitizer:
    """Makes agent-reported paths project-relative, or rejects them; finds host paths
    in commands and text in any spelling (see :func:`decoded_view`).

    Args:
        roots: absolute paths that mean "the project root": the project folder as this
            host sees it, and (for a run audited after the fact) the folder the agent
            had as its working directory. POSIX or Windows form. With no root, every
            absolute path other than a system executable is a host path (``check``).

    Raises:
        UsageError: a root is not an absolute path.
    """

    def __init__(self, roots: Iterable[str]) -> None:
        found: list[_Root] = []
        for root in roots:
            normalized = root.replace("\\", "/")
            split = _split(normalized)
            if split is None or not (normalized.startswith("/") or split[0]):
                raise UsageError(
                    f"project root {root!r} is not an absolute path",
                    hint="Give the folder the agent ran in as an absolute path (--agent-root).",
                )
            windows, parts = split
            found.append(_Root(parts=parts, windows=windows))
        # Longest first, so that a nested root wins.
        self._roots = tuple(sorted(found, key=lambda r: len(r.parts), reverse=True))
        self._tops = frozenset(
            top.casefold()
            for top in (
                *HOST_TOP_DIRS,
                *(
                    r.parts[1] if r.windows else r.parts[0]
                    for r in found
                    if len(r.parts) > int(r.windows)
                ),
            )
        )

    # -- paths ------------------------------------------------------------------------

    def clean(self, raw: object) -> CleanPath:
        """Return the project-relative POSIX form of ``raw``, or why it is rejected.

        Rejected: not a string, empty, over 1024 characters, control characters or NUL,
        a separator, dot or ``~`` spelled in another way (percent-encoded, escaped, a
        look-alike such as U+2215 or U+FF0F), or a relative result holding ``:``,
        quotes, a backtick or ``$`` (``invalid``); ``~`` or ``$HOME``-style (``home``);
        UNC (``unc``); a URL (``url``); absolute outside every root, ``..`` above the
        root, or a relative result that holds a host path (``see /home/u/x``,
        ``-C/home/u``: ``outside``); ``.agent``/``.git`` (``control-plane``); key files,
        and a path that holds a secret (``sensitive``). Backslashes count as
        separators. A path is only ever kept in the form a reader sees: never
        "relative" because it was disguised.
        """
        if not isinstance(raw, str):
            return CleanPath(None, "invalid")
        text = raw.strip()
        if not text or len(text) > MAX_PATH_CHARS:
            return CleanPath(None, "invalid")
        if _has_forbidden_chars(text, allow_newlines=False):
            return CleanPath(None, "invalid")
        # Judged as written: normalizing ("\\" is a separator) can break a secret's
        # spelling ("game/\\u0073k-proj-…" would become "game/u0073k-proj-…").
        if contains_secret(text):
            return CleanPath(None, "sensitive")
        lexical = self._clean_lexical(text)
        if lexical.path is None:
            return lexical
        if any(view.disguised for view in decoded_views(text)):
            return CleanPath(None, "invalid")
        # The result, and a relative input as written (normalizing "see:../../u/x"
        # would hide the climb), must be clean words with no host path in them.
        slashed = text.replace("\\", "/")
        absolute = slashed.startswith("/") or _DRIVE_RE.match(slashed) is not None
        for form in (lexical.path,) if absolute else (lexical.path, text):
            if _UNSAFE_IN_RELATIVE_RE.search(form):
                return CleanPath(None, "invalid")
            if form != "." and self._holds(form, "path"):
                return CleanPath(None, "outside")
        return lexical

    def _clean_lexical(self, text: str) -> CleanPath:
        if text.startswith("~") or _ENV_HOME_RE.search(text):
            return CleanPath(None, "home")
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]{1,31}://", text):
            return CleanPath(None, "url")
        slashed = text.replace("\\", "/")
        if slashed.startswith("//"):
            return CleanPath(None, "unc")
        if slashed.lower().startswith("file:"):
            return CleanPath(None, "url")
        windows = _DRIVE_RE.match(slashed) is not None
        if windows and not slashed[2:].startswith("/"):
            return CleanPath(None, "invalid")  # drive-relative "C:foo"
        split = _split(slashed)
        if split is None:
            return CleanPath(None, "outside")
        _, parts = split
        if windows or slashed.startswith("/"):
            relative = self._strip_root(windows, parts)
            if relative is None:
                return CleanPath(None, "outside")
            parts = relative
        reason = deny_reason(parts)
        if reason is not None:
            return CleanPath(None, reason)
        return CleanPath("/".join(parts) if parts else ".")

    def _strip_root(self, windows: bool, parts: tuple[str, ...]) -> tuple[str, ...] | None:
        for root in self._roots:
            if root.windows != windows or len(parts) < len(root.parts):
                continue
            head = parts[: len(root.parts)]
            same = (
                [p.casefold() for p in head] == [p.casefold() for p in root.parts]
                if windows
                else head == root.parts
            )
            if same:
                return parts[len(root.parts) :]
        return None

    # -- finding host paths -----------------------------------------------------------

    def holds_host_path(self, text: str, *, command: bool = False) -> bool:
        """True when ``text`` (a command with ``command``, else free text) holds a host
        path, a home reference, a ``user@host:`` or a non-network URL, in any spelling
        :func:`decoded_view` undoes. What :meth:`clean_text` and :meth:`clean_command`
        would remove; ``agc ledger check`` reports it as ``host-path``."""
        return self._holds(text, "command" if command else "text")

    def _holds(self, text: str, mode: _Mode) -> bool:
        return any(span.keep is None for span in self._source_spans(text[:SCAN_LIMIT], mode))

    def _source_spans(self, text: str, mode: _Mode) -> list[_Span]:
        """Host-path candidates in ``text`` as written and as decoded, in ``text``'s
        positions, merged. Both are looked at: decoding can also hide a path (a UNC
        path's leading double backslash read as a JSON escape is a single one)."""
        spans = self._spans(text, mode)
        for view in decoded_views(text)[1:]:
            for span in self._spans(view.text, mode):
                start, end = view.span(span.start, span.end)
                spans.append(_Span(start, end, span.kind, span.keep))
        return _merge(spans)

    def _spans(self, text: str, mode: _Mode) -> list[_Span]:
        """Host-path candidates in a decoded ``text``, merged, in order."""
        found: list[_Span] = []
        for match in _URL_RE.finditer(text):
            scheme, rest = match.group().split("://", 1)
            keep = (
                scheme.lower() in _NETWORK_SCHEMES
                and not re.search(r"[?#@]", rest)
                and not _URL_HOME_RE.search(rest)
            )
            found.append(_Span(*match.span(), "url", _ORIGINAL if keep else None))
        found.extend(_Span(*m.span("r"), "remote", None) for m in _REMOTE_RE.finditer(text))
        found.extend(_Span(*m.span(), "home", None) for m in _ENV_PATH_RE.finditer(text))
        found.extend(_Span(*m.span(), "home", None) for m in _MARK_TAIL_RE.finditer(text))
        for match in _DIFF_PATH_RE.finditer(text):
            span = self._diff_span(match)
            if span is not None:
                found.append(span)
        body_end = -1
        for match in _START_RE.finditer(text):  # zero-width: every position is tried
            start = match.start()
            boundary = _boundary(text, start)
            if boundary is None or not self._starts_path(
                text, start, match.group(1), boundary, mode
            ):
                continue
            # A start inside the previous body ends where it does: read each run once
            # (a 64 KiB run of "见/见/…" was matched once per separator, quadratic).
            if start >= body_end:
                body_end = _BODY_RE.match(text, start).end()  # type: ignore[union-attr]
            end = body_end
            found.append(_Span(start, end, "path", self._keep(text[start:end])))
        if ".." in text:
            found.extend(
                _Span(*m.span(), "climb", None)
                for m in _WORD_RE.finditer(text)
                if ".." in m.group() and _climbs(m.group())
            )
        return _merge(found)

    def _starts_path(
        self,
        text: str,
        index: int,
        start: str,
        boundary: Literal["strong", "option", "glob", "letter"],
        mode: _Mode,
    ) -> bool:
        """Whether the ``start`` (``/``, ``~``, ``\\``, ``//``, ``\\\\`` or a drive) at
        ``index`` starts a path, given what precedes it. In free text a path must look
        like one ("fps / smooth", "~5 enemies", "收集/射击" stay words); after a letter
        of another script it must start with a host folder; in a command any absolute
        path counts."""
        after = text[index + len(start) : index + len(start) + 1]
        glued = boundary in {"glob", "letter"}
        if start[0].isalpha():  # a drive: "C:\", "c:/"
            return True
        if start == "\\\\":
            return after != "" and not after.isspace()
        if start == "//":
            return bool(re.match(r"\w", after)) if (glued or mode == "text") else True
        if start == "~":
            if boundary == "option":
                return _HOME_OPTION_RE.match(text, index) is not None
            if mode != "text" and boundary == "strong":
                return True
            return _HOME_TEXT_RE.match(text, index) is not None
        if start == "\\":
            if glued:
                return self._top_at(text, index)
            return _ROOTED_WINDOWS_RE.match(text, index) is not None
        # start == "/"
        two_parts = _COMPONENT_RE.match(text, index + 1) is not None
        if boundary == "glob":
            return self._top_at(text, index)
        if boundary == "letter":
            three_parts = _TWO_COMPONENTS_RE.match(text, index + 1) is not None
            return self._top_at(text, index) or three_parts or (mode == "command" and two_parts)
        if boundary == "option":
            # "cut -d/ -f2": a lone "/" after a short option is its value, not a path
            if mode == "command":
                return after != "" and after not in _STOPS
            return two_parts or self._top_at(text, index)
        return True if mode != "text" else two_parts

    def _top_at(self, text: str, index: int) -> bool:
        """True when the separator at ``index`` starts a host folder (``/Users/``,
        ``\\home\\``, the project root's first folder …)."""
        match = _COMPONENT_RE.match(text, index + 1)
        return match is not None and text[index + 1 : match.end() - 1].casefold() in self._tops

    def _diff_span(self, match: re.Match[str]) -> _Span | None:
        rest = match.group("rest")
        drive = _DRIVE_RE.match(rest) is not None and rest[2:3] in {"/", "\\"}
        candidate = rest if drive else "/" + rest.lstrip("/")
        unc = len(match.group("slashes")) > 2  # "a/" + "//host/share/…"
        if unc or rest.startswith(("~", "\\")):
            return _Span(match.start(), match.end(), "diff", None)  # a home or UNC path
        if not drive and not self._top_at(candidate, 0):
            return None  # "a/src/x.py": a path relative to the repository
        keep = self._keep(candidate)
        if isinstance(keep, str):
            keep = match.group()[:2] + keep  # "a/" + the project-relative path
        return _Span(match.start(), match.end(), "diff", keep)

    def _keep(self, candidate: str) -> str | _KeepOriginal | None:
        """What a path found in text is kept as: itself for a system executable
        (:data:`_ORIGINAL`), its project-relative form, or ``None`` (a host path)."""
        if candidate in SYSTEM_PATHS or (
            candidate.startswith(SYSTEM_PATH_PREFIXES) and "/.." not in candidate
        ):
            return _ORIGINAL
        stripped = candidate.rstrip(".:")
        cleaned = self.clean(stripped)
        if cleaned.path is None:
            return None
        return cleaned.path + candidate[len(stripped) :]

    # -- commands and text ------------------------------------------------------------

    def clean_command(self, raw: object, *, max_chars: int) -> CleanText:
        """Clean a shell command: absolute paths inside the project become relative;
        system executables stay; any other host path (in any spelling
        :func:`decoded_view` undoes), ``~``, ``$HOME``, a ``..`` climbing out,
        ``user@host:``, a URL with credentials or a query or of a non-network scheme,
        a secret found by :func:`agc._core.redact.contains_secret` (tokens, keys,
        ``PASSWORD=…``), or a control character drops the whole command
        (``redacted``). Then it is cut to ``max_chars``.
        """
        if not isinstance(raw, str):
            return CleanText(None)
        if (
            _has_forbidden_chars(raw, allow_newlines=True)
            or _ENV_HOME_RE.search(raw)
            or contains_secret(raw)
        ):
            return CleanText(None, redacted=True)
        text, _ = self._rewrite(raw[:SCAN_LIMIT], "command")
        if text is None or self.holds_host_path(text, command=True):
            return CleanText(None, redacted=True)
        cut = _cut(text, max_chars)
        return CleanText(cut.text, truncated=cut.truncated or len(raw) > SCAN_LIMIT)

    def clean_text(self, raw: object, *, max_chars: int, single_line: bool = False) -> CleanText:
        """Clean free text (briefs, prompts, queries, names): control characters are
        dropped, absolute paths inside the project become relative, other host paths
        (in any spelling :func:`decoded_view` undoes), ``user@host:``, URLs with
        credentials or a query or of a non-network scheme, and secrets
        (:func:`agc._core.redact.redact_text`) become ``[path]`` / ``[url]`` /
        ``[secret]`` (``redacted``), then it is cut to
        ``max_chars``. Text that still holds a host path after that is dropped
        (``text`` is ``None``).
        """
        if not isinstance(raw, str):
            return CleanText(None)
        # Secrets first, while a token wrapped across two lines is still joinable.
        text, found_secret = _redact_head(raw)
        if single_line:
            text = text.replace("\n", " ").replace("\t", " ")
        replaced = _ENV_PATH_RE.sub("[path]", text)
        cleaned, foreign = self._rewrite(replaced, "text")
        assert cleaned is not None
        rounds = 0
        while self.holds_host_path(cleaned):
            # a replacement can reveal another spelling: rarely needed, bounded
            rounds += 1
            if rounds > 2:
                return CleanText(None, redacted=True)
            again, more = self._rewrite(cleaned, "text")
            assert again is not None
            cleaned, foreign = again, foreign + more
        result = _cut(cleaned, max_chars)
        return CleanText(
            result.text,
            redacted=found_secret or replaced != text or foreign > 0,
            truncated=result.truncated or len(raw) > SCAN_LIMIT,
        )

    def _rewrite(self, text: str, mode: _Mode) -> tuple[str | None, int]:
        """``text`` with each host-path candidate replaced by what it is kept as, and
        the number replaced by ``[path]`` / ``[url]``; ``(None, 1)`` for a command
        with one that cannot be kept (commands are dropped whole)."""
        pieces: list[str] = []
        last = 0
        foreign = 0
        for span in self._source_spans(text, mode):
            start, end = span.start, span.end
            if span.keep is None:
                if mode == "command":
                    return None, 1
                foreign += 1
                replacement = "[url]" if span.kind == "url" else "[path]"
            elif isinstance(span.keep, _KeepOriginal):
                replacement = text[start:end]
            else:
                replacement = span.keep
            pieces.append(text[last:start])
            pieces.append(replacement)
            last = end
        pieces.append(text[last:])
        return "".join(pieces), foreign


_STOPS: Final = frozenset(" \t\n\r\f\v'\"`;|&<>(){}[],")


def _merge(spans: list[_Span]) -> list[_Span]:
    """Overlapping candidates become one, in order of their start: anything inside a
    network URL belongs to the URL; otherwise the union is kept only when every part
    is kept and the first one covers it, else it is a host path."""
    merged: list[_Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if merged and span.start < merged[-1].end:
            head = merged[-1]
            inside = span.end <= head.end
            if inside and (head.kind == "url" or span.keep is not None):
                continue
            merged[-1] = _Span(head.start, max(head.end, span.end), head.kind, None)
            continue
        merged.append(span)
    return merged


_TOKEN_MARGIN: Final = 8 * 1024
"""Characters past :data:`SCAN_LIMIT` read with it, so that a token the limit cuts in
two is still found whole (the tokens of docs/secrets.md are shorter)."""


def _redact_head(raw: str) -> tuple[str, bool]:
    """The first :data:`SCAN_LIMIT` characters of ``raw``, forbidden characters
    dropped and secrets redacted, and whether a secret was found.

    A token that the limit cuts in two is replaced whole: cut first, its head is too
    short for its rule and was kept, and ``[path]`` replacements can shorten the text
    enough to bring it within the few thousand characters the ledger keeps. So the
    text is redacted with :data:`_TOKEN_MARGIN` more characters, and the part past the
    limit that the redaction left untouched is cut off again.
    """
    stripped = _strip_forbidden(raw[: SCAN_LIMIT + _TOKEN_MARGIN])
    tail = 0
    if len(raw) > SCAN_LIMIT:
        tail = max(0, len(stripped) - len(_strip_forbidden(raw[:SCAN_LIMIT])))
    text = redact_text(stripped, marker=SECRET_MARK)
    found_secret = text != stripped
    same = 0  # how many of the last characters the redaction left as they were
    while same < tail and text[-1 - same] == stripped[-1 - same]:
        same += 1
    return (text[: len(text) - same] if same else text), found_secret


def _cut(text: str, max_chars: int) -> CleanText:
    if len(text) <= max_chars:
        return CleanText(text)
    return CleanText(text[:max_chars], truncated=True)


def clean_token(raw: object) -> str | None:
    """An opaque id or a tool/server name: 1-128 of ``[A-Za-z0-9_.:@+-]``, not a
    ``user@host:`` form and no secret (:func:`agc._core.redact.contains_secret`), else
    ``None``."""
    if (
        isinstance(raw, str)
        and _TOKEN_RE.fullmatch(raw)
        and not _REMOTE_RE.search(raw)
        and not contains_secret(raw)
    ):
        return raw
    return None


def clean_name(raw: object, *, max_chars: int = 120) -> str | None:
    """An attachment's display name: its last path component, control characters
    dropped, cut to ``max_chars``; ``None`` if nothing is left or it names a
    folder."""
    if not isinstance(raw, str):
        return None
    text = _strip_forbidden(raw).strip()
    view = decoded_view(text)  # a separator in any spelling separates ("a%2Fb", U+FF0F)
    if view.text.rstrip().endswith(("/", "\\")):
        return None  # a folder, not a file name
    cut = max(view.text.rfind("/"), view.text.rfind("\\"))
    base = text if cut < 0 else text[view.span(cut + 1, len(view.text))[0] :]
    base = redact_text(base.strip(), marker=SECRET_MARK).replace("\n", " ").replace("\t", " ")
    if not base or base in {".", ".."} or base.startswith("~"):
        return None
    return _PLAIN.clean_text(base, max_chars=max_chars, single_line=True).text or None


_PLAIN: Final = PathSanitizer([])
"""A sanitizer that knows no project root: every absolute path is a host path."""


def clean_media_type(raw: object) -> str | None:
    """``type/subtype`` in lower case (RFC 6838 characters), parameters dropped."""
    if not isinstance(raw, str):
        return None
    value = raw.split(";", 1)[0].strip().lower()
    return value if _MEDIA_TYPE_RE.fullmatch(value) else None
