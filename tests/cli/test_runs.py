"""``agc runs`` and ``agc show`` (with ``--follow`` on a run still being written)."""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agc._core.store import StoreLayout
from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.integrity import (
    TranscriptWriter,
    generate_keypair,
    list_runs,
    load_signing_key,
    open_run,
    unwrap_record,
)
from tests.conftest import feed_stdin, write_legacy_run_with_shared_tool_events, write_run

SCRIPT = "import sys; from agc.cli.app import main; sys.exit(main(sys.argv[1:]))"


def _agent_output() -> bytes:
    return b'{"type":"turn.started"}\nplain text, not JSON\n{"type":"item","n":[1,2]}\n\xff\xfe\n'


def test_runs_lists_state_records_bytes_signature_and_time(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    private, _, _ = generate_keypair(tmp_path / "keys")
    with open_run("signed", store=store, signing_key=load_signing_key(private)) as run:
        run.transcript.write({"a": 1})
    write_run(store, "plain")
    crashed = TranscriptWriter("crashed", store=store)
    for n in range(3):
        crashed.write({"n": n})
    crashed.abort()
    assert main(["runs", "--store", str(store), "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    runs = {run["run_id"]: run for run in listing["runs"]}
    assert listing["store"] == str(store)
    assert set(runs) == {"signed", "plain", "crashed"}
    assert (runs["signed"]["state"], runs["signed"]["signed"]) == ("sealed", True)
    assert (runs["plain"]["state"], runs["plain"]["signed"]) == ("sealed", False)
    assert (runs["crashed"]["state"], runs["crashed"]["records"]) == ("unsealed", 3)
    layout = StoreLayout(store)
    on_disk = sum(layout.artifact_path("plain", k).stat().st_size for k in ("transcript",))
    assert runs["plain"]["bytes"] >= on_disk
    assert runs["plain"]["records"] == 2  # one transcript record, one tool event
    times = [run["last_write_ms"] for run in listing["runs"]]
    assert times == sorted(times, reverse=True)  # newest first

    assert main(["runs", "--store", str(store)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["RUN", "STATE", "RECORDS", "BYTES", "SIGNED", "LAST", "WRITE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["signed"][1:2] + rows["signed"][4:5] == ["sealed", "signed"]
    assert rows["crashed"][1:3] == ["unsealed", "3"]
    assert rows["crashed"][5].endswith("Z")


def test_runs_of_an_empty_or_missing_store(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "--store", str(store)]) == 0
    assert "no runs in store" in capsys.readouterr().err
    assert main(["runs", "--store", str(tmp_path / "nowhere")]) == ExitCode.USAGE
    assert list_runs(store) == []


def test_show_prints_what_the_agent_wrote(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    feed_stdin(monkeypatch, _agent_output())
    assert main(["record", "--run-id", "r1", "--store", str(store)]) == 0
    capsysbinary.readouterr()
    assert main(["show", "r1", "--store", str(store)]) == 0
    captured = capsysbinary.readouterr()
    assert captured.out.splitlines() == [
        b'{"type":"turn.started"}',
        b"plain text, not JSON",
        b'{"type":"item","n":[1,2]}',
        b"\xff\xfe",  # the exact bytes, though not UTF-8
    ]
    assert captured.err == b""  # sealed: no note
    assert main(["show", "r1", "--store", str(store), "--raw"]) == 0
    raw = [json.loads(line) for line in capsysbinary.readouterr().out.splitlines()]
    assert [record["seq"] for record in raw] == [0, 1, 2, 3]


def test_show_unwraps_library_records_and_tool_events(
    store: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    write_run(store, transcript=[{"role": "user", "content": "hi"}], tool_events=[{"tool": "sh"}])
    assert main(["show", "r1", "--store", str(store), "--kind", "tool-events"]) == 0
    assert capsysbinary.readouterr().out == b'{"tool":"sh"}\n'
    assert unwrap_record(b"[1,2]", "transcript") == b"[1,2]"  # damage is shown as it is


def test_show_a_missing_or_unsealed_run(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "nope", "--store", str(store)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"no transcript of run 'nope' in store {store}" in err
    assert "agc runs" in err
    writer = TranscriptWriter("live", store=store)
    writer.write({"a": 1})
    writer.flush()
    try:
        assert main(["show", "live", "--store", str(store)]) == 0
        captured = capsys.readouterr()
        assert captured.out == '{"a":1}\n'
        assert "is not sealed" in captured.err
    finally:
        writer.abort()


def _read_lines(stream: object, count: int, timeout: float = 20.0) -> list[bytes]:
    selector = selectors.DefaultSelector()
    selector.register(stream, selectors.EVENT_READ)  # type: ignore[arg-type]
    lines: list[bytes] = []
    deadline = time.monotonic() + timeout
    buffer = b""
    while len(lines) < count and time.monotonic() < deadline:
        if not selector.select(timeout=0.5):
            continue
        chunk = os.read(stream.fileno(), 65536)  # type: ignore[attr-defined]
        if not chunk:
            break
        buffer += chunk
        *done, buffer = buffer.split(b"\n")
        lines.extend(done)
    return lines


def test_follow_prints_records_as_they_come_and_stops_at_the_seal(store: Path) -> None:
    writer = TranscriptWriter("live", store=store, buffer_bytes=0)
    writer.write({"n": 0})
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SCRIPT,
            "show",
            "live",
            "--store",
            str(store),
            "--follow",
            "--interval",
            "0.05",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert _read_lines(child.stdout, 1) == [b'{"n":0}']
        writer.write({"n": 1})
        writer.write({"n": 2})
        assert _read_lines(child.stdout, 2) == [b'{"n":1}', b'{"n":2}']
        assert child.poll() is None  # still following
        writer.write({"n": 3})
        writer.close()  # sealed: follow prints the rest and ends
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0
    assert out == b'{"n":3}\n'
    # said once: what it waits for, and that a crashed writer's run gets no more
    assert err.count(b"following run live") == 1
    assert b"agc recover live" in err


def test_a_legacy_run_is_listed_as_legacy_and_shown_as_sealed(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run an earlier release sealed (a digest-only SHA-256 sidecar, no manifest) was
    listed as `unsealed`, for `agc recover` to seal, and `agc show --follow` waited for
    a seal that never comes. It is `legacy`; its sealed transcript is shown and ends."""
    data = write_legacy_run_with_shared_tool_events(store, "old")
    write_run(store, "new")
    [old] = [run for run in list_runs(store) if run.run_id == "old"]
    assert (old.state, old.records, old.bytes, old.signed) == (
        "legacy",
        {"transcript": 1, "tool-events": 0},
        len(data),
        False,
    )
    assert main(["runs", "--store", str(store), "--json"]) == ExitCode.OK
    states = {r["run_id"]: r["state"] for r in json.loads(capsys.readouterr().out)["runs"]}
    assert states == {"old": "legacy", "new": "sealed"}
    assert main(["runs", "--store", str(store)]) == ExitCode.OK
    [line] = [x for x in capsys.readouterr().out.splitlines() if x.startswith("old ")]
    assert line.split()[1] == "legacy"
    argv = ["show", "old", "--store", str(store), "--follow", "--interval", "0.05"]
    shown = subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv], capture_output=True, timeout=30, check=False
    )
    assert (shown.returncode, shown.stdout) == (0, b'{"a":1}\n')
    assert b"not sealed" not in shown.stderr


def test_a_chained_run_with_legacy_sidecars_is_not_listed_as_legacy(store: Path) -> None:
    """A run the chain links had a manifest: with it deleted and a legacy sidecar put in
    its place (a downgrade), the run is not legacy, as agc-verify judges it."""
    layout = write_run(store, "r1")
    data = layout.artifact_path("r1", "transcript").read_bytes()
    layout.manifest_path("r1").unlink()
    for sidecar in layout.artifact_dir("transcript").glob("r1.jsonl.*"):
        sidecar.unlink()
    layout.artifact_path("r1", "transcript").with_name("r1.jsonl.sha256").write_text(
        hashlib.sha256(data).hexdigest()
    )
    [run] = list_runs(store)
    assert run.state != "legacy"


def test_a_default_store_nothing_made_yet_is_empty_and_a_named_missing_one_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new user's first `agc runs` / `agc-verify --all` (no --store, nothing recorded
    yet): the default store is read as empty, not as a store that cannot be read; a
    --store that names no folder (a mistyped path) is an input error naming it for
    `agc runs` (exit 2, as any missing file named on the command line), and stays a
    store that cannot be read for the gate (exit 3)."""
    from agc.cli.verify_main import main as verify  # noqa: PLC0415

    default = Path(os.environ["AGC_HOME"])
    assert not default.exists()
    assert main(["runs"]) == 0
    assert "no runs in store" in capsys.readouterr().err
    assert main(["runs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == []
    assert verify(["--all"]) == ExitCode.FINDINGS  # an empty store is never verified
    assert "holds no run" in capsys.readouterr().out
    assert not default.exists()  # reading made nothing
    missing = tmp_path / "typo"
    assert main(["runs", "--store", str(missing)]) == ExitCode.USAGE
    assert f"error: store {missing} does not exist" in capsys.readouterr().err
    (tmp_path / "a-file").write_text("x")
    assert main(["runs", "--store", str(tmp_path / "a-file")]) == ExitCode.USAGE
    assert "is not a folder" in capsys.readouterr().err
    assert verify(["--all", "--store", str(missing)]) == ExitCode.UNREADABLE


@pytest.mark.parametrize("where", ["under-a-file", "missing-parent"])
def test_a_default_store_that_could_not_be_made_there_is_an_error_not_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Only a default store whose folder could be made as it is reads as empty: one under
    a file, or under a parent that does not exist (a mistyped $AGC_HOME), is an error."""
    from agc.cli.verify_main import main as verify  # noqa: PLC0415

    if where == "under-a-file":
        (tmp_path / "a-file").write_text("x")
        home = tmp_path / "a-file" / "store"
    else:
        home = tmp_path / "no-such-folder" / "store"
    monkeypatch.setenv("AGC_HOME", str(home))
    assert main(["runs"]) == ExitCode.UNREADABLE
    assert verify(["--all"]) == ExitCode.UNREADABLE
