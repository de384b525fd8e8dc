"""MCP server configurations: reading the published forms, writing what Codex reads.

Inputs (every server becomes its own item):

* a Codex ``config.toml``: each ``[mcp_servers.<name>]`` table (parsed with ``tomllib``);
* a ``.mcp.json``: the wrapped form ``{"mcpServers": {<name>: {...}}}`` or the bare map
  ``{<name>: {...}}`` that plugins use; entries whose value is not an object (a
  ``"_comment"`` string) are not servers;
* a plugin manifest's ``mcpServers``: a ``./`` path to such a file, or the object inline.

Each server is reduced to the fields Codex reads (codex-rs ``RawMcpServerConfig``):
stdio ``command``, ``args``, ``env``, ``env_vars``, ``cwd``; streamable HTTP ``url``,
``bearer_token_env_var``, ``http_headers``, ``env_http_headers``; both
``startup_timeout_sec``/``startup_timeout_ms``, ``tool_timeout_sec``, ``enabled_tools``
and ``disabled_tools``. Codex rejects unknown fields and HTTP fields on a stdio server
(and the reverse), so anything else is left out with a note. From the ``.mcp.json`` form
(Claude Code's), ``headers`` is ``http_headers``, and the ``${VAR}`` references Claude
Code expands that Codex has a native field for are converted: ``"K": "${K}"`` in
``env`` forwards ``K`` (``env_vars``), ``"Authorization": "Bearer ${V}"`` is
``bearer_token_env_var = V`` and ``"H": "${V}"`` is ``env_http_headers``. A server of
the SSE transport (Codex has none) is imported with ``lastError``.

Literal values (:func:`literal_values`): any ``env`` or ``http_headers`` value that is
written out, rather than a reference, may be a secret (an API key, ``Authorization:
Bearer …``). The two clients express references differently. Claude Code expands
``${VAR}`` and ``${VAR:-default}`` in ``command``, ``args``, ``env``, ``url`` and
``headers`` of a ``.mcp.json`` (code.claude.com/docs/en/mcp, "Environment variable
expansion in .mcp.json"). Codex expands nothing: it passes ``env`` to the server as
written and sends ``http_headers`` as written, and takes values from the environment
it was launched in only through names: ``env_vars`` (each variable forwarded under its
own name), ``env_http_headers`` (header -> variable) and ``bearer_token_env_var``
(codex-rs ``rmcp-client/src/utils.rs``: ``create_env_for_mcp_server`` chains the
``env`` map unchanged after the ``env_vars`` it reads with ``env::var_os``;
``build_default_headers`` reads ``env_http_headers`` with ``env::var``). So a value
that is exactly ``${NAME}`` (Codex would pass the text itself), or a path under
``${CLAUDE_PLUGIN_ROOT}`` (expanded at projection), holds no secret; every other value,
``${VAR:-default}`` included, is literal. :func:`reference_literals` rewrites literals
into Codex's reference fields, so that no value is kept (``agc ext import --env-ref``).

Projection (:func:`project_server`) never forwards the client's own secrets: an
``env_vars``, ``bearer_token_env_var`` or ``env_http_headers`` entry that names one
(:class:`EnvBlocklist`) is dropped and reported; the server's own static ``env`` and
``http_headers`` are kept.
"""

from __future__ import annotations

import copy
import ipaddress
import math
import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from agc._core.redact import credential_variable
from agc.errors import ExtensionValueError
from agc.extensions._documents import DocumentTooDeepError, load_json, load_toml

__all__ = [
    "DEFAULT_BLOCKED_ENV",
    "EnvBlocklist",
    "Forward",
    "LiteralValue",
    "ProjectedServer",
    "RawServer",
    "ServerSpec",
    "credential_warnings",
    "forwards",
    "is_remote",
    "literal_values",
    "normalize_server",
    "own_env_credentials",
    "project_server",
    "read_codex_config",
    "read_mcp_json",
    "reference_literals",
    "reference_name",
    "referenced_variables",
    "servers_from_map",
    "stays_inside",
]

