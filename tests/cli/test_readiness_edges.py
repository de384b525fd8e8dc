"""``agc readiness`` at its edges, in process: the decision table as text and as JSON
(the same rows, in the same order), an observation on standard input that is closed,
too large or unreadable, a probe with no URL, contract options that need another, and
a check of evidence that does not exist."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from agc.cli.app import main as agc_main


def test_the_table_as_text_lists_the_rows_and_ceilings_of_the_json_in_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert agc_main(["readiness", "table", "--json"]) == 0
    rows: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["rows"]
    assert agc_main(["readiness", "table"]) == 0
    text = capsys.readouterr().out.splitlines()
    split = text.index("then the ceilings:")
    numbered = [re.fullmatch(r"\s*(\d+)\. ([^:]+): .+ -> .+", line) for line in text[:split]]
    assert all(numbered), text[:split]
    assert [int(m[1]) for m in numbered if m] == list(range(1, split + 1))
    ceilings = [row for row in rows if row["table"] == "ceiling"]
    assert [m[2] for m in numbered if m] == [row["id"] for row in rows if row["table"] != "ceiling"]
    assert len(text) - split - 1 == len(ceilings)
    for line, row in zip(text[split + 1 :], ceilings, strict=True):
        keeps = "a pass survives, lowered" if row["keeps_pass"] else "never a pass"
        assert line == f"  - {row['id']}: {row['observed']} ({keeps})"


class _Stdin:
    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer


class _Failing(io.RawIOBase):
    def read(self, size: int = -1) -> bytes:
        raise OSError(5, "Input/output error")


@pytest.mark.parametrize(
    ("stdin", "code", "message"),
    [
        (None, 2, "agc readiness classify - has no standard input (it is closed)"),
        (_Stdin(io.BytesIO(b" " * (16 * 1024 * 1024 + 1))), 2, "the observation is larger than"),
        (_Stdin(_Failing()), 3, "cannot read the observation on standard input"),
    ],
    ids=["closed", "too-large", "io-error"],
)
def test_an_observation_on_stdin_that_cannot_be_used_is_refused(
    stdin: Any,
    code: int,
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", stdin)
    assert agc_main(["readiness", "classify", "-"]) == code
    assert message in capsys.readouterr().err


def test_a_probe_without_any_url_is_a_usage_error_with_the_three_ways_to_give_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert agc_main(["readiness", "probe", "--environment", "dev"]) == 2
    err = capsys.readouterr().err
    assert "error: no URL to probe" in err
    for way in ("--url", "--live-endpoint", "environments.dev.url"):
        assert way in err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--require-secret-ref", "OPENAI_API_KEY"], "is not NAME=SECRET/KEY"),
        (["--require-secret-ref", "K=secret"], "is not NAME=SECRET/KEY"),
        (["--expect-base-url", "https://proxy.example"], "need --base-url-env"),
        (["--proxy-required"], "need --base-url-env"),
    ],
)
def test_contract_options_that_need_another_are_usage_errors(
    tmp_path: Path, options: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text("kind: ConfigMap\nmetadata: {name: x}\n")
    code = agc_main(["readiness", "contract", str(manifest), "--environment", "dev", *options])
    assert code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("as_json", [False, True])
def test_checking_evidence_that_does_not_exist_is_findings_with_no_evidence(
    tmp_path: Path, store: Path, as_json: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "readiness",
        "check-evidence",
        "dev-live-1",
        "--environment",
        "dev",
        "--store",
        str(store),
    ]
    assert agc_main([*argv, *(["--json"] if as_json else [])]) == 1
    out = capsys.readouterr().out
    if as_json:
        document = json.loads(out)
        assert (document["evidence"], document["ok"]) == (None, False)
        assert document["run"]["run_id"] == "dev-live-1"
    else:
        assert "dev-live-1" in out
