"""The ``--json`` text every agc command prints: the json module's indented text, written
by orjson where its bytes are the same.

Imports neither typer nor rich (:mod:`agc.cli.verify_main` prints reports without them);
orjson is imported on the first call.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["json_document", "json_text"]


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
