"""Reads inferred from shell commands (docs/ledger.md, "Inferred reads"): a labelled
corpus of read and non-read commands, with the known limits labelled as reads the
parser misses, and hypothesis-generated file names under every quoting a shell reads.

``precision_recall()`` gives the corpus figures: precision must stay 1.0 (no command
is ever said to read a file it does not read); the misses are exactly the documented
limits.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agc.ledger._shell_reads import MAX_SCRIPT_CHARS, inferred_reads

REACHES_INSIDE = {
    "agc.ledger._shell_reads": "the read inference from shell scripts, one script at a time",
}

# (command, the files it really prints or summarizes, the files agc infers)
# The third member differs from the second only for a documented limit.
CORPUS: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    # reads
    ("cat README.md", ("README.md",), ("README.md",)),
    ("sed -n 1,80p docs/gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("sed -n '1,80p' docs/gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("sed 's/a/b/' notes.txt", ("notes.txt",), ("notes.txt",)),
    ("sed -e 's/a/b/' -e 's/c/d/' notes.txt", ("notes.txt",), ("notes.txt",)),
    ("head README.md", ("README.md",), ("README.md",)),
    ("head -n 20 README.md", ("README.md",), ("README.md",)),
    ("head -20 README.md", ("README.md",), ("README.md",)),
    ("head -n20 a.md b.md", ("a.md", "b.md"), ("a.md", "b.md")),
    ("tail -n 5 log.txt", ("log.txt",), ("log.txt",)),
    ("tail -f log.txt", ("log.txt",), ("log.txt",)),
    ("nl -ba src/main.py", ("src/main.py",), ("src/main.py",)),
    ("nl -b a src/main.py", ("src/main.py",), ("src/main.py",)),
    ("less docs/gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("more docs/gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("wc -l docs/gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("wc -l < docs/gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("grep -n TODO src/main.py", ("src/main.py",), ("src/main.py",)),
    ("grep -e foo -e bar src/main.py", ("src/main.py",), ("src/main.py",)),
    ("grep -A 3 'def main' src/main.py", ("src/main.py",), ("src/main.py",)),
    ("rg -n 'enemy' docs/gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("rg -C 2 -t md enemy docs/gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("ag enemy docs/gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("awk '{print $1}' data.csv", ("data.csv",), ("data.csv",)),
    ("awk -F, -v n=2 '{print $n}' data.csv", ("data.csv",), ("data.csv",)),
    ("awk -f prog.awk data.csv", ("data.csv",), ("data.csv",)),
    ("bat docs/gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("batcat -r 1:40 docs/gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("jq . package.json", ("package.json",), ("package.json",)),
    ("jq -r --arg k v '.[$k]' package.json", ("package.json",), ("package.json",)),
    ("yq e '.name' config.yml", ("config.yml",), ("config.yml",)),
    ("yq '.name' config.yml", ("config.yml",), ("config.yml",)),
    ("cat 'docs/my gdd.md'", ("docs/my gdd.md",), ("docs/my gdd.md",)),
    ('cat "docs/my gdd.md"', ("docs/my gdd.md",), ("docs/my gdd.md",)),
    ("cat docs/my\\ gdd.md", ("docs/my gdd.md",), ("docs/my gdd.md",)),
    ("cd docs && cat gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    ("cd docs; sed -n 1,40p gdd.md", ("docs/gdd.md",), ("docs/gdd.md",)),
    (
        "(cd docs && cat gdd.md); cat README.md",
        ("docs/gdd.md", "README.md"),
        ("docs/gdd.md", "README.md"),
    ),
    ("cat README.md | head -5", ("README.md",), ("README.md",)),
    ("cat README.md 2>/dev/null || true", ("README.md",), ("README.md",)),
    ("cat README.md 2>&1", ("README.md",), ("README.md",)),
    ("LC_ALL=C grep -n x a.txt", ("a.txt",), ("a.txt",)),
    ("env LC_ALL=C cat a.txt", ("a.txt",), ("a.txt",)),
    ("timeout 5 cat a.txt", ("a.txt",), ("a.txt",)),
    ("sudo -u app cat a.txt", ("a.txt",), ("a.txt",)),
    ("/bin/cat a.txt", ("a.txt",), ("a.txt",)),
    ("bash -lc 'cat a.txt'", ("a.txt",), ("a.txt",)),
    ("ls && cat a.txt", ("a.txt",), ("a.txt",)),
    ("cat a.txt # and b.txt", ("a.txt",), ("a.txt",)),
    ("cat -- -odd.md", ("-odd.md",), ("-odd.md",)),
    ("while read l; do echo $l; done < list.txt", ("list.txt",), ("list.txt",)),
    ("echo $(cat version.txt)", ("version.txt",), ("version.txt",)),
    # reads the parser cannot see (documented limits)
    ("cat docs/*.md", ("docs/gdd.md",), ()),  # a glob: needs the disk
    ("cat $GDD", ("docs/gdd.md",), ()),  # an expansion
    ('cat "$DIR/gdd.md"', ("docs/gdd.md",), ()),
    ("python -c 'print(open(\"gdd.md\").read())'", ("gdd.md",), ()),  # an interpreter
    ("xargs cat < files.txt", ("files.txt", "gdd.md"), ("files.txt",)),
    ("find docs -name gdd.md -exec cat {} +", ("docs/gdd.md",), ()),
    ("cd $(git rev-parse --show-toplevel) && cat gdd.md", ("gdd.md",), ()),
    # not reads
    ("cat > notes.md <<'EOF'\n# title\ncat secret.md\nEOF", (), ()),
    ("cat a.md > b.md", (), ()),  # copied, not shown
    ("cat a.md >> b.md", (), ()),
    ("cat a.md > /dev/null", (), ()),
    ("head -5 a.md &> out.txt", (), ()),
    ("tee notes.md", (), ()),
    ("echo x | tee notes.md", (), ()),
    ("sed -i 's/a/b/' notes.md", (), ()),
    ("sed -i.bak -n 1p notes.md", (), ()),
    ("echo x > notes.md", (), ()),
    ("printf '%s' x >> notes.md", (), ()),
    ("rm notes.md", (), ()),
    ("rm -rf build", (), ()),
    ("cp a.md b.md", (), ()),
    ("mv a.md b.md", (), ()),
    ("touch a.md", (), ()),
    ("ls docs", (), ()),
    ("stat a.md", (), ()),
    ("sha256sum a.md", (), ()),
    ("file a.md", (), ()),
    ("grep -l TODO a.md", (), ()),
    ("grep -c TODO a.md", (), ()),
    ("grep -q TODO a.md && echo yes", (), ()),
    ("rg --files docs", (), ()),
    ("rg -l enemy docs/gdd.md", (), ()),
    ("mkdir -p game && cd game && touch index.html", (), ()),
    ("git diff a.md", (), ()),
    ("echo 'cat a.md'", (), ()),
    ('echo "cat a.md"', (), ()),
    ("cat 'unterminated", (), ()),
    ("cd ~ && cat a.md", (), ()),  # the folder cannot be known
    ("cd - && cat a.md", (), ()),
    ("cat", (), ()),
    ("cat -", (), ()),
    ("grep foo", (), ()),
    ("sed -n 1p", (), ()),
    ("jq .", (), ()),
]


def precision_recall() -> tuple[float, float, int, int]:
    """``(precision, recall, true positives, reads in the corpus)`` of the inference,
    counted per (command, file)."""
    inferred = truth = hits = 0
    for command, real, _ in CORPUS:
        got = set(inferred_reads(command))
        inferred += len(got)
        truth += len(real)
        hits += len(got & set(real))
    return (hits / inferred if inferred else 1.0), (hits / truth if truth else 1.0), hits, truth


@pytest.mark.parametrize(("command", "expected"), [(c, e) for c, _, e in CORPUS])
def test_corpus_command_infers_the_labelled_reads(command: str, expected: tuple[str, ...]) -> None:
    assert inferred_reads(command) == expected


def test_the_corpus_has_no_false_read_and_misses_only_the_documented_limits() -> None:
    precision, recall, _, _ = precision_recall()
    assert precision == 1.0
    missed = [c for c, real, _ in CORPUS if set(real) - set(inferred_reads(c))]
    assert len(missed) == 7
    assert recall < 1.0


# -- generated names under every quoting ------------------------------------------------

_NAME = st.text(
    alphabet=st.characters(
        codec="utf-8",
        exclude_categories=("Cc", "Cs", "Zl", "Zp"),
        exclude_characters="/",
    ),
    min_size=1,
    max_size=20,
).filter(lambda s: not s.startswith("-") and s not in {".", ".."})

READ_TEMPLATES = [
    "cat {f}",
    "sed -n 1,80p {f}",
    "head -n 3 {f}",
    "tail {f}",
    "nl -ba {f}",
    "wc -l {f}",
    "rg -n pattern {f}",
    "grep -e 'a b' {f}",
    "awk '{{print}}' {f}",
    "jq -r .x {f}",
    "less {f} | cat",
    "LANG=C cat {f} 2>/dev/null",
    "wc -c < {f}",
]
WRITE_TEMPLATES = [
    "cat > {f}",
    "cat a.md > {f}",
    "tee {f}",
    "sed -i s/a/b/ {f}",
    "echo x > {f}",
    "rm {f}",
    "cp {f} b.md",
    "cat {f} > b.md",
    "touch {f}",
    "echo {f}",
]


def _quote(name: str, style: int) -> str:
    if style == 0:
        return shlex.quote(name)
    if style == 1:  # double quotes
        return '"' + "".join("\\" + c if c in '"\\$`' else c for c in name) + '"'
    # backslash before every character a shell treats specially
    return "".join(c if c.isalnum() or c in "._-+,@%:=" else "\\" + c for c in name)


@given(name=_NAME, style=st.integers(0, 2), template=st.sampled_from(READ_TEMPLATES))
@example(name="~x", style=0, template="cat {f}")  # a quoted ~ is no home folder
@example(name="{a,b}", style=2, template="cat {f}")  # an escaped brace is no expansion
def test_a_read_of_any_name_under_any_quoting_is_inferred(
    name: str, style: int, template: str
) -> None:
    if template.startswith("awk") and "=" in name and name.split("=", maxsplit=1)[0].isidentifier():
        return  # awk reads a NAME=value operand as an assignment (POSIX awk), not a file
    command = template.format(f=_quote(name, style))
    assert name in inferred_reads(command)
    # the same inside the shell wrapper Codex reports, and after a cd
    assert name in inferred_reads(f"bash -lc {shlex.quote(command)}")
    assert f"docs/{name}" in inferred_reads(f"cd docs && {command}")


@given(name=_NAME, style=st.integers(0, 2), template=st.sampled_from(WRITE_TEMPLATES))
def test_a_write_or_other_use_of_any_name_is_never_a_read(
    name: str, style: int, template: str
) -> None:
    command = template.format(f=_quote(name, style))
    assert name not in inferred_reads(command)


@given(st.text(max_size=200))
def test_any_text_is_parsed_without_error(text: str) -> None:
    reads = inferred_reads(text)
    assert all(isinstance(r, str) and r for r in reads)


def test_a_command_over_the_limit_is_not_parsed() -> None:
    command = "cat a.md; " + "x" * MAX_SCRIPT_CHARS
    assert inferred_reads(command[:MAX_SCRIPT_CHARS]) == ("a.md",)
    assert inferred_reads(command) == ()


# -- the beginning of a longer command (its end cut off) ----------------------------------


def test_no_beginning_of_a_corpus_command_names_a_file_it_does_not_read() -> None:
    """Every beginning of every corpus command (and of it after a whole ``cat
    first.md;``), read with ``whole=False``: each file inferred is one the whole
    command reads. Read as whole, ``cat README`` of ``cat README.md`` would name
    ``README`` and ``cat a.md &`` of ``cat a.md &> out`` would name ``a.md``."""
    for command, real, _ in CORPUS:
        for text in (command, f"cat first.md; {command}"):
            truth = set(real) | ({"first.md"} if text != command else set())
            for end in range(len(text) + 1):
                got = set(inferred_reads(text[:end], whole=False))
                assert got <= truth, (text, end, got)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cat a.md && cat b.md", ("a.md",)),  # the last command may have lost its end
        ("cat a.md && cat b.md\n", ("a.md", "b.md")),  # a newline ends it
        ("cat a.md &", ()),  # "&" of "&>": the output may go to a file
        ("cat a.md & ", ("a.md",)),  # "&" then a space: run in the background
        ("cat a.md |", ()),
        ("cat a.md | wc -l", ("a.md",)),
        ("cat a.md >", ()),
    ],
)
def test_a_cut_command_keeps_the_reads_of_its_whole_commands(
    text: str, expected: tuple[str, ...]
) -> None:
    assert inferred_reads(text, whole=False) == expected


def test_the_corpus_beginnings_still_find_reads() -> None:
    """Not vacuous: a beginning that holds a whole read command and its newline infers
    what the whole command infers."""
    for command, _, inferred in CORPUS:
        assert inferred_reads(f"{command}\n", whole=False) == inferred, command