DEFAULT_BLOCKED_ENV: Final[tuple[str, ...]] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "AGC_*",
    "CODEX_*",
)
"""Environment variables of the client never forwarded to a third-party server: the
provider keys, and everything of agc (``AGC_*``) and Codex (``CODEX_*``)."""

PLUGIN_ROOT_VARIABLE: Final = "${CLAUDE_PLUGIN_ROOT}"

_STDIO_FIELDS: Final = ("command", "args", "env", "env_vars", "cwd")
_HTTP_FIELDS: Final = ("url", "bearer_token_env_var", "http_headers", "env_http_headers")
_SHARED_FIELDS: Final = (
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
)
_SET_BY_AGC: Final = frozenset({"enabled", "required"})
_JSON_ONLY: Final = frozenset({"type", "transport", "headers"})
_VAR_RE: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_BEARER_RE: Final = re.compile(r"(?i:bearer)\s+\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class RawServer:
    """One server entry as published: its key and value (not yet checked)."""

    name: str
    value: Any


@dataclass(frozen=True)
class ServerSpec:
    """A server reduced to the fields Codex reads.

    Attributes:
        config: the fields, JSON-compatible (``command`` or ``url`` decides the
            transport); empty when ``error`` is set and nothing usable was found.
        error: why it cannot be launched (``None`` when it can).
        notes: fields left out or converted, one sentence each.
    """

    config: dict[str, Any]
    error: str | None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class EnvBlocklist:
    """Names of the client's secrets (``NAME`` exact or ``PREFIX*``), ASCII case-insensitive.

    Attributes:
        patterns: the patterns; :data:`DEFAULT_BLOCKED_ENV` plus any configured.
    """

    patterns: tuple[str, ...] = DEFAULT_BLOCKED_ENV

    @classmethod
    def with_extra(cls, extra: Iterable[str]) -> EnvBlocklist:
        return cls(tuple(dict.fromkeys([*DEFAULT_BLOCKED_ENV, *extra])))

    def blocks(self, name: str) -> bool:
        upper = name.upper()
        for pattern in self.patterns:
            wanted = pattern.upper()
            if wanted.endswith("*"):
                if upper.startswith(wanted[:-1]):
                    return True
            elif upper == wanted:
                return True
        return False


# -- reading --------------------------------------------------------------------------


def read_codex_config(data: bytes) -> tuple[list[RawServer], str | None]:
    """Servers of a Codex ``config.toml``: ``(servers, error)``; never raises."""
    try:
        document = load_toml(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return [], f"not UTF-8 ({exc.reason})"
    except DocumentTooDeepError as exc:
        return [], f"not a usable TOML document ({exc})"
    except ValueError as exc:  # tomllib.TOMLDecodeError
        return [], f"not valid TOML ({exc})"
    table = document.get("mcp_servers")
    if table is None:
        return [], None
    if not isinstance(table, dict):
        return [], "`mcp_servers` is not a table"
    return [RawServer(str(name), value) for name, value in table.items()], None


def read_mcp_json(data: bytes) -> tuple[list[RawServer], str | None]:
    """Servers of an ``.mcp.json`` (wrapped or bare map): ``(servers, error)``."""
    try:
        document = load_json(data)
    except UnicodeDecodeError as exc:
        return [], f"not UTF-8 ({exc.reason})"
    except ValueError as exc:
        return [], f"not valid JSON ({exc})"
    if not isinstance(document, dict):
        return [], "not a JSON object"
    return servers_from_map(document)


def servers_from_map(document: Mapping[str, Any]) -> tuple[list[RawServer], str | None]:
    """Servers of a wrapped ``{"mcpServers": {...}}`` or a bare ``{<name>: {...}}`` map.

    Entries whose value is not an object are not servers and are left out. A map that
    is itself one server (``command``/``url`` at the top) is refused as ambiguous.
    """
    wrapped = document.get("mcpServers")
    servers: Mapping[str, Any]
    if isinstance(wrapped, dict):
        servers = wrapped
    elif "mcpServers" in document:
        return [], "`mcpServers` is not an object"
    elif isinstance(document.get("command"), str) or isinstance(document.get("url"), str):
        return [], "holds a single server's fields, not a map of named servers"
    else:
        servers = document
    return [
        RawServer(str(name), value) for name, value in servers.items() if isinstance(value, dict)
    ], None


# -- checking -------------------------------------------------------------------------


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    )


MAX_NUMBER: Final = 2**53
"""Largest timeout agc keeps: the largest integer every JSON reader keeps exactly
(RFC 7493 section 2.2, I-JSON), which the fingerprint's canonical JSON (RFC 8785)
requires, and far below the seconds Codex's ``Duration`` holds."""


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= MAX_NUMBER
    )


