"""Commands that draw a progress bar on a terminal run to their end there: the bar is
rich's, given the rich console itself (a stand-in console made them fail with a
TypeError before any work was done)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

from tests.conftest import write_run

_SCRIPT = "import sys; from agc.cli.{module} import main; sys.exit(main(sys.argv[1:]))"


def _with_stderr_on_a_terminal(module: str, argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run ``agc.cli.<module>.main(argv)`` in a child whose stderr is a pseudo-terminal;
    return its exit code, its stdout and what it drew on the terminal."""
    import pty  # noqa: PLC0415 - POSIX only, as the terminal it opens

    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT.format(module=module), *argv],
        stdout=subprocess.PIPE,
        stderr=follower,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "120", "TERM": "xterm"},
    )
    os.close(follower)
    drawn = []
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        drawn.append(chunk)
    assert child.stdout is not None
    out = child.stdout.read().decode()
    code = child.wait(timeout=60)
    os.close(leader)
    return code, out, b"".join(drawn).decode(errors="replace")


def test_import_on_a_terminal_seals_the_run(tmp_path: Path) -> None:
    source = tmp_path / "session.jsonl"
    source.write_text(
        "".join(json.dumps({"role": "user", "content": f"line {i}"}) + "\n" for i in range(50))
    )
    store = tmp_path / "store"
    code, _, drawn = _with_stderr_on_a_terminal(
        "app", ["import", str(source), "--run-id", "t1", "--store", str(store)], tmp_path
    )
    assert "Traceback" not in drawn, drawn
    assert "TypeError" not in drawn, drawn
    assert code == 0, drawn
    code, out, drawn = _with_stderr_on_a_terminal(
        "verify_main", ["t1", "--store", str(store), "--json"], tmp_path
    )
    assert code == 0, drawn
    assert json.loads(out)["complete"] is True


def test_verify_all_on_a_terminal_reports_every_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_run(store, "r1")
    write_run(store, "r2")
    code, out, drawn = _with_stderr_on_a_terminal(
        "verify_main", ["--all", "--store", str(store), "--json"], tmp_path
    )
    assert "Traceback" not in drawn, drawn
    assert "TypeError" not in drawn, drawn
    assert code == 0, drawn
    assert out.strip(), "the JSON report was not written"
    assert "r1" in out
    assert "r2" in out
