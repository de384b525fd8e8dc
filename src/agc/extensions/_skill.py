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

YAML aliases let a few hundred bytes stand for billions of nodes (the "billion laughs"
expansion), and an anchor may even refer to itself (a cycle): the parsed value is
small in memory but every walk of it (a comparison, a dump) is exponential or endless.
The frontmatter is therefore composed first and refused, like invalid YAML, when it
nests deeper than :data:`MAX_FRONTMATTER_DEPTH`, has a recursive alias, or expands to
more than :data:`MAX_FRONTMATTER_NODES` nodes or more than
:data:`MAX_FRONTMATTER_EXPANDED_BYTES` bytes of scalar text (a large anchored string
repeated by a few aliases is few nodes but a huge document once written out again). A
double-quoted ``"\\ud800"`` escape (a lone surrogate, not a Unicode scalar value: YAML
1.1 lets PyYAML build it) is refused too: no UTF-8 file (the index, the renamed copy)
can hold it. A value of a valid form that Python cannot build (a date such as
``2024-13-45``) is refused like invalid YAML. An integer written with more than
:data:`MAX_INTEGER_CHARS` characters is a number agc cannot keep exactly (Codex, which
ignores fields it does not read, would load the skill): the file is refused with
:class:`~agc.errors.ExtensionValueError`, and an import of it keeps nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

import yaml

from agc.errors import ExtensionValueError
from agc.extensions._names import collapse_whitespace

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
MAX_FRONTMATTER_DEPTH: Final = 64
"""Deepest nesting of sequences and mappings accepted in a frontmatter."""
MAX_FRONTMATTER_NODES: Final = 100_000
"""Most nodes a frontmatter may expand to, aliases counted as the nodes they repeat."""
MAX_INTEGER_CHARS: Final = 1000
"""Longest integer accepted in a frontmatter, in characters of its YAML text (any base):
Python converts an integer to decimal text only up to 4300 digits
(``sys.get_int_max_str_digits``), and no frontmatter field needs more than a few."""
_INT_TAG: Final = "tag:yaml.org,2002:int"
MAX_FRONTMATTER_EXPANDED_BYTES: Final = 1024 * 1024
"""Most UTF-8 bytes of scalar text (keys and values) a frontmatter may expand to,
aliases counted as the text they repeat."""


class FrontmatterRefusedError(yaml.YAMLError):
    """The frontmatter nests too deep, has a recursive alias, expands too far or holds a
    lone surrogate."""


def _check_expansion(root: yaml.Node, *, label: str) -> None:
    """Refuse a composed document that is cyclic, too deep or expands too far.

    Iterative post-order walk of the node graph; each node's expanded size and depth
    are computed once (aliases share their node), so the cost is linear in the
    composed document, however far it expands.

    Raises:
        FrontmatterRefusedError: naming the limit.
        ExtensionValueError: an integer of more than :data:`MAX_INTEGER_CHARS`
            characters (``label`` names the file, for the message).
    """
    sizes: dict[int, tuple[int, int, int]] = {}  # id(node) -> (nodes, depth, text bytes)
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if isinstance(node, yaml.ScalarNode) and not _is_utf8_text(node.value):
            raise FrontmatterRefusedError(
                "a string holds a lone surrogate (an unpaired \\uD800-\\uDFFF escape)"
            )
        if (
            isinstance(node, yaml.ScalarNode)
            and node.tag == _INT_TAG
            and len(node.value) > MAX_INTEGER_CHARS
        ):
            raise ExtensionValueError(
                f"{label}: an integer in the frontmatter is written with {len(node.value)} "
                f"characters; agc keeps at most {MAX_INTEGER_CHARS} (Python writes an "
                "integer of at most 4300 digits, and no frontmatter field needs more)"
            )
        if done:
            open_nodes.discard(key)
            size, depth, text = 1, 0, 0
            if isinstance(node, yaml.ScalarNode) and isinstance(node.value, str):
                text = len(node.value.encode("utf-8"))
            for child in children:
                child_size, child_depth, child_text = sizes[id(child)]
                size += child_size
                depth = max(depth, child_depth)
                text += child_text
            depth += 1 if children or not isinstance(node, yaml.ScalarNode) else 0
            if depth > MAX_FRONTMATTER_DEPTH:
                raise FrontmatterRefusedError(
                    f"it nests deeper than {MAX_FRONTMATTER_DEPTH} levels"
                )
            if size > MAX_FRONTMATTER_NODES:
                raise FrontmatterRefusedError(
                    f"its aliases expand to more than {MAX_FRONTMATTER_NODES} nodes "
                    "(a billion-laughs document?)"
                )
            if text > MAX_FRONTMATTER_EXPANDED_BYTES:
                raise FrontmatterRefusedError(
                    f"it holds more than {MAX_FRONTMATTER_EXPANDED_BYTES} bytes of text once its "
                    "aliases are expanded"
                )
            sizes[key] = (size, depth, text)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise FrontmatterRefusedError("an alias refers to a node that contains it")
        open_nodes.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise FrontmatterRefusedError("an alias refers to a node that contains it")
            if id(child) not in sizes:
                stack.append((child, False))


