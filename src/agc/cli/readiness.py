"""``agc readiness classify|probe|contract|check-evidence|table``: the readiness gate.

The verdicts come from :mod:`agc.readiness`; ``--evidence RUN_ID`` seals them as an agc
run with :func:`agc.flows.seal_verdict` (the redacted observation, the verdict and the
in-toto Statement in the transcript, the probe's HTTP exchanges as tool events, the
verdict in the manifest attributes, signed when a signing key is set), and
``check-evidence`` reads one back with :func:`agc.flows.check_sealed_verdict`. Nothing
printed here is a header, an env value or the reply text.
"""

from __future__ import annotations

import enum
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from agc.cli.common import EPILOG, StoreOption, emit_json, err_console, new_app, out_console
from agc.cli.keys import SigningKeyOption, signing_key_from
from agc.cli.verify import _trusted, format_report
from agc.errors import (
    FileUnreadableError,
    InputError,
    ObservationInvalidError,
    UsageError,
)
from agc.exitcodes import ExitCode
from agc.flows import (
    SCHEMA_VERSION,
    RunId,
    check_sealed_verdict,
    describe_os_error,
    parse_json,
    read_limited,
    refuse_taken_run_id,
    seal_verdict,
    verdict_statement,
)
from agc.readiness import (
    DECISION_TABLE,
    LEVEL_ORDER,
    BaseUrlRule,
    ContractSpec,
    EnvRequirement,
    Observation,
    ReadinessConfig,
    ReadinessVerdict,
    check_contract,
    classify,
    decision_table_document,
    load_config,
    load_manifests,
    probe,
    safe_url,
    stored_observation,
)

__all__ = ["register"]

_MAX_OBSERVATION_BYTES = 16 * 1024 * 1024


class LevelChoice(enum.StrEnum):
    source = "SOURCE"
    local = "LOCAL"
    dry_run = "DRY-RUN"
    live = "LIVE"


JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="Readiness configuration, TOML or JSON: policy, probe settings, environments "
        "(docs/readiness.md).",
        show_default=False,
    ),
]
EvidenceOption = Annotated[
    str | None,
    typer.Option(
        "--evidence",
        metavar="RUN_ID",
        help="Seal the verdict into the store (--store) as run RUN_ID; signed when a "
        "signing key is set.",
        show_default=False,
    ),
]
RequireLevelOption = Annotated[
    LevelChoice | None,
    typer.Option(
        "--require-level",
        help="Exit 0 only for a pass at this level or a stronger one (SOURCE < LOCAL < "
        "DRY-RUN < LIVE).",
        show_default=False,
    ),
]
ProbeRequireLevelOption = Annotated[
    LevelChoice | None,
    typer.Option(
        "--require-level",
        help="Exit 0 only for a pass at this level or a stronger one (SOURCE < LOCAL < "
        "DRY-RUN < LIVE) [default: LIVE with --live, DRY-RUN for a dry run].",
        show_default=False,
    ),
]
EvidenceRequireLevelOption = Annotated[
    LevelChoice | None,
    typer.Option(
        "--require-level",
        help="Exit 0 only for a sealed pass at this level or a stronger one (SOURCE < "
        "LOCAL < DRY-RUN < LIVE) [default: LIVE].",
        show_default=False,
    ),
]
LiveEndpointOption = Annotated[
    str | None,
    typer.Option(
        "--live-endpoint",
        metavar="URL",
        help="Declare URL the environment's live chat endpoint (as environments.NAME.endpoint "
        "in --config does): only its answer can be LIVE; with none declared, a pass is at "
        "most DRY-RUN.",
        show_default=False,
    ),
]
RequireRunnerOption = Annotated[
    bool,
    typer.Option(
        "--require-agent-runner",
        help="Exit 0 only when the endpoint also runs a full agent session (an agent "
        "with its tools, not text chat only).",
    ),
]
EnvironmentOption = Annotated[
    str,
    typer.Option(
        "--environment", help="The environment's name (dev, staging …).", show_default=False
    ),
]


# -- shared edges ---------------------------------------------------------------------------


