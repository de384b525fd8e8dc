"""Reading kept capture failures for one run: the same lines as reading them all and
keeping that run's, without resolving the folder of any other run's line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.capture_failures import CAPTURE_FAILURES, failure_lines
from agc._core.json import loads
from tests.conftest import examples

RUN_IDS = ["claude-code-s1", "codex-s2", "gemini-s3"]


def _stores(root: Path) -> dict[str, Path]:
    """The store folder, the same folder by a symlink and by ``..``, and another one."""
    store = root / "store"
    other = root / "other"
    store.mkdir()
    other.mkdir()
    link = root / "link"
    if not link.exists():
        link.symlink_to(store)
    return {"store": store, "link": link, "dotdot": other / ".." / "store", "other": other}


# One line: (which file, which store it names, its run id or None, or not a JSON object).
_LINES = st.lists(
    st.tuples(
        st.sampled_from(["own", "fallback"]),
        st.sampled_from(["store", "link", "dotdot", "other", "missing", "relative"]),
        st.sampled_from([*RUN_IDS, None]),
        st.sampled_from(["object", "object", "object", "array", "junk"]),
    ),
    max_size=30,
)


def _write(root: Path, lines: list[tuple[str, str, str | None, str]]) -> dict[str, str]:
    """Write the store's and the fallback file; returns the environment naming it."""
    stores = _stores(root)
    named = {**{k: str(v) for k, v in stores.items()}, "missing": str(root / "gone" / "s")}
    named["relative"] = "store"
    texts: dict[str, list[str]] = {"own": [], "fallback": []}
    for index, (where, store, run_id, shape) in enumerate(lines):
        record: dict[str, Any] = {"ts": index, "store": named[store], "code": "x"}
        if run_id is not None:
            record["run_id"] = run_id
        if shape == "array":
            texts[where].append(json.dumps([record]))
        elif shape == "junk":
            texts[where].append("{not json")
        else:
            texts[where].append(json.dumps(record))
    own = stores["store"] / CAPTURE_FAILURES
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text("".join(line + "\n" for line in texts["own"]), encoding="utf-8")
    state = root / "state"
    (state / "agc").mkdir(parents=True, exist_ok=True)
    fallback = state / "agc" / "capture-failures.jsonl"
    fallback.write_text("".join(line + "\n" for line in texts["fallback"]), encoding="utf-8")
    return {"XDG_STATE_HOME": str(state)}


@settings(max_examples=examples(200), deadline=None)
@given(lines=_LINES, run_id=st.sampled_from([*RUN_IDS, "absent-run"]))
def test_one_runs_lines_are_all_lines_of_that_run(
    tmp_path_factory: pytest.TempPathFactory, lines: list[Any], run_id: str
) -> None:
    root = tmp_path_factory.mktemp("failures")
    env = _write(root, lines)
    store = root / "store"
    every = failure_lines(store, env)
    assert failure_lines(store, env, run_id=run_id) == [
        line for line in every if line.get("run_id") == run_id
    ]


def test_no_folder_is_resolved_twice_nor_for_another_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each run's failures, for the store by a symlink, for another store, for the store
    # by "..": three times over.
    named: list[tuple[str, str, str | None, str]] = [
        ("fallback", store, run_id, "object")
        for store in ("link", "other", "dotdot")
        for run_id in RUN_IDS
    ]
    lines = named * 3
    env = _write(tmp_path, lines)
    resolved: list[str] = []
    real = os.path.realpath

    def recording(path: Path, *, strict: bool = False) -> str:
        resolved.append(os.fspath(path))
        return real(path, strict=strict)

    # The module resolves through os.path (the one module object every importer shares).
    monkeypatch.setattr(os.path, "realpath", recording)
    found = failure_lines(tmp_path / "store", env, run_id="codex-s2")
    # The store itself, then each folder the fallback file names, once.
    assert resolved == [str(tmp_path / "store")] + [
        str(_stores_named(tmp_path)[name]) for name in ("link", "other", "dotdot")
    ]
    assert [line["run_id"] for line in found] == ["codex-s2"] * 6  # link and dotdot, 3 times
    resolved.clear()
    assert len(failure_lines(tmp_path / "store", env)) == 18
    assert len(resolved) == 4


def _stores_named(root: Path) -> dict[str, Path]:
    return {"link": root / "link", "other": root / "other", "dotdot": root / "other/../store"}


def test_a_check_of_many_runs_parses_each_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check of every run of a store (``agc-verify --all``) asks for each run's
    failures: each failure file is parsed once in the process, not once per run."""
    from agc._core import capture_failures  # noqa: PLC0415

    lines: list[tuple[str, str, str | None, str]] = [
        ("fallback", "store", run_id, "object") for _ in range(4) for run_id in RUN_IDS
    ]
    lines += [("own", "store", run_id, "object") for run_id in RUN_IDS]
    env = _write(tmp_path, lines)
    parsed: list[str] = []
    real = loads  # what capture_failures parses with

    def counting(text: str) -> Any:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(capture_failures, "loads", counting)
    found = {
        run_id: failure_lines(tmp_path / "store", env, run_id=run_id)
        for run_id in [*RUN_IDS, *(f"codex-other{n}" for n in range(50))]
    }
    assert len(parsed) == len(lines)
    assert {run_id: len(found[run_id]) for run_id in RUN_IDS} == dict.fromkeys(RUN_IDS, 5)


def test_a_failure_kept_after_a_read_is_seen_by_the_next(tmp_path: Path) -> None:
    """The parsed files are remembered only as long as they are the same file: a line
    appended, or the file replaced by another, is read at the next ask."""
    env = _write(tmp_path, [("fallback", "store", "codex-s2", "object")])
    store = tmp_path / "store"
    assert len(failure_lines(store, env, run_id="codex-s2")) == 1
    fallback = Path(env["XDG_STATE_HOME"]) / "agc" / "capture-failures.jsonl"
    with fallback.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"ts": 9, "store": str(store), "run_id": "codex-s2"}) + "\n")
    assert len(failure_lines(store, env, run_id="codex-s2")) == 2
    own = store / CAPTURE_FAILURES
    replacement = own.with_name("new.jsonl")
    replacement.write_text(json.dumps({"ts": 1, "run_id": "codex-s2"}) + "\n", encoding="utf-8")
    os.replace(replacement, own)
    assert len(failure_lines(store, env, run_id="codex-s2")) == 3
