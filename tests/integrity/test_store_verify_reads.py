"""``check_store`` reads each run's manifest once: the chain is judged against the manifest
the run was judged by. Differential: the same report, for every tampering and any mix
of them, as the reference composition (``check_run`` per run, then every manifest read
again from disk for the chain checks)."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core import folderstore as folderstore_module
from agc._core.folderstore import FolderStore
from agc._core.store import StoreLayout
from agc.cli.verify import json_text
from agc.errors import AgcError
from agc.integrity import StoreReport, TranscriptWriter, check_run, check_store
from agc.integrity import _store_verify as store_verify
from agc.integrity._store_view import StoreView
from tests.conftest import examples
from tests.integrity.evidence_helpers import write_run
from tests.integrity.test_store_verify import TAMPERING

REACHES_INSIDE = {
    "agc.integrity._store_verify": "the reference check",
    "agc.integrity._store_view": "subclasses the store view to count reads",
}


class _UncachedView(StoreView):
    """The store view as it was: every listing and manifest read afresh."""

    def list_dir(self, folder: str) -> list[str] | None:
        path = Path(self.label) / folder
        return sorted(os.listdir(path)) if path.is_dir() else None


def _reference(store: Path, expect_head: str | None = None) -> StoreReport:
    """The report as check_store composed it before: nothing remembered, every manifest
    read from disk again by the chain checks, each run checked without the listing, by
    ``check_run`` itself (which judges the run's links: ``--all`` must agree with it)."""
    view = _UncachedView(FolderStore(StoreLayout.at(store).root))
    with pytest.MonkeyPatch.context() as patch:
        # Every file read in small pieces, not in one read.
        patch.setattr(folderstore_module, "_CHUNK", 7)
        return store_verify._check_store(  # the reference composition
            view,
            lambda run_ids: [check_run(run_id, store) for run_id in run_ids],
            expect_head,
            judge_links=False,
        )


def _invalid_manifest(store: Path) -> None:
    (store / "audit/manifests/a.json").write_text('{"schema_version": 1, "run_id": "a"')


def _manifest_of_another_run(store: Path) -> None:
    data = (store / "audit/manifests/a.json").read_text()
    (store / "audit/manifests/a.json").write_text(data.replace('"a.jsonl"', '"c.jsonl"'))


def _manifest_symlink(store: Path) -> None:
    path = store / "audit/manifests/b.json"
    os.replace(path, store / "elsewhere.json")
    path.symlink_to(store / "elsewhere.json")


def _manifest_not_closed(store: Path) -> None:
    path = store / "audit/manifests/c.json"
    manifest = json.loads(path.read_text())
    del manifest["artifacts"]["tool-events"]
    manifest["closed"] = False
    path.write_text(json.dumps(manifest))


def _reopen_a(store: Path) -> None:
    with TranscriptWriter("a", store=store, reopen=True) as writer:
        writer.write({"role": "user", "content": "a resumed session keeps writing"})


def _unchained_run(store: Path) -> None:
    log = store / "audit/chain.jsonl"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))


def _shared_legacy_events(store: Path) -> None:
    record = {"run_id": "a", "seq": 0, "type": "tool_call"}
    (store / "audit/tool-events.jsonl").write_text(json.dumps(record) + "\n")


def _sha256_sidecar_beside(store: Path) -> None:
    (store / "audit/transcripts/b.jsonl.sha256").write_text("0" * 64 + "  b.jsonl\n")


def _sidecar_symlink(store: Path) -> None:
    path = store / "audit/tool-events/c.jsonl.b3"
    os.replace(path, store / "c.b3")
    path.symlink_to(store / "c.b3")


EXTRA: list[tuple[str, Callable[[Path], None]]] = [
    ("legacy-shared-tool-events", _shared_legacy_events),
    ("sha256-sidecar-beside", _sha256_sidecar_beside),
    ("sidecar-symlink", _sidecar_symlink),
    ("manifest-invalid-json", _invalid_manifest),
    ("manifest-of-another-run", _manifest_of_another_run),
    ("manifest-symlink", _manifest_symlink),
    ("manifest-not-closed", _manifest_not_closed),
    ("reopened-run", _reopen_a),
    ("last-link-dropped", _unchained_run),
]
ALL: list[tuple[str, Callable[[Path], None]]] = [(n, t) for n, t, _ in TAMPERING] + EXTRA


def _three_runs(store: Path) -> str:
    for index, run_id in enumerate(("a", "b", "c")):
        write_run(store, run_id, seed=index, count=3)
    head = check_store(store).head
    assert head is not None
    return head


