"""Commands that draw a progress bar on a terminal run to their end there: the bar is
rich's, given the rich console itself (a stand-in console made them fail with a
TypeError before any work was done)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.terminal import on_a_terminal
from tests.conftest import write_run


def test_import_on_a_terminal_seals_the_run(tmp_path: Path) -> None:
    source = tmp_path / "session.jsonl"
    source.write_text(
        "".join(json.dumps({"role": "user", "content": f"line {i}"}) + "\n" for i in range(50))
    )
    store = tmp_path / "store"
    code, _, drawn = on_a_terminal(
        "app",
        ["import", str(source), "--run-id", "t1", "--store", str(store)],
        stream="stderr",
        cwd=tmp_path,
    )
    assert "Traceback" not in drawn, drawn
    assert "TypeError" not in drawn, drawn
    assert code == 0, drawn
    code, out, drawn = on_a_terminal(
        "verify_main", ["t1", "--store", str(store), "--json"], stream="stderr", cwd=tmp_path
    )
    assert code == 0, drawn
    assert json.loads(out)["complete"] is True


def test_verify_all_on_a_terminal_reports_every_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_run(store, "r1")
    write_run(store, "r2")
    code, out, drawn = on_a_terminal(
        "verify_main", ["--all", "--store", str(store), "--json"], stream="stderr", cwd=tmp_path
    )
    assert "Traceback" not in drawn, drawn
    assert "TypeError" not in drawn, drawn
    assert code == 0, drawn
    assert out.strip(), "the JSON report was not written"
    assert "r1" in out
    assert "r2" in out
