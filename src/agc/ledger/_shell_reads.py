"""Read evidence inferred from a shell command's text, for inputs without read actions.

The Codex app-server reports what a command did as ``commandActions`` (its own
parse of the command: ``read``, ``listFiles``, ``search``). ``codex exec --json``
events and rollout files carry only the command, so a ``cat README.md`` there leaves
no read action. :func:`inferred_reads` reads the command's text the way a POSIX shell
would split it (IEEE Std 1003.1, "Shell Command Language": quoting, operators,
redirections, simple commands) and names the files that the common read commands
print or summarize. Nothing is ever executed, expanded or looked up on disk.

What counts as a read (docs/ledger.md, "Inferred reads"): the file operands of
``cat``/``tac``/``nl``/``head``/``tail``/``less``/``more``/``bat``/``wc``/``sort``/
``uniq``/``cut``/``od``/``xxd``/``hexdump``/``strings``; ``sed`` without ``-i``;
``awk``/``gawk``/``mawk``; ``grep``/``egrep``/``fgrep``/``rg``/``ag`` printing
matching lines (not with ``-l``, ``-L``, ``-c``, ``-q`` or ``--files``); ``jq`` and
``yq``; and the file of an input redirection (``< f``), for any command. Not a read:
a command whose standard output goes to a file (``cat a > b``: the content is copied,
not shown), in-place edits (``sed -i``), writes (``tee``, ``cp``, ``mv``, ``rm``,
``touch``, ``echo x > f``), hashing and metadata (``sha256sum``, ``stat``, ``file``,
``ls``) and interpreters (``python -c …``). An operand holding an expansion (``$X``,
``$(…)``, a backtick) or a glob, and every path after a ``cd`` to a folder that cannot
be known, is skipped: the parser names only what the text itself names.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_SCRIPT_CHARS", "inferred_reads"]

MAX_SCRIPT_CHARS: Final = 64 * 1024
"""A longer command is not parsed (nothing is inferred from it), as the sanitizer
cleans at most that many characters of a command."""

_MAX_NESTING: Final = 3
_OPERATORS: Final = ("&&", "||", ";;", "<<-", "<<<", "<<", ">>", ">&", "<&", "&>", ">|", "<>")
_SINGLE_OPERATORS: Final = frozenset(";&|()<>\n")
_OPERATOR_STARTS: Final = ";&|(<>"
_SEPARATORS: Final = frozenset({"&&", "||", ";", ";;", "|", "&", "\n", "(", ")"})
_REDIRECTIONS: Final = frozenset({">", ">>", ">|", "&>", "<", "<>", ">&", "<&", "<<<"})
_GLOB: Final = frozenset("*?[")
_SHELLS: Final = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_WRAPPERS: Final = frozenset({"command", "builtin", "exec", "nohup", "time", "sudo", "doas"})
_NOT_FILES: Final = frozenset({"-", "/dev/stdin", "/dev/null"})

# Options that take a value in the next word, per reader (short and long spellings).
_PLAIN: Final = frozenset(
    {"cat", "tac", "less", "more", "wc", "sort", "uniq", "od", "xxd", "hexdump", "strings"}
)
_ARG_OPTIONS: Final[dict[str, frozenset[str]]] = {
    "head": frozenset({"-n", "-c", "--lines", "--bytes"}),
    "tail": frozenset({"-n", "-c", "--lines", "--bytes", "-s", "--sleep-interval", "--pid"}),
    "nl": frozenset({"-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"}),
    "bat": frozenset(
        {
            "-l",
            "--language",
            "-r",
            "--line-range",
            "-H",
            "--highlight-line",
            "--file-name",
            "--style",
            "--theme",
            "--tabs",
            "--wrap",
            "--terminal-width",
            "-m",
            "--map-syntax",
            "--color",
            "--paging",
            "--decorations",
        }
    ),
    "cut": frozenset({"-b", "-c", "-d", "-f", "--output-delimiter"}),
    "sort": frozenset({"-k", "-t", "-o", "-S", "-T", "--key", "--field-separator"}),
    "sed": frozenset({"-l", "--line-length"}),
    "awk": frozenset({"-F", "-v", "--field-separator", "--assign"}),
    "grep": frozenset(
        {
            "-m",
            "-A",
            "-B",
            "-C",
            "-d",
            "-D",
            "--max-count",
            "--after-context",
            "--before-context",
            "--context",
            "--include",
            "--exclude",
            "--exclude-dir",
            "--color",
            "--colour",
            "--label",
            "--binary-files",
        }
    ),
    "rg": frozenset(
        {
            "-m",
            "-A",
            "-B",
            "-C",
            "-g",
            "--glob",
            "--iglob",
            "-t",
            "--type",
            "-T",
            "--type-not",
            "-M",
            "--max-columns",
            "--max-count",
            "--after-context",
            "--before-context",
            "--context",
            "-j",
            "--threads",
            "--color",
            "--colors",
            "-E",
            "--encoding",
            "--max-depth",
            "--sort",
            "--sortr",
            "-r",
            "--replace",
            "--type-add",
            "--max-filesize",
            "--ignore-file",
            "--pre",
            "--pre-glob",
        }
    ),
    "ag": frozenset(
        {
            "-m",
            "-A",
            "-B",
            "-C",
            "-G",
            "--file-search-regex",
            "--ignore",
            "--depth",
            "--max-count",
            "--after",
            "--before",
            "--context",
            "--color-match",
            "--pager",
        }
    ),
    "jq": frozenset({"--indent", "-L"}),
    "yq": frozenset({"-I", "--indent", "-o", "--output-format", "-p", "--input-format"}),
}
_ALIASES: Final = {
    "batcat": "bat",
    "egrep": "grep",
    "fgrep": "grep",
    "gawk": "awk",
    "mawk": "awk",
    "nawk": "awk",
    "gsed": "sed",
}
# readers whose first operand is a program or pattern, unless an option gave it
_PROGRAM_FIRST: Final = frozenset({"sed", "awk", "grep", "rg", "ag", "jq", "yq"})
_PROGRAM_OPTIONS: Final = frozenset(
    {"-e", "--regexp", "--expression", "-f", "--file", "--from-file"}
)
# grep-like options after which the matched lines are not printed
_NO_LINES: Final = frozenset(
    {"-l", "-L", "-c", "-q", "--files-with-matches", "--files-without-match", "--count",
     "--quiet", "--silent", "--files", "--count-matches"}
)  # fmt: skip


@dataclass
class _Word:
    text: str
    dynamic: bool = False  # holds an expansion ($, backtick) or an unquoted glob
    operator: bool = False
    io_number: bool = False  # digits written right before a redirection ("2>")


def inferred_reads(script: str, *, whole: bool = True) -> tuple[str, ...]:
    """The files ``script`` reads, as the command spells them, joined to the folder
    of an earlier ``cd`` in the same script (``cd docs && cat a.md`` -> ``docs/a.md``).

    Args:
        script: a shell command line (the script of ``bash -lc '…'``; a nested
            ``bash -c '…'`` inside it is read too, three levels at most).
        whole: ``False`` for the beginning of a longer command (its end was cut off):
            the last simple command, which the cut may have shortened (``cat READ``
            of ``cat README.md``, ``cat a`` of ``cat a > b``), is left out; the ones
            before it, ended by an operator or a newline, are whole (an operator
            ending the text may be the start of a longer one, ``&`` of ``&>``, and
            ends nothing).

    Returns:
        The paths in order, without repeats; empty when nothing is a read, the text
        cannot be split (an unterminated quote) or is over :data:`MAX_SCRIPT_CHARS`.
        Paths are not cleaned: the caller makes them project-relative or rejects them.
    """
    found: dict[str, None] = {}
    if len(script) <= MAX_SCRIPT_CHARS:
        if not whole:  # an operator at the cut may be the start of a longer one ("&" of "&>")
            script = script.rstrip(_OPERATOR_STARTS)
        for path in _reads(script, depth=0, whole=whole):
            found.setdefault(path, None)
    return tuple(found)


def _reads(script: str, *, depth: int, whole: bool = True) -> Iterator[str]:
    words = _tokenize(script)
    if words is None:
        return
    if whole:
        words.append(_Word("\n", operator=True))  # the last command ends with the text
    cwd: str | None = ""  # relative to where the command ran; None: unknown
    saved: list[str | None] = []
    command: list[_Word] = []
    for word in words:
        if not (word.operator and word.text in _SEPARATORS):
            command.append(word)
            continue
        if command:
            cwd, reads = _simple_command(command, cwd, depth=depth)
            yield from reads
            command = []
        if word.text == "(":
            saved.append(cwd)
        elif word.text == ")" and saved:
            cwd = saved.pop()


def _simple_command(
    words: list[_Word], cwd: str | None, *, depth: int
) -> tuple[str | None, list[str]]:
    """``(cwd after it, files it reads)`` for one simple command."""
    reads: list[str] = []
    argv: list[_Word] = []
    stdout_to_file = False
    index = 0
    while index < len(words):
        word = words[index]
        target = words[index + 1] if index + 1 < len(words) else None
        if word.operator and word.text in _REDIRECTIONS:
            index += 2
            if argv and argv[-1].io_number:
                fd = argv.pop().text  # "2>": the descriptor of the redirection
            else:
                fd = "0" if word.text.startswith("<") else "1"
            if target is None or target.operator:
                continue
            if word.text in {"<", "<>"} and fd == "0":
                reads.extend(_join(cwd, target))
            elif (word.text == "&>" or (word.text in {">", ">>", ">|"} and fd == "1")) and (
                target.text not in {"/dev/stdout", "/dev/tty"}
            ):
                stdout_to_file = True  # the output is not shown
            continue
        if word.operator and word.text in {"<<", "<<-"}:
            index += 2  # a here-document: its body was left out by the tokenizer
            continue
        argv.append(word)
        index += 1
    # leading NAME=value assignments and transparent wrappers
    while argv and not argv[0].dynamic and _is_assignment(argv[0].text):
        argv.pop(0)
    while argv and not argv[0].dynamic and argv[0].text in {*_WRAPPERS, "env", "timeout"}:
        name = argv.pop(0).text
        while argv and argv[0].text.startswith("-") and name in {"env", "sudo", "time"}:
            option = argv.pop(0).text
            if name == "sudo" and option in {"-u", "-g", "-C", "-D", "-h", "-p", "-U"} and argv:
                argv.pop(0)  # the option's value
        while name == "env" and argv and _is_assignment(argv[0].text):
            argv.pop(0)
        if name == "timeout" and argv:
            argv.pop(0)  # the duration
    if not argv or argv[0].dynamic:
        return cwd, reads
    name = argv[0].text.rsplit("/", 1)[-1]
    args = argv[1:]
    if name in {"cd", "pushd"}:
        return _cd(cwd, args), reads
    if name in _SHELLS and depth < _MAX_NESTING:
        for i, arg in enumerate(args[:-1]):
            if arg.text in {"-c", "-lc"} and not args[i + 1].dynamic:
                reads.extend(
                    r2
                    for r in _reads(args[i + 1].text, depth=depth + 1)
                    for r2 in _join(cwd, _Word(r))
                )
                break
        return cwd, reads
    if not stdout_to_file:
        for operand in _file_operands(_ALIASES.get(name, name), args):
            reads.extend(_join(cwd, operand))
    return cwd, reads


def _file_operands(name: str, args: list[_Word]) -> list[_Word]:
    """The file operands of reader ``name`` (empty for any other command)."""
    if name not in _PLAIN and name not in _ARG_OPTIONS:
        return []
    takes_value = _ARG_OPTIONS.get(name, frozenset())
    operands: list[_Word] = []
    program_given = name not in _PROGRAM_FIRST
    options_done = False
    skip = 0
    for arg in args:
        text = arg.text
        if skip:
            skip -= 1
            continue
        if not options_done and text == "--":
            options_done = True
            continue
        if not options_done and text.startswith("-") and len(text) > 1:
            flag = text.split("=", 1)[0]
            if name == "sed" and (flag in {"-i", "--in-place"} or flag.startswith("-i")):
                return []  # an in-place edit, not a read
            if name in {"grep", "rg", "ag"} and (
                flag in _NO_LINES or (flag[1:2] != "-" and set(flag[1:]) & set("lLcq"))
            ):
                return []
            if name in _PROGRAM_FIRST and (
                flag in {"-e", "--regexp", "--expression", "-f", "--file", "--from-file"}
                or (text[:2] in {"-e", "-f"} and name != "jq")
            ):
                program_given = True  # the program or pattern is this option's value
                skip = int(text == flag and flag in _PROGRAM_OPTIONS)
                continue
            if name == "jq" and flag in {"--arg", "--argjson", "--slurpfile", "--rawfile"}:
                skip = 2  # a name and a value
                continue
            if flag in takes_value and text == flag:
                skip = 1
            continue
        if not program_given:
            if name == "yq" and text in {"e", "eval", "ea", "eval-all"}:
                continue
            program_given = True
            continue
        if name == "awk" and _is_assignment(text):
            continue
        operands.append(arg)
    return [o for o in operands if o.text]


def _cd(cwd: str | None, args: list[_Word]) -> str | None:
    args = [a for a in args if not a.text.startswith("-") or a.text == "-"]
    if cwd is None or len(args) != 1 or args[0].dynamic or args[0].text in {"-", ""}:
        return None
    target = args[0].text
    return target if target.startswith("/") else posixpath.join(cwd, target)


def _join(cwd: str | None, word: _Word) -> list[str]:
    text = word.text
    if word.dynamic or not text or text in _NOT_FILES or text.startswith(("/dev/", "/proc/")):
        return []
    if text.startswith("/"):
        return [text]
    if cwd is None:
        return []
    if not cwd:
        return [text]
    return [posixpath.normpath(posixpath.join(cwd, text))]


def _is_assignment(text: str) -> bool:
    name, sep, _ = text.partition("=")
    return bool(sep) and name.isidentifier() and name.isascii()


def _tokenize(script: str) -> list[_Word] | None:
    """Split ``script`` into words and operators as a POSIX shell does (quote removal
    included); ``None`` for an unterminated quote. Here-document bodies are dropped;
    comments too. Expansions are not performed: a word holding one is ``dynamic``."""
    words: list[_Word] = []
    i, n = 0, len(script)
    pending_heredocs: list[str] = []
    current: list[str] | None = None
    dynamic = False

    def end_word() -> None:
        nonlocal current, dynamic
        if current is not None:
            words.append(_Word("".join(current), dynamic=dynamic))
        current, dynamic = None, False

    while i < n:
        ch = script[i]
        if current is None and ch == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        if ch in " \t":
            end_word()
            i += 1
            continue
        if ch == "\n" and pending_heredocs:
            end_word()
            words.append(_Word("\n", operator=True))
            i = _skip_heredocs(script, i + 1, pending_heredocs)
            pending_heredocs = []
            continue
        operator = next((op for op in _OPERATORS if script.startswith(op, i)), None)
        if operator is None and ch in _SINGLE_OPERATORS:
            operator = ch
        if operator is not None:
            if (
                current is not None
                and operator[0] in "<>"
                and not dynamic
                and "".join(current).isdigit()
                and script[i - 1].isdigit()
            ):
                words.append(_Word("".join(current), io_number=True))
                current = None
            end_word()
            words.append(_Word(operator, operator=True))
            i += len(operator)
            if operator in {"<<", "<<-"}:
                delimiter, i = _heredoc_word(script, i)
                if delimiter is None:
                    return None
                pending_heredocs.append(delimiter)
                words.append(_Word(delimiter))
            continue
        if current is None:
            current = []
        if ch == "\\":
            if i + 1 < n and script[i + 1] != "\n":
                current.append(script[i + 1])
            i += 2
        elif ch == "'":
            close = script.find("'", i + 1)
            if close < 0:
                return None
            current.append(script[i + 1 : close])
            i = close + 1
        elif ch == '"':
            i += 1
            while i < n and script[i] != '"':
                if script[i] == "\\" and i + 1 < n and script[i + 1] in '$`"\\\n':
                    current.append(script[i + 1])
                    i += 2
                    continue
                if script[i] in "$`":
                    dynamic = True
                current.append(script[i])
                i += 1
            if i >= n:
                return None
            i += 1
        else:
            if ch in "$`{" or ch in _GLOB or (ch == "~" and not current):
                dynamic = True  # an expansion, a glob, a tilde-prefix
            current.append(ch)
            i += 1
    end_word()
    return words


def _heredoc_word(script: str, i: int) -> tuple[str | None, int]:
    """The delimiter after ``<<`` (quotes removed) and the index after it."""
    n = len(script)
    while i < n and script[i] in " \t":
        i += 1
    start = i
    while i < n and script[i] not in " \t\n;&|<>()":
        i += 1
    raw = script[start:i]
    if not raw:
        return None, i
    return raw.replace("'", "").replace('"', "").replace("\\", ""), i


def _skip_heredocs(script: str, i: int, delimiters: list[str]) -> int:
    """Skip the bodies of ``delimiters`` starting at ``i``; the index after them."""
    for delimiter in delimiters:
        while i < len(script):
            end = script.find("\n", i)
            line = script[i:] if end < 0 else script[i:end]
            i = len(script) if end < 0 else end + 1
            if line.lstrip("\t") == delimiter:
                break
    return i