_NUMBER_FIELDS: Final = frozenset({"startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec"})


def _beyond_range(value: Any) -> bool:
    """A number (not a bool) whose size is past :data:`MAX_NUMBER`, or not finite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return True
    return abs(value) > MAX_NUMBER


def _number_text(value: int | float) -> str:
    """A short text for a number past the range (never thousands of digits)."""
    if isinstance(value, int):
        return f"an integer of {value.bit_length()} bits"
    return repr(value)


def _is_whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_NUMBER


def _is_env_var_list(value: Any) -> bool:
    if not isinstance(value, list):
        return False
    for item in value:
        if isinstance(item, str):
            continue
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return False
        if set(item) - {"name", "source"} or item.get("source", "local") not in {"local", "remote"}:
            return False
    return True


_CHECKS: Final = {
    "command": lambda v: isinstance(v, str) and bool(v),
    "args": _is_str_list,
    "env": _is_str_map,
    "env_vars": _is_env_var_list,
    "cwd": lambda v: isinstance(v, str) and bool(v),
    "url": lambda v: isinstance(v, str) and bool(v),
    "bearer_token_env_var": lambda v: isinstance(v, str) and bool(v),
    "http_headers": _is_str_map,
    "env_http_headers": _is_str_map,
    "startup_timeout_sec": _is_number,
    "startup_timeout_ms": _is_whole_number,
    "tool_timeout_sec": _is_number,
    "enabled_tools": _is_str_list,
    "disabled_tools": _is_str_list,
}
_SHAPES: Final = {
    "command": "a non-empty string",
    "args": "a list of strings",
    "env": "a map of strings",
    "env_vars": "a list of names (or {name, source} objects)",
    "cwd": "a non-empty string",
    "url": "a non-empty string",
    "bearer_token_env_var": "a non-empty string",
    "http_headers": "a map of strings",
    "env_http_headers": "a map of strings",
    "startup_timeout_sec": "a number of seconds from 0 to 2^53",
    "startup_timeout_ms": "a whole number of milliseconds from 0 to 2^53",
    "tool_timeout_sec": "a number of seconds from 0 to 2^53",
    "enabled_tools": "a list of strings",
    "disabled_tools": "a list of strings",
}


def normalize_server(raw: Any, *, json_form: bool, where: str = "the server") -> ServerSpec:
    """Reduce a published server object to the fields Codex reads. What Codex would
    refuse is the result's ``error``.

    Args:
        raw: the server's value (a dict for a server; anything else is an error).
        json_form: it came from a ``.mcp.json``/plugin (Claude Code's field names and
            ``${VAR}`` references), not from a Codex ``config.toml``.
        where: the file and server, for the error below.

    Raises:
        ExtensionValueError: a timeout Codex would read is a number beyond
            :data:`MAX_NUMBER` (or not finite): agc cannot keep it exactly.
    """
    if not isinstance(raw, dict):
        return ServerSpec({}, "the server entry is not a table/object")
    notes: list[str] = []
    source = {key: value for key, value in raw.items() if value is not None}  # JSON null: absent
    if json_form:
        error = _from_json_form(source, notes)
        if error is not None:
            return ServerSpec({}, error, tuple(notes))
    has_command = "command" in source
    has_url = "url" in source
    if has_command and has_url:
        return ServerSpec({}, "the server has both `command` and `url`", tuple(notes))
    if not has_command and not has_url:
        return ServerSpec(
            {}, "the server has neither `command` (stdio) nor `url` (HTTP)", tuple(notes)
        )
    allowed = (_STDIO_FIELDS if has_command else _HTTP_FIELDS) + _SHARED_FIELDS
    config: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in source.items():
        if key in allowed:
            if key in _NUMBER_FIELDS and _beyond_range(value):
                raise ExtensionValueError(
                    f"{where}: `{key}` is {_number_text(value)}, beyond 2^53, the largest "
                    "number agc keeps (every JSON reader keeps it exactly, RFC 7493)"
                )
            if _CHECKS[key](value):
                config[key] = value
            else:
                problems.append(f"`{key}` must be {_SHAPES[key]}")
        elif key in _SET_BY_AGC:
            continue
        elif key == "bearer_token":
            notes.append(
                "`bearer_token` left out: Codex takes a token only from an environment "
                "variable (`bearer_token_env_var`)"
            )
        elif key in _STDIO_FIELDS + _HTTP_FIELDS:
            transport = "stdio" if has_command else "HTTP"
            notes.append(f"`{key}` left out: Codex does not read it for a {transport} server")
        else:
            notes.append(f"`{key}` left out: Codex does not read it")
    if problems:
        return ServerSpec(config, "; ".join(problems), tuple(notes))
    if json_form:
        notes.extend(_unexpanded_notes(config))
    return ServerSpec(config, None, tuple(notes))


def _from_json_form(source: dict[str, Any], notes: list[str]) -> str | None:
    """Claude Code's ``.mcp.json`` names in place: ``type``, ``headers``, ``${VAR}``."""
    transport = source.pop("type", None)
    if transport is None:
        transport = source.pop("transport", None)
    if transport is not None:
        if not isinstance(transport, str):
            return "`type` is not a string"
        kind = transport.lower()
        if kind == "sse":
            return (
                "the server uses the SSE transport, which Codex does not support "
                "(stdio and streamable HTTP only)"
            )
        if kind not in {"stdio", "http", "streamable-http", "streamable_http", "streamablehttp"}:
            return f"unknown transport {transport!r}"
    headers = source.pop("headers", None)
    if headers is not None:
        if not _is_str_map(headers):
            return "`headers` must be a map of strings"
        static: dict[str, str] = dict(source.get("http_headers") or {})
        from_env: dict[str, str] = dict(source.get("env_http_headers") or {})
        for header, value in headers.items():
            bearer = _BEARER_RE.fullmatch(value.strip())
            whole = _VAR_RE.fullmatch(value.strip())
            if (
                header.lower() == "authorization"
                and bearer
                and "bearer_token_env_var" not in source
            ):
                source["bearer_token_env_var"] = bearer.group(1)
                notes.append(
                    f"header {header} converted to bearer_token_env_var = {bearer.group(1)}"
                )
            elif whole:
                from_env[header] = whole.group(1)
                notes.append(f"header {header} converted to env_http_headers ({whole.group(1)})")
            else:
                static[header] = value
        if static:
            source["http_headers"] = static
        if from_env:
            source["env_http_headers"] = from_env
    env = source.get("env")
    if isinstance(env, dict) and _is_str_map(env):
        forwarded = list(source.get("env_vars") or [])
        kept: dict[str, str] = {}
        for key, value in env.items():
            whole = _VAR_RE.fullmatch(value.strip())
            if whole and whole.group(1) == key:
                forwarded.append(key)
                notes.append(f"env {key} = ${{{key}}} converted to env_vars")
            else:
                kept[key] = value
        source["env"] = kept
        if not kept:
            del source["env"]
        if forwarded:
            source["env_vars"] = forwarded
    return None


