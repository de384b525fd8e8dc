"""The CI recipe in docs/ci/agent-evidence.yml: a GitHub Actions workflow that keeps the
signing key out of the agent's job, seals and signs what that job handed over, verifies
the whole store against the head the previous run kept, and keeps the new head.

The workflow is parsed as YAML and its shape checked; then its two agc steps (``seal``
and ``verify``) run for real, in bash as the runner runs them, against a folder store:
a first run pins a head, the next verifies against it, and an edited run, an unsigned
run and a rolled-back store fail the gate.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agc.cli.app import main as agc_main
from tests.conftest import REPO_ROOT

RECIPE = REPO_ROOT / "docs" / "ci" / "agent-evidence.yml"
BIN = Path(sys.executable).parent


def _workflow() -> dict[str, Any]:
    document = yaml.safe_load(RECIPE.read_text())
    assert isinstance(document, dict)
    return document


def _steps(job: str) -> list[dict[str, Any]]:
    steps = _workflow()["jobs"][job]["steps"]
    assert isinstance(steps, list)
    return steps


def _step(job: str, step_id: str) -> dict[str, Any]:
    (found,) = [s for s in _steps(job) if s.get("id") == step_id]
    return found


def test_the_readme_names_the_recipe() -> None:
    assert "docs/ci/agent-evidence.yml" in (REPO_ROOT / "README.md").read_text()


def test_the_agent_job_holds_neither_the_key_nor_the_store() -> None:
    agent = _workflow()["jobs"]["agent"]
    text = yaml.safe_dump(agent)
    assert "AGC_SIGNING_KEY" not in text
    assert "AGC_STORE" not in text
    assert "agc " not in text  # nothing of agc runs where the agent runs
    assert agent.get("permissions", {}).get("id-token") in (None, "none")
    assert "environment" not in agent


def test_the_seal_job_alone_holds_them_after_the_agent() -> None:
    workflow = _workflow()
    seal = workflow["jobs"]["seal"]
    assert seal["needs"] == "agent"
    assert seal["environment"] == "evidence"
    assert seal["permissions"]["id-token"] == "write"
    assert "AGC_SIGNING_KEY" in yaml.safe_dump(seal)
    # Everything the workflow grants by default is read-only.
    assert workflow["permissions"] == {"contents": "read"}


def test_the_head_is_verified_then_kept() -> None:
    steps = _steps("seal")
    ids = [s.get("id") for s in steps]
    verify = ids.index("verify")
    assert ids.index("seal") < verify
    (keep,) = [
        i
        for i, s in enumerate(steps)
        if str(s.get("uses", "")).startswith("actions/upload-artifact")
        and s["with"]["name"] == "agc-chain-head"
    ]
    assert keep > verify
    script = _step("seal", "verify")["run"]
    assert "--expect-head" in script
    assert "--require-signature" in script
    assert steps[keep]["with"]["path"] in script  # the file the verify step writes
    fetch = "\n".join(str(s.get("run", "")) for s in steps[:verify])
    assert "--name agc-chain-head" in fetch


def _agc_lines(script: str) -> list[list[str]]:
    """Every ``agc``/``agc-verify`` command of a script, continuation lines joined,
    as its words up to the first shell expansion of an array."""
    joined = re.sub(r"\\\n\s*", " ", script)
    commands = []
    for line in joined.splitlines():
        words = line.split()
        if words and words[0] in ("agc", "agc-verify"):
            commands.append(words)
    return commands


def test_every_agc_option_in_the_recipe_exists() -> None:
    """Each ``--option`` the recipe passes is one the command's parser knows."""
    scripts = "\n".join(str(s.get("run", "")) for s in _steps("seal"))
    commands = _agc_lines(scripts)
    assert {c[0] for c in commands} == {"agc", "agc-verify"}
    for words in commands:
        argv = ["verify"] if words[0] == "agc-verify" else [words[1]]
        options = {w for w in words if w.startswith("--")}
        help_text = _help(argv)
        for option in options:
            assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text), (
                words,
                option,
            )


