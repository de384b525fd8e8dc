"""Pure cleaning of what an agent wrote: paths, commands, free text, names and ids.

Seed 000 §5 and §8: nothing that reaches a turn file may hold an absolute host path, a
home directory, a user name, a token or a URL signature. Paths are made
project-relative POSIX or rejected; a command whose paths cannot all be made relative
is dropped whole (``commandRedacted``, §5.2); design text keeps its words and loses its
host paths. Nothing here touches the disk (hashing is in :mod:`agc.ledger._project`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from agc._core.redact import contains_secret, redact_text
from agc.errors import UsageError

__all__ = [
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
"""Base names never read, hashed or written (§8 "sensitive files"), case-insensitive."""

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
# A path candidate starts at the beginning, after a separator-like character or right
# after a short option ("-C/x"), and is absolute (POSIX, Windows drive, UNC, a rooted
# "\a\b" with two backslashes at least) or home-relative (~).
_ABS_RE: Final = re.compile(
    r"(?:(?:^|(?<=[\s'\"`=(<>|;&,\[{:@]))"
    r"(?:[A-Za-z]:[\\/]|\\\\|/|~|\\(?=[^\s\\/'\"`;|&<>(){}\[\],]+\\))"
    # after a short option a lone "/" or "~" is a value ("cut -d/"), not a path
    r"|(?<=(?<![A-Za-z0-9_.~/\\-])-[A-Za-z])"
    r"(?:[A-Za-z]:[\\/]|\\\\|/(?=[^\s'\"`;|&<>(){}\[\],])|~(?=[\\/A-Za-z_])|\\(?=[^\s\\/'\"`;|&<>(){}\[\],]+\\)))"
    r"[^\s'\"`;|&<>(){}\[\],]*"
)
# In free text a path must look like one, so that "fps / smooth" or "~5 enemies" stay
# words: a POSIX path needs two components, a home path a separator after "~" or
# "~user".
_ABS_TEXT_RE: Final = re.compile(
    r"(?:^|(?<=[\s'\"`=(<>|;&,\[{:@]))"
    r"(?:[A-Za-z]:[\\/]|\\\\|//(?=\w)|/(?=[^\s/'\"`;|&<>(){}\[\],]+[\\/])|~(?=[\\/])"
    r"|~[A-Za-z_][\w.-]*(?=[\\/])|\\(?=[^\s\\/'\"`;|&<>(){}\[\],]+\\))"
    r"[^\s'\"`;|&<>(){}\[\],]*"
)
# Where a path may start although it is glued to what precedes it: after any character
# that cannot be part of an ASCII path word (a CJK letter, a full-width colon, "**",
# a curly quote, "}"), or right after a short option ("tar -C/home/…").
_GLUED: Final = r"(?:(?<![A-Za-z0-9_.~/\\$%-])|(?<=(?<![A-Za-z0-9_.~/\\-])-[A-Za-z]))"
HOST_TOP_DIRS: Final = (
    "Users", "home", "root", "tmp", "private", "var", "etc", "opt", "mnt", "media",
    "Volumes", "usr", "proc", "Library", "System", "Applications", "nix", "cygdrive",
)  # fmt: skip
"""First folders of absolute host paths (homes, temp, mounts, system): a glued path is
taken for a host path only when it starts with one of these (or with the first folder
of a project root), so that "收集/射击/跑酷" or "动作/RPG/卡牌" stay words."""
# A path glued to a word that starts with ".." always climbs out of where it starts.
_GLUED_DOTDOT_RE: Final = re.compile(_GLUED + r"\.\.[/\\]")
_TOKEN_RE: Final = re.compile(r"[A-Za-z0-9_.:@+-]{1,128}")
_MEDIA_TYPE_RE: Final = re.compile(
    r"[a-z0-9][a-z0-9!#$&^_.+-]{0,62}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"
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

    ``parts`` are the components of a project-relative path (§8).
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
    """Makes agent-reported paths project-relative, or rejects them (§5.2, §8).

    Args:
        roots: absolute paths that mean "the project root": the project folder as this
            host sees it, and (for a run audited after the fact) the folder the agent
            had as its working directory. POSIX or Windows form.

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
                    hint="Give each project root as an absolute POSIX or Windows path.",
                )
            windows, parts = split
            found.append(_Root(parts=parts, windows=windows))
        # Longest first, so that a nested root wins.
        self._roots = tuple(sorted(found, key=lambda r: len(r.parts), reverse=True))
        tops = {
            *HOST_TOP_DIRS,
            *(
                r.parts[1] if r.windows else r.parts[0]
                for r in found
                if len(r.parts) > int(r.windows)
            ),
        }
        names = "|".join(re.escape(t) for t in sorted(tops, key=len, reverse=True))
        self._glued_re = re.compile(
            _GLUED
            + r"(?:[A-Za-z]:[\\/]|\\\\(?=\w)|//(?=\w)|~[\\/]|~[A-Za-z_][\w.-]*(?=[\\/])|[\\/](?i:"
            + names
            + r")"
            r"(?=[\\/]))[^\s'\"`;|&<>(){}\[\],]*"
        )

    # -- paths ------------------------------------------------------------------------

    def clean(self, raw: object) -> CleanPath:
        """Return the project-relative POSIX form of ``raw``, or why it is rejected.

        Rejected: not a string, empty, over 1024 characters, control characters or NUL
        (``invalid``); ``~`` or ``$HOME``-style (``home``); UNC (``unc``); a URL
        (``url``); absolute outside every root or ``..`` above the root (``outside``);
        ``.agent``/``.git`` (``control-plane``); keys and secrets (``sensitive``).
        Backslashes count as separators.
        """
        if not isinstance(raw, str):
            return CleanPath(None, "invalid")
        text = raw.strip()
        if not text or len(text) > MAX_PATH_CHARS:
            return CleanPath(None, "invalid")
        if _has_forbidden_chars(text, allow_newlines=False):
            return CleanPath(None, "invalid")
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

    # -- commands and text ------------------------------------------------------------

    def clean_command(self, raw: object, *, max_chars: int) -> CleanText:
        """Clean a shell command (§5.2): absolute paths inside the project become
        relative; system executables stay; any other host path, ``~``, ``$HOME``, a
        ``..`` climbing out, a URL with credentials or a query, a secret found by
        :func:`agc._core.redact.contains_secret` (tokens, keys, ``PASSWORD=…``), or a
        control character drops the whole command (``redacted``). Then it is cut to
        ``max_chars``.
        """
        if not isinstance(raw, str):
            return CleanText(None)
        if (
            _has_forbidden_chars(raw, allow_newlines=True)
            or _ENV_HOME_RE.search(raw)
            or contains_secret(raw)
        ):
            return CleanText(None, redacted=True)
        text = self._replace_paths(raw, on_foreign=None)
        if text is None:
            return CleanText(None, redacted=True)
        return _cut(text, max_chars)

    def clean_text(self, raw: object, *, max_chars: int, single_line: bool = False) -> CleanText:
        """Clean free text (briefs, prompts, queries, names): control characters are
        dropped, absolute paths inside the project become relative, other host paths,
        URLs with credentials or a query and secrets (:func:`agc._core.redact.redact_text`)
        become ``[path]`` / ``[url]`` / ``[secret]`` (``redacted``), then it is cut to
        ``max_chars``.
        """
        if not isinstance(raw, str):
            return CleanText(None)
        stripped = _strip_forbidden(raw)
        # Secrets first, while a token wrapped across two lines is still joinable.
        text = redact_text(stripped, marker=SECRET_MARK)
        found_secret = text != stripped
        if single_line:
            text = text.replace("\n", " ").replace("\t", " ")
        replaced = _ENV_PATH_RE.sub("[path]", text)
        cleaned = self._replace_paths(replaced, on_foreign="[path]")
        assert cleaned is not None
        cleaned = _WORD_RE.sub(_hide_climbing_word, cleaned)
        marks = cleaned.count("[path]") + cleaned.count("[url]")
        redacted = (
            found_secret
            or replaced != text
            or marks > replaced.count("[path]") + replaced.count("[url]")
        )
        result = _cut(cleaned, max_chars)
        return CleanText(result.text, redacted=redacted, truncated=result.truncated)

    def _replace_paths(self, text: str, *, on_foreign: str | None) -> str | None:
        """Rewrite path candidates in ``text``; ``None`` when one cannot be kept and
        ``on_foreign`` is ``None`` (commands are then dropped whole)."""
        pieces: list[str] = []
        last = 0
        path_re = _ABS_RE if on_foreign is None else _ABS_TEXT_RE
        spans = sorted(
            [(m.start(), m.end(), "url") for m in _URL_RE.finditer(text)]
            + [(m.start(), m.end(), "path") for m in path_re.finditer(text)]
            + [(m.start(), m.end(), "path") for m in self._glued_re.finditer(text)]
        )
        covered = -1
        for start, end, kind in spans:
            if start < covered:
                continue
            candidate = text[start:end]
            if kind == "url":
                scheme, rest = candidate.split("://", 1)
                keep = scheme.lower() != "file" and not re.search(r"[?#@]", rest)
                replacement = candidate if keep else None
                if replacement is None:
                    if on_foreign is None:
                        return None
                    replacement = "[url]"
            else:
                replacement = self._path_in_text(candidate)
                if replacement is None:
                    if on_foreign is None:
                        return None
                    replacement = on_foreign
            pieces.append(text[last:start])
            pieces.append(replacement)
            last = end
            covered = end
        pieces.append(text[last:])
        result = "".join(pieces)
        if on_foreign is None and ".." in result and self._climbs_out(result):
            return None
        return result

    def _path_in_text(self, candidate: str) -> str | None:
        """The relative form of an absolute path found in text, the path itself when it
        is a system executable, else ``None``."""
        if candidate in SYSTEM_PATHS or (
            candidate.startswith(SYSTEM_PATH_PREFIXES) and "/.." not in candidate
        ):
            return candidate
        cleaned = self.clean(candidate.rstrip(".:"))
        if cleaned.path is None:
            return None
        suffix = candidate[len(candidate.rstrip(".:")) :]
        return cleaned.path + suffix

    @staticmethod
    def _climbs_out(text: str) -> bool:
        """True if a whitespace-separated word is a relative path that climbs above its
        start with ``..`` (``cat ../../etc/passwd``, ``cd ..``)."""
        for word in re.split(r"[\s'\"`=(<>|;&,]+", text):
            if _GLUED_DOTDOT_RE.search(word) or (
                ".." in word.replace("\\", "/").split("/")
                and _split(word.replace("\\", "/").lstrip("/")) is None
            ):
                return True
        return False