def _unexpanded_notes(config: Mapping[str, Any]) -> list[str]:
    texts: list[tuple[str, str]] = []
    if isinstance(config.get("command"), str):
        texts.append(("command", config["command"]))
    texts.extend(("args", arg) for arg in config.get("args", []))
    texts.extend((f"env {key}", value) for key, value in config.get("env", {}).items())
    texts.extend((f"header {key}", value) for key, value in config.get("http_headers", {}).items())
    if isinstance(config.get("url"), str):
        texts.append(("url", config["url"]))
    notes = []
    for where, text in texts:
        names = {match.group(1) for match in _VAR_RE.finditer(text)} - {"CLAUDE_PLUGIN_ROOT"}
        if names:
            notes.append(f"{where} holds ${{...}} text that Codex does not expand; kept as written")
    return notes


def stays_inside(
    config: Mapping[str, Any], config_dir: PurePosixPath, plugin_root: PurePosixPath | None
) -> str | None:
    """Why a stdio server's relative ``cwd`` (or relative ``command`` with a path
    separator, resolved against that ``cwd``) would lead outside the source it came from,
    or ``None``. Paths are resolved as :func:`project_server` resolves them, against the
    configuration's folder (``config_dir``, relative to the source's top) or the plugin
    folder for ``${CLAUDE_PLUGIN_ROOT}``; an absolute path is the user's own choice and
    kept."""
    if "command" not in config:
        return None

    def resolve(base: PurePosixPath, text: str) -> PurePosixPath | None:
        if plugin_root is not None and text.startswith(PLUGIN_ROOT_VARIABLE):
            base, text = plugin_root, text[len(PLUGIN_ROOT_VARIABLE) :].lstrip("/\\")
        if text.startswith(("/", "\\", "$")) or re.match(r"[A-Za-z]:", text):
            return None  # absolute (or a variable Codex does not expand): not ours to place
        joined = posixpath.normpath(posixpath.join(str(base), text.replace("\\", "/")))
        if joined == ".." or joined.startswith("../"):
            raise _EscapeError(text)
        return PurePosixPath(joined)

    try:
        cwd = resolve(config_dir, str(config.get("cwd", ".")))
        command = str(config["command"])
        if cwd is not None and ("/" in command or "\\" in command):
            resolve(cwd, command)
    except _EscapeError as escape:
        return f"{escape.args[0]!r} leads outside the imported source (a '..' too many)"
    return None


