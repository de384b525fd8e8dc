"""Shared plumbing for agc's commands: running a typer app in process, error output.

Every entry point is ``main(argv: list[str] | None = None) -> int`` built on
:func:`run_app`, so tests call commands in process and get the exit code back. Exit
codes come only from :mod:`agc.exitcodes`; an unexpected exception exits 4 with a
traceback on stderr and is never reported as a verification verdict.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Final,
    Literal,
    NamedTuple,
    TypeVar,
    get_type_hints,
)

from agc import __version__
from agc.cli._jsontext import json_pieces
from agc.cli._process import (
    STOP,
    Terminated,
    discard_stdout,
    notes_unraisable_stops,
    passes_undecodable_bytes,
    raise_unraisable_stop,
    sigterm_raises,
    stderr_never_fails,
)
from agc.errors import AgcError, StoreError, UsageError
from agc.exitcodes import ExitCode, exit_code_help
from agc.flows import (
    MACHINE_ERRNOS,
    describe_os_error,
    new_file_errors,
    write_new_file,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    import typer
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from rich.console import Console
    from typer.core import TyperGroup

    # Made on first use (see __getattr__ below) with typer's metadata (their option's
    # names and help): typer costs tens of milliseconds to import, which a command
    # parsed without it (`agc resume --check FILE`) does not pay.
    VersionOption = Annotated[bool, typer.Option()]
    StoreOption = Annotated[Path | None, typer.Option()]

    # Created on first use (see __getattr__ below): rich costs tens of milliseconds to
    # import, which `agc --help` and the quick commands do not pay.
    err_console: Console
    out_console: Console

__all__ = [
    "EPILOG",
    "NO_STORE",
    "StoreOption",
    "Terminated",
    "TyperParam",
    "VersionOption",
    "byte_progress",
    "emit_json",
    "err_console",
    "keys_inside_store",
    "new_app",
    "new_file_errors",
    "out_console",
    "refuse_ambiguous",
    "report_error",
    "run_app",
    "run_command",
    "stop_code",
    "trusted_keys_from",
    "typer_argument",
    "typer_option",
    "with_typer_params",
    "write_lines",
    "write_new_file",
]

# click's "\b" keeps the table's line breaks when it re-wraps the epilog.
EPILOG = "\b\n" + exit_code_help()


def _new_console(name: str) -> Console:
    from rich.console import Console  # noqa: PLC0415 - rich only when a command prints

    if name == "err_console":
        return Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

    class _StdoutConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            discard_stdout()

    return _StdoutConsole(highlight=False, soft_wrap=True, emoji=False)


_RICH_DROPS: Final = dict.fromkeys((7, 8, 11, 12, 13))
"""The control characters rich drops from printed text (bell, backspace, vertical tab,
form feed, carriage return: ``rich.control.STRIP_CONTROL_CODES``)."""


class PlainFirstConsole:
    """``err_console`` / ``out_console``: a rich console, made only when one is needed.

    Most lines a command prints are plain text (``print(text, markup=False)``) to a
    stream that is not a terminal (a pipe, a file, CI), where rich writes the text as it
    is, without its bell, backspace, vertical tab, form feed and carriage return
    characters. Such a line is written so here, without importing rich (tens of
    milliseconds that ``agc resume --check`` would pay for one line); anything else (a
    terminal, ``FORCE_COLOR``/``TTY_COMPATIBLE``, markup, a tab, several objects, a
    rich renderable, any other option or attribute) goes to the rich console itself.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._rich: Console | None = None

    def _console(self) -> Console:
        if self._rich is None:
            self._rich = _new_console(self._name)
        return self._rich

    def _stream(self) -> Any:
        return sys.stderr if self._name == "err_console" else sys.stdout

    def _plain(self) -> bool:
        """Whether rich would see no terminal (as ``Console.is_terminal`` decides it
        when nothing forces one)."""
        if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
            return False
        isatty = getattr(self._stream(), "isatty", None)
        try:
            return isatty is None or not isatty()
        except ValueError:  # a closed stream: rich sees no terminal either
            return True

    @property
    def is_terminal(self) -> bool:
        return False if self._plain() else self._console().is_terminal

    @property
    def rich(self) -> Console:
        """The rich console itself, for what takes one as an argument (a
        ``Progress``, a ``Live``): those use it as a context manager and read its
        internals, which a stand-in cannot give."""
        return self._console()

    def print(self, *objects: Any, markup: bool | None = None, **options: Any) -> None:
        """As rich's ``Console.print``."""
        end = options.get("end", "\n")
        if (
            markup is False
            and len(objects) == 1
            and isinstance(objects[0], str)
            and "\t" not in objects[0]
            and end in ("\n", "")
            and not options.keys() - {"end", "highlight", "style"}
            and not (self._rich is not None and self._rich.quiet)
            and self._plain()
        ):
            stream = self._stream()
            if stream is None:  # no such stream (closed at start): rich writes nowhere too
                return
            try:
                stream.write(objects[0].translate(_RICH_DROPS) + end)
                stream.flush()
            except BrokenPipeError:
                self._console().on_broken_pipe()
            return
        self._console().print(*objects, markup=markup, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console(), name)


