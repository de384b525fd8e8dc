"""The ledger policy: which MCP arguments are kept and which actions count as the first
design action, as a TOML file (the format is in ``docs/ledger.md``).

Two presets are built in (:data:`POLICY_PRESETS`):

* ``direct-project`` (the default): the MCP tools of a game-making project agent
  (``taonier_prepare_game_art``, ``agc_write_file`` …); a design action is an art or
  generation tool call, or a write under ``game/`` or of an ``index.html``.
* ``generic``: for any Codex agent. No MCP tool keeps arguments (a tool's arguments are
  kept only when a policy lists the tool), the server is always recorded, and the first
  design action is the first change to any project file.

A user policy has the same shape. Rules can only keep a bounded, cleaned form of an
argument: text is cut to at most 4000 characters and has its host paths removed, paths
are made project-relative, and a ``chars`` rule keeps only a length, so no policy can
make the ledger store a file's content.
"""

from __future__ import annotations

import hashlib
import hmac
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from agc._core.fs import read_limited
from agc.errors import PolicyInvalidError
from agc.ledger._contract import FORBIDDEN_KEYS, MAX_DESIGN_TEXT_CHARS, MAX_LIST_ITEMS
from agc.ledger._sanitize import clean_token

__all__ = [
    "DEFAULT_PRESET",
    "DIRECT_PROJECT_POLICY_TOML",
    "GENERIC_POLICY_TOML",
    "POLICY_PRESETS",
    "POLICY_SCHEMA_VERSION",
    "ArgRule",
    "LedgerPolicy",
    "RuleKind",
    "default_policy",
    "load_policy",
    "parse_policy",
    "preset_for_digest",
    "preset_policy",
]

POLICY_SCHEMA_VERSION: Final = 1
RuleKind = Literal["path", "paths", "ids", "text", "token", "chars", "int", "bool"]
_KINDS: Final[tuple[RuleKind, ...]] = (
    "path",
    "paths",
    "ids",
    "text",
    "token",
    "chars",
    "int",
    "bool",
)
_MAX_TOKEN_CHARS: Final = 240
_MAX_POLICY_BYTES: Final = 256 * 1024

DIRECT_PROJECT_POLICY_TOML: Final = """\
# agc turn ledger policy preset "direct-project": the MCP tools of a game-making
# project agent (server "agc_tools"): which arguments each tool keeps, and what counts
# as the first design action (art and generation tools, writes under game/ or of an
# index.html).
schema_version = 1
# An MCP item's "server" is omitted when it is this one.
default_server = "agc_tools"

[design]
tools = [
  "taonier_prepare_game_art",
  "agc_generate_image",
  "agc_edit_image",
  "agc_create_or_derive_resource",
]
write_tools = ["agc_write_file"]
path_prefixes = ["game/"]
file_names = ["index.html"]
preview_argument = "brief"

# Rule kinds: "path" (project-relative or <key>Rejected), "paths" / "ids" (lists, at
# most max_items, rest counted in <key>Omitted), "text" (max_chars, optional chars /
# sha256 of the full text), "token" (one line, max_chars, default 120), "chars"
# (only <key>Chars, never the value), "int", "bool".
[tools.agc_list_project_files]
path = "path"
query = { kind = "text", max_chars = 120 }
kind = "token"
offset = "int"
limit = "int"

[tools.agc_write_file]
path = "path"
content = "chars"

[tools.taonier_prepare_game_art]
mode = "token"
brief = { kind = "text", max_chars = 4000, chars = true, sha256 = true }

[tools.agc_generate_image]
kind = "token"
aspectRatio = "token"
imageSize = "token"
assetName = "token"
outputPath = "path"
prompt = { kind = "text", max_chars = 4000, chars = true, sha256 = true }

[tools.agc_edit_image]
sourceLocalAssetId = "token"
assetName = "token"
prompt = { kind = "text", max_chars = 4000, chars = true, sha256 = true }

[tools.agc_create_or_derive_resource]
kind = "token"
mode = "token"
sourceLocalAssetId = "token"
assetName = "token"
prompt = { kind = "text", max_chars = 4000, chars = true, sha256 = true }

[tools.agc_list_registered_assets]
kind = "token"
assetId = "token"
includeSequenceFrames = "bool"
offset = "int"
limit = "int"

[tools.agc_list_account_assets]
folderId = "token"
query = { kind = "text", max_chars = 120 }
offset = "int"
limit = "int"

[tools.agc_import_account_assets]
assetIds = { kind = "ids", max_items = 8 }
localPaths = { kind = "paths", max_items = 8 }

[tools.agc_remove_background]
sourceLocalAssetId = "token"
assetName = "token"

[tools.agc_browser_playtest]
attempt = "int"

[tools.agc_web_search]
query = { kind = "text", max_chars = 400 }
maxResults = "int"
"""

