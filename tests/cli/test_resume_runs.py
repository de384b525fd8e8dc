"""``agc resume`` on runs recorded or imported with agc, ``agc export``, and the inputs
``--check`` refuses (an empty or unreadable history is never valid)."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import blake3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core import objstore
from agc._core.memstore import MemoryStore
from agc._core.objstore import ObjectStore
from agc._core.storage import Store
from agc._core.store import ArtifactKind, StoreLayout
from agc.cli import evidence as evidence_module
from agc.cli import resume as resume_module
from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.integrity import _kept as kept_module
from agc.integrity import _run_reader as run_reader
from agc.integrity import check_object_run, check_run
from agc.integrity._chain_objects import artifact_path, manifest_path
from agc.resume import SessionSnapshot, ToolCallState, idempotency_key, save_snapshot
from tests.conftest import (
    examples,
    feed_stdin,
    run_agc_to_a_gone_reader,
    write_legacy_run_with_shared_tool_events,
)

REACHES_INSIDE = {
    "agc.integrity._run_reader": "wraps the run check of agc resume --run to swap files after it",
    "agc.integrity._kept": "swaps the run check and the copy writer under agc resume --run",
    "agc.integrity._chain_objects": "the object keys of a run's files and manifest in the bucket",
}


def _line(record: Any) -> str:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


def _rollout(*, answered: bool) -> bytes:
    """A small paginated Codex rollout whose last call is answered or not."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go é"}]},
        {
            "type": "function_call",
            "name": "exec_command",
            "arguments": '{"cmd":"ls"}',
            "call_id": "call_1",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "a\nb"},
        {
            "type": "function_call",
            "name": "exec_command",
            "arguments": '{"cmd":"sleep 9"}',
            "call_id": "call_2",
        },
    ]
    if answered:
        items.append({"type": "function_call_output", "call_id": "call_2", "output": "ok"})
    lines = [
        {
            "timestamp": "2026-01-01T00:00:00.000Z",
            "ordinal": 0,
            "type": "session_meta",
            "payload": {"id": "s1"},
        }
    ]
    for item in items:
        lines.append(
            {
                "timestamp": "2026-01-01T00:00:01.000Z",
                "ordinal": len(lines),
                "type": "response_item",
                "payload": item,
            }
        )
    return "".join(_line(line) + "\n" for line in lines).encode()


def _import(tmp_path: Path, store: Path, data: bytes, run_id: str = "r1") -> None:
    source = tmp_path / f"{run_id}.jsonl"
    source.write_bytes(data)
    assert main(["import", str(source), "--run-id", run_id, "--store", str(store)]) == 0


