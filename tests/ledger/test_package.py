"""``agc.ledger``'s front door: ``__all__`` is exactly its public names."""

from __future__ import annotations

import types

import agc.ledger


def test_all_is_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(agc.ledger).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
    }
    lazy = set(agc.ledger._LAZY)  # loaded on first use (PEP 562)
    assert sorted(agc.ledger.__all__) == sorted(public | lazy)
    for name in agc.ledger.__all__:
        assert getattr(agc.ledger, name) is not None