class _EscapeError(Exception):
    """A relative path of a server configuration that leaves the source."""


# -- literal values -------------------------------------------------------------------

LiteralField = Literal["env", "http_headers"]
_LITERAL_FIELDS: Final[tuple[LiteralField, ...]] = ("env", "http_headers")
_BEARER_LITERAL_RE: Final = re.compile(r"(?i:bearer)\s+\S+")
_NOT_NAME_RE: Final = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True)
class LiteralValue:
    """An ``env`` or ``http_headers`` entry whose value is written out: possibly a
    secret. Only names: the value is never kept here.

    Attributes:
        field: ``env`` (a variable of a stdio server) or ``http_headers`` (a header).
        key: the variable or header name.
        reference: the environment variable the entry was turned into a reference to
            (:func:`reference_literals`), or ``None`` while the value is kept.
    """

    field: LiteralField
    key: str
    reference: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "key": self.key, "reference": self.reference}


def is_literal(value: str) -> bool:
    """Whether an ``env``/``http_headers`` value may hold a secret (see the module
    docstring): anything but an empty value, exactly ``${NAME}``, or a path under
    ``${CLAUDE_PLUGIN_ROOT}``."""
    text = value.strip()
    if not text or _VAR_RE.fullmatch(text):
        return False
    return not (text == PLUGIN_ROOT_VARIABLE or text.startswith(PLUGIN_ROOT_VARIABLE + "/"))


def literal_values(config: Mapping[str, Any]) -> tuple[LiteralValue, ...]:
    """The literal entries of a checked server's ``env`` and ``http_headers``, in order."""
    found: list[LiteralValue] = []
    for key in _LITERAL_FIELDS:
        entries = config.get(key)
        if isinstance(entries, dict):
            found.extend(
                LiteralValue(key, name)
                for name, value in entries.items()
                if isinstance(value, str) and is_literal(value)
            )
    return tuple(found)


