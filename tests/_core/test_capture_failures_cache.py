"""The failure files remembered in a process (a check of many runs parses each once)
attacked: a file rewritten in place, same size, its modification time set back, must
still be read again (its change time cannot be set back)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agc._core.capture_failures import CAPTURE_FAILURES, failure_lines

RUN = "codex-s2"


def test_a_same_size_rewrite_with_its_time_set_back_is_read_again(tmp_path: Path) -> None:
    store = tmp_path / "store"
    own = store / CAPTURE_FAILURES
    own.parent.mkdir(parents=True)
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    other = json.dumps({"ts": 1, "run_id": "codex-zz", "code": "run-locked"}) + "\n"
    mine = json.dumps({"ts": 1, "run_id": RUN, "code": "run-locked"}).ljust(len(other) - 1)
    assert len(mine) + 1 == len(other)
    own.write_text(other, encoding="utf-8")
    before = os.stat(own)
    assert failure_lines(store, env, run_id=RUN) == []
    with own.open("r+", encoding="utf-8") as handle:  # the same inode, the same size
        handle.write(mine + "\n")
    os.utime(own, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert len(failure_lines(store, env, run_id=RUN)) == 1
