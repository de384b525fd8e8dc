"""Names of extension items: one name per item, in the native form of its kind.

The rules, and where they come from:

* Skills: what Codex loads (codex-rs ``core-skills`` loader, checked against Codex
  0.171.0's ``skills/list``): the frontmatter ``name`` with every run of Unicode
  whitespace (the ``White_Space`` property, Rust's ``char::is_whitespace``) made one
  space and trimmed, at least 1 and at most 64 characters (Unicode scalar values).
  Nothing else is refused: ``crafter:onboard-repo``, ``PDF Processing`` and ``名前`` are
  kept as they are. agc also rewrites control and format characters (categories ``Cc``,
  ``Cf``: an escape sequence or a bidirectional override in a name would drive or
  deceive the terminal and the model). Two skill names collide when they are equal
  ignoring ASCII case (:func:`skill_folder_name` gives the projected folder: the name
  itself when it is a portable file name, else its Agent Skills form).
* MCP servers: Codex accepts server names matching ``^[A-Za-z0-9_-]+$`` and compares
  them case-sensitively, but the tool names it gives the model (``mcp__<server>__<tool>``)
  go through a sanitiser after which ``-`` and ``_`` can be the same character
  (codex-rs ``sanitize_responses_api_tool_name``), so ``a-b`` beside ``a_b`` is a
  collision too. ``agc_tools`` (agc's built-in server) and ``codex_apps`` (Codex's own
  apps server) are reserved.
* Skill and MCP names live in separate namespaces; unknown items are in none.
* A collision, or the same content imported again, keeps the new item and gives it the
  first free name of ``<name>-2``, ``<name>-3`` …

Everything here is pure: no file is touched.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable
from typing import Final, Literal

from agc.errors import ExtensionNameInvalidError

__all__ = [
    "MAX_NAME_LENGTH",
    "RESERVED_MCP_NAMES",
    "ItemType",
    "NameAllocator",
    "assign_name",
    "check_manual_name",
    "collapse_whitespace",
    "collision_key",
    "is_native_name",
    "normalize_name",
    "skill_folder_name",
]

ItemType = Literal["skill", "mcp", "unknown"]

MAX_NAME_LENGTH: Final = 64
"""Longest skill or MCP server name, in characters (Agent Skills ``name`` limit)."""
MAX_UNKNOWN_NAME_LENGTH: Final = 255
RESERVED_MCP_NAMES: Final[tuple[str, ...]] = ("agc_tools", "codex_apps")

_PORTABLE_FOLDER_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Unicode White_Space (what Rust's char::is_whitespace and so Codex's split_whitespace
# split on); Python's str.split also splits on U+001C..U+001F, which Codex keeps.
_WHITESPACE_RUN: Final = re.compile(
    "[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+"
)
_MCP_RE: Final = re.compile(r"[A-Za-z0-9_-]+")
_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def is_native_name(item_type: ItemType, name: str) -> bool:
    """Whether ``name`` is a valid name of its kind as it stands (no normalising)."""
    if item_type == "skill":
        return (
            0 < len(name) <= MAX_NAME_LENGTH
            and collapse_whitespace(name) == name
            and not _has_control(name)
        )
    if item_type == "mcp":
        return len(name) <= MAX_NAME_LENGTH and _MCP_RE.fullmatch(name) is not None
    return _is_unknown_name(name)


def collapse_whitespace(text: str) -> str:
    """``text`` with every run of Unicode whitespace one space, trimmed (as Codex reads a
    skill's ``name`` and ``description``)."""
    return _WHITESPACE_RUN.sub(" ", text).strip(" ")


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) in {"Cc", "Cf"} for ch in text)


def skill_folder_name(name: str) -> str:
    """The folder a projected skill named ``name`` goes in: ``name`` itself when it is a
    portable file name (ASCII letters, digits, ``.``, ``_``, ``-``, not first ``.``; at
    most 64 characters), else its Agent Skills form (accents dropped, lower-cased, every
    run of other characters one hyphen; ``skill`` when nothing is left). Codex takes the
    name from the frontmatter, not from the folder."""
    if len(name) <= MAX_NAME_LENGTH and _PORTABLE_FOLDER_RE.fullmatch(name):
        return name
    ascii_text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    text = re.sub(r"[^a-z0-9]+", "-", ascii_text.translate(_ASCII_LOWER)).strip("-")
    return text[:MAX_NAME_LENGTH].rstrip("-") or "skill"