def reference_name(server: str, what: str) -> str:
    """The environment variable a literal header becomes: ``<SERVER>_<WHAT>`` in upper
    case, every run of other characters one ``_`` (``search`` + ``X-Api-Key`` ->
    ``SEARCH_X_API_KEY``), ``MCP_`` in front when it would start with a digit
    (POSIX.1-2017 8.1: names do not begin with a digit)."""
    name = _NOT_NAME_RE.sub("_", f"{server}_{what}").strip("_").upper()
    return f"MCP_{name}" if not name or name[0].isdigit() else name


def referenced_variables(config: Mapping[str, Any]) -> set[str]:
    """The variables of the launching environment a checked server's configuration
    names: ``env_vars``, ``env_http_headers`` values and ``bearer_token_env_var``."""
    names = {
        entry if isinstance(entry, str) else entry.get("name")
        for entry in config.get("env_vars") or []
    }
    names.update((config.get("env_http_headers") or {}).values())
    names.add(config.get("bearer_token_env_var"))
    return {name for name in names if isinstance(name, str)}


def _unused(variable: str, taken: set[str]) -> str:
    """``variable``, or ``<variable>_2``, ``_3`` … the first not in ``taken`` (then taken)."""
    name, number = variable, 1
    while name in taken:
        number += 1
        name = f"{variable}_{number}"
    taken.add(name)
    return name


def reference_literals(
    config: Mapping[str, Any], server: str, taken: set[str] | None = None
) -> tuple[dict[str, Any], tuple[LiteralValue, ...]]:
    """``config`` with every literal value replaced by Codex's reference to a variable
    of the environment that launches it; ``(new config, what was converted)``.

    * ``env`` ``K`` -> ``K`` in ``env_vars`` (Codex forwards ``K`` under its own name);
    * ``http_headers`` ``Authorization: Bearer …`` -> ``bearer_token_env_var =
      <SERVER>_BEARER_TOKEN`` (unless the server already names one);
    * any other header ``H`` -> ``env_http_headers`` ``H = <SERVER>_<H>``
      (:func:`reference_name`).

    A header's variable is never one in ``taken`` (the variables other servers already
    read, updated with those chosen here): ``_2``, ``_3`` … is added, so that a value
    set for one server is never sent to another whose name and header read alike
    (``web`` + ``X-Api-Key`` and ``web-x`` + ``Api-Key``). The values themselves appear
    nowhere in the result.
    """
    taken = set() if taken is None else taken
    result = copy.deepcopy(dict(config))
    converted: list[LiteralValue] = []
    env = result.get("env")
    if isinstance(env, dict):
        forwarded = list(result.get("env_vars") or [])
        known = {entry if isinstance(entry, str) else entry.get("name") for entry in forwarded}
        for key, value in list(env.items()):
            if isinstance(value, str) and is_literal(value):
                del env[key]
                if key not in known:
                    forwarded.append(key)
                    known.add(key)
                converted.append(LiteralValue("env", key, key))
        if not env:
            del result["env"]
        if forwarded:
            result["env_vars"] = forwarded
    headers = result.get("http_headers")
    if isinstance(headers, dict):
        from_env = dict(result.get("env_http_headers") or {})
        for header, value in list(headers.items()):
            if not isinstance(value, str) or not is_literal(value):
                continue
            del headers[header]
            if (
                header.lower() == "authorization"
                and _BEARER_LITERAL_RE.fullmatch(value.strip())
                and "bearer_token_env_var" not in result
            ):
                variable = _unused(reference_name(server, "BEARER_TOKEN"), taken)
                result["bearer_token_env_var"] = variable
            else:
                variable = _unused(reference_name(server, header), taken)
                from_env[header] = variable
            converted.append(LiteralValue("http_headers", header, variable))
        if not headers:
            del result["http_headers"]
        if from_env:
            result["env_http_headers"] = from_env
    return result, tuple(converted)


# -- forwarding -----------------------------------------------------------------------

ForwardVia = Literal["env_vars", "bearer_token_env_var", "env_http_headers"]
_LOOPBACK_HOSTS: Final = frozenset({"localhost", "localhost.", "::1", "0:0:0:0:0:0:0:1"})