def _is_utf8_text(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _load_frontmatter(text: str, *, label: str) -> Any:
    """``yaml.safe_load`` of frontmatter text, bounded (see the module docstring).

    Raises:
        yaml.YAMLError: invalid YAML, or :class:`FrontmatterRefusedError`.
        ExtensionValueError: an integer agc cannot keep (``label`` names the file, for
            the message).
    """
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise FrontmatterRefusedError(
                f"it nests deeper than {MAX_FRONTMATTER_DEPTH} levels"
            ) from None
        if node is None:
            return None
        _check_expansion(node, label=label)
        try:
            return loader.construct_document(node)
        except (ValueError, OverflowError) as exc:
            # A value of a valid form that Python cannot build: a date such as
            # 2024-13-45 (long integers were refused above).
            raise FrontmatterRefusedError(f"a value cannot be read ({_short_text(exc)})") from None
    finally:
        loader.dispose()


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


def parse_skill_file(data: bytes, *, label: str = "SKILL.md") -> SkillFrontmatter:
    """Read the frontmatter of ``SKILL.md`` bytes. What Codex would refuse is the
    result's ``error``.

    Args:
        data: the file's bytes.
        label: the file's name or path, for the error below.

    Raises:
        ExtensionValueError: an integer written with more than
            :data:`MAX_INTEGER_CHARS` characters (see the module docstring).
    """
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
        fields = _load_frontmatter("".join(parts[1]), label=label)
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
    cleaned = collapse_whitespace(name) if isinstance(name, str) else None
    return SkillFrontmatter(cleaned or None, description, None, tuple(notes))


def _short_text(exc: BaseException, keep: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= keep else text[:keep] + "…"


def _one_line(exc: yaml.YAMLError) -> str:
    return " ".join(str(exc).split())


def rename_frontmatter(data: bytes, new_name: str) -> bytes:
    """``SKILL.md`` bytes with frontmatter ``name`` set to ``new_name``.

    ``new_name`` is written as a plain YAML scalar when it reads back as itself, else
    double-quoted (a JSON string is a valid YAML double-quoted scalar: ``crafter:x``,
    ``#tag``, ``true``). Everything but the ``name`` value is kept; the body is kept
    byte for byte.

    Raises:
        ValueError: the file has no parseable frontmatter mapping, or one beyond the
            nesting and alias limits (callers never project such a skill).
    """
    text = data.decode("utf-8")
    bom = _BOM if text.startswith(_BOM) else ""
    parts = _split(text.removeprefix(_BOM))
    if parts is None:
        raise ValueError("SKILL.md has no frontmatter")
    opening, front, rest = parts
    try:
        original = _load_frontmatter("".join(front), label="SKILL.md")
    except yaml.YAMLError as exc:
        raise ValueError(f"SKILL.md frontmatter is not valid YAML: {_one_line(exc)}") from exc
    if not isinstance(original, dict):
        raise ValueError("SKILL.md frontmatter is not a mapping")
    wanted = {**original, "name": new_name}
    candidate = _replace_name_line(front, new_name)
    if candidate is not None:
        try:
            reparsed = _load_frontmatter("".join(candidate), label="SKILL.md")
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
        return [f"name: {_yaml_scalar(new_name)}\n", *front]
    index = hits[0]
    line = front[index]
    ending = line[len(line.rstrip("\r\n")) :] or "\n"
    return [*front[:index], f"name: {_yaml_scalar(new_name)}{ending}", *front[index + 1 :]]


_PLAIN_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def _yaml_scalar(text: str) -> str:
    """``text`` as a YAML scalar that reads back as the same string."""
    if _PLAIN_RE.fullmatch(text):
        try:
            if yaml.safe_load(text) == text:  # not ``true``, ``null``, ``1e3``, ``0x1f``
                return text
        except yaml.YAMLError:
            pass
    return json.dumps(text, ensure_ascii=False)
