"""``agc ext``: third-party Skills, MCP servers and plugins (``docs/extensions.md``)."""

from __future__ import annotations

import contextlib
import enum
import sys
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Final

import typer

from agc.cli.common import EPILOG, StoreOption, emit_json, err_console, new_app, out_console
from agc.errors import AgcError, FileUnreadableError, InputError, InputMissingError
from agc.exitcodes import ExitCode
from agc.extensions import (
    DEFAULT_BLOCKED_ENV,
    DEFAULT_STARTUP_GRACE_MS,
    EnvBlocklist,
    ExtensionIndex,
    ExtensionItem,
    ExtensionRepository,
    ImportResult,
    PrivacyReport,
    apply_startup_events,
    credential_warnings,
    forwards,
    is_remote,
    literal_values,
    own_env_credentials,
    own_header_credentials,
    project,
    stored_credential_warnings,
)
from agc.flows import counted, describe_os_error, read_limited

__all__ = ["register"]

_MAX_BASE_CONFIG_BYTES: Final = 4 * 1024 * 1024

JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]
RefsArgument = Annotated[
    list[str], typer.Argument(help="Item ids (or a unique id prefix, or a unique name).")
]


class TypeChoice(enum.StrEnum):
    skill = "skill"
    mcp = "mcp"
    unknown = "unknown"


_MAX_LISTED_OPEN: Final = 10


def _repo(store: Path | None) -> ExtensionRepository:
    """The repository, made private first if an earlier agc left it readable by others
    (said on stderr, with whatever could not be changed)."""
    repo = ExtensionRepository(store)
    _report_privacy(repo.make_private())
    return repo


def _report_privacy(report: PrivacyReport) -> None:
    if report.tightened:
        _note(
            f"note: {report.root}: {report.tightened} files and folders an earlier agc left "
            "readable by others are now private to you (folders 0700, files 0600)"
        )
    for finding in report.open[:_MAX_LISTED_OPEN]:
        _note(
            f"warning: {finding.path} is readable by others (mode {finding.mode:04o}) and "
            f"cannot be made private ({finding.reason}); it may hold MCP server secrets"
        )
    if len(report.open) > _MAX_LISTED_OPEN:
        _note(f"warning: … and {len(report.open) - _MAX_LISTED_OPEN} more")


@contextlib.contextmanager
def _working(message: str) -> Iterator[None]:
    """A spinner on stderr while slow work runs, only on a terminal."""
    if err_console.is_terminal:
        with err_console.status(message):
            yield
    else:
        yield


