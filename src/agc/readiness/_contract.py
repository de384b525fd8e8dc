"""The deployment contract: Kubernetes manifests checked without reading Secret data.

What is checked (a :class:`ContractSpec`, from the configuration or flags): each
required env name is declared on the selected containers; a required ``secretKeyRef``
names the expected Secret and key (and a credential is never a literal ``value``); the
provider base-URL env holds the expected URL and, when a proxy is required, does not
name a public provider host. The verdict's level is always ``SOURCE``: a source check
shows what is declared, never what the runtime has.

Manifests are read with PyYAML's ``safe_load_all`` (plain data, no object
construction). A ``Secret`` object's ``data`` and ``stringData`` are dropped as soon as a
document is parsed: only its name is kept, and nothing of a value reaches a finding.
Workloads are the pod templates of ``Deployment``, ``StatefulSet``, ``DaemonSet``,
``ReplicaSet``, ``ReplicationController``, ``Job``, ``CronJob`` and ``Pod`` objects
(Kubernetes API reference: ``PodSpec``, ``EnvVar``, ``EnvFromSource``); ``List`` objects
are expanded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import yaml

from agc._core.fs import read_limited
from agc.errors import DeploymentManifestError, UsageError
from agc.readiness._model import ReadinessVerdict, Reason, quote
from agc.readiness._policy import ContractSpec, EnvRequirement
from agc.readiness._urls import matches_host, safe_url

__all__ = [
    "ManifestDocument",
    "Workload",
    "check_contract",
    "load_manifests",
    "parse_manifests",
]

_MAX_MANIFEST_BYTES: Final = 16 * 1024 * 1024
_SECRET_MEMBERS: Final = ("data", "stringData")
_MAX_INTEGER_BITS: Final = 64
_LONG_NUMBER_HINT: Final = (
    "Kubernetes integers are int32 or int64; quote a long number to make it a string."
)
_MIN_EXPANDED_VALUES: Final = 100_000
"""The least number of values a manifest may expand to (its size in bytes is the limit
when larger): YAML text without aliases holds fewer values than it has bytes."""


@dataclass(frozen=True)
class ManifestDocument:
    """One parsed Kubernetes object: ``source`` is ``<file>#<n>`` (n from 1)."""

    source: str
    body: Mapping[str, Any]


@dataclass(frozen=True)
class SourceFile:
    """A checked file by name, size and SHA-256 (what evidence records of it)."""

    path: str
    bytes: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "bytes": self.bytes, "sha256": self.sha256}


@dataclass(frozen=True)
class Workload:
    """One container of a workload's pod template."""

    kind: str
    name: str
    container: str
    env: Sequence[Mapping[str, Any]]
    env_from: Sequence[Mapping[str, Any]]
    source: str

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.name} container {self.container}"


def _without_secret_data(body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: v for k, v in body.items() if not (body.get("kind") == "Secret" and k in _SECRET_MEMBERS)
    }


def _first_problem(value: Any, limit: int) -> tuple[str, str] | None:
    """``(problem, hint)``: what makes ``value`` unfit to check, or ``None``.

    Either more than ``limit`` values with every alias expanded (a shared or
    self-containing list or mapping counted each time it is reached), or an integer
    wider than 64 bits (no Kubernetes field holds one: the API's integers are int32 and
    int64, and Python cannot print one of more than 4300 digits). Iterative, and stops
    at the limit: any expansion is measured safely."""
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > limit:
            return (
                f"its YAML aliases expand to more than {limit} values "
                "(an alias bomb: a few kilobytes would take hours to check)",
                "Write the manifests out without anchors (kubectl get -o yaml does).",
            )
        if isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and item.bit_length() > _MAX_INTEGER_BITS:
            return (
                f"it holds an integer of {item.bit_length()} bits; no Kubernetes field "
                f"holds more than {_MAX_INTEGER_BITS}",
                _LONG_NUMBER_HINT,
            )
    return None


