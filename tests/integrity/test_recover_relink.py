"""``recover_run`` on a folder store whose chain lost its links (damaged before the
links were written, or by hand): a closed run that no link names is linked at the end
of the chain, once; a signed one is refused without the signing key, since linking
rewrites its manifest, and re-signed with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agc.errors import RecoveryRefusedError
from agc.integrity import (
    check_run,
    check_store,
    generate_keypair,
    load_signing_key,
    open_run,
    recover_run,
)
from tests.conftest import write_run


def _lose_the_chain(store: Path) -> None:
    (store / "audit" / "chain.jsonl").unlink()
    (store / "audit" / "chain-head.json").unlink()


def test_closed_runs_no_link_names_are_linked_at_the_end_once(store: Path) -> None:
    write_run(store, "r1")
    write_run(store, "r2")
    _lose_the_chain(store)
    assert check_store(store).errors != ()  # the damage is seen
    assert recover_run("r2", store).chain == "relinked"
    assert recover_run("r1", store).chain == "relinked"
    assert recover_run("r1", store).chain == "already-linked"  # once
    lines = (store / "audit" / "chain.jsonl").read_text().splitlines()
    assert '"run_id":"r2"' in lines[0]  # in the order they were recovered
    assert '"run_id":"r1"' in lines[1]
    assert check_run("r1", store).errors == ()
    assert check_run("r2", store).errors == ()
    assert check_store(store).errors == ()


def test_a_signed_run_is_relinked_only_with_its_signing_key(store: Path, tmp_path: Path) -> None:
    private, _, key_id = generate_keypair(tmp_path / "keys")
    key = load_signing_key(private)
    with open_run("r1", store=store, signing_key=key) as run:
        run.transcript.write({"role": "user", "content": "hi"})
    _lose_the_chain(store)
    with pytest.raises(RecoveryRefusedError, match="needs the signing key"):
        recover_run("r1", store)
    chain = store / "audit" / "chain.jsonl"
    assert not chain.exists() or chain.read_bytes() == b""  # nothing linked without the key
    assert recover_run("r1", store, signing_key=key).chain == "relinked"
    report = check_run("r1", store)
    assert report.errors == ()
    assert report.key_id == key_id
