"""Shared helpers for the resume tests: reading outputs in the neutral view."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agc.resume import FormatName, get_spec
from agc.resume._formats.model import Block, Message
from tests.conftest import REAL_FIXTURES, RESUME_CASES, require_shared

REACHES_INSIDE = {
    "agc.resume._formats": "each format's spec and the neutral message model, to build histories",
}


def shared_params(folder: Path, pattern: str) -> list[Any]:
    """One pytest param per file, or a single param that skips when ../shared is absent."""
    files = sorted(folder.glob(pattern)) if folder.is_dir() else []
    if not files:
        return [pytest.param(None, id="shared-absent")]
    return [pytest.param(path, id=path.stem[:48]) for path in files]


def need(path: Path | None, folder: Path) -> Path:
    """The param's path, or skip (with the reason) when ../shared is absent."""
    if path is None:
        require_shared(folder)
        pytest.skip(f"no files in {folder}")
    return path


def view(messages: Sequence[Any], format: FormatName) -> list[Message]:
    """The neutral view of native records."""
    return get_spec(format).read(messages).messages


def blocks(messages: Sequence[Any], format: FormatName, kind: str) -> list[Block]:
    return [b for m in view(messages, format) for b in m.blocks if b.kind == kind]


def result_content(block: Block) -> Any:
    """What a result says (the native record without its position)."""
    return block.raw


__all__ = [
    "REAL_FIXTURES",
    "RESUME_CASES",
    "blocks",
    "need",
    "result_content",
    "shared_params",
    "view",
]
