"""``agc record`` is best effort: a failing store never kills the producer of its input.

Before, ``codex exec --json | agc record`` with a store that could not be written made
agc exit at once, and the producer died of SIGPIPE (pipe status 141). Now agc reads
its input to the end, says once what was not recorded and exits 3 at the end; with
``--tee`` the input goes on to stdout whatever happens to the store.
"""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc.cli.app import main
from agc.flows import PassThrough, drain
from tests.conftest import feed_stdin
from tests.faults import failing_disk

LINES = 200_000  # `seq` writes ~1.3 MB: far more than a pipe holds


def _agc(argv: list[str]) -> list[str]:
    script = f"import sys\nfrom agc.cli.app import main\nsys.exit(main({argv!r}))\n"
    return [sys.executable, "-c", script]


def _pipeline(argv: list[str]) -> tuple[int, int, bytes, str]:
    """``seq 1 LINES | agc ARGV``: the producer's and agc's exit codes, agc's stdout and
    stderr. ``seq`` keeps the default SIGPIPE action, as an agent CLI does."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    producer = subprocess.Popen(["seq", "1", str(LINES)], stdout=subprocess.PIPE)
    assert producer.stdout is not None
    agc = subprocess.Popen(
        _agc(argv), stdin=producer.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    producer.stdout.close()
    out, err = agc.communicate(timeout=120)
    return producer.wait(timeout=120), agc.returncode, out, err.decode()


@pytest.mark.parametrize("tee", [False, True], ids=["plain", "tee"])
def test_a_store_that_is_a_file_does_not_kill_the_producer(tmp_path: Path, tee: bool) -> None:
    not_a_folder = tmp_path / "store"
    not_a_folder.write_text("a file, not a folder\n")
    argv = ["record", "--run-id", "r1", "--store", str(not_a_folder)] + (["--tee"] if tee else [])
    producer_code, code, out, err = _pipeline(argv)
    assert producer_code == 0, "the producer died (SIGPIPE is -13)"
    assert code == 3
    assert err.count("NOT recorded") == 1
    expected = b"".join(b"%d\n" % n for n in range(1, LINES + 1))
    assert out == (expected if tee else b"")
    assert not_a_folder.read_text() == "a file, not a folder\n"


def test_a_run_id_taken_still_reads_the_input_to_the_end(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    feed_stdin(monkeypatch, b'{"a":1}\n')
    assert main(["record", "--run-id", "r1", "--store", str(store)]) == 0
    producer_code, code, _, err = _pipeline(["record", "--run-id", "r1", "--store", str(store)])
    assert (producer_code, code) == (0, 2)
    assert "run-exists" in err


def test_a_disk_full_midway_reads_the_rest_and_says_how_much_was_lost(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = b"".join(b'{"n":%d,"pad":"%s"}\n' % (n, b"x" * 100) for n in range(3000))
    stdin = io.BytesIO(data)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stdin))
    with failing_disk(monkeypatch, store, errno.ENOSPC, budget=50_000):
        assert main(["record", "--run-id", "r1", "--store", str(store)]) == 3
    err = capsys.readouterr().err
    assert stdin.tell() == len(data)  # read to its end
    assert f"end ({len(data):,} bytes)" in err
    assert err.count("NOT recorded") == 1
    assert "agc recover r1" in err  # the records written stay, unsealed


def test_tee_passes_the_input_through_and_puts_the_summary_on_stderr(
    store: Path, monkeypatch: pytest.MonkeyPatch, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    data = b'{"type":"thread.started","thread_id":"t1"}\nnot json\n{"b":2}'
    feed_stdin(monkeypatch, data)
    assert main(["record", "--run-id", "r1", "--store", str(store), "--tee"]) == 0
    out, err = capfdbinary.readouterr()
    assert out == data
    assert b"3 records written" in err


class _Gone(io.BytesIO):
    def write(self, data: object) -> int:
        raise BrokenPipeError(errno.EPIPE, "reader gone")


@given(st.binary(max_size=300), st.integers(min_value=1, max_value=64))
def test_pass_through_copies_every_byte_in_order_and_counts_them(data: bytes, size: int) -> None:
    copy = io.BytesIO()
    source = PassThrough(io.BytesIO(data), copy)
    head = source.read1(size)
    assert head + source.readline() + b"".join(source) == data
    assert copy.getvalue() == data
    assert source.bytes_read == len(data)


@given(st.binary(min_size=1, max_size=300))
def test_a_gone_copy_reader_stops_the_copy_not_the_reading(data: bytes) -> None:
    source = PassThrough(io.BytesIO(data), _Gone())
    assert drain(source) == len(data)
    assert isinstance(source.copy_failed, BrokenPipeError)


def test_a_crashed_run_id_records_nothing_and_says_so_with_one_hint(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run id whose run crashed unsealed: the writer refuses it before writing a byte
    of the new input, so nothing is said to be recorded, and the hint is one step."""
    from agc.integrity import TranscriptWriter  # noqa: PLC0415

    crashed = TranscriptWriter("live-7", store=store)
    for n in range(3):
        crashed.write({"n": n})
    crashed.abort()
    feed_stdin(monkeypatch, b"{}\n")
    assert main(["record", "--run-id", "live-7", "--store", str(store)]) == 3
    err = capsys.readouterr().err
    assert "end (3 bytes)" in err
    assert "none of it was recorded" in err
    assert "NOT recorded" not in err
    (hint,) = [line for line in err.splitlines() if line.startswith("hint:")]
    assert "RUN_ID" not in hint
    assert hint.count("agc recover live-7") == 1
    assert "another run id" in hint
