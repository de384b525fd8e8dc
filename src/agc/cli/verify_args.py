"""The one argument grammar of ``agc-verify`` and ``agc verify``.

Every invocation is parsed here, with the standard library's :mod:`argparse` (a few
milliseconds, where typer and rich take tens: ``agc-verify`` runs once per run in CI).
:data:`PARAMS` is the single table of the arguments: the parser is built from it, and
so is the typer command (:mod:`agc.cli.verify`) that only renders ``--help``, answers
``--version`` and shell completion, so help and parsing cannot drift apart. The parser
follows click's rules where argparse differs (an option that takes a value takes the
next argument whatever it looks like; no abbreviations; the last of a repeated option
wins) and words its refusals as click does, so that ``agc-verify`` reads like every
other agc command.

A list made only of the table's options, each spelt out (``--json``, ``-q``,
``--store DIR`` or ``--store=DIR``), and at most one run id is read by a scan of the
same table (:func:`_scan`) without importing argparse or building the parser, about
half of ``agc-verify``'s start-up beyond the check itself; anything else (a cluster, an
unknown option, a missing or bad value, an extra argument) goes to the parser, which
reads it or refuses it. The scan only ever answers what the parser would.
"""

# No ``from __future__ import annotations``: a named tuple's field annotations given as
# strings are each compiled at import (and the first compile of a process builds the AST
# types, a few milliseconds), so the annotations here are evaluated objects; those that
# name argparse, which is imported only when the parser is built, stay strings.
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, NoReturn, TypeAlias

if TYPE_CHECKING:
    # Imported by _parser() only: a list the scan reads never loads it (see above).
    import argparse

__all__ = [
    "PARAMS",
    "ArgsError",
    "Param",
    "VerifyOptions",
    "parse",
    "rendered_by_typer",
]

Kind = Literal["argument", "flag", "value", "values", "version"]
_Converter: TypeAlias = type[Any]  # the field named ``type`` hides the builtin in Param


class Param(NamedTuple):
    """One argument of the grammar (a named tuple, not a dataclass: quicker to define
    at each start of ``agc-verify``).

    Attributes:
        dest: the field of :class:`VerifyOptions` (and the command function's name).
        names: the option's spellings, long first (empty for the run id argument).
        kind: ``argument`` (the optional run id), ``flag`` (no value), ``value`` (one
            value; the last given wins), ``values`` (repeatable), ``version``.
        type: what a value is converted to: ``str``, ``Path`` or ``int``.
        help: the option's help line.
        metavar: the value's name in the help (``None``: the type's, as typer names it).
        minimum: the least value of an ``int``.
        show_default: whether the help shows the default (typer's rule for flags).
    """

    dest: str
    names: tuple[str, ...]
    kind: Kind
    help: str
    type: _Converter = str
    metavar: str | None = None
    minimum: int | None = None
    show_default: bool = True


STORE_HELP: Final = "Store folder or s3://bucket/prefix (default: $AGC_HOME, else ~/.agc)."

# In the order of the help.
PARAMS: Final[tuple[Param, ...]] = (
    Param("run_id", (), "argument", "The run id to verify (omit with --all).", show_default=False),
    Param("store", ("--store",), "value", STORE_HELP, type=Path, show_default=False),
    Param("as_json", ("--json",), "flag", "Print the report as JSON on stdout."),
    Param("all_runs", ("--all",), "flag", "Check every run of the store and the chain."),
    Param(
        "trusted_key",
        ("--trusted-key",),
        "values",
        "Trusted Ed25519 public key (PEM), or a folder of them (private keys in it are "
        "skipped); repeatable. Also: $AGC_TRUSTED_KEYS folder.",
        type=Path,
        metavar="<path>",
        show_default=False,
    ),
    Param(
        "require_signature",
        ("--require-signature",),
        "flag",
        "A run without a valid signature fails (implied by any trusted key).",
    ),
    Param(
        "allow_unsigned",
        ("--allow-unsigned",),
        "flag",
        "With trusted keys: let unsigned runs pass (signed ones are still checked).",
    ),
    Param(
        "allow_recovered",
        ("--allow-recovered",),
        "flag",
        "Let a run that `agc recover` sealed with bytes no crash checkpoint vouched for "
        "pass (its `recovered` finding is then a warning).",
    ),
    Param(
        "expect_head",
        ("--expect-head",),
        "value",
        "With --all: fail unless the chain contains this head digest (64 hex).",
        show_default=False,
    ),
    Param(
        "turn_file",
        ("--turn-file",),
        "value",
        "Check a turn ledger file (.agent/runtime/direct-codex/turns/<id>.jsonl).",
        type=Path,
        show_default=False,
    ),
    Param("quiet", ("--quiet", "-q"), "flag", "Print only what failed (nothing if all is well)."),
    Param("status", ("--status",), "flag", "Print nothing; the exit code is the verdict."),
    Param("version", ("--version",), "version", "Print the version and exit."),
    Param(
        "jobs",
        ("--jobs", "-j"),
        "value",
        "With --all: check runs in N processes (default: every usable core for a store "
        "of 512 runs or more, else 1; the report is the same).",
        type=int,
        minimum=1,
        show_default=False,
    ),
    Param(
        "scheduler",
        ("--scheduler",),
        "value",
        "With --all: run the per-run checks on this Dask scheduler (tcp://HOST:PORT).",
        show_default=False,
    ),
    Param(
        "inventory",
        ("--inventory",),
        "value",
        "With --all on s3://: the run list from this S3 Inventory manifest.json.",
        show_default=False,
    ),
    Param(
        "retention_days",
        ("--retention-days",),
        "value",
        "s3:// stores: every object must be retained at least N days (default: the "
        "bucket's default retention).",
        type=int,
        minimum=1,
        show_default=False,
    ),
    Param(
        "retention_mode",
        ("--retention-mode",),
        "value",
        "With --retention-days: COMPLIANCE or GOVERNANCE.",
    ),
)

