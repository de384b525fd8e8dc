"""The readiness configuration: the policy the decision table applies, probe settings,
environments and deployment contracts. Environment-specific values (addresses, secret
names, hosts) live here, never in code.

A configuration file is TOML (``.toml``) or JSON (``.json``) of the shape documented in
``docs/readiness.md``; every member is optional and unknown members are errors (a
misspelt key would otherwise silently fall back to a default). Parsing is pure
(:func:`parse_config`); :func:`load_config` reads the file.
"""

from __future__ import annotations

import hashlib
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final

from agc._core import json as strict_json
from agc._core.canonical import canonical_json
from agc._core.fs import read_limited
from agc._core.json import exceeds_depth
from agc.errors import ReadinessConfigError
from agc.readiness._urls import safe_url

__all__ = [
    "DEFAULT_PUBLIC_PROVIDER_HOSTS",
    "BaseUrlRule",
    "ContractSpec",
    "EnvRequirement",
    "EnvironmentConfig",
    "ProbeSettings",
    "ReadinessConfig",
    "ReadinessPolicy",
    "load_config",
    "parse_config",
    "policy_digest",
]

_MAX_CONFIG_BYTES: Final = 1024 * 1024
_MAX_CONFIG_DEPTH: Final = 32  # the documented shape nests 4 deep

DEFAULT_PUBLIC_PROVIDER_HOSTS: Final[tuple[str, ...]] = (
    "api.openai.com",
    "api.anthropic.com",
    "generativelanguage.googleapis.com",
)
"""Public model-provider API hosts (each provider's documented base URL) that a
deployment behind a required proxy must not name directly."""


@dataclass(frozen=True)
class ReadinessPolicy:
    """The parameters of the decision table.

    Attributes:
        provider_key_env: env names of the provider credential; ``error.missingEnv``
            naming one of them is ``BLOCKED/credential`` (OpenAI's documented
            ``OPENAI_API_KEY`` by default).
        full_agent_providers: providers whose completed reply is a full agent session
            (the only ones that can satisfy the agent-runner gate).
        read_only_providers: providers of the controlled read-only session registry.
        text_only_providers: text-only fallback providers (never the agent-runner gate).
        hardware_providers: providers of the registered hardware capability route.
        declared_endpoints: environment name -> its declared live chat endpoint; an
            answer from another endpoint for that environment is never ``LIVE``.
    """

    provider_key_env: tuple[str, ...] = ("OPENAI_API_KEY",)
    full_agent_providers: tuple[str, ...] = ("codex-stdio",)
    read_only_providers: tuple[str, ...] = ("codex-readonly-runner",)
    text_only_providers: tuple[str, ...] = ("openai-responses-fallback",)
    hardware_providers: tuple[str, ...] = ("hwlab-hardware-capability",)
    declared_endpoints: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider_key_env": list(self.provider_key_env),
            "full_agent_providers": list(self.full_agent_providers),
            "read_only_providers": list(self.read_only_providers),
            "text_only_providers": list(self.text_only_providers),
            "hardware_providers": list(self.hardware_providers),
            "declared_endpoints": dict(sorted(self.declared_endpoints.items())),
        }


@dataclass(frozen=True)
class ProbeSettings:
    """How ``probe`` asks and waits. Times in seconds, sizes in bytes.

    Attributes:
        chat_path: the chat route under the base URL.
        message: the one minimal chat message a live probe sends.
        idle_timeout_s: fail when no new trace event arrived and ``waitingFor`` did not
            change for this long (from the start of the probe until the first progress);
            no wait of the probe, a ``Retry-After`` included, goes past it.
        request_timeout_s: connect/read timeout of one HTTP request.
        backoff_initial_s, backoff_max_s: capped exponential backoff between polls
            (doubling from the first, never above the cap, with jitter).
        max_retry_after_s: the longest ``Retry-After`` honoured; longer ones are cut.
        submit_attempts: tries of the submit when it is refused before it was taken
            (connection refused, 408/425/429/503 without a structured answer).
        max_body_bytes: the largest body read; a larger one counts as unusable.
        max_wait_s: the longest the whole probe may take (600 s by default): no wait, a
            ``Retry-After`` included, and no request goes past it.
        auth_env: name of an env var whose value is sent as a bearer token (the value
            is never printed or stored), or ``None``.
    """

    chat_path: str = "/v1/agent/chat"
    message: str = "Readiness probe: reply with the single word ready."
    idle_timeout_s: float = 120.0
    request_timeout_s: float = 10.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 15.0
    max_retry_after_s: float = 300.0
    submit_attempts: int = 3
    max_body_bytes: int = 4 * 1024 * 1024
    max_wait_s: float = 600.0
    auth_env: str | None = None


