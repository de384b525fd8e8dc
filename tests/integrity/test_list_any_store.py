"""``agc runs``: one listing for every store. The same runs written to a store folder and
to a store written object by object (the in-memory store, as an ``s3://`` store is
written) are listed with the same fields and the same values, but for the times."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agc._core.folderstore import FolderStore
from agc._core.memstore import MemoryStore
from agc._core.storage import Store
from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.integrity import (
    generate_keypair,
    list_runs,
    load_signing_key,
    open_run,
)

LEGACY = b'{"line":1,"payload":{"a":1}}\n{"line":2,"payload":{"a":2}}\n'


def _write_runs(store: str, objects: Store, keys: Path) -> None:
    """The same runs, in every state a listing names, through the writers (or, for what
    no writer of this release makes, as objects put into the store)."""
    private, _, _ = generate_keypair(keys)
    with open_run("signed", store=store, signing_key=load_signing_key(private)) as run:
        run.transcript.write({"a": 1})
    with open_run("plain", store=store) as run:
        run.transcript.write({"a": 1})
        run.transcript.write({"a": 2})
        run.tool_events.write({"tool": "sh"})
    with open_run("broken", store=store) as run:
        run.transcript.write({"a": 1})
    crashed = open_run("crashed", store=store)
    for n in range(3):
        crashed.transcript.write({"n": n})
    crashed.abort()  # as a crash leaves it: not sealed (an object store: still staged)
    objects.put_new("audit/transcripts/old.jsonl", LEGACY)
    digest = hashlib.sha256(LEGACY).hexdigest().encode()
    objects.put_new("audit/transcripts/old.jsonl.sha256", digest)


def _listed(store: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["runs", "--store", store, "--json"]) == ExitCode.OK
    runs: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["runs"]
    times = [run["last_write_ms"] for run in runs]
    assert all(isinstance(ms, int) for ms in times)
    assert times == sorted(times, reverse=True)  # newest first
    return runs


def test_a_folder_and_an_object_store_list_the_same_runs_alike(
    tmp_path: Path,
    named_buckets: Callable[[str], MemoryStore],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AGC_STAGING", str(tmp_path / "staging"))
    folder = tmp_path / "store"
    bucket = named_buckets("evidence")
    _write_runs(str(folder), FolderStore(folder), tmp_path / "keys-folder")
    _write_runs(bucket.url, bucket, tmp_path / "keys-bucket")
    (folder / "audit/manifests/broken.json").write_bytes(b"{damaged")
    bucket.overwrite("audit/manifests/broken.json", b"{damaged")

    in_folder, in_bucket = _listed(str(folder), capsys), _listed(bucket.url, capsys)

    def untimed(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {
            run["run_id"]: {k: v for k, v in run.items() if k != "last_write_ms"} for run in runs
        }

    assert untimed(in_bucket) == untimed(in_folder)
    assert [list(run) for run in in_bucket] == [list(run) for run in in_folder]  # one shape
    states = {run["run_id"]: run["state"] for run in in_folder}
    assert states == {
        "signed": "sealed",
        "plain": "sealed",
        "broken": "damaged",
        "crashed": "unsealed",
        "old": "legacy",
    }
    plain = untimed(in_folder)["plain"]
    assert plain["records_by_kind"] == {"transcript": 2, "tool-events": 1}
    on_disk = sum(
        (folder / f"audit/{kind}/plain.jsonl").stat().st_size
        for kind in ("transcripts", "tool-events")
    )
    assert plain["bytes"] == on_disk
    damaged = untimed(in_folder)["broken"]
    assert damaged["records_by_kind"] == {"transcript": 1, "tool-events": 0}
    assert damaged["bytes"] > 0
    assert untimed(in_folder)["old"]["bytes"] == len(LEGACY)


def test_the_library_lists_a_store_object_as_its_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGC_STAGING", str(tmp_path / "staging"))
    memory = MemoryStore(name="evidence", prefix="team")
    with open_run("r1", store=memory) as run:
        run.transcript.write({"a": 1})
    [listed] = list_runs(memory)
    assert (listed.run_id, listed.state, listed.records) == (
        "r1",
        "sealed",
        {"transcript": 1, "tool-events": 0},
    )
    sizes = [
        memory.get(f"audit/{kind}/r1.jsonl", max_bytes=1 << 20)
        for kind in ("transcripts", "tool-events")
    ]
    assert listed.bytes == sum(len(found[0]) for found in sizes if found is not None)
