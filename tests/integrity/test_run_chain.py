"""A run is checked against the store chain: a run id is linked once, a replaced or
deleted run never verifies, and the chain's last link torn one byte short is healed.

* ``agc record``/``agc import``/``open_run`` refuse a run id the chain links
  (``run-exists``, exit 2, nothing written); the same input imported again is a no-op.
* ``agc-verify RUN`` (``check_run``), ``--all`` and the report fail a run whose files were
  replaced (``replaced``) or deleted (``deleted``, with the link's position).
* A chain whose last link lacks only its newline is completed by the next writer and
  by ``agc recover``; every other torn length is quarantined as before.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.memstore import MemoryStore
from agc._core.store import StoreLayout, artifact_path, manifest_path
from agc.cli.app import main as agc_main
from agc.cli.verify_main import main as verify_main
from agc.errors import AgcError, RunExistsError
from agc.exitcodes import ExitCode
from agc.integrity import (
    RunReport,
    TranscriptWriter,
    chain_pending_path,
    check_run,
    check_store,
    generate_keypair,
    ingest_stream,
    load_signing_key,
    open_run,
    recover_store,
)
from agc.integrity import _writer as writer_module
from agc.integrity._chain import ChainEntry, chain_log_path, read_chain, run_links, write_head
from tests.conftest import examples, feed_stdin, sampled, tree
from tests.integrity.evidence_helpers import fixed_clock, records, write_run

REACHES_INSIDE = {
    "agc.integrity._chain": "reads and rewrites the chain log and its head to tamper with links",
    "agc.integrity._writer": "the tool-event writer class, and swaps its linked-run guard",
}

TRANSCRIPT = b'{"type":"thread.started"}\n{"type":"item.completed","text":"done"}\n'

# The files of a run that another store's run of the same id can stand in for.
RUN_FILES = (
    "audit/transcripts/r.jsonl",
    "audit/transcripts/r.jsonl.b3",
    "audit/tool-events/r.jsonl",
    "audit/tool-events/r.jsonl.b3",
    "audit/manifests/r.json",
)
# Findings that say where a run differs from its evidence (an artifact, its manifest).
LOCATED = {"transcript", "tool-events", "manifest"}


def _codes(report: RunReport) -> list[str]:
    return [f.code for f in report.errors]


def _contents(store: Path) -> dict[str, bytes]:
    return {str(p.relative_to(store)): p.read_bytes() for p in store.rglob("*") if p.is_file()}


def _delete_run_files(store: Path, run_id: str) -> None:
    for kind in ("transcripts", "tool-events"):
        for path in (store / "audit" / kind).glob(f"{run_id}.jsonl*"):
            path.unlink()
    (store / "audit/manifests" / f"{run_id}.json").unlink()


def _import(tmp_path: Path, store: Path, run_id: str, data: bytes, *extra: str) -> int:
    source = tmp_path / f"{run_id}-input.jsonl"
    source.write_bytes(data)
    return agc_main(["import", str(source), "--run-id", run_id, "--store", str(store), *extra])


# -- a run id is linked once ------------------------------------------------------------


def test_an_exported_edited_and_reimported_run_is_refused_and_the_gap_reads_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The replacement the gate used to pass: export, edit, delete the run's three
    files, import under the same id. The import is refused (nothing written) and the
    run reads as deleted, with its link's position, never as a typo."""
    store = tmp_path / "store"
    assert _import(tmp_path, store, "r1", TRANSCRIPT) == 0
    assert _import(tmp_path, store, "r2", TRANSCRIPT) == 0
    out = tmp_path / "r2.jsonl"
    assert agc_main(["export", "r2", "--out", str(out), "--store", str(store)]) == 0
    edited = out.read_bytes().replace(b"done", b"undone")
    _delete_run_files(store, "r2")
    before = _contents(store)
    capsys.readouterr()
    assert _import(tmp_path, store, "r2", edited) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "run r2 is already linked" in err
    assert f"`agc-verify r2 --store {store}` (chain link 2)" in " ".join(err.split())
    assert _contents(store) == before, "nothing may be written"
    assert verify_main(["r2", "--store", str(store), "--json"]) == ExitCode.FINDINGS
    report = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in report["findings"]] == ["deleted"]
    assert report["findings"][0]["expected"]["position"] == 2
    assert "link 2" in report["findings"][0]["message"]
    assert verify_main(["r1", "--store", str(store)]) == 0