@dataclass(frozen=True)
class EnvRequirement:
    """One env var a deployment must declare.

    Attributes:
        name: the env var's name.
        value: the literal value it must have, or ``None`` (any, or from a ref).
        secret: the Secret a ``secretKeyRef`` must name, or ``None``.
        key: the key in that Secret the ``secretKeyRef`` must name, or ``None``.
    """

    name: str
    value: str | None = None
    secret: str | None = None
    key: str | None = None


@dataclass(frozen=True)
class BaseUrlRule:
    """The provider base-URL contract.

    Attributes:
        env: the env var holding the base URL.
        expected: the exact value it must have, or ``None``.
        proxy_required: the base URL must go through the controlled egress/proxy: it
            must not name a public provider host.
        public_hosts: the public provider hosts (sub-domains included).
    """

    env: str
    expected: str | None = None
    proxy_required: bool = False
    public_hosts: tuple[str, ...] = DEFAULT_PUBLIC_PROVIDER_HOSTS


@dataclass(frozen=True)
class ContractSpec:
    """What ``agc readiness contract`` checks in deployment manifests.

    Attributes:
        workloads: names of the workloads (Deployment, StatefulSet …) to check; empty
            means every workload in the files.
        containers: names of the containers to check; empty means every container.
        env: the env vars the container must declare.
        base_url: the provider base-URL contract, or ``None``.
    """

    workloads: tuple[str, ...] = ()
    containers: tuple[str, ...] = ()
    env: tuple[EnvRequirement, ...] = ()
    base_url: BaseUrlRule | None = None

    @property
    def empty(self) -> bool:
        return not self.env and self.base_url is None


@dataclass(frozen=True)
class EnvironmentConfig:
    """One environment: its declared endpoint, the probe's default URL, its contract."""

    name: str
    endpoint: str | None = None
    url: str | None = None
    contract: ContractSpec = field(default_factory=ContractSpec)


@dataclass(frozen=True)
class ReadinessConfig:
    """A whole configuration file."""

    policy: ReadinessPolicy = field(default_factory=ReadinessPolicy)
    probe: ProbeSettings = field(default_factory=ProbeSettings)
    environments: Mapping[str, EnvironmentConfig] = field(default_factory=dict)
    verifier_id: str = "pkg:pypi/agc"
    policy_uri: str = "urn:agc:readiness:decision-table:v1"

    def environment(self, name: str) -> EnvironmentConfig:
        """The named environment's configuration (an empty one when not configured)."""
        return self.environments.get(name) or EnvironmentConfig(name=name)

    def declaring(self, environment: str, endpoint: str | None) -> ReadinessConfig:
        """This configuration with ``endpoint`` declared as the live chat endpoint of
        ``environment`` (the command line's ``--live-endpoint``); itself when ``None``.

        Only a declared endpoint's answer can be ``LIVE`` evidence: the declaration is
        the caller's statement of which route *is* the environment's live one.

        Raises:
            ReadinessConfigError: ``endpoint`` is empty, or the configuration already
                declares another endpoint for ``environment``.
        """
        if endpoint is None:
            return self
        if not endpoint.strip():
            raise ReadinessConfigError("--live-endpoint must not be empty")
        current = self.environment(environment)
        if current.endpoint is not None and current.endpoint.rstrip("/") != endpoint.rstrip("/"):
            raise ReadinessConfigError(
                f"--live-endpoint {safe_url(endpoint)!r} differs from "
                f"environments.{environment}.endpoint {safe_url(current.endpoint)!r} of the "
                "configuration",
                hint="Give one declaration of the live endpoint: the flag or the file.",
            )
        environments = {
            **self.environments,
            environment: replace(current, endpoint=current.endpoint or endpoint),
        }
        declared = {**self.policy.declared_endpoints, environment: current.endpoint or endpoint}
        return replace(
            self,
            environments=environments,
            policy=replace(self.policy, declared_endpoints=declared),
        )