@dataclass(frozen=True)
class Forward:
    """One variable of the launching environment a server's configuration names.

    Attributes:
        variable: the variable's name.
        via: the field that names it (``env_vars``: passed to a stdio server's process;
            ``bearer_token_env_var`` / ``env_http_headers``: sent in an HTTP header).
        header: the header it is sent in (``Authorization`` for a bearer token), or
            ``None`` for ``env_vars``.
        credential: the kind of credential the name says it holds
            (:func:`agc._core.redact.credential_variable`), or ``None``.
        blocked: one of the client's own secrets (:class:`EnvBlocklist`): never given.
    """

    variable: str
    via: ForwardVia
    header: str | None
    credential: str | None
    blocked: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "variable": self.variable,
            "via": self.via,
            "header": self.header,
            "credential": self.credential,
            "blocked": self.blocked,
        }


def own_env_credentials(config: Mapping[str, Any]) -> dict[str, str | None]:
    """Each name of a server configuration's own ``env`` map (values set in the
    configuration itself) with the kind of credential its name says it holds
    (:func:`agc._core.redact.credential_variable`), or ``None``; names only, sorted."""
    env = config.get("env")
    names = sorted(env) if isinstance(env, Mapping) else []
    return {str(name): credential_variable(str(name)) for name in names}


_CREDENTIAL_HEADERS: Final = frozenset({"authorization", "proxy-authorization", "cookie"})
"""Headers whose value is a credential whatever it looks like (RFC 9110 section 11.6.2
and 11.7.2; RFC 6265 section 5.4)."""


def own_header_credentials(config: Mapping[str, Any]) -> dict[str, str | None]:
    """Each name of a server configuration's own ``http_headers`` map (values set in the
    configuration itself) with the kind of credential it holds (``authorization`` for
    the headers that carry one by definition, else what its name says:
    :func:`agc._core.redact.credential_variable`), or ``None``; names only, sorted."""
    headers = config.get("http_headers")
    names = sorted(headers) if isinstance(headers, Mapping) else []
    return {
        str(name): "authorization"
        if str(name).lower() in _CREDENTIAL_HEADERS
        else credential_variable(str(name))
        for name in names
    }


def forwards(config: Mapping[str, Any], blocklist: EnvBlocklist) -> tuple[Forward, ...]:
    """Every variable a checked server's configuration names, in configuration order.

    Only what the configuration names explicitly is ever forwarded: Codex passes a stdio
    server the ``env_vars`` it lists (beside its own fixed set: ``HOME``, ``PATH`` …)
    and sends an HTTP server only the headers of ``bearer_token_env_var`` and
    ``env_http_headers`` (codex-rs ``rmcp-client/src/utils.rs``).
    """
    named: list[tuple[str, ForwardVia, str | None]] = []
    for entry in config.get("env_vars") or []:
        name = entry if isinstance(entry, str) else entry.get("name")
        if isinstance(name, str):
            named.append((name, "env_vars", None))
    token = config.get("bearer_token_env_var")
    if isinstance(token, str):
        named.append((token, "bearer_token_env_var", "Authorization"))
    for header, name in (config.get("env_http_headers") or {}).items():
        if isinstance(name, str):
            named.append((name, "env_http_headers", str(header)))
    return tuple(
        Forward(name, via, header, credential_variable(name), blocklist.blocks(name))
        for name, via, header in named
    )


def is_remote(config: Mapping[str, Any]) -> bool:
    """Whether a server is reached over the network: an HTTP ``url`` whose host is not
    a loopback name or address (``localhost``, 127.0.0.0/8, ``::1``; RFC 6761 6.3,
    RFC 1122 3.2.1.3, RFC 4291 2.5.3). A stdio server, and a URL that cannot be parsed,
    count as local and remote respectively."""
    url = config.get("url")
    if not isinstance(url, str):
        return False
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return True
    if not host:
        return True
    if host.lower() in _LOOPBACK_HOSTS:
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