def _conclude(
    observation: Observation,
    settings: ReadinessConfig,
    *,
    evidence: str | None,
    store: Path | None,
    signing_key: Path | None,
    as_json: bool,
    require_level: LevelChoice | None,
    require_agent_runner: bool,
    steps: list[dict[str, Any]] | None = None,
) -> int:
    """Classify, seal the verdict (``--evidence``) or build its statement (``--json``),
    show it and return the gate's exit code. ``steps``: the probe's, shown and sealed."""
    verdict = classify(observation, settings.policy)
    stored = stored_observation(observation)
    statement: dict[str, Any] | None = None
    summary = None
    if evidence is not None:
        statement, summary = seal_verdict(
            evidence,
            store=store,
            signing_key=signing_key_from(signing_key),
            verdict=verdict,
            config=settings,
            subject=stored,
            observation=stored,
            steps=steps,
        )
    elif as_json:
        statement = verdict_statement(verdict, settings, stored)
    extra = {"observation": stored, "steps": steps} if as_json and steps is not None else None
    _show(verdict, as_json=as_json, statement=statement, evidence=summary, extra=extra)
    return _gate(verdict, require_level, require_agent_runner)


def _gate(verdict: ReadinessVerdict, level: LevelChoice | None, runner: bool) -> int:
    ok = verdict.passed
    if level is not None:
        if ok and not verdict.meets(level.value):
            err_console.print(
                f"FAIL {'level-below-required':<20} the verdict's level {verdict.level} is "
                f"below the required {level.value}: exit 1 (a loopback endpoint passes at "
                "LOCAL at most; name the level this gate accepts with --require-level)",
                markup=False,
            )
        ok = ok and verdict.meets(level.value)
    if runner:
        ok = ok and verdict.agent_runner_gate
    return int(ExitCode.OK if ok else ExitCode.FINDINGS)


def _show(
    verdict: ReadinessVerdict,
    *,
    as_json: bool,
    statement: dict[str, Any] | None,
    evidence: dict[str, Any] | None,
    extra: dict[str, Any] | None = None,
) -> None:
    if as_json:
        emit_json(
            {
                "schema_version": SCHEMA_VERSION,
                "verdict": verdict.to_dict(),
                "statement": statement,
                "evidence": evidence,
                **(extra or {}),
            }
        )
        return
    for line in format_verdict(verdict):
        out_console.print(line, markup=False)
    if evidence is not None:
        signed = f", signed by key {evidence['key_id'][:16]}…" if evidence["signed"] else ""
        out_console.print(
            f"evidence: run {evidence['run_id']} sealed in {evidence['store']}{signed}",
            markup=False,
        )


def format_verdict(verdict: ReadinessVerdict) -> list[str]:
    """Human lines for a verdict (every value already quoted by the library)."""
    outcome = "pass" if verdict.passed else "NOT a pass"
    gate = "yes" if verdict.agent_runner_gate else "no"
    summary = verdict.summary
    lines = [
        f"readiness: {verdict.label} {outcome} (runs a full agent session: {gate})",
        f"environment: {verdict.environment}",
        f"endpoint: {verdict.endpoint or '-'}",
        f"capability: {verdict.capability or '-'}",
    ]
    if verdict.rule != "deployment-contract":
        reply = (
            f"non-empty, {summary.reply_length} characters"
            if summary.reply_non_empty
            else "empty or missing"
        )
        lines += [
            f"provider: {summary.provider or '-'}  model: {summary.model or '-'}  "
            f"backend: {summary.backend or '-'}",
            f"http status: {summary.http_status if summary.http_status is not None else '-'}  "
            f"reply: {reply}  error class: {summary.error_class or '-'}",
        ]
    if verdict.runner_blockers:
        lines.append(f"runner blockers: {', '.join(verdict.runner_blockers)}")
    lines.append(f"rule: {verdict.rule}")
    lines.append("reasons:")
    for reason in verdict.reasons:
        observed = json.dumps(reason.observed, ensure_ascii=False) if reason.present else "absent"
        lines.append(f"  {reason.message} [observed {reason.field}: {observed}]")
    return lines


# -- classify -------------------------------------------------------------------------------


