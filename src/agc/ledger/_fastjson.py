"""The ledger's event-line reader: the strict reader's value, read by orjson when that
is provably the same value.

Every event line is read under agc's one JSON rule (RFC 8259 JSON that is also I-JSON,
RFC 7493: no duplicate member names, no NaN/Infinity, no number beyond a double, at most
:data:`agc._core.json.MAX_DEPTH` levels; lone surrogates are kept, as the ledger reads
transcripts other programs wrote). :func:`loads_event` gives exactly what
``agc._core.json.loads(line, allow_lone_surrogates=True)`` gives, value or
:class:`~agc.errors.JsonInvalidError`, and takes orjson's parse only when one of two
proofs holds; anything else (including every line orjson refuses) goes to the strict
reader, which then decides, with its own error:

1. **Canonical line.** orjson writes the parsed value back and the bytes equal the
   line (without its surrounding JSON whitespace, RFC 8259 §2). The value then holds
   every member, string and number of the line: a dropped duplicate member would be
   missing from the output; an integer beyond 64 bits (which orjson reads as a float)
   would be written with a ``.`` or an exponent, never as the line's digits; a float
   is written as its shortest round-trip form (RFC 8259 §6 leaves precision to the
   parser; both readers round to the nearest double), which equals the line's text
   only when the line already was that double's shortest form; and orjson writes at
   most 254 levels. Codex writes its rollout and ``exec --json`` lines in this
   compact form (serde_json), so nearly every line is taken here.
2. **Counted colons** (the proof the strict reader uses for large documents). In JSON
   a colon is a member separator or part of a string; orjson writes one separator per
   member it kept and every colon of a string as a raw ``:``. So when the line spells no
   colon as ``\\u003a``, it has as many colons as the value written back exactly when no
   member was dropped. A run of 19 or more digits (an integer orjson may read as a
   float) sends the line to the strict reader, as does nesting deeper than 254 (orjson
   refuses to write it back).
"""

from __future__ import annotations

from typing import Any, Final

from agc._core import json as strict_json
from agc._core.orjson_loader import orjson

__all__ = ["loads_event", "loads_event_text"]

_JSON_WHITESPACE: Final = b" \t\r\n"
_DIGITS_TO_ZERO: Final = bytes.maketrans(b"0123456789", b"0" * 10)
_NINETEEN_DIGITS: Final = b"0" * 19
_loads: Final = orjson.loads
_dumps: Final = orjson.dumps
_Refused: Final = (orjson.JSONDecodeError, orjson.JSONEncodeError)


def loads_event(line: bytes | str) -> Any:
    """``agc._core.json.loads(line, allow_lone_surrogates=True)``, faster for ``bytes``.

    Args:
        line: one event line (``bytes`` or ``str``), with or without its ``\\n``.

    Returns:
        The parsed value (see :func:`agc._core.json.loads`).

    Raises:
        JsonInvalidError: as :func:`agc._core.json.loads` (the strict reader raises it).
    """
    if type(line) is bytes:
        try:
            value = _loads(line)
            written = _dumps(value)
        except _Refused:
            pass
        else:
            # Most lines are the written bytes and a "\n": compared without a copy.
            size = len(written)
            if (len(line) == size + 1 and line[size] == 10 and line.startswith(written)) or (
                _same_members(line.strip(_JSON_WHITESPACE), written)
            ):
                return value
    return strict_json.loads(line, allow_lone_surrogates=True)


def loads_event_text(text: str) -> Any:
    """:func:`loads_event` of a ``str`` (a JSON string nested in an event, such as a
    call's ``arguments``); the same value as ``agc._core.json.loads(text,
    allow_lone_surrogates=True)``.

    Raises:
        JsonInvalidError: as :func:`agc._core.json.loads`.
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in the str itself: the strict reader
        return strict_json.loads(text, allow_lone_surrogates=True)
    if data.startswith(b"\xef\xbb\xbf"):
        # A str starting with U+FEFF is refused by the strict reader, as JSON text
        # (whitespace is only space, tab, CR, LF), not as a byte order mark.
        return strict_json.loads(text, allow_lone_surrogates=True)
    return loads_event(data)


def _same_members(body: bytes, written: bytes) -> bool:
    """Proof 1 (``body`` without its surrounding whitespace), else proof 2 of the module
    docstring: no member dropped and no integer read as a float."""
    if written == body:
        return True
    if b"\\u003" in body and (b"\\u003a" in body or b"\\u003A" in body):
        return False
    if _NINETEEN_DIGITS in body.translate(_DIGITS_TO_ZERO):
        return False
    return written.count(b":") == body.count(b":")
