"""The typer classes of agc's commands (imported with typer, when a command is built)."""

from __future__ import annotations

from typing import Any

import typer
from typer._click import Context
from typer._click.exceptions import UsageError
from typer.core import TyperArgument, TyperCommand

__all__ = ["App", "Command"]


class Command(TyperCommand):
    """A command whose arguments are named as click names its own placeholders
    (``COMMAND [ARGS]...``): ``RUN_ID`` in the usage line, the argument list and the
    errors (``[RUN_ID]`` when optional, ``REFS...`` when repeated), never typer's
    ``{run_id}``, which reads as a template left unfilled."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument) and param.metavar is None and param.name:
                repeated = "..." if param.nargs != 1 else ""
                param.metavar = param.name.upper() + repeated

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            # click's parser raises an option without its value (``--store`` last) or
            # with one it takes none (``--json=1``) without the command's context, so
            # the refusal would print neither the usage line nor "Try '… -h'".
            if exc.ctx is None:
                exc.ctx = ctx
            raise

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        # typer braces a required argument's name ({RUN_ID}): the bare name says it.
        return [
            piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
            for piece in super().collect_usage_pieces(ctx)
        ]


class App(typer.Typer):
    """A typer app whose commands are :class:`Command` unless they name their own
    ``cls``."""

    def command(self, *args: Any, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Any:
        return super().command(*args, cls=cls or Command, **kwargs)