GENERIC_POLICY_TOML: Final = """\
# agc turn ledger policy preset "generic": for any Codex agent. No MCP tool keeps its
# arguments (list a tool under [tools.<name>] to keep some), the MCP server is always
# recorded, and the first design action is the first change to any project file.
schema_version = 1

[design]
any_path = true
"""

POLICY_PRESETS: Final[Mapping[str, str]] = {
    "direct-project": DIRECT_PROJECT_POLICY_TOML,
    "generic": GENERIC_POLICY_TOML,
}
"""The built-in policies by name (``--policy NAME``)."""
DEFAULT_PRESET: Final = "generic"
"""The preset used when no policy is given."""

# Digests the presets' TOML had in earlier agc versions (same rules, other comments):
# turn files recorded with them name the same policy, so ``check`` does not warn.
_EARLIER_DIGESTS: Final[Mapping[str, frozenset[str]]] = {
    "direct-project": frozenset(
        {"045e4aaa33903603290b3d1c76ef640943da2a4f62175a6b8af2129b65202d7c"}
    ),
}


@dataclass(frozen=True)
class ArgRule:
    """How one MCP argument is kept.

    Attributes:
        key: the argument name (also the output key).
        kind: see :data:`RuleKind`.
        max_chars: for ``text`` (≤ 4000) and ``token`` (≤ 240).
        max_items: for ``paths`` and ``ids`` (≤ 8).
        chars: also write ``<key>Chars`` (the full text's length in characters).
        sha256: also write ``<key>Sha256`` (of the full text as UTF-8).
    """

    key: str
    kind: RuleKind
    max_chars: int = 120
    max_items: int = MAX_LIST_ITEMS
    chars: bool = False
    sha256: bool = False


@dataclass(frozen=True)
class LedgerPolicy:
    """A parsed policy.

    Attributes:
        name: the preset's name (``"direct-project"``, ``"generic"``) or the policy
            file's name.
        sha256: SHA-256 of the policy's TOML bytes (recorded in ``turn_start``).
        default_server: the MCP server omitted from item records.
        tools: the allow-list: argument rules by MCP tool name.
        design_tools: MCP tools whose call is a design action.
        write_tools: MCP tools that write a file (``path`` argument).
        design_path_prefixes: a write under one of these is a design action.
        design_file_names: a write of a file with one of these names is one too.
        design_any_path: every path is a design path (the ``generic`` preset).
        preview_argument: the text argument shown as ``briefPreview``.
        earlier_sha256: digests an earlier version of the same policy had (a preset
            whose comments changed): a turn file naming one was recorded with it.
    """

    name: str
    sha256: str
    default_server: str | None
    tools: Mapping[str, tuple[ArgRule, ...]] = field(default_factory=dict)
    design_tools: frozenset[str] = frozenset()
    write_tools: frozenset[str] = frozenset()
    design_path_prefixes: tuple[str, ...] = ()
    design_file_names: frozenset[str] = frozenset()
    design_any_path: bool = False
    preview_argument: str = "brief"
    earlier_sha256: frozenset[str] = frozenset()

    def is_design_path(self, path: str) -> bool:
        """True for a path whose write or change is a design action: any path with
        ``any_path``, else one under a design prefix or with a design file name."""
        if self.design_any_path:
            return True
        name = path.rsplit("/", 1)[-1]
        return path.startswith(self.design_path_prefixes) or name in self.design_file_names

    def names_digest(self, digest: str) -> bool:
        """True when ``digest`` (a turn file's ``policySha256``) is this policy's."""
        return any(
            hmac.compare_digest(digest, known) for known in (self.sha256, *self.earlier_sha256)
        )