@pytest.mark.parametrize("tamper", [t for _, t in ALL], ids=[n for n, _ in ALL])
def test_each_tampering_gives_the_reference_report(
    store: Path, tamper: Callable[[Path], None]
) -> None:
    head = _three_runs(store)
    tamper(store)
    expected = _reference(store, head).to_dict()
    assert check_store(store, expect_head=head).to_dict() == expected
    assert check_store(store, expect_head=head, jobs=2).to_dict() == expected


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(range(len(ALL))), min_size=1, max_size=4, unique=True))
def test_any_mix_of_tamperings_gives_the_reference_report(picks: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "store"
        store.mkdir()
        head = _three_runs(store)
        for index in picks:
            # An earlier tampering may have removed or broken what this one edits.
            with contextlib.suppress(OSError, LookupError, ValueError, AgcError):
                ALL[index][1](store)
        expected = _reference(store, head).to_dict()
        assert check_store(store, expect_head=head).to_dict() == expected
        assert check_store(store, expect_head=head, jobs=2).to_dict() == expected


# -- the --all --json text ---------------------------------------------------------------

_KEYS = st.text(max_size=6)
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(_KEYS, children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=examples(1000))
@given(_VALUES)
def test_json_text_is_the_json_module_text_or_none(value: object) -> None:
    text = json_text(value)
    if text is not None:
        assert text == json.dumps(value, indent=2, ensure_ascii=False)


@settings(max_examples=examples(300))
@given(st.dictionaries(_KEYS, st.lists(st.text(max_size=8), max_size=3), max_size=5))
def test_json_text_takes_the_fast_path_for_report_values(value: dict[str, list[str]]) -> None:
    surrogate = any(0xD800 <= ord(c) <= 0xDFFF for k, v in value.items() for c in k + "".join(v))
    assert (json_text(value) is None) == surrogate


def test_a_tampered_store_report_is_the_json_module_text(store: Path) -> None:
    head = _three_runs(store)
    for _, tamper in ALL[:6]:
        tamper(store)
    data = check_store(store, expect_head=head).to_dict()
    assert json_text(data) == json.dumps(data, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("enabled", [True, False])
def test_check_store_leaves_the_cyclic_collector_as_it_found_it(store: Path, enabled: bool) -> None:
    _three_runs(store)
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        seen: list[bool] = []
        check_store(store, progress=lambda done, total: seen.append(gc.isenabled()))
        assert seen == [False, False, False]  # paused while the runs are checked
        assert gc.isenabled() is enabled
        with pytest.raises(AgcError):
            check_store(store / "absent")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_check_store_keeps_the_objects_a_program_froze_frozen(store: Path) -> None:
    _three_runs(store)
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        check_store(store)
        assert gc.get_freeze_count() == frozen  # not released by the check
    finally:
        gc.unfreeze()
    assert frozen_before == 0 or gc.get_freeze_count() == 0


def test_what_the_check_leaves_is_not_in_the_youngest_generation(store: Path) -> None:
    _three_runs(store)
    gc.collect()
    young = gc.get_count()[0]
    report = check_store(store)
    assert report.complete
    assert gc.get_count()[0] <= young + 50  # moved on, not walked by the next collection
    assert gc.get_freeze_count() == 0


_STORE_FILES = [
    "audit/tool-events.jsonl",
    "audit/chain.jsonl",
    "audit/chain-head.json",
    "audit/chain-pending.json",
    "audit/.chain.lock",
    "audit/manifests/.r.lock",
    "audit/manifests/r@1.json",
    "audit/transcripts/r.jsonl.sha256",
    "audit/transcripts/r.jsonl.ckpt",
]


@pytest.mark.parametrize("what", ["fifo", "folder", "symlink"])
@pytest.mark.parametrize("name", _STORE_FILES)
def test_a_non_file_anywhere_in_the_store_is_a_finding_or_unreadable_never_a_hang(
    store: Path, name: str, what: str
) -> None:
    """agc-verify RUN and --all answer with findings (exit 0/1) or 'cannot look' (exit
    3) whatever stands at a store file's name: never a usage error (exit 2: the legacy
    shared file as a symlink was one), never a crash, never a wait on a FIFO."""
    write_run(store, "r")
    path = store / name
    if path.exists():
        path.unlink()
    if what == "fifo":
        os.mkfifo(path)
    elif what == "folder":
        path.mkdir()
    else:
        path.symlink_to(store / "audit/transcripts/r.jsonl")

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"blocked on the {what} at {name}")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        for check in (lambda: check_run("r", store), lambda: check_store(store)):
            refused: AgcError | None = None
            try:
                check()
            except AgcError as exc:
                refused = exc
            assert refused is None or refused.exit_code == 3, (refused.code, refused.message)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