# Handled by the typer command alone: help, and typer's shell completion options.
_HELP: Final = ("-h", "--help")
_COMPLETION: Final = ("--install-completion", "--show-completion")


class VerifyOptions(NamedTuple):
    """What an invocation asks for, one field per :data:`PARAMS` entry (``version``
    and help are answered before a command runs)."""

    run_id: str | None = None
    store: Path | None = None
    as_json: bool = False
    all_runs: bool = False
    trusted_key: list[Path] | None = None
    require_signature: bool = False
    allow_unsigned: bool = False
    allow_recovered: bool = False
    expect_head: str | None = None
    turn_file: Path | None = None
    quiet: bool = False
    status: bool = False
    jobs: int | None = None
    scheduler: str | None = None
    inventory: str | None = None
    retention_days: int | None = None
    retention_mode: str = "COMPLIANCE"


class ArgsError(Exception):
    """The arguments do not follow the grammar (exit 2); ``message`` as click words it
    ("No such option: --jsn", "Option '--store' requires an argument." …).

    Attributes:
        about_option: an option given without its value or with a value it does not
            take (click prints no usage line above those).
    """

    def __init__(self, message: str, *, about_option: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.about_option = about_option


def rendered_by_typer(args: Sequence[str]) -> bool:
    """Whether ``args`` ask for what the typer command answers, not for a check: no
    argument at all (the help, exit 2), ``-h``/``--help``, ``--version`` or a shell
    completion option. The typer command parses such a list itself (a bad option next
    to ``--help`` is refused, as click refuses it)."""
    if not args:
        return True
    options, _ = _split(args)
    words = {option.partition("=")[0] for option in options}
    words.update(name for option in options for name in _cluster(option))
    return bool(words & {*_HELP, "--version", *_COMPLETION})


def _cluster(option: str) -> list[str]:
    """The short options a cluster such as ``-qh`` names, as click reads it: each
    character in turn, up to the first that takes a value (the rest is its value) or
    that is no option (click refuses it there); ``[]`` for anything else."""
    if option[:1] != "-" or option[1:2] in ("", "-") or len(option) <= 2:
        return []
    names: list[str] = []
    for char in option[1:]:
        name = f"-{char}"
        names.append(name)
        param = _BY_NAME.get(name)
        if name not in _HELP and (param is None or param.kind in ("value", "values")):
            break
    return names


def _split(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(options, after)``: the arguments before the ``--`` that ends the options, each
    option that takes a value joined with its value (``--store X`` -> ``--store=X``,
    ``-j 2`` -> ``-j2``), and the arguments after that ``--``. As click, an option that
    takes a value takes the next argument whatever it looks like (``--store -odd``,
    ``--store --``), where argparse would read a value that begins with ``-`` as an
    option.
    """
    options: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return options, list(args[index + 1 :])
        param = _BY_NAME.get(arg)
        cluster = _cluster(arg)
        short = _BY_NAME.get(cluster[-1]) if cluster else None
        if param is not None and param.kind in ("value", "values") and index + 1 < len(args):
            value = args[index + 1]
            options.append(f"{param.names[0]}={_DASHES if value == '--' else value}")
            index += 2
            continue
        if short is not None and short.kind in ("value", "values"):
            # As click: flags, then an option that takes the rest of the argument as its
            # value ("-j2", "-qj2"; "-j=2" is "=2"), else the next argument ("-qj 2").
            flags, value = arg[: len(cluster)], arg[len(cluster) + 1 :]
            if not value and index + 1 < len(args):
                value = args[index + 1]
                index += 1
            if value:
                options.extend([flags] if len(flags) > 1 else [])
                options.append(f"{short.names[0]}={_DASHES if value == '--' else value}")
                index += 1
                continue
        options.append(arg)
        index += 1
    return options, []


def _unknown_option(arg: str) -> str | None:
    """The name click refuses in ``arg`` (one argument as :func:`_split` left it) as no
    such option: ``--jsn`` in ``--jsn=1``, ``-x`` in ``-qx``; ``None`` for a known
    option or a run id."""
    if arg[:1] != "-" or arg == "-":
        return None
    known = {*_BY_NAME, *_HELP}
    if arg.startswith("--"):
        name = arg.partition("=")[0]
        return None if name in known else name
    cluster = _cluster(arg) or [arg]
    return None if cluster[-1] in known else cluster[-1]


def _option_names(param: Param) -> str:
    """The option as click's messages name it: ``'--jobs' / '-j'``."""
    return " / ".join(f"'{name}'" for name in param.names)


class _BadValueError(ValueError):
    """A value that does not convert (its message as click words it)."""


def _convert(values: dict[str, Any], options: list[str]) -> None:
    """Convert the values ``values`` holds as strings (by field), as click does: each
    option in the order it was first given, its winning value only (all of a repeatable
    one).

    Raises:
        ArgsError: a value that is not a valid integer or out of range.
    """
    order: list[Param] = []
    for option in options:
        names = _cluster(option) or [option.partition("=")[0]]
        order.extend(p for p in (_BY_NAME.get(n) for n in names) if p and p not in order)
    for param in order:
        if param.kind not in ("value", "values"):
            continue
        convert = _typed(param)
        value = values[param.dest]
        try:
            if isinstance(value, list):
                value = [convert("--" if item == _DASHES else item) for item in value]
            elif value is not None:
                value = convert("--" if value == _DASHES else value)
        except _BadValueError as exc:
            raise ArgsError(f"Invalid value for {_option_names(param)}: {exc}") from None
        values[param.dest] = value


# A value that is exactly "--" (``--store --``), which argparse would drop from a value.
_DASHES: Final = "\x00--"


def _typed(param: Param) -> Any:
    if param.type is int:

        def to_int(text: str) -> int:
            try:
                value = int(text)
            except ValueError:
                kind = "int range" if param.minimum is not None else "int"
                raise _BadValueError(f"{text!r} is not a valid {kind}.") from None
            if param.minimum is not None and value < param.minimum:
                raise _BadValueError(f"{value} is not in the range x>={param.minimum}.")
            return value

        return to_int
    return param.type


_DEFAULTS: Final = VerifyOptions._field_defaults


def _parser() -> "argparse.ArgumentParser":
    """The parser of :data:`PARAMS`. Values stay strings: click reads the whole list
    before it converts a value, and converts only the value that wins (the last of a
    repeated option), so :func:`_convert` does that afterwards."""
    import argparse  # noqa: PLC0415 - only for a list the scan cannot read (see above)

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise ArgsError(message)

        def _get_formatter(self) -> argparse.HelpFormatter:
            # typer renders the help; argparse formats only to check each option as it
            # is added, and a width given spares it shutil (and the compression modules
            # shutil loads).
            return argparse.HelpFormatter(self.prog, width=80)

    parser = _Parser("agc-verify", add_help=False, allow_abbrev=False, exit_on_error=False)
    for param in PARAMS:
        if param.kind == "argument":
            parser.add_argument(param.dest, nargs="?", default=None)
        elif param.kind in ("flag", "version"):
            parser.add_argument(*param.names, dest=param.dest, action="store_true")
        else:
            parser.add_argument(
                *param.names,
                dest=param.dest,
                type=str,
                action="append" if param.kind == "values" else "store",
                default=_DEFAULTS[param.dest],
            )
    parser.add_argument(*_HELP, dest="help", action="store_true")
    return parser


_BY_NAME: Final = {name: param for param in PARAMS for name in param.names}


def parse(args: Sequence[str], *, known: tuple[str, ...] = ()) -> VerifyOptions:
    """The options ``args`` give (without help, version or completion: see
    :func:`rendered_by_typer`); ``known`` names the program's other long options (its
    shell completion options), which an unknown option's message may suggest.

    Raises:
        ArgsError: an unknown option, an option without its value or with a value it
            does not take, a value that is not a valid integer or out of range, more
            than one run id.
    """
    options, after = _split(args)
    scanned = _scan(options, after)
    if scanned is not None:
        return scanned
    import argparse  # noqa: PLC0415 - as _parser()

    # As click reads the list: from the left, and an unknown option ends it there (what
    # comes after it, a missing value or a bad one, is never reached). argparse would
    # take "-1" for a run id.
    for index, option in enumerate(options):
        name = _unknown_option(option)
        if name is not None:
            try:
                _parser().parse_known_args(options[:index])
            except argparse.ArgumentError as exc:
                raise _click_words(exc, options[:index]) from None
            raise ArgsError(_no_such_option(name, known))
    # The arguments after "--" are never options (click's rule): argparse is not shown
    # them, whatever they look like. As click, a list that cannot be read (an unknown
    # option, one without its value) is refused before any value is converted.
    try:
        namespace, extra = _parser().parse_known_args(options)
    except argparse.ArgumentError as exc:
        raise _click_words(exc, options) from None
    values = vars(namespace)
    _convert(values, options)
    if values["run_id"] is None and after:
        values["run_id"], after = after[0], after[1:]
    extra = [*extra, *after]
    if extra:
        raise ArgsError(f"Got unexpected extra argument(s) ({' '.join(extra)})")
    values.pop("help", None)
    values.pop("version", None)
    return VerifyOptions(**values)


def _scan(options: list[str], after: list[str]) -> VerifyOptions | None:
    """The options of a list that needs no parser (``options`` and ``after`` as
    :func:`_split` left them): each option one of :data:`PARAMS`' spellings, a flag
    without a value, an option that takes one as ``--name=VALUE``; at most one run id
    (an argument that does not begin with ``-``, or the first after ``--``); every value
    converts. ``None`` for any other list, which the parser then reads or refuses: the
    scan never answers where the parser would answer otherwise."""
    values: dict[str, Any] = {}
    run_id: str | None = None
    for option in options:
        if option[:1] != "-":
            if run_id is not None:
                return None  # an extra argument: the parser words the refusal
            run_id = option
            continue
        name, equals, value = option.partition("=")
        param = _BY_NAME.get(name)
        if param is None:
            return None
        if param.kind == "flag" and not equals:
            values[param.dest] = True
        elif param.kind == "value" and equals:
            values[param.dest] = value
        elif param.kind == "values" and equals:
            values.setdefault(param.dest, []).append(value)
        else:
            return None
    if after:
        if run_id is not None or len(after) > 1:
            return None
        run_id = after[0]
    values["run_id"] = run_id
    try:
        _convert(values, [option for option in options if option[:1] == "-"])
    except ArgsError:
        return None
    return VerifyOptions(**values)


def _no_such_option(name: str, known: tuple[str, ...]) -> str:
    if not name.startswith("--"):
        return f"No such option: {name}"
    import difflib  # noqa: PLC0415 - only for a refusal

    longs = sorted({*(n for n in _BY_NAME if n.startswith("--")), "--help", *known})
    close = difflib.get_close_matches(name, longs)
    if not close:
        return f"No such option: {name}"
    return f"No such option: {name} (Possible options: {', '.join(sorted(close))})"


def _click_words(exc: "argparse.ArgumentError", options: list[str]) -> "ArgsError":
    """argparse's refusal of one option, as click words it."""
    names = (exc.argument_name or "").split("/")
    param = next((_BY_NAME[name] for name in names if name in _BY_NAME), None)
    if param is None:
        return ArgsError(exc.message)
    if exc.message.startswith(("expected one argument", "ignored explicit argument")):
        given = param.names[0]
        for option in reversed(options):
            if option.startswith("--"):
                name = option.partition("=")[0]
            else:
                name = option[:2]
                unknown = [f"-{char}" for char in option[1:] if f"-{char}" not in _BY_NAME]
                if name in param.names and len(option) > 2 and unknown:
                    return ArgsError(f"No such option: {unknown[0]}")
                cluster = _cluster(option)
                if cluster and cluster[-1] in param.names:  # "-qj": the cluster's "-j"
                    name = cluster[-1]
            if name in param.names:
                given = name
                break
        if exc.message.startswith("expected"):
            return ArgsError(f"Option '{given}' requires an argument.", about_option=True)
        return ArgsError(f"Option '{given}' does not take a value.", about_option=True)
    return ArgsError(f"Invalid value for {_option_names(param)}: {exc.message}")