def parse_manifests(text: str, *, source: str) -> list[ManifestDocument]:
    """The Kubernetes objects in one YAML stream (``List`` objects expanded).

    Raises:
        DeploymentManifestError: not YAML; a document that is not a mapping; YAML
            aliases that expand to more values than the text has bytes (at least
            100 000: PyYAML shares an aliased node, but every walk over it repeats it);
            an integer wider than 64 bits, or one PyYAML cannot read (a decimal one of
            more than 4300 digits, Python's limit); nesting too deep to parse.
    """
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise DeploymentManifestError(f"{source} is not valid YAML{where}") from exc
    except ValueError as exc:  # int() of a decimal integer over Python's digit limit
        raise DeploymentManifestError(
            f"{source} holds a value YAML's reader cannot convert (such as a decimal "
            "integer of more than 4300 digits, Python's limit)",
            hint=_LONG_NUMBER_HINT,
        ) from exc
    except RecursionError as exc:  # the composer nests a frame per level
        raise DeploymentManifestError(f"{source} nests too deep to parse") from exc
    limit = max(_MIN_EXPANDED_VALUES, len(text))
    found = _first_problem(documents, limit)
    if found is not None:
        problem, hint = found
        raise DeploymentManifestError(f"{source}: {problem}", hint=hint)
    parsed: list[ManifestDocument] = []
    for index, document in enumerate(documents, start=1):
        if document is None:
            continue
        if not isinstance(document, Mapping):
            raise DeploymentManifestError(f"{source} document {index} is not a Kubernetes object")
        items = document.get("items") if document.get("kind") == "List" else [document]
        if not isinstance(items, list):
            raise DeploymentManifestError(f"{source} document {index}: List without items")
        for item in items:
            if isinstance(item, Mapping):
                parsed.append(ManifestDocument(f"{source}#{index}", _without_secret_data(item)))
    return parsed


def load_manifests(paths: Sequence[Path]) -> tuple[list[ManifestDocument], list[SourceFile]]:
    """Read and parse manifest files (each at most 16 MiB, UTF-8 YAML).

    Raises:
        InputError: a file does not exist or cannot be read.
        DeploymentManifestError: a file is not UTF-8 YAML of Kubernetes objects.
    """
    documents: list[ManifestDocument] = []
    sources: list[SourceFile] = []
    for path in paths:
        data = read_limited(path, what="manifest", max_bytes=_MAX_MANIFEST_BYTES)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DeploymentManifestError(f"manifest {path} is not UTF-8") from exc
        documents.extend(parse_manifests(text, source=str(path)))
        sources.append(SourceFile(str(path), len(data), hashlib.sha256(data).hexdigest()))
    return documents, sources


