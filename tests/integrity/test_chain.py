"""agc.integrity._chain: reading the chain log strictly (a damaged line is unusable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agc._core.store import StoreLayout
from agc.integrity._chain import read_chain

GOOD = b'{"position":1,"run_id":"a","manifest_digest":"ab","prev":null}\n'


@pytest.mark.parametrize(
    "line",
    [
        b'{"position":1e400,"run_id":"a","manifest_digest":"ab","prev":null}',
        b'{"position":"2","run_id":"a","manifest_digest":"ab","prev":null}',
        b'{"position":2.5,"run_id":"a","manifest_digest":"ab","prev":null}',
        b'{"position":true,"run_id":"a","manifest_digest":"ab","prev":null}',
        b'{"position":2,"run_id":["a"],"manifest_digest":"ab","prev":null}',
        b'{"position":2,"run_id":"a\\nstore: complete","manifest_digest":"ab","prev":null}',
        b'{"position":2,"run_id":"../a","manifest_digest":"ab","prev":null}',
        b'{"position":2,"run_id":"a","manifest_digest":7,"prev":null}',
        b'{"position":2,"run_id":"a","manifest_digest":"ab","prev":{"x":1}}',
        b'{"position":2,"run_id":"a","manifest_digest":"ab"}',
        b"[1,2]",
        b"\xff\xfe",
    ],
    ids=[
        "position-inf",
        "position-str",
        "position-float",
        "position-bool",
        "run-id-list",
        "run-id-with-newline",
        "run-id-with-slash",
        "digest-int",
        "prev-object",
        "prev-absent",
        "array",
        "not-utf8",
    ],
)
def test_a_damaged_chain_line_is_unusable_never_a_crash(store: Path, line: bytes) -> None:
    layout = StoreLayout(store)
    layout.audit_dir.mkdir(parents=True)
    (layout.audit_dir / "chain.jsonl").write_bytes(GOOD + line + b"\n")
    entries, unusable = read_chain(layout)
    assert [entry.run_id for entry in entries] == ["a"]
    assert unusable == 1