def _json(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


# --- agc resume RUN_ID for an imported run ------------------------------------------------


def test_imported_run_is_checked_by_its_id(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, _rollout(answered=False))
    capsys.readouterr()
    assert main(["resume", "r1", "--store", str(store), "--check", "--json"]) == 1
    report = _json(capsys)
    assert [(f["code"], f["call_id"], f["line"]) for f in report["findings"]] == [
        ("tool-call-unanswered", "call_2", 5)
    ]
    assert report["format"] == "codex-rollout"
    assert report["tool_call_state"] is None  # a recorded file has no snapshot state


def test_imported_run_is_repaired_into_the_session_file(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _rollout(answered=False)
    _import(tmp_path, store, data)
    out = tmp_path / "fixed.jsonl"
    rc = main(
        ["resume", "r1", "--store", str(store), "--strategy", "synthesize", "--out", str(out)]
    )
    assert rc == 0
    fixed = out.read_bytes()
    assert fixed.startswith(data)  # the session itself, unwrapped, then agc's answer
    last = json.loads(fixed.splitlines()[-1])
    assert last["payload"]["call_id"] == "call_2"
    assert last["ordinal"] == 5


def test_tampered_run_is_refused_unless_insecure(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, _rollout(answered=False))
    transcript = StoreLayout(store).artifact_path("r1", "transcript")
    transcript.write_bytes(transcript.read_bytes().replace(b"sleep 9", b"sleep 1"))
    capsys.readouterr()
    assert main(["resume", "r1", "--store", str(store), "--check"]) == 1
    err = capsys.readouterr().err
    assert "run r1 does not verify" in err
    assert "--insecure-skip-verify" in err
    assert main(["resume", "r1", "--store", str(store), "--check", "--insecure-skip-verify"]) == 1
    captured = capsys.readouterr()
    assert "warning: --insecure-skip-verify: run r1 does not verify" in captured.err
    assert "call_2" in captured.out  # read as it is: the findings are still reported


def test_snapshot_comes_before_a_recorded_run(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, _rollout(answered=False))
    messages = [{"role": "user", "content": "hi"}]
    save_snapshot(SessionSnapshot("r1", "s", messages, ToolCallState(), {}), store)
    capsys.readouterr()
    assert main(["resume", "r1", "--store", str(store), "--check", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["format"] == "openai-chat"
    # which of the two was resumed is said, and how to judge the other
    assert "r1 names a snapshot and a recorded run; the snapshot" in captured.err
    assert "agc-verify r1" in captured.err


def test_no_snapshot_and_no_run_is_not_found(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["resume", "nope", "--store", str(store), "--check"]) == 2
    err = capsys.readouterr().err
    # Both things a run id can name are looked for, and both are said to be absent.
    assert f"no snapshot of run nope in {store / 'sessions'}" in err
    assert "and no run nope recorded with agc record / agc import" in err
    assert "`agc runs` lists the recorded runs" in err


def test_recorded_stream_is_resumable(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`claude -p --output-format stream-json | agc record` keeps a resumable history."""
    stream = [
        {"type": "system", "subtype": "init", "session_id": "s"},
        {
            "type": "assistant",
            "uuid": "a1",
            "session_id": "s",
            "parent_tool_use_id": None,
            "message": {
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": "sleep 9"},
                    }
                ],
            },
        },
    ]
    feed_stdin(monkeypatch, "".join(_line(r) + "\n" for r in stream).encode())
    assert main(["record", "--run-id", "cc", "--store", str(store)]) == 0
    capsys.readouterr()
    assert main(["resume", "cc", "--store", str(store), "--check", "--json"]) == 1
    report = _json(capsys)
    assert report["format"] == "claude-code"
    assert [f["call_id"] for f in report["findings"]] == ["toolu_1"]


# --- agc export ---------------------------------------------------------------------------


def test_export_gives_back_the_imported_file(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _rollout(answered=True)
    _import(tmp_path, store, data)
    out = tmp_path / "back.jsonl"
    assert main(["export", "r1", "--store", str(store), "--out", str(out)]) == 0
    assert out.read_bytes() == data
    assert main(["export", "r1", "--store", str(store), "--out", str(out)]) == 2  # never over


def test_export_out_dash_is_standard_output(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfdbinary: pytest.CaptureFixture[bytes],
) -> None:
    data = _rollout(answered=True)
    _import(tmp_path, store, data)
    capfdbinary.readouterr()
    monkeypatch.chdir(tmp_path)
    assert main(["export", "r1", "--store", str(store), "--out", "-"]) == 0
    assert capfdbinary.readouterr().out == data
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("command", ["export", "resume"])
def test_out_under_a_file_is_a_usage_error_for_export_and_resume(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """--out whose folder is a file, or whose name is too long: exit 2 naming --out,
    never an internal error (exit 4)."""
    _import(tmp_path, store, _rollout(answered=False))
    capsys.readouterr()
    plain = tmp_path / "plain"
    plain.write_text("x")
    for out in (plain / "back.jsonl", tmp_path / ("n" * 300)):
        assert main([command, "r1", "--store", str(store), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"error: --out {out}" in err
        assert "internal error" not in err
    assert plain.read_text() == "x"


@pytest.mark.parametrize("insecure", [False, True])
def test_export_of_a_run_the_store_does_not_hold_is_not_found_not_tampered(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], insecure: bool
) -> None:
    # A mistyped run id: the store holds nothing of it, so there is no evidence that
    # failed its check and nothing --insecure-skip-verify could export.
    _import(tmp_path, store, _rollout(answered=True))
    capsys.readouterr()
    argv = ["export", "r1-typo", "--store", str(store)]
    code = main([*argv, "--insecure-skip-verify"] if insecure else argv)
    captured = capsys.readouterr()
    assert code == ExitCode.USAGE
    assert captured.out == ""
    assert f"no run 'r1-typo' in store {store}" in captured.err
    assert "`agc runs` lists the runs" in captured.err
    assert "tampered" not in captured.err
    assert "--insecure-skip-verify" not in captured.err


def test_export_refuses_a_tampered_run(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, _rollout(answered=True))
    transcript = StoreLayout(store).artifact_path("r1", "transcript")
    transcript.write_bytes(transcript.read_bytes() + b"\n")
    out = tmp_path / "back.jsonl"
    assert main(["export", "r1", "--store", str(store), "--out", str(out)]) == 1
    assert not out.exists()


def test_export_of_tool_events_a_verified_legacy_run_lacks_is_not_found_not_tampered(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A legacy run whose tool events are only in the shared file verifies (agc-verify
    # exit 0): its own tool-events file is not there, and nothing changed after the check.
    write_legacy_run_with_shared_tool_events(store)
    assert check_run("r1", store).complete
    assert main(["export", "r1", "--store", str(store), "--kind", "tool-events"]) == 2
    err = capsys.readouterr().err
    assert "has no tool-events file" in err
    assert "changed after the check" not in err
    assert main(["export", "r1", "--store", str(store)]) == 0
    assert capsys.readouterr().out == '{"a":1}\n'


@pytest.mark.parametrize("command", ["resume", "export"])
def test_a_folder_in_place_of_the_transcript_is_refused_not_an_internal_error(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    _import(tmp_path, store, _rollout(answered=True))
    path = StoreLayout(store).artifact_path("r1", "transcript")
    path.unlink()
    path.mkdir()
    check = ["--check"] if command == "resume" else []
    assert main([command, "r1", "--store", str(store), *check]) == 1  # as agc-verify r1
    assert "transcript is not a regular file" in capsys.readouterr().err
    insecure = [command, "r1", "--store", str(store), *check, "--insecure-skip-verify"]
    assert main(insecure) == 2  # no transcript file to use
    assert "Traceback" not in capsys.readouterr().err


# --- a file swapped between the check and the read ------------------------------------


def _swap_after_check(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> list[int]:
    """Run ``swap`` right after the run's check, before its transcript is read (the
    window an attacker who can write the store has); returns the count of checks."""
    real, real_kept = check_run, run_reader.check_store_run
    calls: list[int] = []

    def check_then_swap(run_id: str, store: Any = None, **trust: Any) -> Any:
        report = real(run_id, store, **trust)
        calls.append(1)
        swap()
        return report

    def kept_check_then_swap(*args: Any, **kwargs: Any) -> Any:
        report = real_kept(*args, **kwargs)
        calls.append(1)
        swap()
        return report

    # Every name the commands may check through (so that the same test judges a reader
    # that checks and then opens the file again).
    monkeypatch.setattr(run_reader, "check_store_run", kept_check_then_swap)
    for module in (resume_module, evidence_module):
        monkeypatch.setattr(module, "check_run", check_then_swap, raising=False)
    return calls


def _swaps(store: Path) -> dict[str, Callable[[], None]]:
    layout = StoreLayout(store)
    target, other = (
        layout.artifact_path("r1", "transcript"),
        layout.artifact_path("r2", "transcript"),
    )

    def rewritten() -> None:  # same length: only the digest can tell
        target.write_bytes(target.read_bytes().replace(b"sleep 9", b"sleep 1"))

    def appended() -> None:
        with target.open("ab") as handle:
            handle.write(other.read_bytes())

    def other_runs_file() -> None:  # a sealed transcript, just not this run's
        target.unlink()
        target.write_bytes(other.read_bytes())

    def symlink() -> None:
        target.unlink()
        target.symlink_to(other)

    def deleted() -> None:
        target.unlink()

    def fifo() -> None:
        target.unlink()
        os.mkfifo(target)

    return {
        "rewritten": rewritten,
        "appended": appended,
        "other-runs-file": other_runs_file,
        "symlink": symlink,
        "deleted": deleted,
        "fifo": fifo,
    }


_SWAPS: Final = ("rewritten", "appended", "other-runs-file", "symlink", "deleted", "fifo")


@pytest.mark.parametrize("command", ["resume", "export"])
@pytest.mark.parametrize("swap", _SWAPS)
def test_a_transcript_swapped_after_the_check_is_never_read(
    tmp_path: Path,
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    swap: str,
) -> None:
    # agc resume RUN / agc export RUN checked the run, then opened its transcript again:
    # bytes put there in between (another run's sealed file, a symlink to it, an edit)
    # were resumed or exported as if verified. The copy parsed is now the one made from
    # the check's own read: what is put there after the check is never read.
    data = _rollout(answered=False)
    _import(tmp_path, store, data, "r1")
    _import(tmp_path, store, _rollout(answered=True), "r2")
    calls = _swap_after_check(monkeypatch, _swaps(store)[swap])
    out = tmp_path / "out.jsonl"
    capsys.readouterr()
    if command == "resume":
        args = ["resume", "r1", "--store", str(store), "--strategy", "synthesize"]
    else:
        args = ["export", "r1", "--store", str(store)]
    code = main([*args, "--out", str(out)])
    captured = capsys.readouterr()
    assert calls == [1]
    assert code == 0, captured.err
    written = out.read_bytes()
    assert written.startswith(data)  # the verified bytes, not the swapped-in ones
    assert b'"output":"ok"' not in written  # r2 answered call_2 with "ok"
    if command == "export":
        assert written == data


def test_an_untouched_run_is_read_from_its_checked_copy(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The guard itself: with nothing swapped, the check happens once and the output is
    # the run's own bytes (for export) -- the copy, not a second read of the file.
    data = _rollout(answered=False)
    _import(tmp_path, store, data, "r1")
    calls = _swap_after_check(monkeypatch, lambda: None)
    out = tmp_path / "back.jsonl"
    assert main(["export", "r1", "--store", str(store), "--out", str(out)]) == 0
    assert calls == [1]
    assert out.read_bytes() == data


_LINE = st.one_of(
    # compact JSON objects, as the agents write them
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(st.integers(-(10**6), 10**6), st.text(max_size=12), st.booleans(), st.none()),
        max_size=4,
    ).map(_line),
    # anything else a line can hold (no line break)
    st.text(max_size=20).filter(lambda t: "\n" not in t),
)


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(lines=st.lists(_LINE, min_size=1, max_size=8), torn=st.booleans())
def test_export_round_trips_any_file(
    lines: list[str], torn: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Compact JSON lines and non-JSON lines come back byte for byte; a last line that
    is not JSON comes back without a line break when it had none (a torn line)."""
    data = "".join(line + "\n" for line in lines)
    last_is_json = True
    try:
        json.loads(lines[-1])
    except ValueError:
        last_is_json = False
    if torn and not last_is_json and lines[-1].strip():
        data = data[:-1]
    root = tmp_path_factory.mktemp("export")
    store = root / "store"
    store.mkdir()
    source = root / "in.jsonl"
    source.write_bytes(data.encode())
    assert main(["import", str(source), "--run-id", "x", "--store", str(store)]) == 0
    out = root / "out.jsonl"
    assert main(["export", "x", "--store", str(store), "--out", str(out)]) == 0
    exported = out.read_bytes()
    if not lines[-1].strip() or last_is_json or torn:
        assert exported == data.encode()
    else:  # a non-JSON last line that had its line break: the record cannot say so
        assert exported == data.encode()[:-1]


# --- inputs --check refuses -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "args", "says"),
    [
        pytest.param(b"[]", [], "holds no messages", id="empty-array"),
        pytest.param(
            b'{"type":"queue-operation","sessionId":"s"}\n{"type":"user","uuid":"u","sessionId":"s","message":{"role":"user","content":"hi"}}\n'.replace(
                b'{"type":"user"', b'{"type":"summary"'
            ),
            [],
            "none of them a message",
            id="no-message-line",
        ),
        pytest.param(
            b'{"timestamp":"t","type":"session_meta","payload":{"id":"s"}}\n',
            ["--format", "codex-rollout"],
            "is a codex-rollout message",
            id="format-matches-no-line",
        ),
    ],
)
def test_check_refuses_an_empty_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, args: list[str], says: str
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(content)
    assert main(["resume", str(path), "--check", *args]) == 2
    err = capsys.readouterr().err
    assert str(path) in err
    assert says in err


def test_check_refuses_a_sealed_transcript(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, _rollout(answered=False))
    transcript = StoreLayout(store).artifact_path("r1", "transcript")
    for args in ([], ["--format", "codex-rollout"], ["--format", "claude-code"]):
        capsys.readouterr()
        assert main(["resume", str(transcript), "--check", *args]) == 2
        err = capsys.readouterr().err
        assert "sealed transcript" in err
        assert "agc resume RUN_ID" in err


# --- report details -------------------------------------------------------------------------


def test_pending_id_matching_no_call_is_a_warning(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done"}]
    save_snapshot(SessionSnapshot("p", "s", messages, ToolCallState(True, "call_gone"), {}), store)
    assert main(["resume", "p", "--store", str(store), "--json"]) == 0
    report = _json(capsys)["report"]
    assert len(report["warnings"]) == 1
    assert "call_gone" in report["warnings"][0]
    assert main(["resume", "p", "--store", str(store), "--check"]) == 0
    assert "warning: the snapshot says call call_gone was in flight" in capsys.readouterr().err


def test_text_and_json_name_the_same_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(_rollout(answered=False))
    assert main(["resume", str(path), "--check"]) == 1
    text = capsys.readouterr().out
    assert main(["resume", str(path), "--check", "--json"]) == 1
    (finding,) = _json(capsys)["findings"]
    assert finding["record"] == 4  # 0-based
    assert f"line {finding['line']}: tool-call-unanswered" in text


# --- agc resume RUN_ID --store <bucket> for a recorded run (the in-memory bucket) -------

_S3_TRANSCRIPT: Final = artifact_path("r1", "transcript")
_S3_SIDECAR: Final = _S3_TRANSCRIPT + ".b3"
_S3_MANIFEST: Final = manifest_path("r1")
_EXAMPLES = itertools.count(1)


def _s3_import(tmp_path: Path, s3: Store, data: bytes, run_id: str = "r1") -> None:
    source = tmp_path / f"{run_id}-s3.jsonl"
    source.write_bytes(data)
    assert main(["import", str(source), "--run-id", run_id, "--store", s3.url]) == 0


def _put(s3: MemoryStore, path: str, data: bytes) -> None:
    """What a writer of the bucket can do: a new version of the key (the bucket keeps
    the sealed one under it: Object Lock, versioning)."""
    s3.overwrite(path, data)


def _delete(s3: MemoryStore, path: str) -> None:
    s3.delete(path)  # a delete marker: the versions stay


def _object(s3: Store, path: str) -> bytes:
    got = s3.get(path, max_bytes=1 << 30)
    assert got is not None
    return got[0]


def _resume(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["resume", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@st.composite
def _transcripts(draw: st.DrawFn) -> bytes:
    """A Codex rollout of messages and calls (each answered or not), with at times a
    line that is not JSON in the middle or a torn last line."""
    text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=12)
    lines: list[bytes] = [
        _line({"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}).encode()
    ]
    for index in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            item: dict[str, Any] = {
                "type": "message",
                "role": draw(st.sampled_from(["user", "assistant"])),
                "content": [{"type": "input_text", "text": draw(text)}],
            }
            items = [item]
        else:
            call = f"call_{index}"
            items = [
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": draw(text)}),
                    "call_id": call,
                }
            ]
            if draw(st.booleans()):
                items.append(
                    {"type": "function_call_output", "call_id": call, "output": draw(text)}
                )
        lines.extend(
            _line({"timestamp": "t", "type": "response_item", "payload": i}).encode() for i in items
        )
    noise = draw(st.sampled_from([None, b"not json", b"\xff\xfe"]))
    if noise is not None:
        lines.insert(draw(st.integers(1, len(lines))), noise)
    data = b"".join(line + b"\n" for line in lines)
    return data + b'{"timestamp":"t","ty' if draw(st.booleans()) else data


@settings(
    max_examples=examples(8, least=2),  # each example: an import and 4 resumes
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=_transcripts())
def test_a_run_recorded_to_s3_resumes_as_the_same_run_recorded_to_a_folder(
    data: bytes,
    bucket: MemoryStore,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Differential: the object store path (verify with a kept copy, unwrap the copy)
    gives what the folder path gives: exit code, report, messages, repaired bytes."""
    root = tmp_path_factory.mktemp("s3diff")
    folder = root / "store"
    folder.mkdir()
    run_id = f"d{next(_EXAMPLES)}"
    _import(root, folder, data, run_id)
    _s3_import(root, bucket, data, run_id)
    results: list[tuple[Any, ...]] = []
    for where in (str(folder), bucket.url):
        checked = _resume([run_id, "--store", where, "--check", "--json"], capsys)
        out = root / f"fixed-{len(results)}.jsonl"
        repair = ["--strategy", "synthesize", "--out", str(out)]
        repaired = _resume([run_id, "--store", where, *repair], capsys)
        results.append(
            (
                checked,
                repaired[0],
                repaired[1],
                repaired[2].replace(str(out), "OUT"),
                out.read_bytes() if out.exists() else None,
            )
        )
    assert results[0] == results[1]
    assert "does not verify" not in results[0][0][2]  # both runs verified


def _rewrite_transcript(s3: MemoryStore) -> None:
    _put(s3, _S3_TRANSCRIPT, _object(s3, _S3_TRANSCRIPT).replace(b"sleep 9", b"sleep 1"))


def _rewrite_transcript_and_sidecar(s3: MemoryStore) -> None:
    # Consistent with each other, not with the manifest: the seal names the digest.
    tampered = _object(s3, _S3_TRANSCRIPT).replace(b"sleep 9", b"sleep 1")
    sidecar = _object(s3, _S3_SIDECAR).decode()
    digest = blake3.blake3(tampered).hexdigest()
    _put(s3, _S3_TRANSCRIPT, tampered)
    _put(s3, _S3_SIDECAR, (digest + sidecar[len(digest) :]).encode())


def _delete_every_object(s3: MemoryStore) -> None:
    for path in list(s3.list_paths("audit/")):
        if "/r1." in path:
            _delete(s3, path)


def _folder_rewrite(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    path.write_bytes(path.read_bytes().replace(b"sleep 9", b"sleep 1"))


def _folder_rewrite_with_sidecar(layout: StoreLayout) -> None:
    path = layout.artifact_path("r1", "transcript")
    tampered = path.read_bytes().replace(b"sleep 9", b"sleep 1")
    sidecar = Path(str(path) + ".b3")
    digest = blake3.blake3(tampered).hexdigest()
    path.write_bytes(tampered)
    sidecar.write_text(digest + sidecar.read_text()[len(digest) :])


@pytest.mark.parametrize(
    ("change", "folder_change"),
    [
        pytest.param(_rewrite_transcript, _folder_rewrite, id="transcript-replaced"),
        pytest.param(
            _rewrite_transcript_and_sidecar,
            _folder_rewrite_with_sidecar,
            id="transcript-and-sidecar-replaced",
        ),
        pytest.param(
            lambda s3: _put(s3, _S3_TRANSCRIPT, _object(s3, _S3_TRANSCRIPT)),
            None,  # a folder cannot tell the same bytes written again
            id="transcript-overwritten-with-the-same-bytes",
        ),
        pytest.param(
            lambda s3: _delete(s3, _S3_TRANSCRIPT),
            lambda layout: layout.artifact_path("r1", "transcript").unlink(),
            id="transcript-deleted",
        ),
        pytest.param(
            lambda s3: _delete(s3, _S3_MANIFEST),
            lambda layout: layout.manifest_path("r1").unlink(),
            id="manifest-deleted",
        ),
        pytest.param(
            _delete_every_object,
            None,  # a folder keeps no trace of a deleted run: it is not found (exit 2)
            id="every-object-deleted",
        ),
    ],
)
def test_an_s3_run_changed_after_recording_is_refused_as_in_a_folder(
    tmp_path: Path,
    store: Path,
    bucket: MemoryStore,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[MemoryStore], None],
    folder_change: Callable[[StoreLayout], None] | None,
) -> None:
    data = _rollout(answered=False)
    _import(tmp_path, store, data)
    _s3_import(tmp_path, bucket, data)
    change(bucket)
    code, out, err = _resume(["r1", "--store", bucket.url, "--check"], capsys)
    assert code == 1  # VerificationError, as `agc-verify r1` says 1
    assert "run r1 does not verify" in err
    assert "--insecure-skip-verify resumes from it anyway" in err
    assert out == ""
    assert "Traceback" not in err
    insecure = _resume(["r1", "--store", bucket.url, "--check", "--insecure-skip-verify"], capsys)
    assert "warning: --insecure-skip-verify: run r1 does not verify" in insecure[2]
    if folder_change is None:
        return
    folder_change(StoreLayout(store))
    assert _resume(["r1", "--store", str(store), "--check"], capsys)[0] == code
    folder = _resume(["r1", "--store", str(store), "--check", "--insecure-skip-verify"], capsys)
    assert insecure[0] == folder[0]  # records used as they are, or none to use (exit 2)
    assert insecure[1] == folder[1]


def _legacy_records(data: bytes) -> bytes:
    """``data``'s lines as records of a legacy store (no manifest): what agc export undoes."""
    lines = data.splitlines()
    return b"".join(
        _line({"line": n, "payload": json.loads(line)}).encode() + b"\n"
        for n, line in enumerate(lines, 1)
    )


def test_a_legacy_s3_run_resumes_as_agc_verify_judges_it(
    bucket: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    # A run with digest-only SHA-256 sidecars and no manifest, not in the store chain:
    # agc-verify says complete (exit 0), so agc resume --check checks its history.
    legacy: dict[ArtifactKind, bytes] = {
        "transcript": _legacy_records(_rollout(answered=True)),
        "tool-events": b"",
    }
    for kind, body in legacy.items():
        path = artifact_path("r1", kind)
        _put(bucket, path, body)
        _put(bucket, path + ".sha256", hashlib.sha256(body).hexdigest().encode())
    assert check_run("r1", bucket).complete
    code, out, err = _resume(["r1", "--store", bucket.url, "--check"], capsys)
    assert (code, "changed after it was read" in err) == (0, False)
    assert "valid" in out


def _evil_objects(tmp_path: Path, named_buckets: Callable[[str], MemoryStore]) -> dict[str, bytes]:
    """The transcript, sidecar and manifest of another run r1 (every call answered),
    recorded in another bucket: what an attacker who can write the bucket swaps in."""
    other = named_buckets("other")
    (tmp_path / "evil").mkdir()
    _s3_import(tmp_path / "evil", other, _rollout(answered=True))
    return {path: _object(other, path) for path in (_S3_TRANSCRIPT, _S3_SIDECAR, _S3_MANIFEST)}


@pytest.mark.parametrize("when", ["after-the-check", "after-the-transcript-get"])
def test_a_swap_between_verify_and_read_cannot_get_other_bytes_parsed(
    tmp_path: Path,
    named_buckets: Callable[[str], MemoryStore],
    bucket: MemoryStore,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    when: str,
) -> None:
    data = _rollout(answered=False)
    _s3_import(tmp_path, bucket, data)
    evil = _evil_objects(tmp_path, named_buckets)
    swapped: list[str] = []
    opened: list[str] = []

    def swap() -> None:
        if not swapped:
            for path, body in evil.items():
                _put(bucket, path, body)
            swapped.append(when)

    real_check = check_object_run
    real_open = MemoryStore.open

    def check_then_swap(*args: Any, **kwargs: Any) -> Any:
        report = real_check(*args, **kwargs)
        swap()
        return report

    class _SwapAfterGet:
        def __init__(self, inner: Any, path: str) -> None:
            self._inner, self._path = inner, path

        def __enter__(self) -> Any:
            found = self._inner.__enter__()
            if self._path == _S3_TRANSCRIPT:
                swap()  # the object's answer is on its way: its version is fixed
            return found

        def __exit__(self, *exc: object) -> None:
            self._inner.__exit__(*exc)

    def open_then_swap(self: MemoryStore, path: str, **kwargs: Any) -> Any:
        opened.append(path)
        inner = real_open(self, path, **kwargs)
        return _SwapAfterGet(inner, path) if when == "after-the-transcript-get" else inner

    monkeypatch.setattr(MemoryStore, "open", open_then_swap)
    if when == "after-the-check":
        monkeypatch.setattr(run_reader, "check_store_run", check_then_swap)
    out = tmp_path / "fixed.jsonl"
    code, _, err = _resume(
        ["r1", "--store", bucket.url, "--strategy", "synthesize", "--out", str(out)], capsys
    )
    assert swapped == [when]
    assert code == 0, err
    fixed = out.read_bytes()
    assert fixed.startswith(data)  # the verified bytes, not the swapped-in run's
    assert b'"output":"ok"' not in fixed  # the swapped-in run answered call_2 with "ok"
    assert opened.count(_S3_TRANSCRIPT) == 1  # fetched once, never again after the check
    # The bucket holds the other run now: the swap took place, and a new resume sees it.
    assert _object(bucket, _S3_TRANSCRIPT) == evil[_S3_TRANSCRIPT]


def test_a_copy_that_differs_from_the_bytes_verified_is_refused(
    tmp_path: Path,
    bucket: MemoryStore,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _s3_import(tmp_path, bucket, _rollout(answered=False))
    real_write = kept_module.KeptArtifact.write
    monkeypatch.setattr(
        kept_module.KeptArtifact,
        "write",
        lambda self, chunk: real_write(self, chunk.replace(b"sleep 9", b"sleep 1")),
    )
    code, out, err = _resume(["r1", "--store", bucket.url, "--check"], capsys)
    assert code == 1
    assert "does not match its seal on this host" in err
    assert out == ""


def test_a_run_missing_from_s3_is_not_found_as_in_a_folder(
    tmp_path: Path, store: Path, bucket: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, _rollout(answered=False))
    _s3_import(tmp_path, bucket, _rollout(answered=False))
    answers = []
    for where in (str(store), bucket.url):
        code, _, err = _resume(["nope", "--store", where, "--check", "--json"], capsys)
        answers.append((code, err.splitlines()[0].split(" in ")[0]))
        assert _resume(["r1", "--store", where, "--check"], capsys)[0] == 1  # the run is found
    assert answers[0] == answers[1] == (2, "error: no snapshot of run nope")


def _failing(error: Exception, where: str) -> Callable[..., None]:
    """A botocore ``before-send`` handler: the request fails as the network or the
    service would make it fail, for requests whose URL contains ``where``."""

    def handler(request: Any, **_: Any) -> None:
        if where in request.url:
            raise error

    return handler


@pytest.mark.parametrize(
    ("operation", "error", "where", "says"),
    [
        pytest.param(
            "ListObjectVersions",
            EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
            "",
            "cannot be reached",
            id="network-down-when-listing-the-run",
        ),
        pytest.param(
            "GetObjectLockConfiguration",
            ClientError({"Error": {"Code": "NoSuchBucket"}}, "GetObjectLockConfiguration"),
            "",
            "does not exist",
            id="bucket-gone-when-verifying",
        ),
        pytest.param(
            "GetObject",
            NoCredentialsError(),
            "transcripts",
            "no usable AWS credentials",
            id="credentials-gone-when-reading-the-transcript",
        ),
        pytest.param(
            "GetObject",
            EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
            "transcripts",
            "cannot be reached",
            id="network-down-when-reading-the-transcript",
        ),
    ],
)
def test_s3_failures_while_resuming_a_run_are_exit_3_with_a_hint(
    tmp_path: Path,
    s3_store: ObjectStore,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    operation: str,
    error: Exception,
    where: str,
    says: str,
) -> None:
    _s3_import(tmp_path, s3_store, _rollout(answered=False))
    real_new_client = objstore._new_client

    def failing_client() -> Any:
        client = real_new_client()
        client.meta.events.register(f"before-send.s3.{operation}", _failing(error, where))
        return client

    monkeypatch.setattr(objstore, "_new_client", failing_client)
    code, out, err = _resume(["r1", "--store", s3_store.url, "--check"], capsys)
    assert code == 3, err
    assert says in err
    assert "hint:" in err
    assert "Traceback" not in err
    assert "internal error" not in err
    assert out == ""


@pytest.mark.parametrize("holds", ["run", "snapshot"])
def test_a_name_that_is_a_file_and_an_s3_run_is_ambiguous(
    tmp_path: Path,
    bucket: MemoryStore,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    holds: str,
) -> None:
    if holds == "run":
        _s3_import(tmp_path, bucket, _rollout(answered=False))
    else:
        messages = [{"role": "user", "content": "hi"}]
        save_snapshot(SessionSnapshot("r1", "s", messages, ToolCallState(), {}), bucket)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r1").write_bytes(_rollout(answered=True))
    code, _, err = _resume(["r1", "--store", bucket.url, "--check"], capsys)
    assert code == 2
    assert "'r1' is ambiguous: it is both the file ./r1 and run r1 in the store" in err


# --- agc export RUN_ID --store s3://… -----------------------------------------------------


def test_export_from_s3_gives_back_the_imported_file_and_refuses_a_rewrite(
    tmp_path: Path, bucket: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    # agc export was folder-only (a usage error for s3://); it now writes from the copy
    # the object store's check kept, as agc resume does.
    data = _rollout(answered=True)
    _s3_import(tmp_path, bucket, data)
    out = tmp_path / "back.jsonl"
    assert main(["export", "r1", "--store", bucket.url, "--out", str(out)]) == 0
    assert out.read_bytes() == data
    capsys.readouterr()
    assert main(["export", "r1", "--store", bucket.url]) == 0
    assert capsys.readouterr().out == data.decode()
    _rewrite_transcript(bucket)
    again = tmp_path / "again.jsonl"
    assert main(["export", "r1", "--store", bucket.url, "--out", str(again)]) == 1
    assert "run r1 does not verify" in capsys.readouterr().err
    assert not again.exists()


def test_export_to_a_reader_gone_keeps_its_exit_code(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `agc export r1 | head -0`: the EPIPE reached click, whose rule for it is exit 1.
    _import(tmp_path, store, _rollout(answered=True))
    capsys.readouterr()
    done = run_agc_to_a_gone_reader(["export", "r1", "--store", str(store)])
    assert (done.returncode, done.stderr) == (0, "")


# --- differential: agc resume RUN / agc export RUN judge as agc-verify RUN does ------------


def _tamper(layout: StoreLayout, how: str, position: int, other: str) -> None:
    """One change of a writer of the store to run r1 (``other``: another sealed run)."""
    transcript = layout.artifact_path("r1", "transcript")
    sidecars = list(transcript.parent.glob("r1.jsonl.*"))
    data = transcript.read_bytes()
    index = position % max(len(data), 1)
    if how == "flip":
        transcript.write_bytes(data[:index] + bytes([data[index] ^ 0x20]) + data[index + 1 :])
    elif how == "truncate":
        transcript.write_bytes(data[:index])
    elif how == "append":
        transcript.write_bytes(data + data[: index + 1])
    elif how == "empty":
        transcript.write_bytes(b"")
    elif how == "delete":
        transcript.unlink()
    elif how == "sidecar-gone":
        for sidecar in sidecars:
            sidecar.unlink()
    elif how == "manifest-gone":
        layout.manifest_path("r1").unlink()
    elif how == "symlink-to-other":
        transcript.unlink()
        transcript.symlink_to(layout.artifact_path(other, "transcript"))
    elif how == "hard-link-to-other":
        transcript.unlink()
        os.link(layout.artifact_path(other, "transcript"), transcript)
    elif how in {"other-run-swapped-in", "other-run-files-only"}:
        # Another run's transcript and sidecar (and its manifest): is the run id bound?
        source = layout.artifact_path(other, "transcript")
        transcript.write_bytes(source.read_bytes())
        for sidecar in sidecars:
            sidecar.write_bytes(source.with_name(f"{other}.jsonl{sidecar.suffix}").read_bytes())
        if how == "other-run-swapped-in":
            layout.manifest_path("r1").write_bytes(layout.manifest_path(other).read_bytes())
    elif how == "folder":
        transcript.unlink()
        transcript.mkdir()


_TAMPERINGS = (
    "none",
    "flip",
    "truncate",
    "append",
    "empty",
    "delete",
    "sidecar-gone",
    "manifest-gone",
    "symlink-to-other",
    "hard-link-to-other",
    "other-run-swapped-in",
    "other-run-files-only",
    "folder",
)


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=_transcripts(),
    other=_transcripts(),
    algorithm=st.sampled_from(["blake3", "sha256"]),
    how=st.sampled_from(_TAMPERINGS),
    position=st.integers(min_value=0),
)
def test_resume_and_export_judge_a_tampered_run_as_agc_verify_does(
    data: bytes,
    other: bytes,
    algorithm: str,
    how: str,
    position: int,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from agc.cli.verify_main import main as verify_main  # noqa: PLC0415 - its own entry point

    root = tmp_path_factory.mktemp("differential")
    store = root / "store"
    for run_id, body in (("r1", data), ("r2", other)):
        source = root / f"{run_id}.jsonl"
        source.write_bytes(body)
        args = ["import", str(source), "--run-id", run_id, "--store", str(store)]
        assert main([*args, "--algorithm", algorithm]) == 0
    untouched = _resume(["r1", "--store", str(store), "--check", "--json"], capsys)
    _tamper(StoreLayout(store), how, position, "r2")
    capsys.readouterr()
    verified = verify_main(["r1", "--store", str(store)])
    checked = _resume(["r1", "--store", str(store), "--check", "--json"], capsys)
    out = root / "exported.jsonl"
    exported = main(["export", "r1", "--store", str(store), "--out", str(out)])
    assert verified in {0, 1}
    if verified == 1:
        assert (checked[0], exported) == (1, 1)
        assert not out.exists()
    else:
        assert checked == untouched
        assert exported == 0
        assert out.read_bytes() == _as_exported(data)


def _as_exported(data: bytes) -> bytes:
    """The file agc export gives back for an imported ``data``: the same bytes, except
    the documented limit that a last line that is not JSON at all comes back without a
    line break (the record cannot tell it from a line a crash cut off)."""
    last = data.rstrip(b"\n").rpartition(b"\n")[2]
    try:
        json.loads(last)
    except ValueError:
        return data.removesuffix(b"\n")
    return data


def test_a_run_larger_than_the_input_limit_is_refused_before_it_is_copied(
    tmp_path: Path,
    store: Path,
    bucket: MemoryStore,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The limit on a history is applied to the run's transcript before its copy is
    made (in $TMPDIR above the spool size): a huge run is never copied to be refused."""
    data = _rollout(answered=False)
    _import(tmp_path, store, data)
    _s3_import(tmp_path, bucket, data)
    size = StoreLayout.at(store).artifact_path("r1", "transcript").stat().st_size
    copied: list[int] = []
    write = kept_module.KeptArtifact.write

    def counting(self: kept_module.KeptArtifact, chunk: bytes, /) -> None:
        copied.append(len(chunk))
        write(self, chunk)

    monkeypatch.setattr(kept_module.KeptArtifact, "write", counting)
    monkeypatch.setattr(resume_module, "_MAX_INPUT_BYTES", size - 1)
    for where in (str(store), bucket.url):
        code, out, err = _resume(["r1", "--store", where, "--check"], capsys)
        assert code == ExitCode.USAGE, err
        assert f"is larger than {size - 1} bytes" in err
        assert out == ""
    assert copied == []
    monkeypatch.setattr(resume_module, "_MAX_INPUT_BYTES", size)
    for where in (str(store), bucket.url):
        assert _resume(["r1", "--store", where, "--check"], capsys)[0] == ExitCode.FINDINGS


def _reused_id_items() -> list[dict[str, Any]]:
    """Two different calls with one id, each answered: `ls` (exec_command), then a
    patch (apply_patch, other arguments) that reuses the id, as a real Codex rollout
    can hold."""
    return [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {
            "type": "function_call",
            "name": "exec_command",
            "arguments": '{"cmd":"ls"}',
            "call_id": "call_1",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "a"},
        {
            "type": "function_call",
            "name": "apply_patch",
            "arguments": '{"patch":"*** Begin Patch"}',
            "call_id": "call_1",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "patched"},
    ]


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_a_call_reusing_an_id_is_named_as_removed_with_a_key_of_its_own(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], strategy: str
) -> None:
    """The later call with a reused id is removed under either strategy (providers
    refuse two calls with one id): it is named on stderr and in removed_calls, and its
    key is not the earlier call's, the same from the file, its run and a snapshot."""
    lines = [{"timestamp": "t", "type": "session_meta", "payload": {"id": "s1"}}]
    lines += [
        {"timestamp": "t", "type": "response_item", "payload": item} for item in _reused_id_items()
    ]
    source = tmp_path / "rollout.jsonl"
    source.write_text("".join(_line(line) + "\n" for line in lines))
    capsys.readouterr()

    def removed(target: str, *args: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        out = tmp_path / f"out-{len(list(tmp_path.iterdir()))}.jsonl"
        argv = ["resume", target, "--strategy", strategy, "--out", str(out), "--json", *args]
        assert main(argv) == 0
        document = _json(capsys)
        return document["removed_calls"], document["report"]["changes"]

    from_file, changes = removed(str(source))
    assert [(c["action"], c["tool_name"]) for c in from_file] == [
        ("dropped-duplicate-call", "apply_patch")
    ]
    first_key = idempotency_key("call_1", session="s1")
    assert from_file[0]["idempotency_key"] not in {None, first_key}
    assert from_file[0]["idempotency_key"] == idempotency_key("call_1", session="s1", occurrence=2)
    # The dropped result answers the dropped call: it carries that call's key.
    orphan = [c for c in changes if c["action"] == "dropped-orphan-result"]
    assert [c["idempotency_key"] for c in orphan] == [from_file[0]["idempotency_key"]]

    _import(tmp_path, store, source.read_bytes(), run_id="r-reuse")
    capsys.readouterr()
    from_run, _ = removed("r-reuse", "--store", str(store))
    snapshot = SessionSnapshot(
        "snap-reuse",
        "s1",
        _reused_id_items(),
        ToolCallState(False, None),
        {},
        format="openai-responses",
    )
    save_snapshot(snapshot, store)
    from_snapshot, _ = removed("snap-reuse", "--store", str(store))
    keys = {c["idempotency_key"] for c in from_file + from_run + from_snapshot}
    assert keys == {from_file[0]["idempotency_key"]}

    # The text report names it too, with its key.
    out = tmp_path / "text.jsonl"
    assert main(["resume", str(source), "--strategy", strategy, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1 tool call(s) removed that may have run" in err
    assert "apply_patch" in err
    assert from_file[0]["idempotency_key"] in err