def classify_command(
    file: Annotated[
        Path, typer.Argument(help="An observation JSON file ('-' for standard input).")
    ],
    config: ConfigOption = None,
    live_endpoint: LiveEndpointOption = None,
    evidence: EvidenceOption = None,
    store: StoreOption = None,
    signing_key: SigningKeyOption = None,
    require_level: RequireLevelOption = None,
    require_agent_runner: RequireRunnerOption = False,
    as_json: JsonOption = False,
) -> int:
    """Classify an observation (docs/readiness.md) with the decision table.

    Exit 0 only for a pass (and the --require-* conditions); 1 when not a pass. An
    answer is LIVE only from the environment's declared live endpoint (--config or
    --live-endpoint).

    \b
    Examples:
      agc readiness classify answer.json
      agc readiness classify answer.json --config readiness.toml --require-level LIVE
      agc readiness classify answer.json --json --evidence dev-readiness-0412 \\
          --live-endpoint https://dev.example.com:16666/v1/agent/chat
    """
    settings = load_config(config)
    if evidence is not None:
        refuse_taken_run_id(evidence, store)
    if str(file) == "-":
        if sys.stdin is None:
            raise InputError("agc readiness classify - has no standard input (it is closed)")
        try:
            data = sys.stdin.buffer.read(_MAX_OBSERVATION_BYTES + 1)
        except OSError as exc:  # an I/O error: exit 3, as for an observation file
            raise FileUnreadableError(
                f"cannot read the observation on standard input: {describe_os_error(exc)}"
            ) from exc
        if len(data) > _MAX_OBSERVATION_BYTES:
            raise InputError(f"the observation is larger than {_MAX_OBSERVATION_BYTES} bytes")
        source = "the observation on standard input"
    else:
        data = read_limited(file, what="observation", max_bytes=_MAX_OBSERVATION_BYTES)
        source = f"observation {file}"
    try:
        raw = parse_json(data, allow_lone_surrogates=True)
    except ValueError as exc:
        raise ObservationInvalidError(f"{source} is not UTF-8 JSON: {exc}") from exc
    observation = Observation.from_dict(raw, source=source)
    settings = settings.declaring(observation.environment, live_endpoint)
    return _conclude(
        observation,
        settings,
        evidence=evidence,
        store=store,
        signing_key=signing_key,
        as_json=as_json,
        require_level=require_level,
        require_agent_runner=require_agent_runner,
    )


# -- probe ----------------------------------------------------------------------------------


def probe_command(
    environment: EnvironmentOption,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="The service's base URL (default: environments.NAME.url of --config).",
            show_default=False,
        ),
    ] = None,
    live: Annotated[
        bool,
        typer.Option(
            "--live", help="Send one minimal chat and poll it to the end (else a dry run)."
        ),
    ] = False,
    idle_timeout: Annotated[
        float | None,
        typer.Option(
            "--idle-timeout",
            help="Seconds without a new trace event (and no change of waitingFor) before "
            "giving up [default: 120].",
            min=0.001,
            show_default=False,
        ),
    ] = None,
    request_timeout: Annotated[
        float | None,
        typer.Option(
            "--request-timeout",
            help="Seconds for one HTTP request [default: 10].",
            min=0.001,
            show_default=False,
        ),
    ] = None,
    max_wait: Annotated[
        float | None,
        typer.Option(
            "--max-wait",
            help="Seconds the whole probe may take; no wait (a Retry-After included) and "
            "no request goes past it [default: 600].",
            min=0.001,
            show_default=False,
        ),
    ] = None,
    auth_env: Annotated[
        str | None,
        typer.Option(
            "--auth-env",
            metavar="NAME",
            help="Send the value of env var NAME as a bearer token (never shown or stored).",
            show_default=False,
        ),
    ] = None,
    config: ConfigOption = None,
    live_endpoint: LiveEndpointOption = None,
    evidence: EvidenceOption = None,
    store: StoreOption = None,
    signing_key: SigningKeyOption = None,
    require_level: ProbeRequireLevelOption = None,
    require_agent_runner: RequireRunnerOption = False,
    as_json: JsonOption = False,
) -> int:
    """Probe an agent chat endpoint and classify what it answers.

    Without --live: a dry run (the service's /readyz, else the error answer of the chat
    route for an unknown trace); it sends no chat and never passes above DRY-RUN. With
    --live: one minimal chat, submit (202 + traceId), then result/trace polling with
    capped exponential backoff and jitter, honouring Retry-After; 408/425/429/5xx,
    timeouts, empty or non-JSON bodies are retried. --max-wait and --idle-timeout bound
    every wait: a Retry-After that would pass one ends the probe. Only the environment's
    declared live endpoint (--config or --live-endpoint) can pass LIVE; a loopback
    endpoint is at most LOCAL. Exit 0 only for a pass at --require-level: LIVE by
    default with --live, DRY-RUN for a dry run. The output gives the level,
    provider/model/backend, whether the reply is non-empty and its length, the error
    class: never the reply text, a header or an env value.

    \b
    Examples:
      agc readiness probe --url https://dev.example.com:16666/ --environment dev
      agc readiness probe --environment dev --live \\
          --live-endpoint https://dev.example.com:16666/v1/agent/chat
      agc readiness probe --environment dev --config readiness.toml --live \\
          --evidence dev-live-0412
      agc readiness probe --url http://127.0.0.1:8080 --environment local --live \\
          --require-level LOCAL --json
    """
    settings = load_config(config).declaring(environment, live_endpoint)
    env_config = settings.environment(environment)
    base = url or env_config.url or live_endpoint
    if base is None:
        raise UsageError(
            "no URL to probe",
            hint=f"Give --url or --live-endpoint, or set environments.{environment}.url "
            "in --config.",
        )
    if evidence is not None:
        refuse_taken_run_id(evidence, store)
    options: dict[str, Any] = {}
    if idle_timeout is not None:
        options["idle_timeout_s"] = idle_timeout
    if request_timeout is not None:
        options["request_timeout_s"] = request_timeout
    if max_wait is not None:
        options["max_wait_s"] = max_wait
    if auth_env is not None:
        options["auth_env"] = auth_env
    probe_settings = replace(settings.probe, **options)
    headers = _auth_headers(probe_settings.auth_env)
    err_console.print(
        f"probing {safe_url(base)} ({'live chat' if live else 'dry run'}) for {environment}",
        markup=False,
    )
    result = probe(
        base,
        environment=environment,
        live=live,
        settings=probe_settings,
        headers=headers,
        log=lambda line: err_console.print(line, markup=False),
    )
    return _conclude(
        result.observation,
        settings,
        evidence=evidence,
        store=store,
        signing_key=signing_key,
        as_json=as_json,
        require_level=require_level or (LevelChoice.live if live else LevelChoice.dry_run),
        require_agent_runner=require_agent_runner,
        steps=[step.to_dict() for step in result.steps],
    )