def test_open_run_and_a_writer_refuse_a_linked_run_id_and_write_nothing(store: Path) -> None:
    write_run(store, "r")
    _delete_run_files(store, "r")
    before = tree(store)
    for opener in (
        lambda: open_run("r", store=store),
        lambda: TranscriptWriter("r", store=store),
    ):
        with pytest.raises(RunExistsError) as info:
            opener()
        assert info.value.exit_code == ExitCode.USAGE
        assert info.value.code == "run-exists"
        assert "agc-verify r" in (info.value.hint or "")
        assert tree(store) == before


def test_a_reopened_run_is_linked_again_and_still_verifies(store: Path) -> None:
    write_run(store, "r")
    for writer_class in (TranscriptWriter, writer_module.ToolEventWriter):
        with writer_class("r", store=store, reopen=True) as writer:
            writer.write({"role": "user", "content": "a new segment"})
    layout = StoreLayout.at(store)
    assert [e.position for e in run_links(layout, "r")] == [1, 2, 3]  # a link per seal
    assert check_run("r", store).complete, check_run("r", store).missing
    assert check_store(store).complete
    with pytest.raises(RunExistsError, match="link 1, 2, 3"):
        open_run("r", store=store)


@pytest.mark.parametrize("how", ["import", "record"])
def test_the_same_input_again_is_a_no_op_and_other_input_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    store = tmp_path / "store"
    data = TRANSCRIPT + b"not json\n" + b'{"b": 1.0}\n'

    def send(payload: bytes) -> int:
        if how == "import":
            return _import(tmp_path, store, "r", payload, "--json")
        feed_stdin(monkeypatch, payload)
        return agc_main(["record", "--run-id", "r", "--store", str(store), "--json"])

    assert send(data) == 0
    first = json.loads(capsys.readouterr().out)
    before = _contents(store)
    assert send(data) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["unchanged"] is True
    assert first["unchanged"] is False
    assert again["seals"] == first["seals"]
    assert _contents(store) == before
    for other in (data + b"{}\n", data.replace(b"1.0", b"1"), data.replace(b"done", b"d0ne")):
        assert send(other) == ExitCode.USAGE
        assert json.loads(capsys.readouterr().out)["error"]["code"] == "run-exists"
        assert _contents(store) == before


@pytest.mark.parametrize(
    ("first", "again"),
    [
        ((), ("--signing-key", "KEY")),  # stored unsigned, the retry signs
        (("--signing-key", "OTHER"), ("--signing-key", "KEY")),  # another key signed it
        ((), ("--algorithm", "sha256")),  # stored with blake3, the retry seals sha256
    ],
    ids=["unsigned-then-signed", "other-key", "other-algorithm"],
)
def test_a_retried_import_that_would_seal_otherwise_is_not_a_no_op(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    first: tuple[str, ...],
    again: tuple[str, ...],
) -> None:
    """The no-op says the store holds what this import would write: the same records
    but unsigned, signed by another key or sealed with another digest is another run
    (run-exists, nothing written), never an exit 0 that a signed-evidence step trusts."""
    keys = {}
    for name in ("KEY", "OTHER"):
        assert agc_main(["keys", "generate", "--out", str(tmp_path / name)]) == 0
        keys[name] = str(tmp_path / name / "signing-key.pem")
    capsys.readouterr()
    store = tmp_path / "store"
    assert _import(tmp_path, store, "r", TRANSCRIPT, *(keys.get(a, a) for a in first)) == 0
    before = _contents(store)
    capsys.readouterr()
    code = _import(tmp_path, store, "r", TRANSCRIPT, "--json", *(keys.get(a, a) for a in again))
    assert code == ExitCode.USAGE
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "run-exists"
    assert _contents(store) == before