def __getattr__(name: str) -> Any:
    """``err_console`` (stderr) and ``out_console`` (stdout): consoles made on first
    access (``from agc.cli.common import err_console`` included), then kept (PEP 562);
    rich is imported when one needs it (:class:`PlainFirstConsole`). ``VersionOption``
    and ``StoreOption``: typer's options, made (importing typer) on first access."""
    if name in ("VersionOption", "StoreOption"):
        globals().update(_typer_options())
        return globals()[name]
    if name not in ("err_console", "out_console"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    console = globals().get(name)
    if console is None:
        console = globals()[name] = PlainFirstConsole(name)
    return console


def rich_err_console() -> Console:
    """The rich console behind ``err_console`` (made now if it was not yet), for a
    rich object that takes a console as an argument."""
    console: PlainFirstConsole = __getattr__("err_console")
    return console.rich


def _err() -> Console:
    """The stderr console, for this module's own messages."""
    console: Console = __getattr__("err_console")
    return console


def _print_version(ctx: typer.Context, value: bool) -> None:
    import typer  # noqa: PLC0415 - loaded by the command that has the option

    if not value or ctx.resilient_parsing:
        return
    program = ctx.find_root().info_name or "agc"
    typer.echo(f"{program} {__version__}" if program == "agc" else f"{program} (agc) {__version__}")
    raise typer.Exit(int(ExitCode.OK))


def _typer_options() -> dict[str, Any]:
    """``VersionOption`` and ``StoreOption`` (see :func:`__getattr__`)."""
    import typer  # noqa: PLC0415 - only for a command typer parses

    return {
        "VersionOption": Annotated[
            bool,
            typer.Option(
                "--version",
                callback=with_typer_params(_print_version, typer=typer),
                is_eager=True,
                expose_value=True,
                help="Print the version and exit.",
            ),
        ],
        "StoreOption": Annotated[
            Path | None,
            typer.Option(
                "--store",
                help="Store folder or s3://bucket/prefix (default: $AGC_HOME, else ~/.agc).",
                show_default=False,
            ),
        ],
    }


class TyperParam(NamedTuple):
    """The arguments of ``typer.Option(...)`` or ``typer.Argument(...)``, kept in a
    command function's ``Annotated`` hints until typer reads them
    (:func:`with_typer_params`): a module whose command can also be called without
    typer (its arguments parsed otherwise) then declares its options without importing
    typer."""

    kind: Literal["option", "argument"]
    args: tuple[str, ...]
    kwargs: dict[str, Any]


def typer_option(*names: str, **kwargs: Any) -> Any:
    """``typer.Option(*names, **kwargs)``, made when typer reads the command (see
    :class:`TyperParam`)."""
    return TyperParam("option", names, kwargs)


def typer_argument(**kwargs: Any) -> Any:
    """``typer.Argument(**kwargs)``, made when typer reads the command (see
    :class:`TyperParam`)."""
    return TyperParam("argument", (), kwargs)


_F = TypeVar("_F", bound=Callable[..., Any])


def with_typer_params(function: _F, **names: Any) -> _F:
    """``function`` with its type hints evaluated (``names``: hints its module only
    imports for the type checker) and each :class:`TyperParam` in them made the typer
    object it stands for, as typer reads a command's parameters; returns ``function``."""
    import typer  # noqa: PLC0415 - only for a command typer parses

    hints = get_type_hints(function, localns=names, include_extras=True)
    for name, hint in hints.items():
        metadata = getattr(hint, "__metadata__", None)
        if metadata is None:
            continue
        made = [
            (typer.Option if item.kind == "option" else typer.Argument)(*item.args, **item.kwargs)
            if isinstance(item, TyperParam)
            else item
            for item in metadata
        ]
        hints[name] = Annotated[(hint.__origin__, *made)]
    function.__annotations__ = hints
    return function


def refuse_ambiguous(target: str, *, is_run: Callable[[str], bool], run_what: str) -> None:
    """Refuse a name that is both an existing file and a run, instead of picking one.

    A name with a ``/`` is a path and never ambiguous (``./x`` means the file ``x``).

    Args:
        target: the name the user gave.
        is_run: whether the store holds a run (or its snapshot) of that name.
        run_what: how the message names the run ("the snapshot of run x in store S").

    Raises:
        UsageError: ``target`` names an existing file and a run.
    """
    if "/" in target or os.sep in target or not os.path.lexists(target):
        return
    from agc.flows import RunId  # noqa: PLC0415 - not needed by --help

    try:
        RunId(target)
    except AgcError:
        return
    if is_run(target):
        raise UsageError(
            f"{target!r} is ambiguous: it is both the file ./{target} and {run_what}",
            hint=f"Write ./{target} to mean the file; to mean the run, run the command "
            "from another folder (or rename the file).",
        )


def write_lines(lines: list[str]) -> None:
    """Write human lines to stdout as they are (no markup, no wrapping)."""
    try:
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()


def new_app(
    *,
    name: str,
    help_text: str,
    completion: bool = False,
    cls: type[TyperGroup] | None = None,
) -> typer.Typer:
    """A typer app configured the agc way: no rich tracebacks, exit codes in ``--help``.

    ``completion`` adds typer's ``--install-completion`` / ``--show-completion`` (for the
    programs themselves, not for sub-groups); ``cls`` is the click group class to build
    (default typer's ``TyperGroup``).
    """
    from agc.cli._command import App  # noqa: PLC0415 - only for a command typer parses

    return App(
        name=name,
        cls=cls,
        help=help_text,
        epilog=EPILOG,
        add_completion=completion,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )


@contextmanager
def byte_progress(total: int | None, label: str) -> Iterator[Callable[[int], None] | None]:
    """A progress bar for ``total`` bytes on stderr when it is a terminal; else ``None``.

    Yields a callback taking the number of bytes done so far.
    """
    console = _err()
    if not console.is_terminal or not total:
        yield None
        return
    from rich.progress import (  # noqa: PLC0415 - rich only for a terminal
        BarColumn,
        DownloadColumn,
        Progress,
        TimeRemainingColumn,
    )

    columns = (BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=rich_err_console(), transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda done: progress.update(task, completed=done)


def emit_json(data: Any) -> None:
    """Write one JSON document to stdout (data goes to stdout, messages to stderr),
    its :class:`~agc._core.report.JsonItems` one item at a time
    (:func:`~agc.cli._jsontext.json_pieces`), in writes of about 1 MiB."""
    try:
        write = sys.stdout.write
        held: list[str] = []
        size = 0
        for piece in json_pieces(data):
            held.append(piece)
            size += len(piece)
            if size >= _EMIT_BYTES:
                write("".join(held))
                held.clear()
                size = 0
        held.append("\n")
        write("".join(held))
        sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()


_EMIT_BYTES: Final = 1 << 20


def stop_code(exc: KeyboardInterrupt) -> tuple[ExitCode, str]:
    """Exit code and word for a stop: ``(130, "interrupted")`` or ``(143, "terminated")``.

    A command that prints its own line about the stop (what is on disk) calls this,
    and the generic word is then not printed again.
    """
    return STOP.code(exc)


_UNREADABLE_ERRNOS = MACHINE_ERRNOS | {errno.EACCES, errno.EPERM}


def report_error(exc: AgcError, *, as_json: bool = False) -> int:
    """Print an agc error (message and hint) to stderr; return its exit code, or exit 3
    when its ``--json`` document cannot be written to stdout (a full disk)."""
    unwritable: OSError | None = None
    # An error writing standard output itself ("-") is not written there again.
    if as_json and getattr(exc, "path", None) != "-":
        try:
            emit_json({"error": exc.to_dict()})
        except OSError as write_error:
            unwritable = write_error
    _err().print(f"error: {exc.message}", markup=False)
    if exc.hint:
        _err().print(f"hint: {exc.hint}", markup=False)
    if unwritable is not None:
        _err().print(f"error: stdout: {describe_os_error(unwritable)}", markup=False)
        _err().print(
            "hint: free disk space or fix the permissions, then run the command again",
            markup=False,
        )
        return int(ExitCode.UNREADABLE)
    return int(exc.exit_code)


def run_app(app: typer.Typer, argv: list[str] | None, *, prog_name: str) -> int:
    """Run a typer app in process and map every outcome to an :class:`ExitCode`.

    Commands return an ``int`` exit code (``None`` means 0).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    return run_command(lambda: app(args=args, prog_name=prog_name, standalone_mode=False), args)


def run_command(command: Callable[[], int | None], args: list[str]) -> int:
    """Run one command in process, ``command``: a typer app given ``args``
    (:func:`run_app`), or a command function called with the arguments it was given,
    parsed without typer; every outcome is mapped to an :class:`ExitCode` the same way
    (``--json`` in ``args``: a refusal is a JSON document too)."""
    # Around the error messages too: one may name a file that is not UTF-8, or find
    # stderr unwritable.
    with passes_undecodable_bytes(), stderr_never_fails():
        return _run_command(command, args)


def _typer_errors() -> tuple[type[BaseException], ...]:
    """typer's exit, usage error and abort; none when typer was never imported (no
    command could then raise one)."""
    typer = sys.modules.get("typer")
    if typer is None:
        return ()
    return (typer.Exit, typer.TyperException, typer.Abort)


def _typer_outcome(exc: BaseException, *, as_json: bool) -> int:
    """The exit code of one of :func:`_typer_errors`, its message printed."""
    import typer  # noqa: PLC0415 - loaded: it raised ``exc``

    if isinstance(exc, typer.Exit):
        return int(exc.exit_code)
    if isinstance(exc, typer.TyperException):
        if as_json:
            # A script that asked for JSON reads every refusal as JSON, this one too.
            _emit_usage_json(exc)
        # Typer's usage errors (unknown option, missing argument …) print themselves.
        show = getattr(exc, "show", None)
        if callable(show):
            show(file=sys.stderr)
        else:
            _err().print(f"error: {exc.format_message()}", markup=False)
        return int(ExitCode.USAGE)
    _err().print("aborted", markup=False)
    return int(ExitCode.USAGE)


def _run_command(command: Callable[[], int | None], args: list[str]) -> int:
    as_json = "--json" in args
    STOP.reset()
    try:
        with sigterm_raises(STOP.raise_terminated), notes_unraisable_stops():
            result = command()
            # A stop Python could not raise (it printed nothing): the command stops.
            raise_unraisable_stop()
    except _typer_errors() as exc:
        return _typer_outcome(exc, as_json=as_json)
    except AgcError as exc:
        return report_error(exc, as_json=as_json)
    except KeyboardInterrupt as exc:
        code, word = stop_code(exc)
        _err().print(word, markup=False)
        return int(code)
    except OSError as exc:
        stdout_read_only = _stdout_read_only(exc)
        if exc.errno not in _UNREADABLE_ERRNOS and not stdout_read_only:
            return _internal_error()
        # The machine, not agc: a full disk or a read-only folder is never "a bug". With
        # --json it is a refusal like any other: the {"error": …} document on stdout
        # (unless stdout itself is what failed to open for writing).
        where = f"{exc.filename}: " if exc.filename else ""
        error = StoreError(
            f"{where}{describe_os_error(exc)}",
            hint="free disk space or fix the permissions, then run the command again",
        )
        return report_error(error, as_json=as_json and not stdout_read_only)
    except Exception:
        return _internal_error()
    if STOP.terminated and not STOP.reported and result != ExitCode.INTERRUPTED:
        # SIGTERM's exception was swallowed on its way (a library's at-fork hook or
        # __del__: "Exception ignored in …") and the command went on: it still stops.
        _err().print("terminated", markup=False)
        return int(ExitCode.TERMINATED)
    if result == ExitCode.INTERRUPTED:
        # typer's exit code for a KeyboardInterrupt it caught (or a command's own).
        reported = STOP.reported
        code, word = stop_code(Terminated() if STOP.terminated else KeyboardInterrupt())
        if not reported:
            _err().print(word, markup=False)
        return int(code)
    if result is None:
        return int(ExitCode.OK)
    return int(result)


def _emit_usage_json(exc: typer.TyperException) -> None:
    """``{"error": {"code": "usage", "message", "hint"}}`` on stdout for an error of the
    option parser (an unknown option, a bad value), as :func:`report_error` writes for
    agc's own errors; stdout that cannot be written is left to the usage message."""
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None)
    hint = f"Try '{path} -h' for help." if path else ""
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    with contextlib.suppress(OSError):
        emit_json({"error": {"code": "usage", "message": message, "hint": hint}})