def parse_policy(data: bytes, *, name: str) -> LedgerPolicy:
    """Parse policy TOML bytes.

    Raises:
        PolicyInvalidError: not UTF-8 TOML, an unknown ``schema_version``, a rule of an
            unknown kind or beyond the limits, a rule other than ``chars`` for an
            argument the ledger never keeps (``content``, ``output``, ``result``,
            ``diff``, ``error`` …), or a field of the wrong type (the message names the
            table and key).
    """
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise PolicyInvalidError(f"policy {name} is not UTF-8: {exc.reason}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise PolicyInvalidError(f"policy {name} is not valid TOML: {exc}") from exc
    if raw.get("schema_version") != POLICY_SCHEMA_VERSION:
        raise PolicyInvalidError(
            f"policy {name}: schema_version must be {POLICY_SCHEMA_VERSION}, "
            f"not {raw.get('schema_version')!r}"
        )
    unknown = set(raw) - {"schema_version", "default_server", "design", "tools"}
    if unknown:
        raise PolicyInvalidError(f"policy {name}: unknown key(s) {sorted(unknown)}")
    server = raw.get("default_server")
    if server is not None and clean_token(server) is None:
        raise PolicyInvalidError(f"policy {name}: default_server {server!r} is not a name")
    design = _table(raw.get("design", {}), f"{name} [design]")
    tools_raw = _table(raw.get("tools", {}), f"{name} [tools]")
    tools: dict[str, tuple[ArgRule, ...]] = {}
    for tool, rules in tools_raw.items():
        if clean_token(tool) is None:
            raise PolicyInvalidError(f"policy {name}: tool name {tool!r} is not a name")
        table = _table(rules, f"{name} [tools.{tool}]")
        where = f"{name} [tools.{tool}]"
        tools[tool] = tuple(_rule(key, value, where) for key, value in table.items())
    return LedgerPolicy(
        name=name,
        sha256=hashlib.sha256(data).hexdigest(),
        default_server=server,
        tools=tools,
        design_tools=frozenset(_names(design, "tools", name)),
        write_tools=frozenset(_names(design, "write_tools", name)),
        design_path_prefixes=tuple(_strings(design, "path_prefixes", name)),
        design_file_names=frozenset(_strings(design, "file_names", name)),
        design_any_path=_bool(design, "any_path", name),
        preview_argument=_string(design, "preview_argument", name, default="brief"),
    )


def preset_policy(name: str) -> LedgerPolicy:
    """The built-in policy called ``name`` (a key of :data:`POLICY_PRESETS`).

    Raises:
        PolicyInvalidError: no preset has that name (the message lists them).
    """
    text = POLICY_PRESETS.get(name)
    if text is None:
        raise PolicyInvalidError(
            f"no policy preset is called {name!r}; presets: {', '.join(POLICY_PRESETS)}"
        )
    policy = parse_policy(text.encode("utf-8"), name=name)
    return replace(policy, earlier_sha256=_EARLIER_DIGESTS.get(name, frozenset()))


def preset_for_digest(digest: object) -> LedgerPolicy | None:
    """The preset a turn file's ``policySha256`` names, or ``None`` (a policy file, or
    no digest)."""
    if not isinstance(digest, str):
        return None
    for name in POLICY_PRESETS:
        policy = preset_policy(name)
        if policy.names_digest(digest):
            return policy
    return None


def default_policy() -> LedgerPolicy:
    """The policy used when none is given: the :data:`DEFAULT_PRESET` preset."""
    return preset_policy(DEFAULT_PRESET)


def load_policy(spec: str | Path | None) -> LedgerPolicy:
    """A preset by name, a policy file, or the default preset when ``spec`` is ``None``.

    A ``str`` that is a preset name (``direct-project``, ``generic``) names the preset;
    any other value is a file path (write ``./generic`` for a file of that name).

    Raises:
        InputError: the file cannot be read.
        PolicyInvalidError: as :func:`parse_policy`.
    """
    if spec is None:
        return default_policy()
    if isinstance(spec, str) and spec in POLICY_PRESETS:
        return preset_policy(spec)
    path = Path(spec)
    data = read_limited(
        path, what="policy file", max_bytes=_MAX_POLICY_BYTES, too_large=PolicyInvalidError
    )
    return parse_policy(data, name=path.name)


def _table(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PolicyInvalidError(f"policy {where} must be a table")
    return value


def _strings(table: Mapping[str, Any], key: str, name: str) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise PolicyInvalidError(f"policy {name} [design].{key} must be a list of strings")
    return value


def _names(table: Mapping[str, Any], key: str, name: str) -> list[str]:
    values = _strings(table, key, name)
    bad = [v for v in values if clean_token(v) is None]
    if bad:
        raise PolicyInvalidError(f"policy {name} [design].{key}: {bad[0]!r} is not a name")
    return values


def _bool(table: Mapping[str, Any], key: str, name: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise PolicyInvalidError(f"policy {name} [design].{key} must be true or false")
    return value


def _string(table: Mapping[str, Any], key: str, name: str, *, default: str) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or clean_token(value) is None:
        raise PolicyInvalidError(f"policy {name} [design].{key} must be a name")
    return value


def _rule(key: str, value: object, where: str) -> ArgRule:
    if clean_token(key) is None:
        raise PolicyInvalidError(f"policy {where}: argument name {key!r} is not a name")
    spec: dict[str, Any] = {"kind": value} if isinstance(value, str) else _table(value, where)
    unknown = set(spec) - {"kind", "max_chars", "max_items", "chars", "sha256"}
    if unknown:
        raise PolicyInvalidError(f"policy {where}.{key}: unknown field(s) {sorted(unknown)}")
    kind = spec.get("kind")
    found = next((k for k in _KINDS if k == kind), None)
    if found is None:
        raise PolicyInvalidError(
            f"policy {where}.{key}: kind {kind!r} is not one of {', '.join(_KINDS)}"
        )
    if key in FORBIDDEN_KEYS and found != "chars":
        raise PolicyInvalidError(
            f"policy {where}.{key}: {key!r} is never kept (no file content, output, "
            "result, diff or error text); only kind 'chars' (its length) is allowed"
        )
    limit = MAX_DESIGN_TEXT_CHARS if found == "text" else _MAX_TOKEN_CHARS
    max_chars = spec.get("max_chars", 120)
    if not _is_int(max_chars) or not 1 <= max_chars <= limit:
        raise PolicyInvalidError(f"policy {where}.{key}: max_chars must be 1-{limit}")
    max_items = spec.get("max_items", MAX_LIST_ITEMS)
    if not _is_int(max_items) or not 1 <= max_items <= MAX_LIST_ITEMS:
        raise PolicyInvalidError(f"policy {where}.{key}: max_items must be 1-{MAX_LIST_ITEMS}")
    flags = {flag: spec.get(flag, False) for flag in ("chars", "sha256")}
    for flag, flag_value in flags.items():
        if not isinstance(flag_value, bool):
            raise PolicyInvalidError(f"policy {where}.{key}: {flag} must be true or false")
    return ArgRule(
        key=key,
        kind=found,
        max_chars=max_chars,
        max_items=max_items,
        chars=flags["chars"],
        sha256=flags["sha256"],
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