def _auth_headers(name: str | None) -> dict[str, str]:
    if name is None:
        return {}
    value = os.environ.get(name)
    if not value:
        raise UsageError(
            f"--auth-env {name}: that env var is not set or empty",
            hint="Export the token in that variable; agc never prints or stores it.",
        )
    if not all("!" <= char <= "~" for char in value):
        # RFC 6750's b64token is visible ASCII without white space. httpx fails on a
        # non-ASCII character (a bug, exit 4) and on a control character (a transport
        # error on every try), neither naming the token.
        raise UsageError(
            f"--auth-env {name}: the token holds a character an HTTP header cannot carry "
            "(white space, a control or non-ASCII character)",
            hint="Check the variable's value (agc never prints it); a trailing newline "
            "from a file is a common cause.",
        )
    return {"Authorization": f"Bearer {value}"}


# -- contract -------------------------------------------------------------------------------


def _secret_ref(text: str) -> EnvRequirement:
    name, sep, ref = text.partition("=")
    secret, slash, key = ref.partition("/")
    if not (name and sep and secret and slash and key):
        raise UsageError(
            f"--require-secret-ref {text!r} is not NAME=SECRET/KEY",
            hint="e.g. --require-secret-ref OPENAI_API_KEY=provider-keys/openai-api-key",
        )
    return EnvRequirement(name=name, secret=secret, key=key)


