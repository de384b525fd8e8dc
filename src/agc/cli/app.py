"""``agc``: the main command. Each feature module adds its own subcommands.

The subcommand modules are loaded only when one of their commands runs (or its help is
asked for): importing all of them (typer apps, rich, every feature, the MCP SDK) takes
most of a second, which ``agc --help`` or a quick ``agc resume --check`` should not pay.
The top-level group knows every subcommand's name, its module and the first sentence of
its help (:data:`SUBCOMMANDS`), enough to list them in ``agc --help`` and to complete
their names in a shell; a test checks that this table matches what the modules register.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup

from agc.cli._command import App
from agc.cli.common import EPILOG, VersionOption, new_app, run_app

if TYPE_CHECKING:
    from typer import _click as click  # the click that typer builds on (types only)

__all__ = ["SUBCOMMANDS", "Subcommand", "app", "load_module", "main"]


class Subcommand(NamedTuple):
    """One subcommand of ``agc``, as the top-level group knows it before loading it.

    Attributes:
        name: the command's name (``agc NAME``).
        module: the module that defines it (its ``register(app)`` adds it).
        summary: the first sentence of its help, from which click makes the one-line
            help of ``agc --help`` (the same text as the loaded command would give).
    """

    name: str
    module: str
    summary: str


_VERIFY_MODULE: Final = "agc.cli.verify"

# In the order of `agc --help` (commands first, then groups, as typer lists them).
SUBCOMMANDS: Final[tuple[Subcommand, ...]] = (
    Subcommand("verify", _VERIFY_MODULE, "Check that a run's evidence is complete and untouched."),
    Subcommand(
        "record",
        "agc.cli.evidence",
        "Read JSONL from stdin and write it to a run, sealing at end of input.",
    ),
    Subcommand(
        "import",
        "agc.cli.evidence",
        "Copy an existing JSONL file into the store through the writer, and seal it.",
    ),
    Subcommand(
        "watch",
        "agc.cli.evidence",
        "Keep client session folders imported, for clients without hooks.",
    ),
    Subcommand(
        "export",
        "agc.cli.evidence",
        "Write a recorded or imported run back as the JSONL file it was made from.",
    ),
    Subcommand(
        "seal",
        "agc.cli.evidence",
        "Write the checksum sidecar (FILE.b3 or FILE.sha256) for a closed file.",
    ),
    Subcommand(
        "demo",
        "agc.cli.evidence",
        "Write a realistic agent run, seal it, verify it, tamper with a copy, verify again.",
    ),
    Subcommand(
        "hook",
        "agc.cli.hook",
        "Capture one client hook event into its session's run.",
    ),
    Subcommand(
        "runs",
        "agc.cli.runs",
        "List the runs of a store: state, records, bytes, signature, last write.",
    ),
    Subcommand(
        "show", "agc.cli.runs", "Print a run's records, one per line, as the agent wrote them."
    ),
    Subcommand(
        "diff",
        "agc.cli.runs",
        "Compare a run's records with a file and print the first line where they differ.",
    ),
    Subcommand(
        "report",
        "agc.cli.report",
        "Write an auditor's report: one self-contained HTML page (--html) and/or CSV (--csv).",
    ),
    Subcommand(
        "recover", "agc.cli.keys", "Seal a run that crashed before close(), without losing a byte."
    ),
    Subcommand(
        "resume",
        "agc.cli.resume",
        "Check a saved history and repair it so the model provider accepts it again.",
    ),
    Subcommand(
        "serve",
        "agc.cli.serve",
        "Serve POST /v1/agent/chat on the real Codex CLI; every turn a sealed agc run.",
    ),
    Subcommand("keys", "agc.cli.keys", "Manage Ed25519 signing keys for run manifests."),
    Subcommand(
        "ledger",
        "agc.cli.ledger",
        "The turn ledger: a sanitized, sealed per-turn record of what a Codex agent did.",
    ),
    Subcommand(
        "ext",
        "agc.cli.ext",
        "Third-party Skills, MCP servers and plugins: imported as published, each Skill "
        "and MCP server its own item, projected into an isolated Codex home at launch.",
    ),
    Subcommand(
        "readiness",
        "agc.cli.readiness",
        "The readiness gate for an agent chat endpoint (POST /v1/agent/chat): classify "
        "observations, probe endpoints, check deployment contracts, and seal the verdicts "
        "as evidence.",
    ),
    Subcommand(
        "hooks",
        "agc.cli.hooks",
        "Install agc's capture hook into Claude Code, Codex or the Gemini CLI, check that "
        "the client will run it, take it out.",
    ),
)


def load_module(module_name: str) -> dict[str, click.Command]:
    """Import one subcommand module and return the click commands it registers, by name.

    Raises:
        ImportError: no such module.
    """
    module = importlib.import_module(module_name)
    holder = App(rich_markup_mode=None, pretty_exceptions_enable=False)
    if module_name == _VERIFY_MODULE:
        holder.command(
            name="verify", help=module.VERIFY_HELP, epilog=EPILOG, cls=module.GrammarCommand
        )(module.command_function())
    else:
        module.register(holder)
    return dict(typer.main.get_group(holder).commands)


class _LazyCommands(MutableMapping[str, "click.Command"]):
    """The group's ``commands``: every name of :data:`SUBCOMMANDS` (and any command added
    later); a command is built from its module on first lookup. While ``summaries`` is
    on, a command not loaded yet is a stand-in that carries only its help's first
    sentence (for the help listing and shell completion of names)."""

    def __init__(self, loaded: MutableMapping[str, click.Command]) -> None:
        self._loaded: dict[str, click.Command] = dict(loaded)
        self._known: dict[str, Subcommand] = {sub.name: sub for sub in SUBCOMMANDS}
        self._listing = False

    @contextmanager
    def summaries(self) -> Iterator[None]:
        self._listing = True
        try:
            yield
        finally:
            self._listing = False

    def __getitem__(self, name: str) -> click.Command:
        command = self._loaded.get(name)
        if command is not None:
            return command
        sub = self._known.get(name)
        if sub is None:
            raise KeyError(name)
        if self._listing:
            return TyperCommand(name, help=sub.summary, rich_markup_mode=None)
        for loaded_name, loaded in load_module(sub.module).items():
            self._loaded.setdefault(loaded_name, loaded)
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._loaded.pop(name, None)
        self._known.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        yield from self._known
        yield from (name for name in self._loaded if name not in self._known)

    def __len__(self) -> int:
        return len(self._known) + sum(1 for name in self._loaded if name not in self._known)

    def __contains__(self, name: object) -> bool:
        return name in self._known or name in self._loaded


class _LazyGroup(TyperGroup):
    """typer's group whose subcommands are loaded on dispatch (see :class:`_LazyCommands`)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self._lazy = _LazyCommands(self.commands)
        self.commands = self._lazy

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: ARG002 - click API
        return list(self._lazy)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with self._lazy.summaries():
            super().format_commands(ctx, formatter)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        with self._lazy.summaries():
            return super().shell_complete(ctx, incomplete)


app = new_app(
    name="agc",
    help_text=(
        "agc: auditable, resumable AI-agent runs.\n\n"
        "Seal agent transcripts as they are written, verify them in CI, and resume runs "
        "that died mid tool call."
    ),
    completion=True,
    cls=_LazyGroup,
)


@app.callback()
def _options(version: VersionOption = False) -> None:
    """agc: auditable, resumable AI-agent runs."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agc`` console script; returns the exit code."""
    return run_app(app, argv, prog_name="agc")
