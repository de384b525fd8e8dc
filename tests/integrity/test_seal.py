"""Tests for agc.integrity._seal, and sidecars checked by the real b3sum / sha256sum."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from agc._core.digest import Algorithm, new_hasher
from agc._core.store import StoreLayout
from agc.errors import (
    InputError,
    InputMissingError,
    RunLockedError,
    SidecarMismatchError,
    UnsafePathError,
)
from agc.exitcodes import ExitCode
from agc.integrity import check_run, open_run, seal_file
from tests.conftest import write_run

TOOLS: dict[Algorithm, tuple[str, str, str]] = {
    "blake3": ("b3sum", "--check", ".b3"),
    "sha256": ("sha256sum", "-c", ".sha256"),
}


def _digest(data: bytes, algorithm: Algorithm) -> str:
    hasher = new_hasher(algorithm)
    hasher.update(data)
    return hasher.hexdigest()


def _tool(algorithm: Algorithm) -> tuple[str, str, str]:
    tool, flag, suffix = TOOLS[algorithm]
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (Debian: apt-get install -y {tool})")
    return tool, flag, suffix


@pytest.mark.parametrize("algorithm", ["blake3", "sha256"])
def test_seal_file_writes_a_sidecar(tmp_path: Path, algorithm: Algorithm) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a":1}\n')
    result = seal_file(path, algorithm=algorithm)
    digest = _digest(path.read_bytes(), algorithm)
    assert result.created
    assert (result.digest, result.bytes) == (digest, 8)
    assert result.sidecar.read_text() == f"{digest}  t.jsonl\n"
    assert result.to_dict()["schema_version"] == 1


def test_sealing_again_with_a_matching_sidecar_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x\n")
    first = seal_file(path)
    mtime = first.sidecar.stat().st_mtime_ns
    again = seal_file(path)
    assert not again.created
    assert first.sidecar.stat().st_mtime_ns == mtime


def test_legacy_sidecar_that_matches_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x\n")
    sidecar = tmp_path / "t.jsonl.sha256"
    sidecar.write_text(hashlib.sha256(b"x\n").hexdigest())
    assert not seal_file(path, algorithm="sha256").created
    assert sidecar.read_text() == hashlib.sha256(b"x\n").hexdigest()


@pytest.mark.parametrize(
    "existing",
    [
        pytest.param("0" * 64 + "  t.jsonl\n", id="other-digest"),
        pytest.param("{digest}  other.jsonl\n", id="other-name"),
        pytest.param("{digest}  t.jsonl\r\n", id="crlf"),
        pytest.param("garbage", id="garbage"),
    ],
)
def test_refuses_when_an_existing_sidecar_does_not_match(tmp_path: Path, existing: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x\n")
    sidecar = tmp_path / "t.jsonl.b3"
    content = existing.format(digest=_digest(b"x\n", "blake3")).encode()
    sidecar.write_bytes(content)
    with pytest.raises(SidecarMismatchError) as info:
        seal_file(path)
    assert info.value.exit_code == ExitCode.FINDINGS
    assert sidecar.read_bytes() == content


def test_refuses_missing_folder_and_symlink(tmp_path: Path) -> None:
    with pytest.raises(InputMissingError, match="does not exist"):
        seal_file(tmp_path / "absent.jsonl")
    with pytest.raises(InputError, match="is a folder"):
        seal_file(tmp_path)
    target = tmp_path / "real.jsonl"
    target.write_bytes(b"x\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.raises(UnsafePathError):
        seal_file(link)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.jsonl", "real.jsonl"]


# -- interop: the standard tools verify agc's sidecars with no agc installed -----------


@pytest.mark.parametrize("algorithm", ["blake3", "sha256"])
def test_standard_tools_check_the_writers_sidecars(store: Path, algorithm: Algorithm) -> None:
    tool, flag, suffix = _tool(algorithm)
    layout = write_run(store, transcript=[{"text": "a\u2028b"}], algorithm=algorithm)
    for kind in ("transcript", "tool-events"):
        folder = layout.artifact_dir(kind)
        ok = subprocess.run(
            [tool, flag, f"r1.jsonl{suffix}"],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
        )
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert "r1.jsonl: OK" in ok.stdout
    # The tool also fails on a change (so the check above can fail).
    path = layout.artifact_path("r1", "transcript")
    path.write_bytes(path.read_bytes().replace(b"a", b"A", 1))
    bad = subprocess.run(
        [tool, flag, f"r1.jsonl{suffix}"],
        cwd=path.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode != 0


@pytest.mark.parametrize("algorithm", ["blake3", "sha256"])
def test_standard_tools_check_seal_file(tmp_path: Path, algorithm: Algorithm) -> None:
    tool, flag, suffix = _tool(algorithm)
    path = tmp_path / "my session.jsonl"
    path.write_bytes(b'{"a":1}\n')
    seal_file(path, algorithm=algorithm)
    result = subprocess.run(
        [tool, flag, f"my session.jsonl{suffix}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_tool_made_sidecar_is_read_by_agc(tmp_path: Path) -> None:
    tool, _, _ = _tool("blake3")
    layout = StoreLayout(tmp_path)
    path = layout.artifact_path("r1", "transcript")
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"a":1}\n')
    made = subprocess.run([tool, path.name], cwd=path.parent, capture_output=True, check=True)
    (path.parent / "r1.jsonl.b3").write_bytes(made.stdout)
    assert not seal_file(path).created


def test_seal_refuses_a_file_a_writer_still_holds(store: Path) -> None:
    """`agc seal` on a live run's transcript must not seal a prefix: the writer's own
    seal would then fail and leave the run without a manifest for good."""
    run = open_run("live", store=store)
    run.transcript.write({"role": "user", "content": "first"})
    run.transcript.flush()
    path = run.transcript.path
    with pytest.raises(RunLockedError):
        seal_file(path)
    assert not path.with_name("live.jsonl.b3").exists()
    run.transcript.write({"role": "assistant", "content": "second"})
    run.close()
    assert check_run("live", store).complete


@pytest.mark.parametrize("name", ["x\ny.jsonl", "x\\y.jsonl", " lead.jsonl", "trail.jsonl "])
def test_seal_of_a_name_a_sidecar_cannot_hold_is_a_usage_error(tmp_path: Path, name: str) -> None:
    """b3sum escapes such names; agc's sidecar format has no escape: refuse, clearly."""
    path = tmp_path / name
    path.write_bytes(b'{"a":1}\n')
    with pytest.raises(InputError, match="cannot be written in a sidecar"):
        seal_file(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