def contract_command(
    manifests: Annotated[
        list[Path], typer.Argument(help="Kubernetes YAML files (Deployment, Pod …).")
    ],
    environment: EnvironmentOption,
    require_env: Annotated[
        list[str] | None,
        typer.Option("--require-env", metavar="NAME", help="An env name that must be declared."),
    ] = None,
    require_secret_ref: Annotated[
        list[str] | None,
        typer.Option(
            "--require-secret-ref",
            metavar="NAME=SECRET/KEY",
            help="An env var that must come from this Secret's key (secretKeyRef).",
        ),
    ] = None,
    base_url_env: Annotated[
        str | None,
        typer.Option("--base-url-env", metavar="NAME", help="The provider base-URL env var."),
    ] = None,
    expect_base_url: Annotated[
        str | None,
        typer.Option("--expect-base-url", metavar="URL", help="The base URL it must hold."),
    ] = None,
    proxy_required: Annotated[
        bool,
        typer.Option("--proxy-required", help="The base URL must not name a public provider host."),
    ] = False,
    public_host: Annotated[
        list[str] | None,
        typer.Option(
            "--public-host",
            metavar="HOST",
            help="A public provider host (sub-domains too); repeatable [default: "
            "api.openai.com, api.anthropic.com, generativelanguage.googleapis.com].",
        ),
    ] = None,
    workload: Annotated[
        list[str] | None,
        typer.Option("--workload", metavar="NAME", help="Check only this workload; repeatable."),
    ] = None,
    container: Annotated[
        list[str] | None,
        typer.Option("--container", metavar="NAME", help="Check only this container; repeatable."),
    ] = None,
    config: ConfigOption = None,
    evidence: EvidenceOption = None,
    store: StoreOption = None,
    signing_key: SigningKeyOption = None,
    as_json: JsonOption = False,
) -> int:
    """Check deployment manifests against the readiness contract (level SOURCE).

    Checks, without reading Secret data, that the declared env names, the secretKeyRef
    Secret and key names and the provider base-URL contract are present, and that the
    base URL does not name a public provider host when a proxy is required. The
    contract comes from environments.NAME.contract in --config, plus these flags.

    \b
    Examples:
      agc readiness contract deploy/cloud-api.yaml --environment dev --config readiness.toml
      agc readiness contract k8s/*.yaml --environment dev \\
          --require-env HWLAB_CODE_AGENT_PROVIDER \\
          --require-secret-ref OPENAI_API_KEY=provider-keys/openai-api-key \\
          --base-url-env HWLAB_CODE_AGENT_OPENAI_BASE_URL --proxy-required
    """
    settings = load_config(config)
    env_config = settings.environment(environment)
    spec = env_config.contract
    extra = [EnvRequirement(name=name) for name in require_env or []]
    extra += [_secret_ref(text) for text in require_secret_ref or []]
    base_url = spec.base_url
    if base_url_env is not None:
        base_url = BaseUrlRule(env=base_url_env)
    if base_url is not None:
        base_url = BaseUrlRule(
            env=base_url.env,
            expected=expect_base_url or base_url.expected,
            proxy_required=proxy_required or base_url.proxy_required,
            public_hosts=tuple(public_host) if public_host else base_url.public_hosts,
        )
    elif expect_base_url or proxy_required or public_host:
        raise UsageError(
            "--expect-base-url, --proxy-required and --public-host need --base-url-env"
        )
    spec = ContractSpec(
        workloads=tuple(workload) if workload else spec.workloads,
        containers=tuple(container) if container else spec.containers,
        env=(*spec.env, *extra),
        base_url=base_url,
    )
    if evidence is not None:
        refuse_taken_run_id(evidence, store)
    documents, sources = load_manifests(manifests)
    verdict = check_contract(documents, spec, environment=environment, endpoint=env_config.endpoint)
    subject = {"sources": [source.to_dict() for source in sources]}
    statement: dict[str, Any] | None = None
    summary = None
    if evidence is not None:
        statement, summary = seal_verdict(
            evidence,
            store=store,
            signing_key=signing_key_from(signing_key),
            verdict=verdict,
            config=settings,
            subject=subject,
            sources=subject["sources"],
        )
    elif as_json:
        statement = verdict_statement(verdict, settings, subject)
    _show(verdict, as_json=as_json, statement=statement, evidence=summary)
    return int(ExitCode.OK if verdict.passed else ExitCode.FINDINGS)


# -- check-evidence -------------------------------------------------------------------------


