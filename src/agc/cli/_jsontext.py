"""The ``--json`` text every agc command prints: the json module's indented text, written
by orjson where its bytes are the same.

Imports neither typer nor rich (:mod:`agc.cli.verify_main` prints reports without them);
orjson is imported on the first call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from agc.flows import JsonItems

__all__ = ["json_document", "json_pieces", "json_text"]


def json_text(data: Any) -> str | None:
    """``json.dumps(data, indent=2, ensure_ascii=False)``, by orjson (a store report of
    10,000 runs is some 10 MB of JSON; the json module's indented encoder is pure Python).

    orjson writes the same text for what a report holds: strings (UTF-8 as is; ``"``,
    ``\\`` and U+0000-U+001F escaped the same way), integers, booleans, ``null``, lists
    and ``dict`` with string keys, two-space indent, ``": "`` after a key. ``None`` for
    anything else (a float, whose repr differs; a lone surrogate; another type): the
    caller then uses the json module.
    """
    if not _orjson_writes_as_json(data):
        return None
    from agc.flows import orjson_indented  # noqa: PLC0415 - only for --json (agc-verify RUN starts without it)

    return orjson_indented(data)


_ATOMS: Final = frozenset({str, bool, type(None)})


def _orjson_writes_as_json(data: Any) -> bool:
    """Whether ``data`` holds only what orjson writes as the json module does (see
    :func:`json_text`); a string, ``True`` or ``None`` is never pushed on the stack."""
    stack = [data]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict:
            for key, value in item.items():
                if type(key) is not str:
                    return False
                if type(value) not in _ATOMS:
                    push(value)
        elif kind is list or kind is tuple:
            for value in item:
                if type(value) not in _ATOMS:
                    push(value)
        elif kind is int:
            if not -(2**63) <= item < 2**64:
                return False
        elif kind not in _ATOMS and not isinstance(item, str):
            # A str subclass (a checked run id) is written as its text by orjson too.
            return False
    return True


def json_document(data: Any) -> str:
    """The ``--json`` text of a report, without the final newline: two-space indent,
    UTF-8 as is (``\\u`` escapes only where the text holds a lone surrogate, which has no
    UTF-8 form)."""
    text = json_text(data)
    if text is not None:
        return text
    text = json.dumps(data, indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from the input: keep it escaped
        text = json.dumps(data, indent=2)
    return text


def json_pieces(data: Any) -> Iterator[str]:
    """:func:`json_document` of ``data`` with each
    :class:`~agc._core.report.JsonItems` among its members (or the members of a dict in
    it) made a list, given piece by piece: the items one at a time, so the text of a
    long list is never held whole. The pieces joined are that text, byte for byte.

    One rule for the layout, :func:`json_document`'s: the document is written with each
    list of items replaced by a list of two placeholder strings, and the items' text
    put where the placeholders are, at their indent, after the text the encoder wrote
    before the first and between them. The items are written :data:`_BATCH` at a time,
    as a list the encoder writes alone, moved to their indent (:func:`_batches`). The
    items' text is written with ``\\u`` escapes when any string of the document holds
    a lone surrogate, as :func:`json_document` writes the whole (``JsonItems.escapes``,
    or a look at every item first when it is not known).
    """
    from agc.flows import JsonItems, has_lone_surrogate, listed  # noqa: PLC0415 - as json_text

    if type(data) is not dict:
        yield json_document(data)
        return
    token = os.urandom(16).hex()
    found: list[tuple[str, JsonItems[Any]]] = []

    def placed(document: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in document.items():
            if isinstance(value, JsonItems):
                if value:
                    name = f"agc-items-{token}-{len(found)}"
                    found.append((name, value))
                    out[key] = [f"{name}-a", f"{name}-b"]
                else:
                    out[key] = []
            else:
                out[key] = placed(value) if type(value) is dict else value
        return out

    envelope = placed(data)
    if not found:
        yield json_document(envelope)
        return
    escaped = has_lone_surrogate(envelope) or any(
        items.escapes if items.escapes is not None else any(map(has_lone_surrogate, items))
        for _, items in found
    )
    text = _document_as(envelope, escaped)
    cuts = _cuts(text, [name for name, _ in found])
    if cuts is None:  # a placeholder also in the text of the input: the whole at once
        yield json_document(listed(data))
        return
    done = 0
    for (bracket, lead, between, close), (_, items) in zip(cuts, found, strict=True):
        yield text[done : bracket + 1]
        yield from _batches(items, lead, between, escaped)
        yield text[close[0] : close[1]]
        done = close[1]
    yield text[done:]


_BATCH: Final = 256
"""The items encoded together (one call of the encoder: its cost is per call too)."""


def _batches(items: Iterable[Any], lead: str, between: str, escaped: bool) -> Iterator[str]:
    """The text of ``items`` in a list whose first item the encoder wrote after ``lead``
    and whose next one after ``between``: :data:`_BATCH` items at a time written as a
    list alone, whose text between its brackets is the same at one level of indent less
    (its lines moved right by the difference). When the encoder's layout of a list alone
    is not so (an item's separator is not a comma then the lead), one item at a time,
    each moved to the indent of ``lead``."""
    indent = lead[lead.rfind("\n") + 1 :]
    alone = _document_as(["a", "b"], escaped)
    first, second = alone.index('"a"'), alone.index('"b"')
    lead_alone = alone[1:first]
    inner = lead_alone[lead_alone.rfind("\n") + 1 :]
    closing = len(alone) - second - len('"b"')
    if (
        between != "," + lead
        or alone[first + len('"a"') : second] != "," + lead_alone
        or not lead_alone.startswith("\n")
        or not indent.startswith(inner)
        or alone[0] != "["
    ):
        before = lead
        for item in items:
            yield before
            yield _document_as(item, escaped).replace("\n", "\n" + indent)
            before = between
        return
    moved = "\n" + indent[len(inner) :]
    comma = ""
    iterator = iter(items)
    while batch := list(islice(iterator, _BATCH)):
        text = _document_as(batch, escaped)
        yield comma
        yield text[1 : len(text) - closing].replace("\n", moved)
        comma = ","


def _document_as(data: Any, escaped: bool) -> str:
    """:func:`json_document` of ``data``, a part of a document that holds a lone
    surrogate somewhere (``escaped``: every non-ASCII character escaped) or not."""
    if escaped:
        return json.dumps(data, indent=2)
    text = json_text(data)
    if text is not None:
        return text
    return json.dumps(data, indent=2, ensure_ascii=False)


def _cuts(text: str, names: list[str]) -> list[tuple[int, str, str, tuple[int, int]]] | None:
    """Where each list of placeholders ``names`` is in ``text``, in order: the index of
    its ``[``, the text between it and the first placeholder, the text between the two,
    and the span of the text from after the second to its ``]``. ``None`` when a
    placeholder is not in ``text`` exactly once, or the lists are not in order."""
    cuts = []
    done = 0
    for name in names:
        first, second = f'"{name}-a"', f'"{name}-b"'
        if text.count(first) != 1 or text.count(second) != 1:
            return None
        at = text.index(first)
        bracket = text.rfind("[", done, at)
        then = text.index(second)
        close = text.find("]", then)
        if bracket < 0 or then < at or close < 0:
            return None
        lead = text[bracket + 1 : at]
        between = text[at + len(first) : then]
        cuts.append((bracket, lead, between, (then + len(second), close + 1)))
        done = close + 1
    return cuts
