"""Redaction of high-confidence secrets before a snapshot reaches the disk.

Only patterns with a fixed, documented prefix or structure are matched, so ordinary
text is not mangled: each match is replaced by ``[REDACTED:<kind>]``. The rules come
from the providers' documented key formats (OpenAI ``sk-``/``sk-proj-``, Anthropic
``sk-ant-``, AWS access key ids ``AKIA``/``ASIA``, GitHub ``ghp_``/``github_pat_``,
GitLab ``glpat-``, Slack ``xox?-`` and webhook URLs, Google ``AIza``, Stripe
``sk_live_``), RFC 6750 bearer tokens, RFC 7519 JWTs and RFC 7468 PEM private keys.

Values under the keys in :data:`PROTECTED_KEYS` (call ids, signatures, encrypted
reasoning) are never touched: they are opaque tokens a provider checks byte for byte,
and changing them would make the history unusable.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "PROTECTED_KEYS",
    "SECRET_KINDS",
    "RedactionStats",
    "redact_text",
    "redact_value",
]

# Not inside a longer word, except right after a JSON escape (backslash-n, -t, -u00e9):
# tool-call arguments are JSON text, where a secret starting a line follows backslash-n.
_AFTER_ESCAPE: Final = r"(?<=\\[nrtbf])|(?<=\\u[0-9A-Fa-f]{4})"
_NOT_BEFORE: Final = r"(?:(?<![A-Za-z0-9_-])|" + _AFTER_ESCAPE + ")"
_NOT_AFTER: Final = r"(?![A-Za-z0-9_-])"

_AWS_SECRET_NAMES: Final = r"aws_secret_access_key|aws_secret_key|secretaccesskey"  # noqa: S105 - names, not a secret

# (kind, pattern). A pattern's group 1, if any, is kept (the scheme of a bearer token).
# Order matters: more specific prefixes first (sk-ant- before sk-).
_RULES: Final[tuple[tuple[str, str], ...]] = (
    (
        "private-key",
        # To the END line; a cut-off key to the end of the string or of the JSON string
        # holding it (an unescaped quote), so JSON arguments stay valid.
        # (OpenPGP armor, RFC 4880, ends the header with "PRIVATE KEY BLOCK-----".)
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[^\"\\]|\\[\s\S])*?"
        r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?=\")|\\?\Z)",
    ),
    ("anthropic-key", _NOT_BEFORE + r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai-key", _NOT_BEFORE + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"),
    ("openai-key", _NOT_BEFORE + r"sk-[A-Za-z0-9]{32,}" + _NOT_AFTER),
    ("stripe-key", _NOT_BEFORE + r"(?:sk|rk)_live_[A-Za-z0-9]{20,}"),
    (
        "aws-access-key",
        r"(?:(?<![A-Z0-9])|" + _AFTER_ESCAPE + r")(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])",
    ),
    (
        "aws-secret-key",
        r"((?i:" + _AWS_SECRET_NAMES + r")[\"']?\s*[:=]\s*[\"']?)"
        r"[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])",
    ),
    ("github-token", _NOT_BEFORE + r"gh[pousr]_[A-Za-z0-9]{36,255}"),
    ("github-token", _NOT_BEFORE + r"github_pat_[A-Za-z0-9_]{22,255}"),
    ("gitlab-token", _NOT_BEFORE + r"glpat-[A-Za-z0-9_-]{20,}"),
    ("slack-token", _NOT_BEFORE + r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("slack-token", _NOT_BEFORE + r"xapp-[0-9]+-[A-Za-z0-9-]{10,}"),
    (
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/-]{20,}",
    ),
    ("google-api-key", _NOT_BEFORE + r"AIza[0-9A-Za-z_-]{35}"),
    ("jwt", _NOT_BEFORE + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    # The scheme name is kept (group 1); only the token is replaced.
    ("bearer-token", r"((?i:bearer)\s+)[A-Za-z0-9._~+/-]{20,}=*"),
)

SECRET_KINDS: Final[tuple[str, ...]] = tuple(dict.fromkeys(kind for kind, _ in _RULES))

PROTECTED_KEYS: Final[frozenset[str]] = frozenset(
    {
        "id",
        "call_id",
        "tool_call_id",
        "tool_use_id",
        "signature",
        "thinking_signature",
        "encrypted_content",
    }
)


# Blocks whose `input` is the model's arguments to a tool (Anthropic Messages).
_TOOL_USE_TYPES: Final = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})

# The same secret as a JSON value whose key is its name (a tool's ``input`` object).
_AWS_SECRET_KEY_NAME: Final = re.compile(r"(?i:" + _AWS_SECRET_NAMES + r")")
_AWS_SECRET_VALUE: Final = re.compile(r"\s*[A-Za-z0-9/+=]{40}\s*")

_COMPILED: Final[tuple[tuple[str, re.Pattern[str]], ...]] = tuple(
    (kind, re.compile(pattern)) for kind, pattern in _RULES
)


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


def redact_text(text: str, stats: RedactionStats | None = None) -> str:
    """Return ``text`` with every high-confidence secret replaced by ``[REDACTED:<kind>]``.

    The replacement holds no quote, backslash or newline, so a JSON document held in a
    string (tool-call ``arguments``) stays valid JSON.
    """
    if len(text) < 16:
        return text
    for kind, regex in _COMPILED:
        text = regex.sub(_replacer(kind, keep_group=regex.groups > 0, stats=stats), text)
    return text


def _replacer(
    kind: str, *, keep_group: bool, stats: RedactionStats | None
) -> Callable[[re.Match[str]], str]:
    replacement = f"[REDACTED:{kind}]"

    def _sub(match: re.Match[str]) -> str:
        if stats is not None:
            stats.by_kind[kind] += 1
        return (match.group(1) if keep_group else "") + replacement

    return _sub


def redact_value(value: Any, stats: RedactionStats | None = None) -> Any:
    """Return a copy of a JSON value with secrets redacted in every string.

    Strings under :data:`PROTECTED_KEYS` are copied unchanged, as is the ``data`` of a
    ``redacted_thinking`` block (Anthropic's encrypted thinking). Dictionary keys are
    scanned too.
    """
    return _redact(value, stats, protected=False)


def _redact(
    value: Any, stats: RedactionStats | None, *, protected: bool, payload: bool = False
) -> Any:
    """``payload``: inside a tool's own ``input``, where no provider-checked id lives."""
    if isinstance(value, str):
        return value if protected else redact_text(value, stats)
    if isinstance(value, list):
        return [_redact(item, stats, protected=protected, payload=payload) for item in value]
    if isinstance(value, Mapping):
        opaque_data = value.get("type") == "redacted_thinking"
        tool_use = value.get("type") in _TOOL_USE_TYPES
        out: dict[str, Any] = {}
        for key, item in value.items():
            new_key = redact_text(key, stats) if isinstance(key, str) else key
            inner = not protected and (payload or (tool_use and key == "input"))
            keep = not inner and (
                protected or key in PROTECTED_KEYS or (opaque_data and key == "data")
            )
            if not keep and _is_aws_secret_entry(key, item):
                if stats is not None:
                    stats.by_kind["aws-secret-key"] += 1
                out[new_key] = "[REDACTED:aws-secret-key]"
                continue
            out[new_key] = _redact(item, stats, protected=keep, payload=inner)
        return out
    return value


def _is_aws_secret_entry(key: Any, item: Any) -> bool:
    """``{"aws_secret_access_key": "<40 characters>"}``: the name is the key."""
    return (
        isinstance(key, str)
        and isinstance(item, str)
        and _AWS_SECRET_KEY_NAME.fullmatch(key) is not None
        and _AWS_SECRET_VALUE.fullmatch(item) is not None
    )
