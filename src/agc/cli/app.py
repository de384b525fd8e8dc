"""``agc``: the main command. Each feature module adds its own subcommands."""

from __future__ import annotations

from agc.cli import evidence, ext, keys, ledger, readiness, report, resume, runs, serve
from agc.cli.common import EPILOG, VersionOption, new_app, run_app
from agc.cli.verify import VERIFY_HELP, verify_command

__all__ = ["app", "main"]

app = new_app(
    name="agc",
    help_text=(
        "agc: auditable, resumable AI-agent runs.\n\n"
        "Seal agent transcripts as they are written, verify them in CI, and resume runs "
        "that died mid tool call."
    ),
    completion=True,
)


@app.callback()
def _options(version: VersionOption = False) -> None:
    """agc: auditable, resumable AI-agent runs."""


app.command(name="verify", help=VERIFY_HELP, epilog=EPILOG)(verify_command)
evidence.register(app)
runs.register(app)
report.register(app)
keys.register(app)
resume.register(app)
ledger.register(app)
ext.register(app)
readiness.register(app)
serve.register(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agc`` console script; returns the exit code."""
    return run_app(app, argv, prog_name="agc")