def _help(argv: list[str]) -> str:
    result = subprocess.run(
        [str(BIN / "agc"), *argv, "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
        check=True,
    )
    return result.stdout


# --- the seal and verify steps, run for real -------------------------------------------


def _needs_tools() -> None:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed (.ci/run installs it; GitHub's runners have it)")
    if not (BIN / "agc").exists() or not (BIN / "agc-verify").exists():
        pytest.skip(f"the agc commands are not installed beside {sys.executable}")


class Runner:
    """One workspace and store; runs the recipe's steps as GitHub Actions would."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = root / "store"
        self.keys = root / "keys"
        assert agc_main(["keys", "generate", "--out", str(self.keys)]) == 0
        self.key_pem = (self.keys / "signing-key.pem").read_text()
        self.attempt = 0

    def run(
        self, *, rollout: bool = False, previous_head: str | None = None
    ) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str], Path]:
        """A fresh workspace (as on a new runner), then the seal and verify steps."""
        self.attempt += 1
        work = self.root / f"work-{self.attempt}"
        handover = work / "handover"
        handover.mkdir(parents=True)
        started = {"type": "thread.started", "thread_id": f"t-{self.attempt}"}
        message = {"type": "item.completed", "item": {"id": "i0", "text": "done"}}
        (handover / "events.jsonl").write_text(f"{json.dumps(started)}\n{json.dumps(message)}\n")
        if rollout:
            meta = {"type": "session_meta", "payload": {"id": f"s-{self.attempt}"}}
            (handover / "rollout.jsonl").write_text(json.dumps(meta) + "\n")
        trusted = work / ".github" / "agc"
        trusted.mkdir(parents=True)
        shutil.copy(self.keys / "signing-key.pub.pem", trusted / "signing-key.pub.pem")
        if previous_head is not None:
            (work / "previous-head").mkdir()
            (work / "previous-head" / "head").write_text(previous_head + "\n")
        runner_temp = work / "runner-temp"
        runner_temp.mkdir()
        summary = work / "step-summary.md"
        env = {
            **os.environ,
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "AGC_STORE": str(self.store),
            "RUN_ID": f"gha-100-{self.attempt}",
            "RUNNER_TEMP": str(runner_temp),
            "GITHUB_STEP_SUMMARY": str(summary),
            "AGC_SIGNING_KEY_PEM": self.key_pem,
        }
        env.pop("AGC_SIGNING_KEY", None)
        env.pop("AGC_TRUSTED_KEYS", None)
        seal = self._step("seal", work, env)
        verify = self._step("verify", work, env)
        assert list(runner_temp.iterdir()) == []  # the key file is gone
        return seal, verify, work

    @staticmethod
    def _step(step_id: str, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        script = _step("seal", step_id)["run"]
        # GitHub runs a `run:` step of a Linux runner as `bash -e {0}`.
        return subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def _head(work: Path) -> str:
    head = (work / "head" / "head").read_text().strip()
    assert re.fullmatch(r"[0-9a-f]{64}", head), head
    return head


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    _needs_tools()
    return Runner(tmp_path)


def test_a_first_run_pins_the_first_head_and_the_next_verifies_against_it(
    runner: Runner,
) -> None:
    seal, verify, work = runner.run()
    assert seal.returncode == 0, seal.stderr
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "no chain head was kept by an earlier run" in verify.stdout
    first = _head(work)
    assert first in (work / "step-summary.md").read_text()

    seal, verify, work = runner.run(rollout=True, previous_head=first)
    assert seal.returncode == 0, seal.stderr
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "no chain head" not in verify.stdout
    second = _head(work)
    assert second != first
    # Both artifacts of the second run were sealed, signed, and verified.
    report = json.loads((work / "verify.json").read_text())
    assert [(r["run_id"], r["signature"]) for r in report["runs"]] == [
        ("gha-100-1", "signature-valid"),
        ("gha-100-2", "signature-valid"),
        ("gha-100-2-rollout", "signature-valid"),
    ]


def test_an_edited_run_fails_the_gate(runner: Runner) -> None:
    _, verify, work = runner.run()
    assert verify.returncode == 0
    transcript = runner.store / "audit" / "transcripts" / "gha-100-1.jsonl"
    data = bytearray(transcript.read_bytes())
    data[data.index(b"done")] = ord("D")
    transcript.write_bytes(bytes(data))

    _, verify, work2 = runner.run(previous_head=_head(work))
    assert verify.returncode == 1
    assert "FAIL gha-100-1:" in verify.stdout
    assert not (work2 / "head").exists()  # nothing is kept for the next run


def test_a_run_sealed_without_the_key_fails_the_gate(runner: Runner) -> None:
    _, verify, work = runner.run()
    assert verify.returncode == 0
    forged = runner.root / "forged.jsonl"
    forged.write_text('{"type":"item.completed","item":{"text":"all tests pass"}}\n')
    env = {k: v for k, v in os.environ.items() if k != "AGC_SIGNING_KEY"}
    result = subprocess.run(
        [str(BIN / "agc"), "import", str(forged), "--run-id=forged", f"--store={runner.store}"],
        env=env,
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr

    _, verify, _ = runner.run(previous_head=_head(work))
    assert verify.returncode == 1
    assert "FAIL forged:" in verify.stdout


def test_a_store_rolled_back_fails_the_gate(runner: Runner) -> None:
    _, verify, _ = runner.run()
    assert verify.returncode == 0
    backup = runner.root / "backup"
    shutil.copytree(runner.store, backup)
    _, verify, work = runner.run()
    assert verify.returncode == 0
    pinned = _head(work)
    # The store is put back as it was before the second run: every run in it is
    # validly signed, only the pinned head tells.
    shutil.rmtree(runner.store)
    shutil.copytree(backup, runner.store)

    _, verify, _ = runner.run(previous_head=pinned)
    assert verify.returncode == 1
    assert "FAIL store:" in verify.stdout