def _is_unknown_name(name: str) -> bool:
    return (
        0 < len(name) <= MAX_UNKNOWN_NAME_LENGTH
        and name == name.strip()
        and not any(unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"} for ch in name)
    )


def normalize_name(item_type: ItemType, raw: str) -> str:
    """The native form of a name found in an extension (a frontmatter ``name``, a
    ``[mcp_servers.<name>]`` key), never empty.

    Skills: control and format characters become ``-``, whitespace runs one space
    (:func:`collapse_whitespace`), cut to 64 characters; ``skill`` when nothing is left
    (a name Codex already loads is returned unchanged). MCP servers: each
    character outside ``[A-Za-z0-9_-]`` becomes ``_`` (as Codex's own sanitiser does),
    trimmed to 64; ``server`` when empty. Unknown items keep their name, control
    characters replaced by ``_`` and trimmed to 255 (``item`` when empty).
    """
    if item_type == "skill":
        visible = "".join(
            "-"
            if unicodedata.category(ch) in {"Cc", "Cf"} and not _WHITESPACE_RUN.match(ch)
            else ch
            for ch in raw
        )
        return collapse_whitespace(visible)[:MAX_NAME_LENGTH].rstrip(" ") or "skill"
    if item_type == "mcp":
        return re.sub(r"[^A-Za-z0-9_-]", "_", raw)[:MAX_NAME_LENGTH] or "server"
    cleaned = "".join(
        "_" if unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"} else ch for ch in raw
    ).strip()
    return cleaned[:MAX_UNKNOWN_NAME_LENGTH].strip() or "item"


def collision_key(item_type: ItemType, name: str) -> str:
    """The key two names of one kind collide on: ASCII case-folded for skills, ``-``
    read as ``_`` for MCP servers (Codex's tool-name sanitising)."""
    if item_type == "skill":
        return name.translate(_ASCII_LOWER)
    if item_type == "mcp":
        return name.replace("-", "_")
    return name


def _with_suffix(item_type: ItemType, base: str, number: int) -> str:
    suffix = f"-{number}"
    head = base[: MAX_NAME_LENGTH - len(suffix)]
    if item_type == "skill":
        head = head.rstrip(" -") or "skill"
    return head + suffix


def _reserved_keys(item_type: ItemType, extra: Iterable[str]) -> set[str]:
    reserved = set(extra)
    if item_type == "mcp":
        reserved.update(RESERVED_MCP_NAMES)
    return {collision_key(item_type, name) for name in reserved}


def assign_name(
    item_type: ItemType,
    wanted: str,
    taken: Collection[str],
    *,
    reserved: Iterable[str] = (),
) -> str:
    """The name an item of ``item_type`` gets when it asks for ``wanted``.

    Args:
        item_type: ``"skill"``, ``"mcp"`` or ``"unknown"``.
        wanted: a name in native form (see :func:`normalize_name`).
        taken: names already used in the same namespace (compared by
            :func:`collision_key`).
        reserved: more names no item may take (``agc_tools`` and ``codex_apps`` are
            always reserved for MCP servers).

    Returns:
        ``wanted`` if it is free, else the first free ``wanted-2``, ``wanted-3`` … (cut
        so that the result stays within 64 characters). Unknown items are in no
        namespace and always keep ``wanted``.
    """
    return NameAllocator(item_type, taken, reserved=reserved).assign(wanted)


class NameAllocator:
    """:func:`assign_name` for many items of one namespace, in linear time.

    Each name given is taken for the next ones (as if appended to ``taken``), and the
    suffix search for a wanted name resumes where it stopped: names are only ever
    added, so a suffix found taken stays taken. One import of many servers that all
    want the same name costs time linear in their number, not quadratic.
    """

    def __init__(
        self, item_type: ItemType, taken: Collection[str], *, reserved: Iterable[str] = ()
    ) -> None:
        self.item_type = item_type
        self._blocked = {collision_key(item_type, name) for name in taken}
        self._blocked |= _reserved_keys(item_type, reserved)
        self._next: dict[str, int] = {}

    def assign(self, wanted: str) -> str:
        """The name the next item asking for ``wanted`` gets (see :func:`assign_name`)."""
        if self.item_type == "unknown":
            return wanted
        number = self._next.get(wanted, 1)
        candidate = wanted if number == 1 else _with_suffix(self.item_type, wanted, number)
        while collision_key(self.item_type, candidate) in self._blocked:
            number += 1
            candidate = _with_suffix(self.item_type, wanted, number)
        self._next[wanted] = number
        self._blocked.add(collision_key(self.item_type, candidate))
        return candidate


def check_manual_name(item_type: ItemType, name: str) -> str:
    """Validate a name a user typed for an item; return it unchanged.

    Raises:
        ExtensionNameInvalidError: empty, or not in the native form of ``item_type``
            (the message says which rule and suggests the normalised form).
    """
    if not name or not name.strip():
        raise ExtensionNameInvalidError("the new name is empty")
    if is_native_name(item_type, name):
        return name
    suggestion = normalize_name(item_type, name)
    if item_type == "skill":
        rule = "1 to 64 characters, single spaces only inside, no control or format characters"
    elif item_type == "mcp":
        rule = "letters, digits, '_' and '-', at most 64 characters"
    else:
        rule = "no control characters or surrounding spaces, at most 255 characters"
    raise ExtensionNameInvalidError(
        f"{name!r} is not a valid {_KIND_LABEL[item_type]} name ({rule})",
        hint=f"Try {suggestion!r}.",
    )


_KIND_LABEL: Final[dict[ItemType, str]] = {
    "skill": "skill",
    "mcp": "MCP server",
    "unknown": "item",
}
