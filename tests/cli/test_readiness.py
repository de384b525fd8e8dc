"""``agc readiness …`` in process: classify, probe, contract, evidence and its check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agc._core.store import StoreLayout
from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.integrity import check_run, generate_keypair, open_run, read_run_manifest
from agc.readiness import canonical_digest
from tests.readiness.chat_server import Script, chat_server, json_reply
from tests.readiness.helpers import LIVE_URL, completed, credential_answer

Capture = pytest.CaptureFixture[str]


def _run(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    code = main(["readiness", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _observation_file(tmp_path: Path, response: Any, **members: Any) -> Path:
    data = {
        "endpoint": LIVE_URL,
        "environment": "dev",
        "origin": "live",
        "httpStatus": 200,
        "response": response,
        **members,
    }
    path = tmp_path / "observation.json"
    path.write_text(json.dumps(data))
    return path


def test_the_readme_observation_is_one_classify_reads(tmp_path: Path, capsys: Capture) -> None:
    """The README's example of classify's input classifies as it says (a LIVE pass
    from the declared endpoint), so a reader can start from it."""
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    after = readme.split("`classify` reads an *observation*", 1)[1]
    example = after.split("```json\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "observation.json"
    path.write_text(example, encoding="utf-8")
    endpoint = json.loads(example)["endpoint"]
    code, out, _ = _run(capsys, "classify", str(path), "--live-endpoint", endpoint)
    assert code == ExitCode.OK
    assert out.startswith("readiness: LIVE pass")


def test_classify_a_live_pass(tmp_path: Path, capsys: Capture) -> None:
    path = _observation_file(tmp_path, completed(content="a reply nobody may print"))
    code, out, _ = _run(capsys, "classify", str(path), "--live-endpoint", LIVE_URL)
    assert code == ExitCode.OK
    assert "readiness: LIVE pass (runs a full agent session: yes)" in out
    assert "reply: non-empty, 24 characters" in out
    assert "a reply nobody may print" not in out


def test_with_no_live_endpoint_declared_a_pass_is_at_most_dry_run(
    tmp_path: Path, capsys: Capture
) -> None:
    path = _observation_file(tmp_path, completed())
    code, out, _ = _run(capsys, "classify", str(path), "--json")
    assert code == ExitCode.OK  # classify has no default level: a pass is a pass
    verdict = json.loads(out)["verdict"]
    assert (verdict["label"], verdict["passed"]) == ("DRY-RUN", True)
    assert "endpoint-not-declared" in {reason["code"] for reason in verdict["reasons"]}
    code, _, _ = _run(capsys, "classify", str(path), "--require-level", "LIVE")
    assert code == ExitCode.FINDINGS
    config = tmp_path / "readiness.toml"
    config.write_text(f'[environments.dev]\nendpoint = "{LIVE_URL}"\n')
    code, out, _ = _run(capsys, "classify", str(path), "--config", str(config))
    assert (code, "readiness: LIVE pass" in out) == (ExitCode.OK, True)


def test_a_live_endpoint_flag_that_contradicts_the_config_is_a_usage_error(
    tmp_path: Path, capsys: Capture
) -> None:
    config = tmp_path / "readiness.toml"
    config.write_text(f'[environments.dev]\nendpoint = "{LIVE_URL}"\n')
    path = _observation_file(tmp_path, completed())
    other = "https://other.example.test/v1/agent/chat"
    for command in (["classify", str(path)], ["probe", "--environment", "dev", "--live"]):
        code, out, err = _run(capsys, *command, "--config", str(config), "--live-endpoint", other)
        assert code == ExitCode.USAGE
        assert "--live-endpoint 'https://other.example.test/v1/agent/chat' differs" in err
        assert out == ""
    # The same endpoint, spelt with a trailing slash, is one declaration.
    code, _, _ = _run(
        capsys, "classify", str(path), "--config", str(config), "--live-endpoint", LIVE_URL + "/"
    )
    assert code == ExitCode.OK


def test_classify_json_and_exit_codes(tmp_path: Path, capsys: Capture) -> None:
    path = _observation_file(tmp_path, credential_answer(), httpStatus=503)
    code, out, _ = _run(capsys, "classify", str(path), "--json")
    assert code == ExitCode.FINDINGS
    document = json.loads(out)
    assert document["verdict"]["label"] == "BLOCKED/credential"
    assert document["statement"]["_type"] == "https://in-toto.io/Statement/v1"
    assert document["statement"]["predicate"]["verificationResult"] == "FAILED"
    assert document["evidence"] is None


def test_require_level_and_runner(tmp_path: Path, capsys: Capture) -> None:
    local = _observation_file(tmp_path, completed(), endpoint="http://127.0.0.1/v1/agent/chat")
    assert _run(capsys, "classify", str(local))[0] == ExitCode.OK
    assert _run(capsys, "classify", str(local), "--require-level", "LIVE")[0] == 1
    text_only = _observation_file(tmp_path, completed(provider="openai-responses-fallback"))
    assert _run(capsys, "classify", str(text_only))[0] == ExitCode.OK
    assert _run(capsys, "classify", str(text_only), "--require-agent-runner")[0] == 1


def test_classify_bad_input_is_a_usage_error(tmp_path: Path, capsys: Capture) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    code, _, err = _run(capsys, "classify", str(path))
    assert code == ExitCode.USAGE
    assert "is not UTF-8 JSON" in err
    extra = _observation_file(tmp_path, completed(), orgin="live")
    code, _, err = _run(capsys, "classify", str(extra))
    assert code == ExitCode.USAGE
    assert "'orgin'" in err
    code, _, err = _run(capsys, "classify", str(tmp_path / "absent.json"))
    assert code == ExitCode.USAGE
    assert "does not exist" in err


def test_classify_with_a_config_that_declares_the_endpoint(tmp_path: Path, capsys: Capture) -> None:
    config = tmp_path / "readiness.toml"
    config.write_text(
        '[environments.dev]\nendpoint = "https://web.dev.example.test/v1/agent/chat"\n'
    )
    path = _observation_file(tmp_path, completed())
    code, out, _ = _run(capsys, "classify", str(path), "--config", str(config))
    assert code == ExitCode.FINDINGS
    assert "BLOCKED/transport" in out
    bad = tmp_path / "bad.toml"
    bad.write_text("[policy]\nprovider_key = ['X']\n")
    code, _, err = _run(capsys, "classify", str(path), "--config", str(bad))
    assert code == ExitCode.USAGE
    assert "'provider_key'" in err


def test_probe_live_with_evidence_then_check_it(
    tmp_path: Path, store: Path, capsys: Capture
) -> None:
    private, public, key_id = generate_keypair(tmp_path / "keys")
    script = Script(
        result=[
            json_reply(200, {"status": "running", "eventCount": 1}),
            json_reply(200, completed()),
        ],
        trace=[json_reply(200, {"events": [{}, {}]})],
    )
    with chat_server(script) as url:
        code, out, err = _run(
            capsys,
            "probe",
            "--url",
            url,
            "--environment",
            "local",
            "--live",
            "--evidence",
            "ready-1",
            "--store",
            str(store),
            "--signing-key",
            str(private),
            "--require-level",
            "LOCAL",
            "--json",
        )
    assert code == ExitCode.OK, err
    document = json.loads(out)
    assert document["verdict"]["label"] == "LOCAL"
    assert document["evidence"]["signed"] is True
    assert document["evidence"]["key_id"] == key_id
    assert "submit: HTTP 202" in err
    assert check_run("ready-1", store).complete
    manifest = read_run_manifest("ready-1", store)
    assert manifest is not None
    assert manifest.attributes is not None
    assert manifest.attributes["readiness"]["environment"] == "local"
    assert manifest.attributes["readiness"]["level"] == "LOCAL"
    events = StoreLayout(store).artifact_path("ready-1", "tool-events").read_text()
    assert '"route":"submit"' in events.replace(" ", "")

    ok = _run(
        capsys,
        "check-evidence",
        "ready-1",
        "--environment",
        "local",
        "--store",
        str(store),
        "--trusted-key",
        str(public),
        "--require-signature",
        "--require-level",
        "LOCAL",
    )
    assert ok[0] == ExitCode.OK, ok[1]
    assert "evidence: ok" in ok[1]
    # By default check-evidence asks for LIVE: a LOCAL pass is not usable evidence.
    default = _run(capsys, "check-evidence", "ready-1", "--environment", "local",
                   "--store", str(store), "--trusted-key", str(public))  # fmt: skip
    assert default[0] == ExitCode.FINDINGS
    assert "level-below-required" in default[1]
    assert "the sealed level LOCAL is below the required LIVE" in default[1]
    other = _run(
        capsys, "check-evidence", "ready-1", "--environment", "prod", "--store", str(store)
    )
    assert other[0] == ExitCode.FINDINGS
    assert "environment-mismatch" in other[1]
    live = _run(
        capsys,
        "check-evidence",
        "ready-1",
        "--environment",
        "local",
        "--store",
        str(store),
        "--require-level",
        "LIVE",
    )
    assert live[0] == ExitCode.FINDINGS


def test_relabelled_evidence_fails_its_signature(
    tmp_path: Path, store: Path, capsys: Capture
) -> None:
    private, public, _ = generate_keypair(tmp_path / "keys")
    path = _observation_file(tmp_path, completed())
    code, _, _ = _run(
        capsys,
        "classify",
        str(path),
        "--evidence",
        "e1",
        "--store",
        str(store),
        "--signing-key",
        str(private),
    )
    assert code == ExitCode.OK
    manifest_path = StoreLayout(store).manifest_path("e1")
    raw = json.loads(manifest_path.read_text())
    raw["attributes"]["readiness"]["environment"] = "prod"
    manifest_path.write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n")
    code, out, _ = _run(
        capsys,
        "check-evidence",
        "e1",
        "--environment",
        "prod",
        "--store",
        str(store),
        "--trusted-key",
        str(public),
        "--require-signature",
    )
    assert code == ExitCode.FINDINGS
    assert "bad-signature" in out


def test_evidence_is_never_overwritten(tmp_path: Path, store: Path, capsys: Capture) -> None:
    path = _observation_file(tmp_path, completed())
    assert _run(capsys, "classify", str(path), "--evidence", "e2", "--store", str(store))[0] == 0
    code, _, err = _run(capsys, "classify", str(path), "--evidence", "e2", "--store", str(store))
    assert code == ExitCode.USAGE
    assert "never overwritten" in err
    # The hint is about the run id given, not about an output path (there is none).
    assert "hint: Give --evidence a run id the store does not hold yet" in err
    assert "output path" not in err
    code, _, _ = _run(capsys, "classify", str(path), "--evidence", "../x", "--store", str(store))
    assert code == ExitCode.USAGE


@pytest.mark.parametrize(
    ("live", "required", "exit_code"),
    [
        (True, None, ExitCode.FINDINGS),  # default LIVE: a LOCAL pass is not enough
        (True, "LOCAL", ExitCode.OK),
        (False, None, ExitCode.FINDINGS),  # default DRY-RUN: a LOCAL pass is not enough
        (False, "LOCAL", ExitCode.OK),
    ],
)
def test_probe_require_level_defaults_to_the_probes_own_level(
    capsys: Capture, live: bool, required: str | None, exit_code: int
) -> None:
    script = Script(
        result=[json_reply(200, completed())],
        readyz=[json_reply(200, {"status": "ready"})],
    )
    with chat_server(script) as url:
        argv = ["probe", "--url", url, "--environment", "dev", "--json"]
        argv += ["--live"] if live else []
        argv += ["--require-level", required] if required else []
        code, out, err = _run(capsys, *argv)
    verdict = json.loads(out)["verdict"]
    assert (verdict["label"], verdict["passed"]) == ("LOCAL", True)
    assert code == exit_code
    # A pass below the required level says why it is exit 1, and how to name the level.
    said = "FAIL level-below-required" in err and "--require-level" in err
    assert said == (exit_code == ExitCode.FINDINGS)


def test_probe_help_names_the_defaults(capsys: Capture) -> None:
    assert main(["readiness", "probe", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "[default: LIVE with --live, DRY-RUN for a dry run]" in text
    assert "[default: 600]" in text
    assert main(["readiness", "check-evidence", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "[default: LIVE]" in text


def test_probe_dry_run_sends_no_chat(capsys: Capture) -> None:
    script = Script(readyz=[json_reply(503, credential_answer())])
    with chat_server(script) as url:
        code, out, _ = _run(capsys, "probe", "--url", url, "--environment", "dev")
    assert code == ExitCode.FINDINGS
    assert "BLOCKED/credential" in out
    assert all(method == "GET" for method, _, _ in script.requests)


def test_probe_idle_timeout_from_the_command_line(capsys: Capture) -> None:
    script = Script(
        result=[json_reply(200, {"status": "running", "waitingFor": "model"})],
        trace=[json_reply(200, {"events": []})],
    )
    with chat_server(script) as url:
        code, out, err = _run(
            capsys,
            "probe",
            "--url",
            url,
            "--environment",
            "dev",
            "--live",
            "--idle-timeout",
            "0.3",
            "--json",
        )
    assert code == ExitCode.FINDINGS
    document = json.loads(out)
    assert document["verdict"]["label"] == "BLOCKED/transport"
    assert document["verdict"]["summary"]["error_class"] == "idle-timeout"
    assert "giving up" in err


def test_probe_auth_env_sends_a_token_it_never_shows(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "tok-" + "Z" * 40
    monkeypatch.setenv("CHAT_TOKEN", token)
    script = Script(result=[json_reply(200, completed())])
    with chat_server(script) as url:
        code, out, err = _run(
            capsys,
            "probe",
            "--url",
            url,
            "--environment",
            "dev",
            "--live",
            "--auth-env",
            "CHAT_TOKEN",
            "--require-level",
            "LOCAL",
            "--json",
        )
    assert code == ExitCode.OK
    assert script.requests[0][2]["Authorization"] == f"Bearer {token}"
    assert token not in out + err
    monkeypatch.delenv("CHAT_TOKEN")
    code, _, err = _run(
        capsys,
        "probe",
        "--url",
        "http://127.0.0.1:9",
        "--environment",
        "dev",
        "--auth-env",
        "CHAT_TOKEN",
    )
    assert code == ExitCode.USAGE
    assert "CHAT_TOKEN" in err


@pytest.mark.parametrize(
    "token",
    ["tok-" + "Z" * 20 + "\u00e9", "tok-" + "Z" * 20 + "\n", "tok " + "Z" * 20],
    ids=["non-ascii", "trailing-newline", "space"],
)
def test_probe_auth_env_with_a_token_no_header_can_carry_is_a_usage_error(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    monkeypatch.setenv("CHAT_TOKEN", token)
    script = Script(result=[json_reply(200, completed())])
    with chat_server(script) as url:
        code, out, err = _run(
            capsys, "probe", "--url", url, "--environment", "dev", "--live",
            "--auth-env", "CHAT_TOKEN",
        )  # fmt: skip
    assert code == ExitCode.USAGE
    assert "--auth-env CHAT_TOKEN: the token holds a character" in err
    assert "Z" * 20 not in out + err
    assert script.requests == []  # refused before anything was sent


def test_probe_refuses_a_file_url(capsys: Capture) -> None:
    code, _, err = _run(capsys, "probe", "--url", "file:///tmp/x.json", "--environment", "dev")
    assert code == ExitCode.USAGE
    assert "agc readiness classify" in err


MANIFEST = """\
apiVersion: v1
kind: Secret
metadata: {name: provider-keys}
stringData:
  openai-api-key: sk-proj-THISISNOTAREALKEYBUTLOOKSLIKE1234
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cloud-api}
spec:
  template:
    spec:
      containers:
        - name: api
          env:
            - {name: AGENT_PROVIDER, value: codex-stdio}
            - name: OPENAI_API_KEY
              valueFrom: {secretKeyRef: {name: provider-keys, key: openai-api-key}}
            - {name: PROVIDER_BASE_URL, value: "http://egress.internal:17680/v1/responses"}