def _printable(text: str) -> str:
    """``text`` with control and format characters escaped (``\\x1b``, ``\\n``).

    Entry, folder and server names come from the imported archive (and errors from the
    servers): an escape sequence in them must not drive the user's terminal (ECMA-48
    CSI/OSC sequences retitle the window or clear the screen), and a row stays one line.
    """
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def _note(text: str) -> None:
    err_console.print(_printable(text), markup=False, highlight=False)


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns, two spaces apart (plain text, also when not a terminal);
    every cell made printable."""
    if not rows:
        return []
    rows = [[_printable(cell) for cell in row] for row in rows]
    widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _status_text(item: ExtensionItem) -> str:
    if item.status in {"failed", "unavailable"} and item.last_error:
        return f"{item.status}: {item.last_error}"
    if item.status == "enabled" and item.last_error:
        return f"enabled ({item.last_error})"
    return item.status


def _item_rows(items: Sequence[ExtensionItem], index: ExtensionIndex) -> list[list[str]]:
    rows = [["NAME", "TYPE", "SOURCE", "STATUS", "ID"]]
    labels = {"skill": "Skill", "mcp": "MCP", "unknown": "Unknown"}
    rows.extend(
        [item.name, labels[item.type], index.source_name(item), _status_text(item), item.id]
        for item in items
    )
    return rows


def _print_items(items: Sequence[ExtensionItem], index: ExtensionIndex) -> None:
    for line in _table(_item_rows(items, index)):
        out_console.print(line, markup=False, highlight=False)


# -- import -----------------------------------------------------------------------------


def import_command(
    paths: Annotated[
        # str, not Path: Path("") is ".", and an empty argument (an unset variable)
        # would import the current folder.
        list[str],
        typer.Argument(help="Files, folders, zip archives or plugins to import."),
    ],
    env_ref: Annotated[
        bool,
        typer.Option(
            "--env-ref",
            help="Keep no literal value of an MCP server's env or headers in the index: "
            "each becomes a reference to a variable of the environment that launches Codex "
            "(env_vars, env_http_headers, bearer_token_env_var). The source copy keeps the "
            "file as it is, owner-only.",
        ),
    ] = False,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> int:
    """Import extensions as they are published: every Skill and MCP server found becomes
    its own item (enabled); a source in which nothing is recognised is kept as one
    disabled unknown item (never run) and is an error (exit 2).

    A source is a file (SKILL.md, config.toml, .mcp.json, anything else), a folder, a
    zip archive or a plugin (.codex-plugin/ or .claude-plugin/plugin.json). It is kept
    once, byte for byte; nothing in it is run, started or fetched. Unsafe archives
    (.., absolute paths, links that leave the archive, colliding names, zip bombs) are
    refused whole; a link inside an archive is kept as a copy of its file or skipped.
    Names that are taken get -2, -3 …; one notice per import says so.
    An MCP server's literal env or header values (possibly secrets) are named in a
    warning, never shown, and kept only in owner-only files (0600 in 0700 folders);
    --env-ref keeps references to the launching environment instead.

    \b
    Examples:
      agc ext import ~/Downloads/bundle.zip
      agc ext import ./my-plugin ~/.codex/config.toml --json
      agc ext import ~/.codex/config.toml --env-ref
      agc ext import SKILL.md --store ./store
    """
    repo = _repo(store)
    results: list[dict[str, Any]] = []
    exit_code = int(ExitCode.OK)
    for raw in paths:
        path = Path(raw)
        try:
            if not raw:
                raise InputError(
                    "an empty path was given",
                    hint="Name a file, folder or zip archive ('.' imports the current folder).",
                )
            with _working(f"importing {path}"):
                result = repo.import_path(path, env_ref=env_ref)
        except AgcError as exc:
            if exit_code == int(ExitCode.OK):
                exit_code = int(exc.exit_code)
            _note(f"error: {exc.message}")
            if exc.hint:
                _note(f"hint: {exc.hint}")
            results.append({"sourceName": path.name if raw else "", "error": exc.to_dict()})
            continue
        results.append(result.to_dict())
        unrecognised = result.unrecognised()
        # A source in which nothing was recognised is an error: said alone, not beside an
        # "Imported" table of its one disabled item (the error names that item).
        if not as_json and unrecognised is None:
            _print_import(result)
        if unrecognised is not None:
            if exit_code == int(ExitCode.OK):
                exit_code = int(unrecognised.exit_code)
            _note(f"error: {unrecognised.message}")
            _note(f"hint: {unrecognised.hint}")
            results[-1]["error"] = unrecognised.to_dict()
        if result.notice:
            _note(result.notice)
        for note in result.notes:
            _note(f"note: {note}")
        _warn_literals(result)
        for item in result.items:
            if item.mcp is not None and item.launchable:
                for warning in credential_warnings(item.name, item.mcp.config, EnvBlocklist()):
                    _note(f"warning: {warning}")
    if as_json:
        emit_json(results[0] if len(results) == 1 else results)
    return exit_code


def _warn_literals(result: ImportResult) -> None:
    """One line per literal env/header value: the server and the name, never the value."""
    for item, value in result.literals:
        what = "env" if value.field == "env" else "header"
        if value.reference is None:
            _note(
                f"warning: MCP server {item.name}: {what} {value.key} has a literal value "
                "(possibly a secret), kept only in owner-only files of the store; "
                "--env-ref keeps a reference to the launching environment instead (an "
                "import with it adds new items: this one stays, its value kept, until "
                f"removed: agc ext rm {item.id})"
            )
        else:
            _note(
                f"note: MCP server {item.name}: {what} {value.key} is a reference: set "
                f"{value.reference} in the environment that launches Codex"
            )


def _print_import(result: ImportResult) -> None:
    out_console.print(
        _printable(f"Imported {result.source.original_name}: {counted(len(result.items), 'item')}"),
        markup=False,
        highlight=False,
    )
    rows = [["NAME", "TYPE", "FROM", "STATUS", "ID"]]
    labels = {"skill": "Skill", "mcp": "MCP", "unknown": "Unknown"}
    rows.extend(
        [item.name, labels[item.type], item.source_relative_path, _status_text(item), item.id]
        for item in result.items
    )
    for line in _table(rows):
        out_console.print("  " + line, markup=False, highlight=False)


# -- list, enable, disable, rename, rm ----------------------------------------------------


def list_command(
    item_type: Annotated[
        TypeChoice | None, typer.Option("--type", help="Only items of this type.")
    ] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> int:
    """List every imported item: name, type, source, status (enabled, disabled, unknown,
    unavailable, failed) and id.

    \b
    Examples:
      agc ext list
      agc ext list --type mcp --json
    """
    index = _repo(store).load()
    items = [item for item in index.items if item_type is None or item.type == item_type.value]
    if as_json:
        emit_json(
            {
                "items": [{**item.dto(index.source_name(item)), **_extra(item)} for item in items],
                "lastProjectionId": index.last_projection_id,
            }
        )
    elif not items:
        _note("No extensions imported yet; add some with `agc ext import PATH`.")
    else:
        _print_items(items, index)
    return int(ExitCode.OK)


def _extra(item: ExtensionItem) -> dict[str, Any]:
    literals = literal_values(item.mcp.config) if item.mcp is not None else ()
    return {
        "sourceId": item.source_id,
        "fingerprint": item.fingerprint,
        "errorOrigin": item.error_origin,
        "startupStatus": item.startup_status,
        "notes": list(item.notes),
        "literalValues": [{"field": value.field, "key": value.key} for value in literals],
    }


def _set_enabled(refs: list[str], enabled: bool, store: Path | None, as_json: bool) -> int:
    repo = _repo(store)
    items = repo.set_enabled(refs, enabled)
    index = repo.load()
    if as_json:
        emit_json({"items": [item.dto(index.source_name(item)) for item in items]})
    else:
        _print_items(items, index)
        _note(
            "Takes effect at the next projection: `agc ext project`, or the next turn of "
            "`agc serve` (which restarts that conversation's Codex)."
        )
    return int(ExitCode.OK)


def enable_command(
    refs: RefsArgument, store: StoreOption = None, as_json: JsonOption = False
) -> int:
    """Enable items: they are projected at the next launch.

    \b
    Examples:
      agc ext enable extension-3f2a9c0d1e2b4a5c
      agc ext enable art-skill search
    """
    return _set_enabled(refs, True, store, as_json)


def disable_command(
    refs: RefsArgument, store: StoreOption = None, as_json: JsonOption = False
) -> int:
    """Disable items: they are left out of the next projection (nothing is deleted).

    \b
    Examples:
      agc ext disable search
    """
    return _set_enabled(refs, False, store, as_json)


def rename_command(
    ref: Annotated[str, typer.Argument(help="Item id (or unique prefix or name).")],
    name: Annotated[str, typer.Argument(help="The new name, in the native form of its type.")],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> int:
    """Rename an item. Skills: any name Codex loads (1-64 characters, single spaces
    inside, no control characters); MCP servers: letters, digits, '_' and '-'. A taken
    name gets -2, -3 … with a notice. The stored source is never changed: a renamed
    skill's runtime copy carries the name.

    \b
    Examples:
      agc ext rename art-skill pixel-art-skill
      agc ext rename extension-3f2a9c0d1e2b4a5c web_search --json
    """
    repo = _repo(store)
    result = repo.rename(ref, name)
    index = repo.load()
    if as_json:
        emit_json(
            {
                "item": result.item.dto(index.source_name(result.item)),
                "requested": result.requested,
                "renamed": result.suffixed,
                "notice": result.notice,
            }
        )
    else:
        _print_items([result.item], index)
    if result.notice:
        _note(result.notice)
    return int(ExitCode.OK)


def rm_command(refs: RefsArgument, store: StoreOption = None, as_json: JsonOption = False) -> int:
    """Remove items. A source is deleted with its last item; the others are untouched.

    \b
    Examples:
      agc ext rm search-2
      agc ext rm extension-3f2a9c0d1e2b4a5c extension-9d8c7b6a5f4e3d2c --json
    """
    result = _repo(store).remove(refs)
    if as_json:
        emit_json(
            {
                "removed": [
                    {"id": item.id, "name": item.name, "type": item.type} for item in result.items
                ],
                "sourcesDeleted": [
                    {"id": source.id, "originalName": source.original_name}
                    for source in result.sources
                ],
            }
        )
    else:
        for item in result.items:
            out_console.print(
                _printable(f"removed {item.type} {item.name} ({item.id})"),
                markup=False,
                highlight=False,
            )
        for source in result.sources:
            _note(f"source {source.original_name} ({source.id}) deleted with its last item")
    return int(ExitCode.OK)


def _block_env_option() -> Any:
    return typer.Option(
        "--block-env",
        metavar="NAME",
        help="One more client secret never forwarded to a third-party server "
        "(NAME or PREFIX*; repeatable). Always blocked: " + ", ".join(DEFAULT_BLOCKED_ENV),
    )


def _receives(item: ExtensionItem, blocklist: EnvBlocklist) -> dict[str, Any]:
    """What an item is given at launch (names only, never a value)."""
    if item.mcp is None:
        return {"transport": None, "remote": False, "env": [], "envCredentials": {},
                "httpHeaders": [], "headerCredentials": {}, "forwarded": [],
                "warnings": []}  # fmt: skip
    config = item.mcp.config
    return {
        "transport": "stdio" if "command" in config else "http" if "url" in config else None,
        "remote": is_remote(config),
        "env": sorted(config.get("env") or {}),
        "envCredentials": {k: v for k, v in own_env_credentials(config).items() if v},
        "httpHeaders": sorted(config.get("http_headers") or {}),
        "headerCredentials": {k: v for k, v in own_header_credentials(config).items() if v},
        "forwarded": [forward.to_dict() for forward in forwards(config, blocklist)],
        "warnings": credential_warnings(item.name, config, blocklist)
        + stored_credential_warnings(item.name, config),
    }


def show_command(
    ref: Annotated[str, typer.Argument(help="Item id (or unique prefix or name).")],
    block_env: Annotated[list[str] | None, _block_env_option()] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> int:
    """Show one item and what it receives when it is launched: the variables of its own
    configuration (names only), the variables of the launching environment it is given
    (each marked when its name says it holds a credential) and those never given (the
    client's own secrets). A credential sent to a remote MCP server is a warning.

    \b
    Examples:
      agc ext show search
      agc ext show extension-3f2a --json
    """
    repo = _repo(store)
    index = repo.load()
    item = repo.resolve(index, ref)
    receives = _receives(item, EnvBlocklist.with_extra(block_env or []))
    if as_json:
        emit_json(
            {"item": {**item.dto(index.source_name(item)), **_extra(item)}, "receives": receives}
        )
    else:
        out = out_console
        lines = [
            f"{item.name} ({item.type}, {_status_text(item)})",
            f"id:      {item.id}",
            f"source:  {index.source_name(item)} ({item.source_relative_path})",
        ]
        if receives["transport"] is not None:
            where = "remote" if receives["remote"] else "local"
            lines.append(f"server:  {receives['transport']} ({where})")
            marked = receives["envCredentials"]
            own = [
                name
                + (
                    f" (credential: {marked[name]}, its value stored in the item)"
                    if name in marked
                    else ""
                )
                for name in receives["env"]
            ]
            lines.append("own env: " + (", ".join(own) or "none"))
            if receives["httpHeaders"]:
                secret = receives["headerCredentials"]
                lines.append(
                    "headers: "
                    + ", ".join(
                        name
                        + (
                            f" (credential: {secret[name]}, its value stored in the item)"
                            if name in secret
                            else ""
                        )
                        for name in receives["httpHeaders"]
                    )
                )
            given = [
                f["variable"] + (f" (credential: {f['credential']})" if f["credential"] else "")
                for f in receives["forwarded"]
                if not f["blocked"]
            ]
            kept = [f["variable"] for f in receives["forwarded"] if f["blocked"]]
            lines.append("from the launching environment: " + (", ".join(given) or "nothing"))
            if kept:
                lines.append("never given (the client's own secrets): " + ", ".join(kept))
        elif item.type == "skill":
            lines.append("receives no environment (a skill is text for the model)")
        for line in lines:
            out.print(_printable(line), markup=False, highlight=False)
        for warning in receives["warnings"]:
            _note(f"warning: {warning}")
    return int(ExitCode.OK)


# -- project, status ----------------------------------------------------------------------


def _load_base_config(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    data = read_limited(path, what="base configuration", max_bytes=_MAX_BASE_CONFIG_BYTES)
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"base configuration {path} is not valid TOML ({exc})") from exc
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise InputError(
            f"base configuration {path} nests arrays or tables too deep to read"
        ) from None
    return document


def project_command(
    codex_home: Annotated[
        Path,
        typer.Option("--codex-home", help="The isolated CODEX_HOME to write (created if absent)."),
    ],
    skill_root: Annotated[
        Path | None,
        typer.Option(
            "--skill-root",
            help="Where the skill root goes (default: <codex-home>/extension-skills).",
        ),
    ] = None,
    base_config: Annotated[
        Path | None,
        typer.Option(
            "--base-config",
            help="A config.toml to build on (model provider, the built-in agc_tools server); "
            "its MCP servers are never overridden.",
        ),
    ] = None,
    startup_grace_ms: Annotated[
        int,
        typer.Option(
            "--startup-grace-ms",
            min=0,
            help="mcp_optional_startup_grace_ms: how long Codex waits for optional MCP servers.",
        ),
    ] = DEFAULT_STARTUP_GRACE_MS,
    block_env: Annotated[list[str] | None, _block_env_option()] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> int:
    """Project the enabled items into an isolated Codex home: a skill root rebuilt from
    scratch (renamed skills as renamed copies) and a config.toml with each enabled MCP
    server (only the fields Codex reads, enabled = true, required = false), merged with
    --base-config. Writes a sealed projection record to the store. The launcher then
    starts Codex with CODEX_HOME=DIR, -c mcp_optional_startup_grace_ms=N, and registers
    the skill root with skills/extraRoots/set.

    \b
    Examples:
      agc ext project --codex-home /tmp/run-42/codex-home
      agc ext project --codex-home /tmp/h --base-config launcher.toml --json
      agc ext project --codex-home /tmp/h --block-env MY_COMPANY_TOKEN --block-env 'INTERNAL_*'
    """
    result = project(
        _repo(store),
        codex_home,
        skill_root=skill_root,
        base_config=_load_base_config(base_config),
        startup_grace_ms=startup_grace_ms,
        blocklist=EnvBlocklist.with_extra(block_env or []),
    )
    if as_json:
        emit_json(result.to_dict())
    else:
        out = out_console
        out.print(f"Skill root:  {result.skill_root}", markup=False, highlight=False)
        out.print(f"config.toml: {result.config_toml}", markup=False, highlight=False)
        out.print(f"Fingerprint: {result.fingerprint}", markup=False, highlight=False)
        out.print(f"Record:      {result.record}", markup=False, highlight=False)
        skills = ", ".join(skill.name for skill in result.skills) or "none"
        servers = ", ".join(server.name for server in result.mcp_servers) or "none"
        out.print(f"Skills ({len(result.skills)}): {skills}", markup=False, highlight=False)
        out.print(
            f"MCP servers ({len(result.mcp_servers)}): {servers}", markup=False, highlight=False
        )
    for server in result.mcp_servers:
        for warning in server.warnings:
            _note(f"warning: {warning}")
        if server.not_forwarded:
            _note(
                f"note: {server.name}: not forwarded (the client's own secrets): "
                + ", ".join(server.not_forwarded)
            )
    for skipped in result.skipped:
        _note(f"skipped {skipped.type} {skipped.name} ({skipped.id}): {skipped.reason}")
    return int(ExitCode.OK)


def status_command(
    from_events: Annotated[
        Path | None,
        typer.Option(
            "--from-events",
            metavar="FILE",
            help="App-server messages (JSON lines) of one Codex connection; '-' for stdin. "
            "Applies mcpServer/startupStatus/updated to the items.",
        ),
    ] = None,
    projection_id: Annotated[
        str | None,
        typer.Option(
            "--projection", help="The projection that connection used (default: the latest)."
        ),
    ] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> int:
    """Show each item's runtime status; with --from-events, first apply Codex's startup
    notifications (ready clears an error, failed/cancelled records it). Notifications of a
    connection that is no longer current (a newer projection, an item disabled, renamed
    or removed since) are ignored.

    \b
    Examples:
      agc ext status
      agc ext status --from-events app-server.jsonl --json
      codex app-server | tee events.jsonl   # … later:
      agc ext status --from-events events.jsonl
    """
    repo = _repo(store)
    summary: dict[str, Any] | None = None
    if from_events is not None:
        if str(from_events) == "-":
            result = apply_startup_events(repo, sys.stdin.buffer, projection_id=projection_id)
        else:
            # The same errors as every command's input: missing or a folder is exit 2,
            # a file that exists but cannot be read exit 3.
            try:
                handle = from_events.open("rb")
            except FileNotFoundError as exc:
                raise InputMissingError(f"events file {from_events} does not exist") from exc
            except IsADirectoryError as exc:
                raise InputError(f"events file {from_events} is a folder, not a file") from exc
            except OSError as exc:
                raise FileUnreadableError(
                    f"events file {from_events} cannot be read: {describe_os_error(exc)}"
                ) from exc
            with handle:
                result = apply_startup_events(repo, handle, projection_id=projection_id)
        summary = result.to_dict(repo.load())
        if not result.current:
            _note(
                f"projection {result.projection_id} is not the latest; its notifications "
                "were ignored as stale"
            )
        _note(
            f"{result.notifications} startup notification(s): {len(result.applied)} applied, "
            f"{result.stale} stale, {result.unmatched} for servers agc did not project, "
            f"{result.malformed} malformed line(s)"
        )
    index = repo.load()
    items = [item for item in index.items if item.type != "unknown"]
    if as_json:
        emit_json(
            {
                "lastProjectionId": index.last_projection_id,
                "items": [
                    {**item.dto(index.source_name(item)), "startupStatus": item.startup_status}
                    for item in items
                ],
                **({"events": summary} if summary is not None else {}),
            }
        )
    elif items:
        _print_items(items, index)
    else:
        _note("No Skill or MCP server imported yet.")
    return int(ExitCode.OK)


def register(app: typer.Typer) -> None:
    """Add ``agc ext import|list|enable|disable|rename|rm|show|project|status`` to the app."""
    ext = new_app(
        name="ext",
        help_text=(
            "Third-party Skills, MCP servers and plugins: imported as published, each Skill "
            "and MCP server its own item, projected into an isolated Codex home at launch."
        ),
    )
    ext.command(name="import", epilog=EPILOG)(import_command)
    ext.command(name="list", epilog=EPILOG)(list_command)
    ext.command(name="enable", epilog=EPILOG)(enable_command)
    ext.command(name="disable", epilog=EPILOG)(disable_command)
    ext.command(name="rename", epilog=EPILOG)(rename_command)
    ext.command(name="rm", epilog=EPILOG)(rm_command)
    ext.command(name="show", epilog=EPILOG)(show_command)
    ext.command(name="project", epilog=EPILOG)(project_command)
    ext.command(name="status", epilog=EPILOG)(status_command)
    app.add_typer(ext, name="ext")