def _stdout_read_only(exc: OSError) -> bool:
    """``EBADF`` because stdout was opened for reading only (``1</dev/null``): how the
    command was started, not a bug in agc (exit 3, as for a full disk)."""
    if exc.errno != errno.EBADF:
        return False
    try:
        flags = fcntl.fcntl(sys.stdout.fileno(), fcntl.F_GETFL)
    except (OSError, ValueError, AttributeError):  # no usable stdout at all
        return False
    return flags & os.O_ACCMODE == os.O_RDONLY


def _internal_error() -> int:
    """Print the traceback of the exception being handled; exit 4 (a bug, not a verdict)."""
    import traceback  # noqa: PLC0415 - only for a bug

    traceback.print_exc(file=sys.stderr)
    _err().print(
        "internal error: agc failed unexpectedly; this is a bug, not a verdict",
        markup=False,
    )
    return int(ExitCode.INTERNAL)


class _NoStore:
    """No store is at stake (the command reads no store): key locations are not judged."""


NO_STORE: Final = _NoStore()


def trusted_keys_from(
    paths: list[Path] | None,
    *,
    quiet: bool = False,
    store: str | os.PathLike[str] | _NoStore | None = NO_STORE,
) -> Mapping[str, Ed25519PublicKey] | None:
    """The trusted keys of ``--trusted-key`` (files or folders) and ``$AGC_TRUSTED_KEYS``;
    ``None`` when neither is given. Skipped private keys are noted on stderr, and so is
    a trusted key inside ``store`` (the command's store folder, ``None`` for the default
    one), unless ``quiet``: whoever can write the store could add a key there."""
    folder = os.environ.get("AGC_TRUSTED_KEYS")
    if not paths and not folder:
        return None

    def note(text: str) -> None:
        if not quiet:
            _err().print(f"note: {text}", markup=False)

    from agc.integrity import load_trusted_keys  # noqa: PLC0415 - cryptography

    named = [*(paths or []), *([Path(folder)] if folder else [])]
    keys = load_trusted_keys(paths or [], folder=Path(folder) if folder else None, on_note=note)
    if not quiet and not isinstance(store, _NoStore):
        from agc.flows import resolve_store  # noqa: PLC0415 - the store layer, not for --help

        for inside in keys_inside_store(named, store):
            _err().print(
                f"warning: trusted key {inside} is inside the store {resolve_store(store)}: "
                "whoever can write the store can add or replace a trusted key there; keep "
                "trusted keys outside it (e.g. ~/.config/agc/keys)",
                markup=False,
            )
    return keys


def keys_inside_store(paths: list[Path], store: str | os.PathLike[str] | None) -> list[Path]:
    """The key files and folders of ``paths`` that lie inside the store folder ``store``
    (``None``: the default store), symlinks resolved; none for a store that is not a
    folder (``s3://``).

    Raises:
        UsageError: an ``s3://`` URL that is not valid.
    """
    from agc.flows import open_store  # noqa: PLC0415 - the store layer, not for --help

    folder = open_store(store).folder
    if folder is None:
        return []
    root = folder.resolve()
    inside = []
    for path in paths:
        real = path.expanduser().resolve()
        if real == root or root in real.parents:
            inside.append(path)
    return inside