"""

CONFIG = """\
[environments.dev]
endpoint = "https://web.dev.example.test/v1/agent/chat"

[environments.dev.contract]
workloads = ["cloud-api"]
env = [
  { name = "AGENT_PROVIDER", value = "codex-stdio" },
  { name = "OPENAI_API_KEY", secret = "provider-keys", key = "openai-api-key" },
]
base_url = { env = "PROVIDER_BASE_URL", proxy_required = true }
"""


def test_contract_passes_at_source_without_reading_secret_data(
    tmp_path: Path, capsys: Capture
) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "readiness.toml"
    config.write_text(CONFIG)
    code, out, _ = _run(
        capsys, "contract", str(manifest), "--environment", "dev", "--config", str(config), "--json"
    )
    assert code == ExitCode.OK, out
    document = json.loads(out)
    assert document["verdict"]["level"] == "SOURCE"
    assert document["verdict"]["passed"] is True
    assert "THISISNOTAREALKEY" not in out


def test_contract_public_host_behind_a_required_proxy(tmp_path: Path, capsys: Capture) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(MANIFEST.replace("http://egress.internal:17680", "https://api.openai.com"))
    code, out, _ = _run(
        capsys,
        "contract",
        str(manifest),
        "--environment",
        "dev",
        "--base-url-env",
        "PROVIDER_BASE_URL",
        "--proxy-required",
        "--require-secret-ref",
        "OPENAI_API_KEY=provider-keys/openai-api-key",
    )
    assert code == ExitCode.FINDINGS
    assert "readiness: SOURCE/transport NOT a pass" in out
    assert "names the public provider host api.openai.com" in out


def test_contract_with_nothing_to_check_is_a_usage_error(tmp_path: Path, capsys: Capture) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(MANIFEST)
    code, _, err = _run(capsys, "contract", str(manifest), "--environment", "dev")
    assert code == ExitCode.USAGE
    assert "requires nothing" in err


def test_table_lists_every_row(capsys: Capture) -> None:
    code, out, _ = _run(capsys, "table", "--json")
    assert code == ExitCode.OK
    rows = json.loads(out)["rows"]
    assert any(row["id"] == "credential-missing" for row in rows)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"x": ' + "[" * 960 + "]" * 960 + "}", "deeper than 512"),
        ('{"x": ' + "[" * 400 + "]" * 400 + "}", "deeper than 100"),
        ('{"origin": "mock", "origin": "live"}', "duplicate"),
    ],
    ids=["deeper-than-json", "deeper-than-an-observation", "duplicate-member"],
)
def test_classify_a_hostile_observation_is_a_usage_error(
    tmp_path: Path, capsys: Capture, text: str, problem: str
) -> None:
    path = _observation_file(tmp_path, completed())
    data = json.loads(path.read_text())
    del data["origin"]
    body = json.dumps(data)[:-1] + ", " + text[1:-1] + "}"
    path.write_text(body)
    code, out, err = _run(capsys, "classify", str(path), "--evidence", "deep-1")
    assert code == ExitCode.USAGE
    assert problem in err
    assert "Traceback" not in err
    assert out == ""


def test_check_evidence_of_a_forged_unsigned_run_is_not_usable(
    tmp_path: Path, capsys: Capture
) -> None:
    statement = {"subject": [1]}  # no digest where the statement keeps it
    attributes = {
        "readiness": {
            "environment": "dev",
            "passed": True,
            "level": "LIVE",
            "statement_digest": canonical_digest(statement),
        }
    }
    store = tmp_path / "forged-store"
    with open_run("forged-1", store=store, attributes=attributes) as run:
        run.transcript.write({"type": "readiness.statement", "statement": statement})
        run.transcript.write({"type": ["not", "a", "name"]})
    code, out, err = _run(
        capsys, "check-evidence", "forged-1", "--environment", "dev", "--store", str(store)
    )
    assert code == ExitCode.FINDINGS
    assert "subject-mismatch" in out
    assert "evidence: NOT usable" in out
    assert "internal error" not in err


def test_contract_with_a_huge_yaml_integer_is_a_usage_error(
    tmp_path: Path, capsys: Capture
) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text("kind: Pod\nspec:\n  containers:\n  - {name: api, env: [{name: A, value: "
                        + "9" * 5000 + "}]}\n")  # fmt: skip
    code, out, err = _run(
        capsys, "contract", str(manifest), "--environment", "dev", "--require-env", "A"
    )
    assert code == ExitCode.USAGE
    assert f"{manifest} holds a value YAML's reader cannot convert" in err
    assert "internal error" not in err
    assert out == ""


@pytest.mark.parametrize(
    ("error", "words"),
    [
        ("connect", "the connection failed (refused, unreachable, or no such host)"),
        ("idle-timeout", "the idle timeout ran out with no progress"),
        ("submit-http-503", "the submit was refused with HTTP 503"),
        ("tls-handshake", 'the transport error "tls-handshake"'),
    ],
)
def test_a_transport_error_reads_in_words_with_the_observed_field_after_it(
    tmp_path: Path, capsys: Capture, error: str, words: str
) -> None:
    path = _observation_file(tmp_path, None, httpStatus=None, transportError=error)
    code, out, _ = _run(capsys, "classify", str(path))
    assert code == 1
    (line,) = [line for line in out.splitlines() if "no usable answer" in line]
    assert line == f'  no usable answer: {words} [observed transportError: "{error}"]'
