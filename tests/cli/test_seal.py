"""Tests for ``agc seal FILE``: write the sidecar of a closed file, never overwrite one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agc.cli.app import main
from agc.exitcodes import ExitCode


def _seal(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["seal", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_seal_then_already_sealed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"{}\n")
    code, out, _ = _seal(capsys, str(path))
    assert code == ExitCode.OK
    assert out == f"sealed: {path}.b3\n"
    code, out, _ = _seal(capsys, str(path))
    assert code == ExitCode.OK
    assert out == f"already sealed (sidecar matches): {path}.b3\n"


def test_seal_json_sha256(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"{}\n")
    code, out, _ = _seal(capsys, str(path), "--algorithm", "sha256", "--json")
    result = json.loads(out)
    assert code == 0
    assert (result["algorithm"], result["bytes"], result["created"]) == ("sha256", 3, True)
    assert Path(result["sidecar"]).name == "t.jsonl.sha256"


def test_mismatching_sidecar_exits_1_and_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"{}\n")
    assert _seal(capsys, str(path))[0] == 0
    path.write_bytes(b"{}\n{}\n")
    sidecar = tmp_path / "t.jsonl.b3"
    before = sidecar.read_bytes()
    code, out, err = _seal(capsys, str(path))
    assert code == ExitCode.FINDINGS
    assert out == ""
    assert "does not match" in err
    # The hint names a check that can look at this file: agc-verify takes run ids only.
    assert "hint: The file or its sidecar changed after the seal" in err
    assert "b3sum --check" in err
    assert "agc-verify" not in err
    assert sidecar.read_bytes() == before


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The same code as any missing input file (import, ledger show): tests/cli/test_failures.py
    code, _, err = _seal(capsys, str(tmp_path / "absent.jsonl"))
    assert code == ExitCode.USAGE
    assert "does not exist" in err
    assert list(tmp_path.iterdir()) == []


def test_symlink_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "real.jsonl"
    target.write_bytes(b"{}\n")
    (tmp_path / "link.jsonl").symlink_to(target)
    code, _, err = _seal(capsys, str(tmp_path / "link.jsonl"))
    assert code == ExitCode.USAGE
    assert "symlink" in err


def test_fifo_exits_3_without_blocking(tmp_path: Path) -> None:
    # In a subprocess with a timeout: the failure this guards against is a hang.
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    script = "import sys; from agc.cli.app import main; sys.exit(main(sys.argv[1:]))"
    result = subprocess.run(
        [sys.executable, "-c", script, "seal", str(fifo)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == ExitCode.UNREADABLE  # cannot be read as a file
    assert "not a regular file" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]


def test_output_names_the_file_exactly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # rich would render ":smile:" as an emoji; stdout carries data, so it must not.
    path = tmp_path / ":smile: [bold]x.jsonl"
    path.write_bytes(b"{}\n")
    code, out, _ = _seal(capsys, str(path))
    assert code == 0
    assert out == f"sealed: {path}.b3\n"


def test_a_file_name_that_is_not_utf8_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A sidecar line is UTF-8 text, so such a name cannot be written in one. The
    # refusal was the codec's own words ("'utf-8' codec can't encode character '\udcff'
    # in position 68: surrogates not allowed"), naming neither the file nor the problem.
    path = Path(os.fsdecode(os.fsencode(tmp_path) + b"/t-\xff.jsonl"))
    path.write_bytes(b"{}\n")
    code, _, err = _seal(capsys, str(path))
    assert code == ExitCode.USAGE
    assert err.startswith("error: file name b't-\\xff.jsonl' is not UTF-8"), err
    assert "codec" not in err
    assert sorted(os.listdir(os.fsencode(tmp_path))) == [b"t-\xff.jsonl"]