def credential_warnings(name: str, config: Mapping[str, Any], blocklist: EnvBlocklist) -> list[str]:
    """One sentence per credential (:class:`Forward` ``credential``) that a remote server
    (:func:`is_remote`) would be sent from the launching environment; empty for a local
    server or one that names no credential. Names only, never a value."""
    if not is_remote(config):
        return []
    host = _host_of(str(config.get("url", "")))
    return [
        f"MCP server {name}: the credential {forward.variable} ({forward.credential}) of the "
        f"launching environment is sent to the remote server {host} in the "
        f"{forward.header} header"
        for forward in forwards(config, blocklist)
        if forward.credential is not None and not forward.blocked
    ]


def stored_credential_warnings(name: str, config: Mapping[str, Any]) -> list[str]:
    """One sentence per header of the configuration's own ``http_headers`` that holds a
    credential (:func:`own_header_credentials`) a remote server would be sent; empty for
    a local server. Names only, never a value. (At import, every literal value is
    warned about already.)"""
    if not is_remote(config):
        return []
    host = _host_of(str(config.get("url", "")))
    return [
        f"MCP server {name}: the {header} header ({kind}), its value stored in the item, is "
        f"sent to the remote server {host}"
        for header, kind in own_header_credentials(config).items()
        if kind is not None
    ]


def _host_of(url: str) -> str:
    """The host (and port) of a URL, never its user information (it may hold a password)."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or "an unnamed host"
        return f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "a host agc cannot parse"


# -- projection -----------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectedServer:
    """A server as written into ``config.toml``.

    Attributes:
        table: the ``[mcp_servers.<name>]`` table.
        dropped: the client's secrets it asked for and did not get (env names).
    """

    table: dict[str, Any]
    dropped: tuple[str, ...] = field(default=())


def project_server(
    config: Mapping[str, Any],
    *,
    config_dir: Path,
    plugin_root: Path | None,
    blocklist: EnvBlocklist,
) -> ProjectedServer:
    """The ``config.toml`` table of a checked server (see :func:`normalize_server`).

    A stdio server's relative ``cwd`` (or none) is resolved against ``config_dir``, the
    absolute folder of the configuration it came from, and a relative ``command`` with
    a path separator (``./server.sh``) against that ``cwd``; ``${CLAUDE_PLUGIN_ROOT}`` is
    the stored plugin's folder. ``enabled = true`` and ``required = false`` are set.
    """

    def expand(text: str) -> str:
        return text.replace(PLUGIN_ROOT_VARIABLE, str(plugin_root)) if plugin_root else text

    table: dict[str, Any] = {}
    dropped: list[str] = []
    if "command" in config:
        cwd_text = expand(config.get("cwd", "."))
        cwd = Path(os.path.normpath(config_dir / cwd_text))
        command = expand(config["command"])
        if not os.path.isabs(command) and ("/" in command or "\\" in command):
            command = os.path.normpath(cwd / command)
        table["command"] = command
        if "args" in config:
            table["args"] = [expand(arg) for arg in config["args"]]
        if "env" in config:
            table["env"] = {key: expand(value) for key, value in config["env"].items()}
        env_vars = []
        for entry in config.get("env_vars", []):
            name = entry if isinstance(entry, str) else entry["name"]
            if blocklist.blocks(name):
                dropped.append(name)
            else:
                env_vars.append(entry)
        if env_vars:
            table["env_vars"] = env_vars
        table["cwd"] = str(cwd)
    else:
        table["url"] = config["url"]
        token_var = config.get("bearer_token_env_var")
        if token_var is not None:
            if blocklist.blocks(token_var):
                dropped.append(token_var)
            else:
                table["bearer_token_env_var"] = token_var
        if "http_headers" in config:
            table["http_headers"] = dict(config["http_headers"])
        env_headers = {}
        for header, name in config.get("env_http_headers", {}).items():
            if blocklist.blocks(name):
                dropped.append(name)
            else:
                env_headers[header] = name
        if env_headers:
            table["env_http_headers"] = env_headers
    for key in _SHARED_FIELDS:
        if key in config:
            table[key] = config[key]
    table["enabled"] = True
    table["required"] = False
    return ProjectedServer(table=table, dropped=tuple(dict.fromkeys(dropped)))