def load_config(path: Path | None) -> ReadinessConfig:
    """Read a configuration file (``.json`` as JSON, anything else as TOML);
    ``None`` gives the defaults.

    Raises:
        InputError: the file does not exist or cannot be read.
        ReadinessConfigError: not TOML/JSON, or not of the documented shape.
    """
    if path is None:
        return ReadinessConfig()
    data = read_limited(path, what="readiness configuration", max_bytes=_MAX_CONFIG_BYTES)
    try:
        text = data.decode("utf-8")
        raw = strict_json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:  # TOMLDecodeError is a ValueError
        raise ReadinessConfigError(
            f"readiness configuration {path} cannot be parsed: {exc}"
        ) from exc
    except RecursionError as exc:  # tomllib parses nested arrays by recursion
        raise ReadinessConfigError(
            f"readiness configuration {path} cannot be parsed: nested too deep"
        ) from exc
    if exceeds_depth(raw, _MAX_CONFIG_DEPTH):
        raise ReadinessConfigError(
            f"readiness configuration {path} nests deeper than {_MAX_CONFIG_DEPTH} levels"
        )
    return parse_config(raw, source=str(path))


def parse_config(raw: Any, *, source: str = "configuration") -> ReadinessConfig:
    """Build a :class:`ReadinessConfig` from parsed TOML/JSON (pure).

    Raises:
        ReadinessConfigError: the message names the member and the problem.
    """
    top = _table(raw, source)
    _only(top, {"policy", "probe", "environments", "verifier_id", "policy_uri"}, source)
    environments: dict[str, EnvironmentConfig] = {}
    for name, value in _table(top.get("environments", {}), f"{source}: environments").items():
        environments[name] = _environment(name, value, f"{source}: environments.{name}")
    declared = {name: env.endpoint for name, env in environments.items() if env.endpoint}
    policy = _policy(top.get("policy", {}), f"{source}: policy", declared)
    return ReadinessConfig(
        policy=policy,
        probe=_probe(top.get("probe", {}), f"{source}: probe"),
        environments=environments,
        verifier_id=_text(top, "verifier_id", source, default="pkg:pypi/agc"),
        policy_uri=_text(top, "policy_uri", source, default="urn:agc:readiness:decision-table:v1"),
    )


def policy_digest(policy: ReadinessPolicy, table: list[dict[str, Any]]) -> str:
    """SHA-256 hex of the RFC 8785 canonical JSON of the policy and the decision table:
    it changes when a parameter or a row changes."""
    document: dict[str, Any] = {"policy": policy.to_dict(), "decision_table": table}
    canonical: bytes = canonical_json(document)
    return hashlib.sha256(canonical).hexdigest()


def _policy(raw: Any, source: str, declared: Mapping[str, str]) -> ReadinessPolicy:
    table = _table(raw, source)
    names = {f.name for f in fields(ReadinessPolicy)} - {"declared_endpoints"}
    _only(table, names, source)
    values = {name: _names(table, name, source) for name in names if name in table}
    return ReadinessPolicy(**values, declared_endpoints=dict(declared))


