"""Evidence in object storage, against a real S3 implementation on loopback (moto's
server, an Object Lock bucket per test): the server's own refusals, the upload order,
the chain under concurrent sealers, and every object-store finding."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import multiprocessing
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agc._core.objstore import ObjectStore, PreconditionFailed, Retention
from agc._core.store import StoreLayout
from agc.cli.app import main as agc_main
from agc.cli.verify_main import main as verify_main
from agc.errors import SnapshotTamperedError, StoreError, UsageError
from agc.integrity import (
    RunManifest,
    check_object_run,
    check_run,
    check_store,
    generate_keypair,
    ingest_stream,
    load_signing_key,
    open_run,
    read_manifest,
    verify_policy,
)
from agc.integrity._chain import manifest_digest
from agc.integrity._chain_objects import (
    HEAD_PATH,
    RemoteHead,
    artifact_path,
    link_path,
    read_remote_head,
)
from agc.integrity._signing import key_id_of, load_public_key
from agc.integrity._upload import _run_files, staging_store, upload_run, write_policy
from agc.resume import SessionSnapshot, load_snapshot, save_snapshot
from tests.conftest import feed_stdin, fixed_clock
from tests.s3fixtures import new_bucket
from tests.s3server import S3Server

REACHES_INSIDE = {
    "agc.integrity._chain": "the manifest digest a chain link records",
    "agc.integrity._chain_objects": "the object keys and the chain head object, to race them",
    "agc.integrity._signing": "loads one public key and its key id to build a trusted set",
    "agc.integrity._upload": "the staging folder, the upload step and the write policy, directly",
}

TRANSCRIPT = b'{"type":"thread.started"}\n{"type":"item.completed","text":"done"}\n'


def _record(store: ObjectStore | str, run_id: str, *, signing_key: Any = None) -> None:
    ingest_stream(io.BytesIO(TRANSCRIPT), run_id, store=store, signing_key=signing_key)


def _codes(report: Any) -> set[str]:
    return {f.code for f in report.findings}


def _all_codes(report: Any) -> set[str]:
    return _codes(report) | {c for run in report.runs for c in _codes(run)}


# -- writing ----------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["record", "import"])
def test_an_empty_input_is_refused_and_nothing_is_uploaded(
    s3_store: ObjectStore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    # As for a folder store: exit 2, nothing sealed or uploaded, no staging left behind,
    # and the run id stays free.
    argv = ["--run-id", "r1", "--store", s3_store.url]
    if how == "record":
        feed_stdin(monkeypatch, b"")
        code = agc_main(["record", *argv])
    else:
        empty = tmp_path / "empty.jsonl"
        empty.write_bytes(b"")
        code = agc_main(["import", str(empty), *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert "the input is empty" in err
    assert list(s3_store.list_paths("")) == []
    assert not staging_store(s3_store, "r1").exists()
    feed_stdin(monkeypatch, TRANSCRIPT)
    assert agc_main(["record", *argv]) == 0  # the id is free
    assert verify_main(["r1", "--store", s3_store.url]) == 0


def test_a_recorded_run_is_uploaded_artifacts_first_manifest_last_and_verifies(
    s3_store: ObjectStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    feed_stdin(monkeypatch, TRANSCRIPT)
    assert agc_main(["record", "--run-id", "r1", "--store", s3_store.url, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    uploaded = summary["object_store"]["uploaded"]
    assert uploaded[:4] == [
        "audit/transcripts/r1.jsonl",
        "audit/transcripts/r1.jsonl.b3",
        "audit/tool-events/r1.jsonl",
        "audit/tool-events/r1.jsonl.b3",
    ]
    assert uploaded[4:] == [HEAD_PATH, link_path(1), "audit/manifests/r1.json"]
    assert not staging_store(s3_store, "r1").exists()  # removed once uploaded
    assert verify_main(["r1", "--store", s3_store.url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["complete"] is True
    assert report["artifacts"][0]["path"] == s3_store.url_of("audit/transcripts/r1.jsonl")
    assert verify_main(["--all", "--store", s3_store.url]) == 0
    assert "at position 1" in capsys.readouterr().out


def test_agc_home_may_name_the_object_store(
    s3_store: ObjectStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGC_HOME", s3_store.url)
    monkeypatch.chdir(tmp_path)
    _record(None, "r1")  # type: ignore[arg-type]
    assert check_run("r1").complete
    assert not (tmp_path / "s3:").exists()  # never a folder named after the URL


def test_overwrite_and_delete_of_a_locked_object_are_refused_by_the_server(
    s3_store: ObjectStore,
) -> None:
    _record(s3_store.with_policy(retention=Retention("COMPLIANCE", 1), legal_hold=False), "r1")
    client, key = s3_store.client, s3_store.key("audit/transcripts/r1.jsonl")
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=s3_store.bucket, Key=key, Body=b"x\n", IfNoneMatch="*")
    assert refused.value.response["Error"]["Code"] == "PreconditionFailed"
    with pytest.raises(PreconditionFailed):
        s3_store.put_new("audit/transcripts/r1.jsonl", b"x\n")
    sealed = client.head_object(Bucket=s3_store.bucket, Key=key)
    assert sealed["ObjectLockMode"] == "COMPLIANCE"
    with pytest.raises(ClientError) as denied:
        client.delete_object(Bucket=s3_store.bucket, Key=key, VersionId=sealed["VersionId"])
    assert denied.value.response["Error"]["Code"] == "AccessDenied"
    with pytest.raises(ClientError):
        client.delete_object(
            Bucket=s3_store.bucket,
            Key=key,
            VersionId=sealed["VersionId"],
            BypassGovernanceRetention=True,
        )
    assert check_run("r1", s3_store).complete


def test_a_rewritten_object_is_modified_and_a_newer_version(s3_store: ObjectStore) -> None:
    _record(s3_store, "r1")
    path = "audit/transcripts/r1.jsonl"
    data = bytearray(s3_store.get(path, max_bytes=1 << 20)[0])  # type: ignore[index]
    data[data.index(b"done")] = ord("D")  # same length, one byte changed
    s3_store.client.put_object(
        Bucket=s3_store.bucket, Key=s3_store.key(path), Body=bytes(data), ChecksumAlgorithm="SHA256"
    )
    report = check_run("r1", s3_store)
    assert not report.complete
    assert {"modified", "version-newer"} <= _codes(report)
    newer = next(f for f in report.findings if f.code == "version-newer")
    assert newer.actual is not None
    assert newer.actual["versions"] == 2


@pytest.mark.parametrize("kind", ["transcripts", "tool-events"])
def test_an_object_finding_makes_its_artifact_not_ok(
    s3_store: ObjectStore, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """The same bytes written again: only `version-newer`, an error about the artifact.
    Its entry said `ok: true` and the text `OK   transcript …` above the finding, since
    the object findings were added to the run after its artifact entries were made."""
    _record(s3_store, "r1")
    path = f"audit/{kind}/r1.jsonl"
    data = s3_store.get(path, max_bytes=1 << 20)[0]  # type: ignore[index]
    s3_store.client.put_object(
        Bucket=s3_store.bucket, Key=s3_store.key(path), Body=data, ChecksumAlgorithm="SHA256"
    )
    report = check_run("r1", s3_store)
    artifact = {"transcripts": "transcript"}.get(kind, kind)
    assert _codes(report) == {"version-newer"}
    by_kind: dict[str, Any] = {a.kind: a for a in report.artifacts}
    assert [f.code for f in by_kind[artifact].findings] == ["version-newer"]
    assert not by_kind[artifact].ok
    assert all(a.ok for k, a in by_kind.items() if k != artifact)
    assert verify_main(["r1", "--store", s3_store.url]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith(f"FAIL {artifact:<12} ") for line in lines), lines
    assert not any(line.startswith(f"OK   {artifact:<12} ") for line in lines), lines


def test_a_delete_marker_is_reported_with_the_version_still_kept(s3_store: ObjectStore) -> None:
    _record(s3_store, "r1")
    s3_store.client.delete_object(
        Bucket=s3_store.bucket, Key=s3_store.key("audit/tool-events/r1.jsonl")
    )
    report = check_run("r1", s3_store)
    assert {"deleted", "delete-marker"} <= _codes(report)
    assert "delete-marker" in _all_codes(check_store(s3_store))


def test_deleting_an_unlocked_run_is_found_by_all(
    s3_server: S3Server, s3_env_vars: dict[str, str]
) -> None:
    store = ObjectStore.parse(f"s3://{new_bucket(s3_server, object_lock=False)}/p")
    for run in ("a", "b", "c"):
        _record(store, run)
    # Without Object Lock every version can be deleted for good: remove run b entirely.
    for version in list(store.list_versions("audit/")):
        if "/b.json" in version.key:
            store.client.delete_object(
                Bucket=store.bucket, Key=version.key, VersionId=version.version_id
            )
    report = check_store(store)
    assert not report.complete
    assert {"run-deleted", "object-lock-off"} <= _codes(report)
    lock_off = next(f for f in report.findings if f.code == "object-lock-off")
    assert lock_off.severity == "warning"  # no retention asked for
    assert [r.run_id for r in report.runs if r.complete] == ["a", "c"]


def _seal_many(args: tuple[dict[str, str], str, int]) -> list[str]:
    env, url, count = args
    os.environ.update(env)
    names = []
    for i in range(count):
        run_id = f"{os.getpid()}-{i}"
        _record(url, run_id)
        names.append(run_id)
    return names


def test_two_concurrent_sealers_keep_a_consistent_chain(
    s3_store: ObjectStore, s3_env_vars: dict[str, str]
) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        written = pool.map(_seal_many, [(s3_env_vars, s3_store.url, 6)] * 2)
    runs = sorted(r for batch in written for r in batch)
    assert len(runs) == 12
    report = check_store(s3_store)
    assert report.complete, [f.message for f in report.findings]
    assert report.head_position == 12
    links = sorted(p for p in s3_store.list_paths("audit/chain/"))
    assert links == [link_path(n) for n in range(1, 13)]
    assert sorted(r.run_id for r in report.runs) == runs


def test_a_lost_compare_and_swap_is_retried_after_the_other_append(
    s3_store: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(s3_store, "first")
    # Stage run "late" sealed; then make run "mine"'s first swap lose to it.
    with open_run("late", store=staging_store(s3_store, "late"), clock=fixed_clock()) as run:
        run.transcript.write({"role": "user", "content": "late"})
    real_swap = ObjectStore.put_swap
    calls: list[str | None] = []

    def racing_swap(self: ObjectStore, path: str, data: bytes, **kw: Any) -> str:
        calls.append(kw.get("etag"))
        if len(calls) == 1:
            upload_run(s3_store, "late")  # another host appends between read and swap
        return real_swap(self, path, data, **kw)

    monkeypatch.setattr(ObjectStore, "put_swap", racing_swap)
    _record(s3_store, "mine")
    # mine read the head, late swapped it first with the same ETag, mine lost and retried.
    assert len(calls) == 3
    assert calls[0] == calls[1] != calls[2]
    head, _ = read_remote_head(s3_store)
    assert head is not None
    assert (head.position, head.run_id) == (3, "mine")
    report = check_store(s3_store)
    assert report.complete, [f.message for f in report.findings]


def test_an_existing_object_is_never_overwritten_by_an_upload(s3_store: ObjectStore) -> None:
    run = open_run("r1", store=s3_store)
    run.transcript.write({"role": "user", "content": "hi"})
    # Someone else writes the run's tool events first: the upload's If-None-Match refuses.
    s3_store.put_new("audit/tool-events/r1.jsonl", b'{"forged":true}\n')
    with pytest.raises(StoreError, match="upload"):
        run.close()
    assert staging_store(s3_store, "r1").exists()  # sealed locally, kept for a retry
    assert s3_store.get("audit/tool-events/r1.jsonl", max_bytes=100)[0] == b'{"forged":true}\n'  # type: ignore[index]
    assert not s3_store.exists("audit/manifests/r1.json")


def test_a_taken_run_id_is_refused_before_anything_is_written(
    s3_store: ObjectStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(s3_store, "r1")
    feed_stdin(monkeypatch, TRANSCRIPT + b'{"role": "user", "content": "another run"}\n')
    # The chain linked it (its manifest has a version) and this is another input (the
    # same one again is a no-op): refused as run-exists, exit 2.
    assert agc_main(["record", "--run-id", "r1", "--store", s3_store.url]) == 2
    err = capsys.readouterr().err
    assert "a run id is recorded once" in err
    assert f"agc-verify r1 --store {s3_store.url}" in err
    assert not staging_store(s3_store, "r1").exists()


def test_a_link_left_pending_by_a_dead_writer_is_reported_then_completed(
    s3_store: ObjectStore,
) -> None:
    _record(s3_store, "r1")
    # A writer swapped the head for its link (position 2) and died before writing the
    # link object and the manifest.
    with open_run("r2", store=staging_store(s3_store, "r2"), clock=fixed_clock()) as run:
        run.transcript.write({"role": "user", "content": "r2"})
    layout = StoreLayout(staging_store(s3_store, "r2"))
    staged = read_manifest(layout, "r2")
    assert staged is not None
    for remote, local, _ in _run_files(layout, staged):
        s3_store.put_new(remote, local.read_bytes())
    head, etag = read_remote_head(s3_store)
    assert head is not None
    data = replace(staged, chain={"position": 2, "prev": head.digest}).to_bytes()
    digest = manifest_digest(RunManifest.from_bytes(data))
    s3_store.put_swap(
        HEAD_PATH, RemoteHead(2, digest, "r2", head.digest, data).to_bytes(), etag=etag
    )
    report = check_store(s3_store)
    assert "link-pending" in _codes(report)
    # The next writer completes the dead writer's link before its own.
    _record(s3_store, "r3")
    assert s3_store.exists("audit/manifests/r2.json")
    assert s3_store.exists(link_path(2))
    after = check_store(s3_store)
    assert after.complete, [f.message for f in after.findings]
    assert after.head_position == 3
    assert write_policy(s3_store).source == "none"


# -- retention --------------------------------------------------------------------------


def test_retention_shorter_than_the_policy_or_missing_is_a_finding(
    s3_store: ObjectStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    feed_stdin(monkeypatch, TRANSCRIPT)
    assert (
        agc_main(["record", "--run-id", "kept", "--store", s3_store.url, "--retention-days", "2"])
        == 0
    )
    assert "retained COMPLIANCE 2 days" in capsys.readouterr().err
    _record(s3_store, "bare")
    assert verify_main(["kept", "--store", s3_store.url, "--retention-days", "2"]) == 0
    capsys.readouterr()
    assert verify_main(["kept", "--store", s3_store.url, "--retention-days", "30", "--json"]) == 1
    assert "retention-short" in {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    policy = verify_policy(s3_store, Retention("GOVERNANCE", 1))
    assert "retention-missing" in _codes(check_object_run(s3_store, "bare", policy=policy))
    report = check_store(s3_store, retention=Retention("COMPLIANCE", 2))
    assert {r.run_id: r.complete for r in report.runs} == {"bare": False, "kept": True}


def test_the_bucket_default_retention_is_the_policy_and_is_set_on_each_object(
    s3_server: S3Server, s3_env_vars: dict[str, str]
) -> None:
    store = ObjectStore.parse(f"s3://{new_bucket(s3_server, default_days=3)}")
    _record(store, "r1")
    head = store.client.head_object(Bucket=store.bucket, Key="audit/manifests/r1.json")
    until = head["ObjectLockRetainUntilDate"]
    assert until - dt.datetime.now(dt.UTC) > dt.timedelta(days=2, hours=23)
    assert check_store(store).complete


def test_retention_on_a_bucket_without_object_lock_is_refused(
    s3_server: S3Server, s3_env_vars: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"s3://{new_bucket(s3_server, object_lock=False)}"
    feed_stdin(monkeypatch, TRANSCRIPT)
    assert agc_main(["record", "--run-id", "r1", "--store", url, "--retention-days", "1"]) == 2
    assert not staging_store(ObjectStore.parse(url), "r1").exists()
    with pytest.raises(UsageError):
        _record(ObjectStore.parse(url, retention=Retention("COMPLIANCE", 1)), "r1")


# -- recovery, snapshots, seal, credentials ----------------------------------------------


def test_a_failed_upload_is_completed_by_agc_recover(
    s3_store: ObjectStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = ObjectStore.put_swap

    def offline(self: ObjectStore, *args: Any, **kw: Any) -> str:
        raise StoreError("cannot write: the object store cannot be reached (test)")

    monkeypatch.setattr(ObjectStore, "put_swap", offline)
    with pytest.raises(StoreError, match=r"its upload to .* failed") as failed:
        _record(s3_store, "r1")
    assert "agc recover r1" in (failed.value.hint or "")
    assert staging_store(s3_store, "r1").is_dir()
    monkeypatch.setattr(ObjectStore, "put_swap", real)
    assert agc_main(["recover", "--store", s3_store.url]) == 0
    assert "uploaded staged run r1" in capsys.readouterr().out
    assert check_run("r1", s3_store).complete
    assert agc_main(["recover", "r1", "--store", s3_store.url]) == 2  # nothing left staged


def test_a_signed_run_is_signed_again_with_its_store_link(
    s3_store: ObjectStore, tmp_path: Path
) -> None:
    private, public, _ = generate_keypair(tmp_path / "keys")
    _record(s3_store, "r1", signing_key=load_signing_key(private))
    key = load_public_key(public)
    trusted = {key_id_of(key): key}
    report = check_run("r1", s3_store, trusted_keys=trusted)
    assert report.complete
    assert report.signature == "signature-valid"
    assert check_store(s3_store, trusted_keys=trusted, jobs=2).complete


def test_snapshots_are_written_once_per_save_and_checked_on_load(s3_store: ObjectStore) -> None:
    first = SessionSnapshot("r1", "s1", [{"role": "user", "content": "one"}])
    second = SessionSnapshot("r1", "s1", [{"role": "user", "content": "two"}])
    save_snapshot(first, s3_store)
    saved = save_snapshot(second, s3_store, compress=True)
    assert load_snapshot("r1", s3_store.url).messages == second.messages
    assert len(list(s3_store.list_paths("sessions/r1/"))) == 4  # two snapshots, two sidecars
    path = s3_store.relative(str(saved.path).removeprefix(f"s3:/{s3_store.bucket}/"))
    s3_store.client.put_object(
        Bucket=s3_store.bucket, Key=s3_store.key(path), Body=b"tampered", ChecksumAlgorithm="SHA256"
    )
    with pytest.raises(SnapshotTamperedError):
        load_snapshot("r1", s3_store)


def test_agc_seal_puts_a_file_and_its_sidecar_in_the_store(
    s3_store: ObjectStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "report.jsonl"
    file.write_bytes(b'{"a":1}\n')
    assert agc_main(["seal", str(file), "--store", s3_store.url, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["object_store"]["object"] == s3_store.url_of("files/report.jsonl")
    assert s3_store.get("files/report.jsonl.b3", max_bytes=200) is not None
    assert agc_main(["seal", str(file), "--store", s3_store.url]) == 0  # same bytes: fine
    file.write_bytes(b'{"a":2}\n')
    (tmp_path / "report.jsonl.b3").unlink()
    assert agc_main(["seal", str(file), "--store", s3_store.url]) == 3


def test_no_credential_reaches_an_output_a_report_or_the_store(
    s3_store: ObjectStore,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    s3_env_vars: dict[str, str],
) -> None:
    secret = s3_env_vars["AWS_SECRET_ACCESS_KEY"]
    key_id = s3_env_vars["AWS_ACCESS_KEY_ID"]
    feed_stdin(monkeypatch, TRANSCRIPT)
    agc_main(["record", "--run-id", "r1", "--store", s3_store.url, "--json"])
    verify_main(["--all", "--store", s3_store.url, "--json"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens: an error
    verify_main(["r1", "--store", s3_store.url, "--json"])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "cannot be reached" in captured.err
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_env_vars["AWS_ENDPOINT_URL"])
    stored = b"".join(
        s3_store.get(path, max_bytes=1 << 20)[0]  # type: ignore[index]
        for path in s3_store.list_paths("")
    )
    for value in (secret, key_id):
        assert value not in text
        assert value.encode() not in stored


def test_runs_lists_an_object_store(
    s3_store: ObjectStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agc runs --store s3://…`` lists the uploaded runs from their manifests."""
    _record(s3_store, "r1")
    _record(s3_store, "r2")
    capsys.readouterr()
    assert agc_main(["runs", "--store", s3_store.url, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["store"] == s3_store.url
    by_id = {run["run_id"]: run for run in listed["runs"]}
    assert sorted(by_id) == ["r1", "r2"]
    assert {run["state"] for run in by_id.values()} == {"sealed"}
    assert by_id["r1"]["records"] == TRANSCRIPT.count(b"\n")


def test_a_legacy_run_of_an_object_store_is_listed_and_not_recovered(
    s3_store: ObjectStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run with a digest-only SHA-256 sidecar and no manifest (the legacy format, which
    agc-verify accepts in object storage too) was left out of ``agc runs``: only runs
    with a manifest or staged on this host were listed. It is listed as ``legacy``, and
    ``agc recover`` refuses it as for a folder store."""
    _record(s3_store, "r1")
    body = b'{"line":1,"payload":{"a":1}}\n{"line":2,"payload":{"a":2}}\n'
    transcript = artifact_path("old", "transcript")
    s3_store.client.put_object(Bucket=s3_store.bucket, Key=s3_store.key(transcript), Body=body)
    sidecar = s3_store.key(f"{transcript}.sha256")
    digest = hashlib.sha256(body).hexdigest().encode()
    s3_store.client.put_object(Bucket=s3_store.bucket, Key=sidecar, Body=digest)
    assert check_object_run(s3_store, "old").legacy
    capsys.readouterr()
    assert agc_main(["runs", "--store", s3_store.url, "--json"]) == 0
    by_id = {run["run_id"]: run for run in json.loads(capsys.readouterr().out)["runs"]}
    assert sorted(by_id) == ["old", "r1"]
    assert by_id["r1"]["state"] == "sealed"
    old = by_id["old"]
    assert (old["state"], old["records_by_kind"], old["bytes"], old["signed"]) == (
        "legacy",
        {"transcript": 2, "tool-events": 0},
        len(body),
        False,
    )
    # Nothing to recover: refused as in a folder store (it was "not in the store").
    before = sorted(s3_store.list_paths(""))
    assert agc_main(["recover", "old", "--store", s3_store.url, "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["code"], "legacy store format" in error["message"]) == ("recovery-refused", True)
    assert sorted(s3_store.list_paths("")) == before


_STRAY_KEYS = [
    # under an evidence object's key, or a trailing '/': hidden behind the object
    "audit/transcripts/r1.jsonl/extra",
    "audit/manifests/r1.json/",
    "audit/tool-events/r1.jsonl/",
    "audit/chain-head.json/x",
    # at a folder's own key: hidden behind the folder's name
    "audit/transcripts",
    "audit/chain",
    # named like a run that no run id can be ('.' and '..')
    "audit/manifests/..json",
    "audit/manifests/...json",
    "audit/manifests/..@1.json",
    # no path of a store at all: empty, '.' and '..' segments (no store operation can
    # address them; the listing still shows them)
    "audit//x",
    "audit/transcripts//r1.jsonl",
    "audit/manifests/./r1.json",
    "audit/manifests/../manifests/r1.json",
    "audit/chain//00000000000000000001.json",
    "audit/chain/../chain/00000000000000000001.json",
]


@pytest.mark.parametrize("key", _STRAY_KEYS)
def test_a_stray_object_with_any_key_is_a_finding_never_a_crash(
    s3_store: ObjectStore, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _record(s3_store, "r1")
    assert check_store(s3_store).complete
    raw = f"{s3_store.prefix}/{key}" if s3_store.prefix else key
    s3_store.client.put_object(Bucket=s3_store.bucket, Key=raw, Body=b"{}")
    report = check_store(s3_store)
    assert not report.complete
    assert "unexpected" in {f.code for f in report.findings}
    capsys.readouterr()
    assert verify_main(["--all", "--store", s3_store.url, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["complete"] is False
    assert agc_main(["runs", "--store", s3_store.url, "--json"]) == 0
    assert [run["run_id"] for run in json.loads(capsys.readouterr().out)["runs"]] == ["r1"]
