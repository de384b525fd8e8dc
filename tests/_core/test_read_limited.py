"""read_limited: named input files are size-checked without being read whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from agc._core.fs import read_limited
from agc.errors import InputError, PolicyInvalidError


def test_reads_a_file_within_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "p.txt"
    path.write_bytes(b"x" * 10)
    assert read_limited(path, what="prompt file", max_bytes=10) == b"x" * 10


def test_an_endless_file_is_refused_after_max_bytes_plus_one() -> None:
    # /dev/zero never ends: reading it whole before the size check would never return.
    with pytest.raises(PolicyInvalidError, match="larger than 10 bytes"):
        read_limited(
            Path("/dev/zero"), what="policy file", max_bytes=10, too_large=PolicyInvalidError
        )


@pytest.mark.parametrize("make", ["missing", "folder"])
def test_missing_or_unreadable_file_names_the_input(tmp_path: Path, make: str) -> None:
    path = tmp_path / "x"
    if make == "folder":
        path.mkdir()
    with pytest.raises(InputError, match="attachments file"):
        read_limited(path, what="attachments file", max_bytes=10)