_WORD_RE: Final = re.compile(r"[^\s'\"`;|&<>(){}\[\],=]+")


def _hide_climbing_word(match: re.Match[str]) -> str:
    """``[path]`` for a relative path that climbs above its start (``../../x``)."""
    word = match.group(0).replace("\\", "/")
    if _GLUED_DOTDOT_RE.search(word) or (
        ".." in word.split("/") and _split(word.lstrip("/")) is None
    ):
        return "[path]"
    return match.group(0)


def _cut(text: str, max_chars: int) -> CleanText:
    if len(text) <= max_chars:
        return CleanText(text)
    return CleanText(text[:max_chars], truncated=True)


def clean_token(raw: object) -> str | None:
    """An opaque id or a tool/server name: 1-128 of ``[A-Za-z0-9_.:@+-]`` and no secret
    (:func:`agc._core.redact.contains_secret`), else ``None``."""
    if isinstance(raw, str) and _TOKEN_RE.fullmatch(raw) and not contains_secret(raw):
        return raw
    return None


def clean_name(raw: object, *, max_chars: int = 120) -> str | None:
    """An attachment's display name: its last path component, control characters
    dropped, cut to ``max_chars``; ``None`` if nothing is left or it names a folder
    (§5.1)."""
    if not isinstance(raw, str):
        return None
    text = _strip_forbidden(raw).replace("\\", "/").strip()
    if text.endswith("/"):
        return None  # a folder, not a file name
    base = text.rsplit("/", 1)[-1].strip()
    base = redact_text(base, marker=SECRET_MARK).replace("\n", " ").replace("\t", " ")
    if not base or base in {".", ".."} or base.startswith("~"):
        return None
    return base[:max_chars]


def clean_media_type(raw: object) -> str | None:
    """``type/subtype`` in lower case (RFC 6838 characters), parameters dropped."""
    if not isinstance(raw, str):
        return None
    value = raw.split(";", 1)[0].strip().lower()
    return value if _MEDIA_TYPE_RE.fullmatch(value) else None
