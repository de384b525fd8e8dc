"""The verify section's floor row does the work of ``b3sum --check``, no less."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks.suites import _PYTHON_FLOOR_SCRIPT

from agc._core.digest import digest_fd


def _floor(folder: Path, name: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _PYTHON_FLOOR_SCRIPT, name], cwd=folder, check=False
    )
    return done.returncode


@pytest.mark.parametrize("size", [1, 5000, (16 << 20) + 3])
def test_floor_script_accepts_a_file_that_matches_its_sidecar_and_refuses_one_byte_changed(
    tmp_path: Path, size: int
) -> None:
    path = tmp_path / "run.jsonl"
    data = bytearray(b"x" * (size - 1) + b"\n")
    path.write_bytes(data)
    with path.open("rb") as handle:
        digest, _ = digest_fd(handle, "blake3")
    (tmp_path / "run.jsonl.b3").write_text(f"{digest}  run.jsonl\n", encoding="ascii")
    assert _floor(tmp_path, "run.jsonl") == 0
    data[size // 2] ^= 1
    path.write_bytes(data)
    assert _floor(tmp_path, "run.jsonl") == 1
