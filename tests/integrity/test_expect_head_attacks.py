"""An attacker who can write the whole store, but has no signing key, cannot get a
changed run past ``agc-verify --all --expect-head H``.

Hypothesis drives sequences of edits an attacker can make with agc's own formats (no
key is needed for an unsigned store): forge a run's records, re-seal it (new sidecar
and manifest seals), re-link the whole chain (new digests, ``prev`` links and head),
keep the original head's manifest as an archived "superseded" link, delete a run,
drop a chain line, or add a fabricated run. The property: whenever the report is
complete, every run the pinned head H covers is still there and still begins with
exactly the bytes it had when H was read. Runs sealed after H are not covered by H
(only a trusted signing key vouches for those; see docs/evidence.md).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agc._core.digest import digest_fd
from agc._core.sidecar import format_sidecar
from agc.errors import AgcError
from agc.integrity import check_store, open_run
from agc.integrity._chain import manifest_digest
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.integrity._chain": "the manifest digest a chain link records, to forge links",
}

RUNS = ("alpha", "beta", "gamma")
KINDS = {"transcript": "transcripts", "tool-events": "tool-events"}


def _build(store: Path) -> dict[str, dict[str, bytes]]:
    for number, run_id in enumerate(RUNS):
        with open_run(run_id, store=store) as run:
            for index in range(3):
                run.transcript.write({"role": "user", "content": f"{run_id} says {index}"})
            run.tool_events.write({"tool": "bash", "command": f"make test-{number}"})
    return {
        run_id: {
            kind: (store / "audit" / folder / f"{run_id}.jsonl").read_bytes()
            for kind, folder in KINDS.items()
        }
        for run_id in RUNS
    }


def _manifest_path(store: Path, run_id: str) -> Path:
    return store / "audit" / "manifests" / f"{run_id}.json"


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_bytes())
    return loaded


def _dump(path: Path, document: dict[str, Any]) -> None:
    path.write_bytes(json.dumps(document, indent=2, sort_keys=True).encode() + b"\n")


# -- what the attacker can do ------------------------------------------------------------


def forge_records(store: Path, run_id: str) -> None:
    path = store / "audit" / "transcripts" / f"{run_id}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[0] = lines[0].replace(b"says", b"SAYS")
    path.write_bytes(b"".join(lines))


def rewrite_history(store: Path, run_id: str) -> None:
    """Forge, re-seal and re-link everything: a consistent store with a new history."""
    forge_records(store, run_id)
    reseal(store, run_id)
    relink(store, list(RUNS))


def append_records(store: Path, run_id: str) -> None:
    path = store / "audit" / "transcripts" / f"{run_id}.jsonl"
    with path.open("ab") as handle:
        handle.write(b'{"role":"user","content":"appended later","seq":99,"ts":1}\n')


def reseal(store: Path, run_id: str) -> None:
    """New sidecars and manifest seals for the files as they are now."""
    manifest = _load(_manifest_path(store, run_id))
    for kind, folder in KINDS.items():
        path = store / "audit" / folder / f"{run_id}.jsonl"
        with path.open("rb") as handle:
            digest, length = digest_fd(handle.fileno(), "blake3")
        seal = manifest["artifacts"][kind]
        records = path.read_bytes().count(b"\n")
        seal.update(digest=digest, bytes=length, records=records, segments=[])
        seal["last_seq"] = records - 1 if records else None
        path.with_name(path.name + ".b3").write_bytes(format_sidecar(digest, path.name))
    _dump(_manifest_path(store, run_id), manifest)


def relink(store: Path, order: list[str]) -> None:
    """A whole new chain over the runs in ``order``: positions, prevs, digests, head."""
    lines, prev = [], None
    for position, run_id in enumerate(order, start=1):
        path = _manifest_path(store, run_id)
        if not path.exists():
            continue
        manifest = _load(path)
        manifest["chain"] = {"position": position, "prev": prev}
        _dump(path, manifest)
        digest = manifest_digest(manifest)
        lines.append(
            {"position": position, "run_id": run_id, "manifest_digest": digest, "prev": prev}
        )
        prev = digest
    audit = store / "audit"
    (audit / "chain.jsonl").write_bytes(
        b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)
    )
    if lines:
        last = lines[-1]
        head = {
            "position": last["position"],
            "digest": last["manifest_digest"],
            "run_id": last["run_id"],
        }
        (audit / "chain-head.json").write_bytes(json.dumps(head).encode() + b"\n")


def keep_head_as_archive(store: Path, original_head_manifest: bytes, run_id: str) -> None:
    """Splice: the original head manifest becomes an archived link in a new history."""
    chain = store / "audit" / "chain.jsonl"
    lines = [json.loads(line) for line in chain.read_bytes().splitlines() if line]
    position = len(lines) + 1
    manifests = store / "audit" / "manifests"
    for line in lines:  # its current links become "superseded", as a re-open leaves them
        if line["run_id"] == run_id:
            current = _manifest_path(store, run_id).read_bytes()
            (manifests / f"{run_id}@{line['position']}.json").write_bytes(current)
    archived = manifests / f"{run_id}@{position}.json"
    archived.write_bytes(original_head_manifest)
    digest = manifest_digest(json.loads(original_head_manifest))
    lines.append(
        {
            "position": position,
            "run_id": run_id,
            "manifest_digest": digest,
            "prev": lines[-1]["manifest_digest"] if lines else None,
        }
    )
    manifest = _load(_manifest_path(store, run_id))
    manifest["chain"] = {"position": position + 1, "prev": digest}
    _dump(_manifest_path(store, run_id), manifest)
    lines.append(
        {
            "position": position + 1,
            "run_id": run_id,
            "manifest_digest": manifest_digest(manifest),
            "prev": digest,
        }
    )
    chain.write_bytes(
        b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)
    )
    head = {"position": position + 1, "digest": lines[-1]["manifest_digest"], "run_id": run_id}
    (store / "audit" / "chain-head.json").write_bytes(json.dumps(head).encode() + b"\n")


def delete_run(store: Path, run_id: str) -> None:
    _manifest_path(store, run_id).unlink(missing_ok=True)
    for folder in KINDS.values():
        for suffix in ("", ".b3"):
            (store / "audit" / folder / f"{run_id}.jsonl{suffix}").unlink(missing_ok=True)


def drop_link(store: Path, index: int) -> None:
    chain = store / "audit" / "chain.jsonl"
    lines = chain.read_bytes().splitlines(keepends=True)
    if lines:
        del lines[index % len(lines)]
        chain.write_bytes(b"".join(lines))


def fabricate_run(store: Path, run_id: str) -> None:
    with open_run(run_id, store=store) as run:
        run.transcript.write({"role": "user", "content": "a run that never happened"})


Edit = Callable[[Path, bytes], None]

run_ids = st.sampled_from(RUNS)
orders = st.permutations(list(RUNS)).flatmap(
    lambda order: st.integers(min_value=1, max_value=len(order)).map(lambda n: order[:n])
)
edits: st.SearchStrategy[tuple[str, Edit]] = st.one_of(
    run_ids.map(lambda r: (f"forge {r}", lambda s, _h: forge_records(s, r))),
    run_ids.map(lambda r: (f"rewrite {r}", lambda s, _h: rewrite_history(s, r))),
    run_ids.map(lambda r: (f"append {r}", lambda s, _h: append_records(s, r))),
    run_ids.map(lambda r: (f"reseal {r}", lambda s, _h: reseal(s, r))),
    orders.map(lambda o: (f"relink {o}", lambda s, _h: relink(s, list(o)))),
    st.just(("keep-head-as-archive", lambda s, h: keep_head_as_archive(s, h, RUNS[-1]))),
    run_ids.map(lambda r: (f"delete {r}", lambda s, _h: delete_run(s, r))),
    st.integers(0, 5).map(lambda i: (f"drop-link {i}", lambda s, _h: drop_link(s, i))),
    st.just(("fabricate", lambda s, _h: fabricate_run(s, "delta"))),
)


def _untouched(store: Path, original: dict[str, dict[str, bytes]]) -> list[str]:
    changed = []
    for run_id, files in original.items():
        for kind, before in files.items():
            path = store / "audit" / KINDS[kind] / f"{run_id}.jsonl"
            if not path.exists() or not path.read_bytes().startswith(before):
                changed.append(f"{run_id} {kind}")
    return changed


_SPLICE: list[tuple[str, Edit]] = [
    ("rewrite alpha", lambda s, _h: rewrite_history(s, "alpha")),
    ("keep-head-as-archive", lambda s, h: keep_head_as_archive(s, h, RUNS[-1])),
]


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(attack=st.lists(edits, min_size=1, max_size=6))
@example(attack=_SPLICE)  # the splice the search reaches only now and then
def test_no_edit_sequence_gets_a_changed_run_past_the_pinned_head(
    attack: list[tuple[str, Edit]],
) -> None:
    folder = Path(tempfile.mkdtemp())
    try:
        store = folder / "store"
        original = _build(store)
        pinned = check_store(store)
        assert pinned.complete
        head_manifest = _manifest_path(store, RUNS[-1]).read_bytes()
        for _name, edit in attack:
            try:
                edit(store, head_manifest)
            except (OSError, KeyError, ValueError, IndexError, AgcError):
                continue  # the edit does not apply to the store as it now is
        report = check_store(store, expect_head=pinned.head)
        if report.complete:
            assert not _untouched(store, original), [name for name, _ in attack]
    finally:
        shutil.rmtree(folder)


def test_the_attacker_model_can_forge_a_store_that_passes_without_a_pinned_head() -> None:
    """The same edits do fool a check that pins nothing: the pin is what protects."""
    folder = Path(tempfile.mkdtemp())
    try:
        store = folder / "store"
        original = _build(store)
        pinned = check_store(store).head
        forge_records(store, "alpha")
        reseal(store, "alpha")
        relink(store, list(RUNS))
        assert _untouched(store, original) == ["alpha transcript"]
        assert check_store(store).complete
        assert not check_store(store, expect_head=pinned).complete
    finally:
        shutil.rmtree(folder)


def test_a_head_kept_as_an_archived_link_in_a_spliced_history_is_caught() -> None:
    folder = Path(tempfile.mkdtemp())
    try:
        store = folder / "store"
        _build(store)
        pinned = check_store(store).head
        head_manifest = _manifest_path(store, "gamma").read_bytes()
        forge_records(store, "alpha")
        reseal(store, "alpha")
        relink(store, list(RUNS))
        keep_head_as_archive(store, head_manifest, "gamma")
        report = check_store(store, expect_head=pinned)
        assert not report.complete
        assert "chain-broken" in {f.code for f in report.findings}
    finally:
        shutil.rmtree(folder)
