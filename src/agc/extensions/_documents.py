"""Parsing the JSON and TOML documents an extension publishes (or agc keeps) with
bounded nesting.

The standard library's ``json`` and ``tomllib`` parsers recurse once per nested array
or table and raise :class:`RecursionError` (not a ``ValueError``) on a document of a
few thousand ``[``; and a value that parses just below the interpreter's limit still
breaks every later recursive step (fingerprints, RFC 8785 canonical JSON, the index
writer). An MCP configuration or a plugin manifest is a few levels deep, so a document
nesting deeper than :data:`MAX_DOCUMENT_DEPTH` is refused like one that is not JSON
(RFC 8259 section 9 lets a parser limit nesting depth; TOML 1.0 sets no limit and
leaves it to the implementation).

A JSON string may also spell a lone surrogate (``"\\ud800"``): valid RFC 8259 text, but
not a Unicode scalar value (RFC 7493 section 2.1), so it can be neither written as UTF-8
(the index, the projection record, ``config.toml``) nor canonicalised (RFC 8785). Such a
document is refused like one that is not JSON; TOML forbids these escapes itself.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any, Final

from agc._core.json import exceeds_depth, has_lone_surrogate

__all__ = [
    "MAX_DOCUMENT_DEPTH",
    "DocumentTooDeepError",
    "LoneSurrogateError",
    "load_json",
    "load_toml",
]

MAX_DOCUMENT_DEPTH: Final = 64
"""Deepest nesting of arrays and objects (tables) accepted in a configuration, a
manifest, the index or an app-server message."""


class DocumentTooDeepError(ValueError):
    """The document nests arrays/objects deeper than the limit."""


class LoneSurrogateError(ValueError):
    """A string of the document holds a lone surrogate escape."""


def _too_deep(limit: int) -> DocumentTooDeepError:
    return DocumentTooDeepError(f"it nests arrays or objects deeper than {limit} levels")


def load_json(data: bytes | str, *, limit: int = MAX_DOCUMENT_DEPTH) -> Any:
    """``json.loads`` with nesting at most ``limit`` deep.

    Raises:
        UnicodeDecodeError: bytes that are not UTF-8.
        ValueError: not JSON (``json.JSONDecodeError``),
            :class:`DocumentTooDeepError` or :class:`LoneSurrogateError`.
    """
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        document = json.loads(text)
    except RecursionError:
        raise _too_deep(limit) from None
    if exceeds_depth(document, limit):
        raise _too_deep(limit)
    # Strict UTF-8 text holds no surrogate: only a \u escape can make one.
    if "\\u" in text and has_lone_surrogate(document):
        raise LoneSurrogateError(
            "a string holds a lone surrogate (an unpaired \\uD800-\\uDFFF escape)"
        )
    return document


def load_toml(text: str, *, limit: int = MAX_DOCUMENT_DEPTH) -> dict[str, Any]:
    """``tomllib.loads`` with nesting at most ``limit`` deep.

    Raises:
        tomllib.TOMLDecodeError: not TOML.
        DocumentTooDeepError: nesting deeper than ``limit`` (a ``ValueError``).
    """
    try:
        document = tomllib.loads(text)
    except RecursionError:
        raise _too_deep(limit) from None
    if exceeds_depth(document, limit):
        raise _too_deep(limit)
    return document