_POD_SPEC_PATHS: Final[Mapping[str, tuple[str, ...]]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def _dig(value: Any, path: Sequence[str]) -> Any:
    for part in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def workloads(documents: Sequence[ManifestDocument]) -> Iterator[Workload]:
    """Every container (and init container) of every workload in the documents."""
    for document in documents:
        kind = document.body.get("kind")
        path = _POD_SPEC_PATHS.get(kind) if isinstance(kind, str) else None
        if path is None:
            continue
        name = _dig(document.body, ("metadata", "name"))
        pod = _dig(document.body, path)
        if not isinstance(pod, Mapping):
            continue
        for group in ("initContainers", "containers"):
            containers = pod.get(group)
            if not isinstance(containers, list):
                continue
            for container in containers:
                if not isinstance(container, Mapping):
                    continue
                env = container.get("env")
                env_from = container.get("envFrom")
                yield Workload(
                    kind=str(kind),
                    name=str(name),
                    container=str(container.get("name")),
                    env=[e for e in env if isinstance(e, Mapping)] if isinstance(env, list) else [],
                    env_from=[e for e in env_from if isinstance(e, Mapping)]
                    if isinstance(env_from, list)
                    else [],
                    source=document.source,
                )


def _config_maps(documents: Sequence[ManifestDocument]) -> dict[str, Mapping[str, Any]]:
    """ConfigMap name -> its ``data`` (not secret, so a configMapKeyRef can be resolved)."""
    maps: dict[str, Mapping[str, Any]] = {}
    for document in documents:
        if document.body.get("kind") == "ConfigMap":
            name = _dig(document.body, ("metadata", "name"))
            data = document.body.get("data")
            if isinstance(name, str) and isinstance(data, Mapping):
                maps[name] = data
    return maps


class _Findings:
    def __init__(self) -> None:
        self.reasons: list[Reason] = []
        self.blockers: list[str] = []

    def ok(self, code: str, field: str, observed: Any, message: str) -> None:
        self.reasons.append(Reason(code, field, observed, True, message))

    def fail(
        self, blocker: str, code: str, field: str, observed: Any, present: bool, message: str
    ) -> None:
        self.reasons.append(Reason(code, field, observed, present, message))
        self.blockers.append(blocker)


def _env_entry(workload: Workload, name: str) -> Mapping[str, Any] | None:
    return next((entry for entry in workload.env if entry.get("name") == name), None)


def _env_from_note(workload: Workload) -> str:
    refs = [
        f"{kind} {quote(_dig(source, (kind, 'name')))}"
        for source in workload.env_from
        for kind in ("secretRef", "configMapRef")
        if isinstance(source.get(kind), Mapping)
    ]
    if not refs:
        return ""
    return (
        f"; it may come from envFrom ({', '.join(refs)}), but that cannot be shown "
        "without reading the referenced object"
    )


def _check_env(findings: _Findings, workload: Workload, requirement: EnvRequirement) -> None:
    field = f"{workload.label}: env {requirement.name}"
    entry = _env_entry(workload, requirement.name)
    credential = requirement.secret is not None
    blocker = "credential" if credential else "runner"
    if entry is None:
        findings.fail(
            blocker,
            "env-missing",
            field,
            None,
            False,
            f"{requirement.name} is not declared{_env_from_note(workload)}",
        )
        return
    value_from = entry.get("valueFrom")
    ref = value_from.get("secretKeyRef") if isinstance(value_from, Mapping) else None
    if credential:
        if "value" in entry:
            # Never quoted: a literal where a secret ref belongs may be the secret itself.
            findings.fail(
                "credential",
                "secret-as-literal",
                field,
                "<literal value>",
                True,
                f"{requirement.name} must come from secretKeyRef, not a literal value",
            )
            return
        if not isinstance(ref, Mapping):
            findings.fail(
                "credential",
                "secret-ref-missing",
                field,
                None,
                False,
                f"{requirement.name} has no valueFrom.secretKeyRef",
            )
            return
        observed = f"{quote(ref.get('name'))}/{quote(ref.get('key'))}"
        if ref.get("name") != requirement.secret or ref.get("key") != requirement.key:
            findings.fail(
                "credential",
                "secret-ref-wrong",
                field,
                observed,
                True,
                f"secretKeyRef must name {quote(requirement.secret)}/{quote(requirement.key)}",
            )
            return
        if ref.get("optional") is True:
            findings.fail(
                "credential",
                "secret-ref-optional",
                field,
                observed,
                True,
                "the secretKeyRef is optional: the pod starts without the credential",
            )
            return
        findings.ok("secret-ref-declared", field, observed, "declared from the expected Secret key")
        return
    if requirement.value is not None:
        value = entry.get("value")
        if value != requirement.value:
            findings.fail(
                "runner",
                "env-value-wrong",
                field,
                quote(value) if isinstance(value, str) else None,
                "value" in entry,
                f"{requirement.name} must be {quote(requirement.value)}",
            )
            return
    findings.ok("env-declared", field, quote(entry.get("value")), f"{requirement.name} is declared")


def _base_url_value(
    entry: Mapping[str, Any], config_maps: Mapping[str, Mapping[str, Any]]
) -> tuple[str | None, str]:
    """``(value, where)``: a literal, or a configMapKeyRef resolved in the files."""
    if isinstance(entry.get("value"), str):
        return entry["value"], "value"
    ref = _dig(entry, ("valueFrom", "configMapKeyRef"))
    if isinstance(ref, Mapping):
        data = config_maps.get(str(ref.get("name")), {})
        value = data.get(str(ref.get("key")))
        return (value if isinstance(value, str) else None), "configMapKeyRef"
    if _dig(entry, ("valueFrom", "secretKeyRef")) is not None:
        return None, "secretKeyRef"
    return None, "none"


def _check_base_url(
    findings: _Findings,
    workload: Workload,
    spec: ContractSpec,
    config_maps: Mapping[str, Mapping[str, Any]],
) -> None:
    rule = spec.base_url
    assert rule is not None
    field = f"{workload.label}: env {rule.env}"
    entry = _env_entry(workload, rule.env)
    if entry is None:
        findings.fail(
            "transport",
            "base-url-missing",
            field,
            None,
            False,
            f"the provider base URL {rule.env} is not declared{_env_from_note(workload)}",
        )
        return
    value, where = _base_url_value(entry, config_maps)
    if value is None:
        findings.fail(
            "transport",
            "base-url-unverifiable",
            field,
            f"<{where}>",
            True,
            f"{rule.env} is not a literal nor a ConfigMap key in these files; it cannot be checked",
        )
        return
    shown = quote(safe_url(value))
    if rule.expected is not None and value.rstrip("/") != rule.expected.rstrip("/"):
        findings.fail(
            "transport",
            "base-url-wrong",
            field,
            shown,
            True,
            f"{rule.env} must be {quote(safe_url(rule.expected))}",
        )
        return
    try:
        host = urlsplit(value).hostname
    except ValueError:
        host = None
    if host is None:
        findings.fail("transport", "base-url-invalid", field, shown, True, "not a URL with a host")
        return
    if rule.proxy_required and matches_host(host, rule.public_hosts):
        findings.fail(
            "transport",
            "base-url-public-host",
            field,
            shown,
            True,
            f"a proxy is required, but the base URL names the public provider host {quote(host)}",
        )
        return
    findings.ok("base-url-declared", field, shown, "the provider base URL follows the contract")


def check_contract(
    documents: Sequence[ManifestDocument],
    spec: ContractSpec,
    *,
    environment: str,
    endpoint: str | None = None,
) -> ReadinessVerdict:
    """Check the documents against ``spec``; the verdict's level is ``SOURCE``.

    ``passed`` when every selected container satisfies every requirement. ``blocker``
    is the first failed requirement's class: ``credential`` (a secret reference),
    ``transport`` (the base URL), ``runner`` (another env name or value). Each reason
    names the workload, container and env var.

    Raises:
        UsageError: ``spec`` requires nothing (no env, no base URL).
    """
    if spec.empty:
        raise UsageError(
            "the contract requires nothing to be checked",
            hint="Configure environments.NAME.contract, or give --require-env / "
            "--require-secret-ref / --base-url-env.",
        )
    findings = _Findings()
    selected = [
        workload
        for workload in workloads(documents)
        if (not spec.workloads or workload.name in spec.workloads)
        and (not spec.containers or workload.container in spec.containers)
    ]
    if not selected:
        wanted = ", ".join(spec.workloads + spec.containers) or "any workload"
        findings.fail(
            "runner",
            "workload-missing",
            "manifests",
            quote(wanted),
            False,
            "no workload container in the manifests matches the contract",
        )
    config_maps = _config_maps(documents)
    for workload in selected:
        for requirement in spec.env:
            _check_env(findings, workload, requirement)
        if spec.base_url is not None:
            _check_base_url(findings, workload, spec, config_maps)
    passed = not findings.blockers
    return ReadinessVerdict(
        environment=environment,
        endpoint=endpoint,
        level="SOURCE",
        blocker=None if passed else findings.blockers[0],  # type: ignore[arg-type]
        capability=None,
        passed=passed,
        agent_runner_gate=False,
        rule="deployment-contract",
        reasons=tuple(findings.reasons),
    )
