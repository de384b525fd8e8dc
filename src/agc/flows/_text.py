"""JSON text for machines, written by orjson (imported on first use, with Ctrl-C and
SIGTERM held while it initialises: see :mod:`agc._core.orjson_loader`)."""

from __future__ import annotations

from typing import Any

__all__ = ["orjson_indented"]


def orjson_indented(data: Any) -> str | None:
    """``data`` as JSON text with a two-space indent, by orjson; ``None`` when orjson
    refuses it (a lone surrogate in a string). The caller decides whether orjson's text
    is the one it wants for ``data`` (floats are written differently from the json
    module)."""
    from agc._core.orjson_loader import orjson  # noqa: PLC0415 - only when JSON is written

    try:
        return str(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    except orjson.JSONEncodeError:  # a lone surrogate
        return None
