"""``SKILL.md`` frontmatter: reading it as Codex does, and renaming a runtime copy.

A ``SKILL.md`` starts with YAML frontmatter between two ``---`` lines (Agent Skills
specification). It is parsed with PyYAML's ``safe_load`` (no tags, no objects). Codex
refuses a skill whose frontmatter is missing, is not valid YAML or not a mapping, whose
``name``/``description`` is not a string or whose description is longer than 1024
characters (codex-rs ``core-skills`` loader); such a skill is imported with
``lastError`` set and never projected. A missing ``name`` falls back to the folder
name (as in Codex); a missing ``description`` is only noted.

:func:`rename_frontmatter` changes ``name`` in a copy: the ``name:`` line is replaced
in place, and the result is parsed again to check that nothing else changed; if the
line cannot be replaced safely (a multi-line value), the frontmatter is written anew
from the parsed mapping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import yaml

__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "MAX_SKILL_FILE_BYTES",
    "SkillFrontmatter",
    "parse_skill_file",
    "rename_frontmatter",
]

MAX_DESCRIPTION_LENGTH: Final = 1024
MAX_SKILL_FILE_BYTES: Final = 4 * 1024 * 1024
_BOM: Final = "\ufeff"
_NAME_LINE_RE: Final = re.compile(r"^name[ \t]*:.*$")


@dataclass(frozen=True)
class SkillFrontmatter:
    """What a ``SKILL.md`` says about itself.

    Attributes:
        name: the ``name`` field, or ``None`` when absent (or when the file is broken).
        description: the ``description`` field, or ``None``.
        error: why Codex would not load it (``None`` when it would).
        notes: smaller remarks (a missing description).
    """

    name: str | None
    description: str | None
    error: str | None
    notes: tuple[str, ...] = ()


def _split(text: str) -> tuple[list[str], list[str], list[str]] | None:
    """``(opening line, frontmatter lines, rest)`` or ``None`` without frontmatter."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return lines[:1], lines[1:index], lines[index:]
    return None


def parse_skill_file(data: bytes) -> SkillFrontmatter:
    """Read the frontmatter of ``SKILL.md`` bytes; never raises."""
    if len(data) > MAX_SKILL_FILE_BYTES:
        return SkillFrontmatter(None, None, f"SKILL.md is larger than {MAX_SKILL_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return SkillFrontmatter(None, None, f"SKILL.md is not UTF-8 ({exc.reason})")
    parts = _split(text.removeprefix(_BOM))
    if parts is None:
        return SkillFrontmatter(None, None, "SKILL.md has no YAML frontmatter delimited by ---")
    try:
        fields = yaml.safe_load("".join(parts[1]))
    except yaml.YAMLError as exc:
        return SkillFrontmatter(
            None, None, f"SKILL.md frontmatter is not valid YAML: {_one_line(exc)}"
        )
    if not isinstance(fields, dict):
        return SkillFrontmatter(None, None, "SKILL.md frontmatter is not a YAML mapping")
    name = fields.get("name")
    description = fields.get("description")
    if name is not None and not isinstance(name, str):
        return SkillFrontmatter(None, None, "SKILL.md frontmatter field `name` is not a string")
    if description is not None and not isinstance(description, str):
        return SkillFrontmatter(
            name, None, "SKILL.md frontmatter field `description` is not a string"
        )
    notes: list[str] = []
    if description is not None and len(description) > MAX_DESCRIPTION_LENGTH:
        return SkillFrontmatter(
            name,
            description,
            f"SKILL.md description is {len(description)} characters; the limit is "
            f"{MAX_DESCRIPTION_LENGTH}",
        )
    if not description or not description.strip():
        notes.append("SKILL.md has no description (the Agent Skills specification asks for one)")
    cleaned = " ".join(name.split()) if isinstance(name, str) else None
    return SkillFrontmatter(cleaned or None, description, None, tuple(notes))


def _one_line(exc: yaml.YAMLError) -> str:
    return " ".join(str(exc).split())


def rename_frontmatter(data: bytes, new_name: str) -> bytes:
    """``SKILL.md`` bytes with frontmatter ``name`` set to ``new_name``.

    ``new_name`` must be a native skill name (no quoting needed in YAML). Everything
    but the ``name`` value is kept; the body is kept byte for byte.

    Raises:
        ValueError: the file has no parseable frontmatter mapping (callers never
            project such a skill).
    """
    text = data.decode("utf-8")
    bom = _BOM if text.startswith(_BOM) else ""
    parts = _split(text.removeprefix(_BOM))
    if parts is None:
        raise ValueError("SKILL.md has no frontmatter")
    opening, front, rest = parts
    original = yaml.safe_load("".join(front))
    if not isinstance(original, dict):
        raise ValueError("SKILL.md frontmatter is not a mapping")
    wanted = {**original, "name": new_name}
    candidate = _replace_name_line(front, new_name)
    if candidate is not None:
        try:
            reparsed = yaml.safe_load("".join(candidate))
        except yaml.YAMLError:
            reparsed = None
        if reparsed == wanted:
            return (bom + "".join([*opening, *candidate, *rest])).encode("utf-8")
    dumped = yaml.safe_dump(wanted, sort_keys=False, allow_unicode=True, width=1 << 16)
    return (bom + "".join([*opening, dumped, *rest])).encode("utf-8")


def _replace_name_line(front: list[str], new_name: str) -> list[str] | None:
    hits = [index for index, line in enumerate(front) if _NAME_LINE_RE.match(line.rstrip("\r\n"))]
    if len(hits) > 1:
        return None
    if not hits:
        return [f"name: {new_name}\n", *front]
    index = hits[0]
    line = front[index]
    ending = line[len(line.rstrip("\r\n")) :] or "\n"
    return [*front[:index], f"name: {new_name}{ending}", *front[index + 1 :]]
