"""``agc.integrity`` loads its public names on first use (PEP 562)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import agc.integrity


@pytest.mark.parametrize("name", agc.integrity.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(agc.integrity, name) is not None
    assert name in dir(agc.integrity)


def test_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = agc.integrity.nope


def test_importing_the_verifier_does_not_load_the_writer() -> None:
    code = (
        "import sys\n"
        "from agc.integrity._verify import check_run\n"
        "print('agc.integrity._writer' in sys.modules, 'orjson' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.stdout.strip() == "False False"