def test_a_retried_import_of_a_tampered_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The no-op needs the stored run to verify: the same input over a run whose file
    was changed is not 'the same run'."""
    store = tmp_path / "store"
    assert _import(tmp_path, store, "r", TRANSCRIPT) == 0
    path = store / "audit/transcripts/r.jsonl"
    path.write_bytes(path.read_bytes().replace(b"done", b"gone"))
    capsys.readouterr()
    assert _import(tmp_path, store, "r", TRANSCRIPT) == ExitCode.USAGE
    assert "already linked" in capsys.readouterr().err


# -- replaced and deleted runs never verify ---------------------------------------------


@pytest.fixture
def relinked(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store in which a writer without the run-exists rule (an agc before it, or a
    writer of the store's files) linked run ``r`` a second time over deleted files."""
    write_run(store, "a")
    write_run(store, "r", seed=1)
    write_run(store, "b")
    _delete_run_files(store, "r")
    monkeypatch.setattr(writer_module, "refuse_if_linked", lambda layout, run_id: None)
    write_run(store, "r", seed=2)
    monkeypatch.undo()
    return store


def test_a_run_linked_again_without_a_reopen_is_replaced_in_every_view(
    relinked: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = check_run("r", relinked)
    assert _codes(report) == ["replaced"], report.missing
    assert "chain link 2" in report.errors[0].message
    assert verify_main(["r", "--store", str(relinked)]) == ExitCode.FINDINGS
    out = capsys.readouterr().out
    assert "run r: complete" not in out
    whole = check_store(relinked)
    row = next(run for run in whole.runs if run.run_id == "r")
    assert "replaced" in _codes(row)
    assert all(run.complete for run in whole.runs if run.run_id != "r")
    store_text = " ".join(f.message for f in whole.findings)
    assert "manifest-replaced" in {f.code for f in whole.findings}
    assert "when the run was re-opened" not in store_text
    assert "the run was replaced" in store_text
    rows = tmp_path / "rows.csv"
    code = agc_main(["report", "--all", "--csv", str(rows), "--store", str(relinked)])
    assert code == ExitCode.FINDINGS
    by_run = {row["run_id"]: row for row in csv.DictReader(io.StringIO(rows.read_text()))}
    assert "replaced" in json.dumps(by_run["r"])
    assert by_run["a"] != by_run["r"]


def test_a_deleted_run_is_deleted_in_check_run_and_all(store: Path) -> None:
    write_run(store, "a")
    write_run(store, "gone")
    _delete_run_files(store, "gone")
    report = check_run("gone", store)
    assert _codes(report) == ["deleted"]
    assert report.errors[0].expected == {
        "position": 2,
        "manifest_digest": read_chain(StoreLayout.at(store))[0][1].manifest_digest,
    }
    row = next(run for run in check_store(store).runs if run.run_id == "gone")
    assert _codes(row) == ["deleted"]
    assert _codes(check_run("never", store)) == ["run-missing"]


def test_a_run_without_its_manifest_names_the_link_that_recorded_it(store: Path) -> None:
    write_run(store, "r")
    (store / "audit/manifests/r.json").unlink()
    report = check_run("r", store)
    deleted = [f for f in report.errors if f.code == "deleted" and f.artifact == "manifest"]
    assert deleted
    assert deleted[0].expected is not None
    assert deleted[0].expected["position"] == 1


def test_a_closed_manifest_the_chain_does_not_link_is_unchained_unless_being_linked(
    store: Path,
) -> None:
    write_run(store, "a")
    write_run(store, "r")
    log = chain_log_path(StoreLayout.at(store))
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(lines[0])  # the link of r is gone (and the head is ahead)
    assert _codes(check_run("r", store)) == ["unchained"]
    entry = read_chain(StoreLayout.at(store))[0][0]
    write_head(StoreLayout.at(store), entry)
    pending = {"run_id": "r", "position": 2, "prev": entry.manifest_digest}
    chain_pending_path(StoreLayout.at(store)).write_text(json.dumps(pending))
    assert check_run("r", store).complete  # a crash mid-link: recover links it


def _store_with(start_ms: int) -> Path:
    """A store with runs ``first`` and ``r``; another ``start_ms`` gives ``r`` other
    bytes in every file (its records' ``ts``)."""
    root = Path(tempfile.mkdtemp(prefix="agc-run-chain-"))
    write_run(root, "first", seed=9)
    with open_run("r", store=root, clock=fixed_clock(start_ms)) as run:
        for record in records(1, 4):
            run.transcript.write(record)
        run.tool_events.write({"tool": "shell", "command": "pytest -q"})
    return root


@pytest.fixture(scope="module")
def two_stores() -> Iterator[tuple[Path, Path]]:
    ours, theirs = _store_with(1_790_000_000_000), _store_with(1_790_000_500_000)
    try:
        yield ours, theirs
    finally:
        shutil.rmtree(ours)
        shutil.rmtree(theirs)


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(replaced=st.sets(st.sampled_from(RUN_FILES), min_size=1))
def test_replacing_any_files_of_a_run_with_another_stores_never_verifies(
    two_stores: tuple[Path, Path], replaced: set[str]
) -> None:
    """Another store's run of the same id, in part or whole, is never this run."""
    ours, theirs = two_stores
    with tempfile.TemporaryDirectory() as scratch:
        store = Path(scratch) / "store"
        shutil.copytree(ours, store)
        for name in replaced:
            shutil.copyfile(theirs / name, store / name)
        report = check_run("r", store)
        assert not report.complete, replaced
        assert "replaced" in _codes(report) or any(f.artifact in LOCATED for f in report.errors), (
            report.missing
        )
        if "audit/manifests/r.json" in replaced:
            assert "replaced" in _codes(report)
        row = next(run for run in check_store(store).runs if run.run_id == "r")
        assert not row.complete
        assert check_run("first", store).complete


# -- a store written object by object (the in-memory bucket) ----------------------------


@pytest.fixture
def bucket() -> MemoryStore:
    """A versioned bucket under a key prefix (S3's own behaviour is the store contract's,
    tests/_core/test_store_contract.py)."""
    return MemoryStore(name="evidence", prefix="team/evidence")


def _delete_objects(store: MemoryStore, run_id: str) -> None:
    paths = [manifest_path(run_id)]
    for kind in ("transcript", "tool-events"):
        paths += [artifact_path(run_id, kind), artifact_path(run_id, kind) + ".b3"]
    for path in paths:  # versioned bucket: a delete marker, the versions stay
        store.delete(path)


def test_an_object_store_run_deleted_reads_deleted_and_its_id_stays_taken(
    bucket: MemoryStore,
) -> None:
    ingest_stream(io.BytesIO(TRANSCRIPT), "r1", store=bucket)
    ingest_stream(io.BytesIO(TRANSCRIPT), "r2", store=bucket)
    _delete_objects(bucket, "r2")
    report = check_run("r2", bucket)
    deleted = [f for f in report.errors if f.code == "deleted"]
    assert deleted
    assert deleted[0].expected is not None
    assert deleted[0].expected["position"] == 2
    row = next(run for run in check_store(bucket).runs if run.run_id == "r2")
    assert "deleted" in _codes(row)
    with pytest.raises(RunExistsError):
        ingest_stream(io.BytesIO(TRANSCRIPT), "r2", store=bucket)
    assert check_run("r1", bucket).complete


def _object_keys(store: MemoryStore) -> list[tuple[str, str]]:
    """Every key of the bucket with each of its versions (delete markers too)."""
    return sorted((v.key, v.version_id) for v in store.list_versions(""))


def test_an_object_store_retry_of_the_same_input_is_a_no_op_and_other_input_is_refused(
    bucket: MemoryStore,
) -> None:
    data = TRANSCRIPT + b"not json\n"
    first = ingest_stream(io.BytesIO(data), "r", store=bucket)
    before = _object_keys(bucket)
    again = ingest_stream(io.BytesIO(data), "r", store=bucket)
    assert again.unchanged
    assert not first.unchanged
    assert [s.digest for s in again.seals] == [s.digest for s in first.seals]
    assert _object_keys(bucket) == before  # not one new object or version
    for other in (data + b"{}\n", data.replace(b"done", b"d0ne")):
        with pytest.raises(RunExistsError):
            ingest_stream(io.BytesIO(other), "r", store=bucket)
    assert _object_keys(bucket) == before


def test_an_object_store_retry_over_a_changed_run_is_refused(bucket: MemoryStore) -> None:
    """The no-op needs the run in the bucket to verify: the same input over a run whose
    transcript was written again is not 'the same run'."""
    ingest_stream(io.BytesIO(TRANSCRIPT), "r", store=bucket)
    path = artifact_path("r", "transcript")
    body = bucket.get(path, max_bytes=1 << 20)[0]  # type: ignore[index]
    bucket.overwrite(path, body)  # same bytes, a new version
    with pytest.raises(RunExistsError):
        ingest_stream(io.BytesIO(TRANSCRIPT), "r", store=bucket)


def test_an_object_store_manifest_from_elsewhere_is_replaced(
    bucket: MemoryStore, tmp_path: Path
) -> None:
    ingest_stream(io.BytesIO(TRANSCRIPT), "r", store=bucket)
    folder = tmp_path / "other"
    ingest_stream(io.BytesIO(TRANSCRIPT), "r", store=folder)
    # A writer of the bucket puts another store's manifest over the run's: a newer
    # version of the key, as object storage keeps every one.
    data = (folder / "audit/manifests/r.json").read_bytes()
    bucket.overwrite(manifest_path("r"), data)
    report = check_run("r", bucket)
    assert "replaced" in _codes(report), report.missing


# -- the last byte of the chain ---------------------------------------------------------


def _chain_of_two(root: Path) -> tuple[Path, bytes]:
    """A store with runs a and b; the last link line (b's)."""
    write_run(root, "a")
    write_run(root, "b")
    return root, chain_log_path(StoreLayout.at(root)).read_bytes().splitlines(keepends=True)[1]


@pytest.fixture(scope="module")
def two_links(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    return _chain_of_two(tmp_path_factory.mktemp("two") / "store")


def _healed(store: Path, run_ids: set[str]) -> None:
    report = check_store(store)
    problems = [f.message for f in report.findings if f.severity == "error"]
    assert report.complete, problems + [m for r in report.runs for m in r.missing]
    entries, unusable = read_chain(StoreLayout.at(store))
    assert unusable == 0
    assert [e.position for e in entries] == list(range(1, len(entries) + 1))
    assert sorted(e.run_id for e in entries) == sorted(run_ids)


def test_every_torn_length_of_the_last_link_written_by_a_crash_heals(
    two_links: tuple[Path, bytes], tmp_path: Path
) -> None:
    """A seal killed while appending b's link: the head still names a's link, the
    intent names b, and the log holds k bytes of b's line, for every k (in the default
    profile: 0, the whole line less its newline, and 24 lengths between). The next
    writer heals it: b is linked once, and every run verifies."""
    template, line = two_links
    layout = StoreLayout.at(template)
    first = read_chain(layout)[0][0]
    whole = chain_log_path(layout).read_bytes()
    for kept in sampled(range(len(line)), keep=24, seed="torn-link"):
        store = tmp_path / f"cut-{kept}"
        shutil.copytree(template, store)
        here = StoreLayout.at(store)
        chain_log_path(here).write_bytes(whole[: len(whole) - len(line) + kept])
        write_head(here, first)
        intent = {"run_id": "b", "position": 2, "prev": first.manifest_digest}
        chain_pending_path(here).write_text(json.dumps(intent))
        write_run(store, "c")
        _healed(store, {"a", "b", "c"})
        quarantine = store / "audit/chain.jsonl.quarantine"
        if kept in (0, len(line) - 1):
            assert not quarantine.exists(), kept  # nothing torn, or only the newline
        else:
            assert quarantine.read_bytes() == line[:kept]
        shutil.rmtree(store)


@pytest.mark.parametrize("healer", ["record", "recover"])
def test_a_last_link_without_its_newline_is_completed_not_quarantined(
    two_links: tuple[Path, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    healer: str,
) -> None:
    """The log lost only its final newline after the head moved: every later seal
    and `agc recover` used to exit 3 for good. The next one adds the newline."""
    template, _ = two_links
    store = tmp_path / "store"
    shutil.copytree(template, store)
    log = chain_log_path(StoreLayout.at(store))
    whole = log.read_bytes()
    log.write_bytes(whole[:-1])
    if healer == "record":
        feed_stdin(monkeypatch, TRANSCRIPT)
        assert agc_main(["record", "--run-id", "c", "--store", str(store)]) == 0
        _healed(store, {"a", "b", "c"})
        assert log.read_bytes().startswith(whole)
    else:
        assert agc_main(["recover", "--store", str(store), "--json"]) == 0
        healed = json.loads(capsys.readouterr().out)
        assert healed["newline_added"] is True
        assert healed["quarantined_bytes"] == 0
        assert log.read_bytes() == whole
        assert not recover_store(store).changed
        _healed(store, {"a", "b"})
    assert not (store / "audit/chain.jsonl.quarantine").exists()


def test_run_links_finds_a_link_spelled_with_escapes_and_skips_overlong_lines(
    store: Path,
) -> None:
    """The byte filter never hides a link: a run id spelled with JSON escapes is
    found; a line longer than a link can be is no link (as read_chain reads it)."""
    layout = StoreLayout.at(store)
    layout.audit_dir.mkdir(parents=True)
    escaped = b'{"position":1,"run_id":"\\u0072","manifest_digest":"ab","prev":null}\n'
    padded = b'{"position":2,"run_id":"r","manifest_digest":"cd","prev":"ab","x":"'
    padded += b"y" * 5000 + b'"}\n'
    huge = b"z" * (3 << 20) + b"\n"  # a line over several read chunks
    tail = b'{"position":3,"run_id":"r","manifest_digest":"ef","prev":"cd"}'
    chain_log_path(layout).write_bytes(escaped + padded + huge + tail)
    found = run_links(layout, "r")
    assert [e.position for e in found] == [1, 3]
    entries, _ = read_chain(layout)
    assert [e for e in entries if e.run_id == "r"] == list(found)
    assert run_links(layout, "other") == ()
    assert isinstance(found[0], ChainEntry)


def test_an_object_store_mistyped_id_is_run_missing_with_a_close_id(
    bucket: MemoryStore,
) -> None:
    """As in a folder store: nothing of the run in any version and no link naming it is
    one ``run-missing`` finding, which names a stored run of a close id."""
    ingest_stream(io.BytesIO(TRANSCRIPT), "fix-tests-42", store=bucket)
    report = check_run("fix-test-42", bucket)
    assert [f.code for f in report.findings] == ["run-missing"]
    assert "did you mean 'fix-tests-42'?" in report.findings[0].message
    far = check_run("zzz", bucket)
    assert [f.code for f in far.findings] == ["run-missing"]
    assert "did you mean" not in far.findings[0].message
    # A run whose objects were deleted is still found by its link: deleted, not missing.
    _delete_objects(bucket, "fix-tests-42")
    assert "deleted" in _codes(check_run("fix-tests-42", bucket))


@pytest.mark.parametrize(
    "respell",
    [
        lambda line: line + b" ",
        lambda line: line + b"\r",
        lambda line: line + b"\t",
        lambda line: json.dumps(json.loads(line)).encode(),  # other spacing
    ],
    ids=["trailing-space", "carriage-return", "tab", "spaced"],
)
def test_a_last_link_not_spelled_as_the_writer_writes_it_is_not_completed(
    two_links: tuple[Path, bytes], tmp_path: Path, respell: Any
) -> None:
    """Only the one line a crash leaves (the writer's exact bytes, less the newline)
    gets a newline; a whole link spelled otherwise is no torn write and is quarantined."""
    template, line = two_links
    store = tmp_path / "store"
    shutil.copytree(template, store)
    log = chain_log_path(StoreLayout.at(store))
    whole = log.read_bytes()
    kept = whole[: len(whole) - len(line)]
    odd = respell(line[:-1])
    log.write_bytes(kept + odd)
    try:
        healed = recover_store(store)
    except AgcError:
        healed = None  # the head names the quarantined link: refused, never healed
    assert healed is None or not healed.newline_added
    assert log.read_bytes() == kept
    assert (store / "audit/chain.jsonl.quarantine").read_bytes() == odd


def test_an_intent_a_crash_cannot_leave_does_not_excuse_an_unlinked_run(
    tmp_path: Path,
) -> None:
    """A run whose link was cut out of the log, with an intent naming it at its old
    place (not right after the last link, where a crash leaves one), is unchained in
    `agc-verify RUN` and `--all`; the intent a crash leaves still excuses it."""
    store = tmp_path / "store"
    for run_id in ("a", "b", "c"):
        write_run(store, run_id)
    layout = StoreLayout.at(store)
    log = chain_log_path(layout)
    lines = log.read_bytes().splitlines(keepends=True)
    entries = read_chain(layout)[0]
    for cut, ok in ((0, False), (2, True)):  # a's link (position 1), c's (the last)
        here = tmp_path / f"cut-{cut}"
        shutil.copytree(store, here)
        chain_log_path(StoreLayout.at(here)).write_bytes(b"".join(lines[:cut] + lines[cut + 1 :]))
        entry = entries[cut]
        intent = {"run_id": entry.run_id, "position": entry.position, "prev": entry.prev}
        chain_pending_path(StoreLayout.at(here)).write_text(json.dumps(intent))
        assert ("unchained" in _codes(check_run(entry.run_id, here))) is not ok, cut
        row = next(r for r in check_store(here).runs if r.run_id == entry.run_id)
        assert ("unchained" in _codes(row)) is not ok, cut


def test_an_object_store_retry_that_would_seal_otherwise_is_not_a_no_op(
    bucket: MemoryStore, tmp_path: Path
) -> None:
    """As in a folder store: the same records unsigned, or sealed with another digest,
    are not what a signed (or other-digest) import would write."""
    private, _, _ = generate_keypair(tmp_path / "keys")
    key = load_signing_key(private)
    ingest_stream(io.BytesIO(TRANSCRIPT), "r", store=bucket)
    before = _object_keys(bucket)
    with pytest.raises(RunExistsError):
        ingest_stream(io.BytesIO(TRANSCRIPT), "r", store=bucket, signing_key=key)
    with pytest.raises(RunExistsError):
        ingest_stream(io.BytesIO(TRANSCRIPT), "r", store=bucket, algorithm="sha256")
    assert _object_keys(bucket) == before
    ingest_stream(io.BytesIO(TRANSCRIPT), "s", store=bucket, signing_key=key)
    assert ingest_stream(io.BytesIO(TRANSCRIPT), "s", store=bucket, signing_key=key).unchanged
