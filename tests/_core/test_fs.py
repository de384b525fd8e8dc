"""Tests for agc._core.fs.open_regular_file: no symlink followed, no FIFO waited on."""

from __future__ import annotations

import errno
import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.fs import (
    create_beside,
    file_type_name,
    iter_bounded_lines,
    lines_from_end,
    open_regular_file,
    read_at_most,
    read_small_file,
)
from agc.errors import FileExistsRefusedError, StoreError, UnsafePathError
from tests.conftest import examples


def test_a_regular_file_is_streamed(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb\n")
    with open_regular_file(path) as handle:
        assert list(handle) == [b"a\n", b"b\n"]


def test_a_symlink_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"x\n")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePathError):
        open_regular_file(tmp_path / "link")


def test_absent_and_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_regular_file(tmp_path / "absent")
    with pytest.raises(StoreError, match="not a regular file"):
        open_regular_file(tmp_path)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # In a subprocess with a timeout: the failure this guards against is a hang.
    script = (
        "import sys; from pathlib import Path; from agc._core.fs import open_regular_file\n"
        "from agc.errors import StoreError\n"
        "try:\n    open_regular_file(Path(sys.argv[1]))\n"
        "except StoreError as exc:\n    print(exc.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(fifo)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert "not a regular file" in done.stdout


@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20),
    st.booleans(),
    st.integers(min_value=1, max_value=30),
)
def test_bounded_lines_keep_short_lines_and_flag_long_ones(
    lines: list[bytes], final_newline: bool, limit: int
) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    got = list(iter_bounded_lines(io.BytesIO(data), max_line_bytes=limit))
    pieces = [piece + b"\n" for piece in data.split(b"\n")]
    pieces[-1] = pieces[-1][:-1]  # after the last newline: the unterminated rest, if any
    expected = [line if len(line.rstrip(b"\n")) <= limit else None for line in pieces if line]
    assert got == expected


@pytest.mark.parametrize("size", [0, 9, 10, 11, 200_000])
def test_read_at_most_reads_one_byte_past_the_limit_never_more(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"k" * size)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_at_most(fd, 10) == b"k" * min(size, 11)
    finally:
        os.close(fd)
    if size <= 10:
        assert read_small_file(path, max_bytes=10) == b"k" * size
    else:
        with pytest.raises(StoreError, match="larger than 10 bytes"):
            read_small_file(path, max_bytes=10)


def test_file_type_names(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p")
    (tmp_path / "f").write_bytes(b"")
    (tmp_path / "l").symlink_to("f")
    names = {
        "p": "a FIFO",
        "f": "a regular file",
        "l": "a symlink",
        ".": "a folder",
        "/dev/null": "a character device",
    }
    for name, expected in names.items():
        assert file_type_name((tmp_path / name).lstat().st_mode) == expected
    assert file_type_name(stat.S_IFSOCK) == "a socket"
    assert file_type_name(stat.S_IFBLK) == "a block device"


@settings(max_examples=examples(1000))
@given(
    data=st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\n\n", b"x" * 9]), max_size=40).map(
        b"".join
    ),
    block=st.integers(min_value=1, max_value=8),
)
def test_lines_from_end_are_the_files_lines_reversed(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, block: int
) -> None:
    """Whatever the bytes (empty lines, a last line without its newline, lines longer
    than a block), reading from the end yields exactly the lines a forward read does,
    last first."""
    path = tmp_path_factory.mktemp("lines") / "f"
    path.write_bytes(data)
    with path.open("rb") as handle:
        forward = list(handle)
    assert list(lines_from_end(path, block=block)) == forward[::-1]


def test_create_beside_makes_an_unnamed_file_that_the_commit_links(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    with create_beside(path, mode=0o640) as prepared:
        assert str(prepared.tmp).startswith("/proc/self/fd/")
        assert list(tmp_path.iterdir()) == []  # nothing in the folder before the commit
        os.write(prepared.fileno(), b"data\n")
        assert prepared.tmp.read_bytes() == b"data\n"  # read back before the commit
        prepared.commit(overwrite=False)
    assert path.read_bytes() == b"data\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]
    with create_beside(path, mode=0o600) as prepared, pytest.raises(FileExistsRefusedError):
        prepared.commit(overwrite=False)
    with create_beside(path, mode=0o600) as prepared:
        os.write(prepared.fileno(), b"new\n")
        prepared.commit(overwrite=True)
    assert path.read_bytes() == b"new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_create_beside_falls_back_to_a_named_file_without_o_tmpfile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system without unnamed files (EOPNOTSUPP): a named temporary file, and
    the stale ones of the same name (nobody holds their lock) are removed first; another
    file's are left alone."""
    real_open = os.open

    def no_tmpfile(path: object, flags: int, *args: object) -> int:
        if flags & os.O_TMPFILE == os.O_TMPFILE:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", no_tmpfile)
    path = tmp_path / "out.jsonl"
    stale, other = tmp_path / ".out.jsonl.0123456789ab.tmp", tmp_path / ".x.0123456789ab.tmp"
    stale.write_bytes(b"left by a kill")
    other.write_bytes(b"another file's")
    with create_beside(path, mode=0o600) as prepared:
        assert prepared.tmp.parent == tmp_path
        assert prepared.tmp.name.startswith(".out.jsonl.")
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([prepared.tmp.name, other.name])
        os.write(prepared.fileno(), b"data\n")
        prepared.commit(overwrite=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out.jsonl", other.name])