def _probe(raw: Any, source: str) -> ProbeSettings:
    table = _table(raw, source)
    defaults = ProbeSettings()
    _only(table, {f.name for f in fields(ProbeSettings)}, source)
    values: dict[str, Any] = {}
    for name in ("chat_path", "message", "auth_env"):
        if name in table:
            values[name] = _text(table, name, source)
    if "chat_path" in values and not values["chat_path"].startswith("/"):
        raise ReadinessConfigError(f"{source}: chat_path must start with '/'")
    for name in (
        "idle_timeout_s",
        "request_timeout_s",
        "backoff_initial_s",
        "backoff_max_s",
        "max_retry_after_s",
        "max_wait_s",
    ):
        if name in table:
            values[name] = _seconds(table[name], f"{source}: {name}")
    for name in ("submit_attempts", "max_body_bytes"):
        if name in table:
            value = table[name]
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ReadinessConfigError(f"{source}: {name} must be a positive integer")
            values[name] = value
    settings = ProbeSettings(**{**defaults.__dict__, **values})
    if settings.backoff_max_s < settings.backoff_initial_s:
        raise ReadinessConfigError(f"{source}: backoff_max_s is below backoff_initial_s")
    return settings


def _environment(name: str, raw: Any, source: str) -> EnvironmentConfig:
    table = _table(raw, source)
    _only(table, {"endpoint", "url", "contract"}, source)
    return EnvironmentConfig(
        name=name,
        endpoint=_text(table, "endpoint", source) if "endpoint" in table else None,
        url=_text(table, "url", source) if "url" in table else None,
        contract=_contract(table.get("contract", {}), f"{source}.contract"),
    )


def _contract(raw: Any, source: str) -> ContractSpec:
    table = _table(raw, source)
    _only(table, {"workloads", "containers", "env", "base_url"}, source)
    env_list = table.get("env", [])
    if not isinstance(env_list, list):
        raise ReadinessConfigError(f"{source}: env must be a list of tables")
    requirements = []
    for index, item in enumerate(env_list):
        where = f"{source}.env[{index}]"
        entry = _table(item, where)
        _only(entry, {"name", "value", "secret", "key"}, where)
        secret = _text(entry, "secret", where) if "secret" in entry else None
        key = _text(entry, "key", where) if "key" in entry else None
        value = _text(entry, "value", where) if "value" in entry else None
        if (secret is None) != (key is None):
            raise ReadinessConfigError(f"{where}: give both secret and key, or neither")
        if value is not None and secret is not None:
            raise ReadinessConfigError(f"{where}: a value and a secret ref exclude each other")
        requirements.append(
            EnvRequirement(name=_text(entry, "name", where), value=value, secret=secret, key=key)
        )
    base_url = None
    if "base_url" in table:
        where = f"{source}.base_url"
        entry = _table(table["base_url"], where)
        _only(entry, {"env", "expected", "proxy_required", "public_hosts"}, where)
        proxy = entry.get("proxy_required", False)
        if not isinstance(proxy, bool):
            raise ReadinessConfigError(f"{where}: proxy_required must be true or false")
        base_url = BaseUrlRule(
            env=_text(entry, "env", where),
            expected=_text(entry, "expected", where) if "expected" in entry else None,
            proxy_required=proxy,
            public_hosts=_names(entry, "public_hosts", where)
            if "public_hosts" in entry
            else DEFAULT_PUBLIC_PROVIDER_HOSTS,
        )
    return ContractSpec(
        workloads=_names(table, "workloads", source) if "workloads" in table else (),
        containers=_names(table, "containers", source) if "containers" in table else (),
        env=tuple(requirements),
        base_url=base_url,
    )


def _table(raw: Any, source: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise ReadinessConfigError(f"{source} must be a table (object)")
    return raw


def _only(table: Mapping[str, Any], allowed: set[str], source: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ReadinessConfigError(
            f"{source} has unknown member(s) {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(sorted(allowed))}"
        )


def _text(table: Mapping[str, Any], name: str, source: str, *, default: str | None = None) -> str:
    value = table.get(name, default)
    if not isinstance(value, str) or not value:
        raise ReadinessConfigError(f"{source}: {name} must be a non-empty string")
    return value


def _names(table: Mapping[str, Any], name: str, source: str) -> tuple[str, ...]:
    value = table.get(name)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ReadinessConfigError(f"{source}: {name} must be a list of non-empty strings")
    return tuple(value)


def _seconds(value: Any, source: str) -> float:
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ReadinessConfigError(f"{source} must be a positive number of seconds")
    return float(value)
