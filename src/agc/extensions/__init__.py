"""Extensions: third-party Skills, MCP servers and plugins, imported, split, named and
projected into an isolated Codex home. See ``docs/extensions.md``.

A source (a file, folder, zip or standard plugin) is kept once, byte for byte, under
``<store>/extensions/``; every Skill and every MCP server found in it is its own item
that can be renamed, enabled, disabled and removed. A projection writes the enabled
items as a skill root and a ``config.toml`` for Codex, and a sealed record of exactly
what the agent was given. Nothing imported is ever run, started or fetched by agc.

Example::

    from agc.extensions import ExtensionRepository, project

    repo = ExtensionRepository("~/.agc")
    result = repo.import_path("bundle.zip")          # ImportResult: .to_dict() is the DTO
    repo.rename(result.items[0].id, "pixel-art")
    projection = project(repo, "/tmp/codex-home")     # skill root + config.toml + record
"""

from __future__ import annotations

from agc.extensions._mcp import (
    DEFAULT_BLOCKED_ENV,
    EnvBlocklist,
    Forward,
    LiteralValue,
    credential_warnings,
    forwards,
    is_remote,
    literal_values,
    own_env_credentials,
    own_header_credentials,
    reference_literals,
    stored_credential_warnings,
)
from agc.extensions._model import (
    INDEX_SCHEMA_VERSION,
    ExtensionIndex,
    ExtensionItem,
    ImportedSource,
    McpDetails,
)
from agc.extensions._names import (
    RESERVED_MCP_NAMES,
    assign_name,
    check_manual_name,
    collision_key,
    is_native_name,
    normalize_name,
)
from agc.extensions._private import PrivacyFinding, PrivacyReport
from agc.extensions._project import (
    DEFAULT_STARTUP_GRACE_MS,
    ProjectedMcpServer,
    ProjectedSkill,
    ProjectionResult,
    SkippedItem,
    project,
)
from agc.extensions._repo import ExtensionRepository, ImportResult, RemoveResult, RenameResult
from agc.extensions._stage import ImportLimits
from agc.extensions._status import (
    STARTUP_STATUS_METHOD,
    ProjectionRecord,
    StatusResult,
    apply_startup_events,
    read_projection_record,
)

__all__ = [
    "DEFAULT_BLOCKED_ENV",
    "DEFAULT_STARTUP_GRACE_MS",
    "INDEX_SCHEMA_VERSION",
    "RESERVED_MCP_NAMES",
    "STARTUP_STATUS_METHOD",
    "EnvBlocklist",
    "ExtensionIndex",
    "ExtensionItem",
    "ExtensionRepository",
    "Forward",
    "ImportLimits",
    "ImportResult",
    "ImportedSource",
    "LiteralValue",
    "McpDetails",
    "PrivacyFinding",
    "PrivacyReport",
    "ProjectedMcpServer",
    "ProjectedSkill",
    "ProjectionRecord",
    "ProjectionResult",
    "RemoveResult",
    "RenameResult",
    "SkippedItem",
    "StatusResult",
    "apply_startup_events",
    "assign_name",
    "check_manual_name",
    "collision_key",
    "credential_warnings",
    "forwards",
    "is_native_name",
    "is_remote",
    "literal_values",
    "normalize_name",
    "own_env_credentials",
    "own_header_credentials",
    "project",
    "read_projection_record",
    "reference_literals",
    "stored_credential_warnings",
]