def check_evidence_command(
    run_id: Annotated[str, typer.Argument(help="The evidence run to check.", show_default=False)],
    environment: EnvironmentOption,
    endpoint: Annotated[
        str | None,
        typer.Option("--endpoint", help="The chat endpoint it must be for.", show_default=False),
    ] = None,
    store: StoreOption = None,
    trusted_key: Annotated[
        list[Path] | None,
        typer.Option(
            "--trusted-key",
            help="Trusted Ed25519 public key (PEM); repeatable. Also: $AGC_TRUSTED_KEYS folder.",
            show_default=False,
            metavar="<path>",
        ),
    ] = None,
    require_signature: Annotated[
        bool, typer.Option("--require-signature", help="An unsigned or badly signed run fails.")
    ] = False,
    require_level: EvidenceRequireLevelOption = None,
    require_agent_runner: RequireRunnerOption = False,
    as_json: JsonOption = False,
) -> int:
    """Check a sealed readiness verdict before relying on it.

    Exit 0 only when the run verifies (as agc-verify), its sealed verdict is for
    --environment (and --endpoint), its transcript holds the sealed statement and
    observation, and the verdict passed at --require-level (LIVE by default) and meets
    --require-agent-runner.

    \b
    Examples:
      agc readiness check-evidence dev-live-0412 --environment dev
      agc readiness check-evidence dev-dry-0412 --environment dev --require-level DRY-RUN
      agc readiness check-evidence dev-live-0412 --environment dev \\
          --trusted-key ci.pub.pem --require-signature --json
    """
    run_id = RunId(run_id)
    sealed_check = check_sealed_verdict(
        run_id,
        store,
        environment=environment,
        endpoint=endpoint,
        trusted_keys=_trusted(trusted_key),
        require_signature=require_signature,
    )
    report, checked = sealed_check.run, sealed_check.evidence
    result: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "run": report.to_dict()}
    if checked is None:
        if as_json:
            emit_json({**result, "evidence": None, "ok": False})
        else:
            for line in format_report(report):
                out_console.print(line, markup=False)
        return int(ExitCode.FINDINGS)
    sealed = checked.attributes or {}
    passed = bool(sealed.get("passed"))
    required = require_level or LevelChoice.live
    level = LEVEL_ORDER.get(str(sealed.get("level")), -1)  # type: ignore[call-overload]
    below = level < LEVEL_ORDER[required.value]
    passed = passed and not below
    if require_agent_runner:
        passed = passed and bool(sealed.get("agent_runner_gate"))
    ok = checked.ok and passed
    if as_json:
        emit_json(
            {**result, "evidence": checked.to_dict(), "required_level": required.value, "ok": ok}
        )
    else:
        out_console.print(f"run {run_id}: verifies ({report.signature})", markup=False)
        for code, message in checked.problems:
            out_console.print(f"FAIL {code:<20} {message}", markup=False)
        if checked.attributes is not None:
            out_console.print(
                f"sealed verdict: {sealed.get('label')} "
                f"{'pass' if sealed.get('passed') else 'NOT a pass'} for "
                f"{sealed.get('environment')} at {sealed.get('endpoint') or '-'}, "
                f"verified {sealed.get('time_verified')}",
                markup=False,
            )
            if below:
                out_console.print(
                    f"FAIL {'level-below-required':<20} the sealed level "
                    f"{sealed.get('level')} is below the required {required.value} "
                    "(--require-level)",
                    markup=False,
                )
        out_console.print("evidence: ok" if ok else "evidence: NOT usable", markup=False)
    return int(ExitCode.OK if ok else ExitCode.FINDINGS)


# -- table ----------------------------------------------------------------------------------


def table_command(as_json: JsonOption = False) -> int:
    """Print the decision table and the ceilings, in the order they apply.

    \b
    Examples:
      agc readiness table
      agc readiness table --json
    """
    if as_json:
        emit_json({"schema_version": SCHEMA_VERSION, "rows": decision_table_document()})
        return int(ExitCode.OK)
    for number, row in enumerate(DECISION_TABLE, start=1):
        label = f"{row.level}/{row.blocker}" if row.blocker else row.level
        verdict = f"{label} {'pass' if row.passed else 'no pass'}"
        capability = f", {row.capability}" if row.capability else ""
        out_console.print(
            f"{number:>2}. {row.id}: {row.observed} -> {verdict}{capability}", markup=False
        )
    out_console.print("then the ceilings:", markup=False)
    for entry in decision_table_document():
        if entry["table"] == "ceiling":
            keeps = "a pass survives, lowered" if entry["keeps_pass"] else "never a pass"
            out_console.print(f"  - {entry['id']}: {entry['observed']} ({keeps})", markup=False)
    return int(ExitCode.OK)


def register(app: typer.Typer) -> None:
    """Add ``agc readiness classify|probe|contract|check-evidence|table`` to ``agc``."""
    readiness = new_app(
        name="readiness",
        help_text=(
            "The readiness gate for an agent chat endpoint (POST /v1/agent/chat): "
            "classify observations, probe endpoints, check deployment contracts, and "
            "seal the verdicts as evidence. Formats: docs/readiness.md."
        ),
    )
    readiness.command(name="classify", epilog=EPILOG)(classify_command)
    readiness.command(name="probe", epilog=EPILOG)(probe_command)
    readiness.command(name="contract", epilog=EPILOG)(contract_command)
    readiness.command(name="check-evidence", epilog=EPILOG)(check_evidence_command)
    readiness.command(name="table", epilog=EPILOG)(table_command)
    app.add_typer(readiness, name="readiness")
