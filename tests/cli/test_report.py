"""``agc report``: the command, and its HTML page in a real headless browser.

The browser is Debian's ``chromium`` (``.ci/run`` installs it); without it the browser
tests skip with the reason. Chromium runs headless, without sandbox, GPU, background
networking, component updates, sync or first-run tasks, with a fresh profile per run,
and logs the page's console to stderr (``--enable-logging=stderr --v=0``).

Golden artefacts (``AGC_UPDATE_GOLDEN=1`` rewrites them): the structure of the DOM that
chromium built from the page of a tampered store (elements with their ids, classes and
data attributes, no text) and a screenshot, compared by its size and by not being blank,
never pixel by pixel.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from agc.cli.app import main
from agc.exitcodes import ExitCode
from tests.conftest import fixed_clock, run_agc_to_a_gone_reader, write_run
from tests.integrity.evidence_helpers import transcript_path

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
EPOCH = "1764460800"
WINDOW = (1200, 1600)
KEPT_ATTRIBUTES = (
    "id",
    "class",
    "data-run",
    "data-verdict",
    "data-verdict-word",
    "data-verdict-category",
    "data-count",
    "data-event",
    "data-code",
    "data-artifact",
    "data-complete",
)


def _tampered_store(store: Path) -> None:
    for offset, run_id in enumerate(("alpha", "beta", "gamma")):
        write_run(store, run_id, clock=fixed_clock(1_764_460_800_000 + offset * 60_000))
    path = transcript_path(store, "beta")
    path.write_bytes(path.read_bytes().replace(b"hi", b"HI"))


def _report(store: Path, *argv: str, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    return main(["report", "--store", str(store), *argv])


# -- the command --------------------------------------------------------------------------


def test_report_writes_html_and_csv_and_exits_like_verify(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _tampered_store(store)
    page, sheet = tmp_path / "audit.html", tmp_path / "audit.csv"
    code = _report(
        store, "--all", "--html", str(page), "--csv", str(sheet), monkeypatch=monkeypatch
    )
    assert code == ExitCode.FINDINGS
    assert "INCOMPLETE (1 failing run(s): 1 modified)" in capsys.readouterr().err
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert [row[0] for row in csv.reader(io.StringIO(sheet.read_text()))][1:] == [
        "beta",
        "alpha",
        "gamma",
    ]
    # The named good runs only: complete, exit 0; to stdout with '-'.
    assert _report(store, "alpha", "gamma", "--csv", "-", monkeypatch=monkeypatch) == 0
    assert capsys.readouterr().out.count("\r\n") == 3


def test_the_csv_matches_its_golden_file(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CSV of a store with a tampered run, byte for byte (``AGC_UPDATE_GOLDEN=1``
    rewrites it): the columns in their documented order, the verdict words last."""
    _tampered_store(store)
    assert _report(store, "--all", "--csv", "-", monkeypatch=monkeypatch) == ExitCode.FINDINGS
    sheet = capsys.readouterr().out.replace(str(store), "<STORE>")
    golden = GOLDEN / "report-tampered.csv"  # bytes: its CRLF line ends are the format
    if os.environ.get("AGC_UPDATE_GOLDEN"):
        golden.write_bytes(sheet.encode())
    assert sheet.encode() == golden.read_bytes(), "AGC_UPDATE_GOLDEN=1 rewrites it"
    rows = list(csv.DictReader(io.StringIO(sheet)))
    named = [(r["run_id"], r["verdict"], r["verdict_word"], r["verdict_category"]) for r in rows]
    assert named == [
        ("beta", "incomplete", "modified", "tampered"),
        ("alpha", "complete", "complete", "ok"),
        ("gamma", "complete", "complete", "ok"),
    ]


def test_report_never_overwrites_unless_forced(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(store)
    page = tmp_path / "audit.html"
    page.write_text("mine")
    assert _report(store, "--html", str(page), monkeypatch=monkeypatch) == ExitCode.USAGE
    assert "--force" in capsys.readouterr().err
    assert page.read_text() == "mine"
    assert _report(store, "--html", str(page), "--force", monkeypatch=monkeypatch) == 0
    assert page.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "force"])
def test_html_and_csv_to_one_file_is_refused_before_anything_is_written(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    force: list[str],
) -> None:
    write_run(store)
    same = tmp_path / "audit.out"
    argv = ["--html", str(same), "--csv", str(tmp_path / "." / "audit.out"), *force]
    assert _report(store, *argv, monkeypatch=monkeypatch) == ExitCode.USAGE
    assert "both name" in capsys.readouterr().err
    assert not same.exists()


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["r1", "--all", "--csv", "-"],
        ["r1", "--expect-head", "a" * 64, "--csv", "-"],
        ["--all", "--expect-head", "nothex", "--csv", "-"],
        ["--html", "-", "--csv", "-"],
    ],
)
def test_report_usage_errors(store: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    write_run(store)
    assert _report(store, *argv, monkeypatch=monkeypatch) == ExitCode.USAGE


# -- in a real browser ----------------------------------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("chromium is not installed (.ci/run installs it: apt-get install chromium)")


def _browse(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            *extra,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


class _Outline(HTMLParser):
    """The element tree, one element per line: depth, tag and the kept attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.depth = 0
        self.in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            self.in_body = True
        kept = dict(attrs)
        shown = " ".join(f'{k}="{kept[k]}"' for k in KEPT_ATTRIBUTES if kept.get(k))
        if self.in_body:
            self.lines.append("  " * self.depth + (f"{tag} {shown}" if shown else tag))
        if tag not in {"meta", "br", "hr", "img", "input", "link"}:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag not in {"meta", "br", "hr", "img", "input", "link"}:
            self.depth -= 1


def _outline(dom: str) -> str:
    parser = _Outline()
    parser.feed(dom)
    return "\n".join(parser.lines) + "\n"


def _golden_text(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("AGC_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; AGC_UPDATE_GOLDEN=1 rewrites it"


def _png(data: bytes) -> tuple[int, int, int]:
    """``(width, height, distinct byte values in the image data)`` of a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, position = b"", 8
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position : position + 8])
        if kind == b"IDAT":
            idat += data[position + 8 : position + 8 + length]
        position += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


def test_the_page_renders_with_no_console_message_and_the_failing_run_first(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _chromium()
    _tampered_store(store)
    page = tmp_path / "audit.html"
    assert _report(store, "--all", "--html", str(page), monkeypatch=monkeypatch) == 1
    done = _browse(page, tmp_path / "profile-dom", "--dump-dom")
    assert done.returncode == 0, done.stderr
    assert _console(done.stderr) == []  # no error, no CSP violation, no log at all
    outline = _outline(done.stdout)
    rows = [
        line.split('data-run="')[1].split('"')[0]
        for line in outline.splitlines()
        if line.lstrip().startswith("tr ") and "data-run" in line
    ]
    assert rows == ["beta", "alpha", "gamma"]
    assert (
        'data-verdict="incomplete"'
        in outline.splitlines()[
            next(i for i, line in enumerate(outline.splitlines()) if 'data-run="beta"' in line)
        ]
    )
    _golden_text("report-tampered.dom.txt", outline)

    shot = tmp_path / "shot.png"
    size = f"--window-size={WINDOW[0]},{WINDOW[1]}"
    done = _browse(
        page, tmp_path / "profile-shot", f"--screenshot={shot}", size, "--hide-scrollbars"
    )
    assert done.returncode == 0, done.stderr
    assert _console(done.stderr) == []
    width, height, values = _png(shot.read_bytes())
    assert (width, height) == WINDOW
    assert values > 16, "the screenshot is blank"
    golden = GOLDEN / "report-tampered.png"
    if os.environ.get("AGC_UPDATE_GOLDEN"):
        shutil.copyfile(shot, golden)
    assert _png(golden.read_bytes())[:2] == (width, height)


def test_console_errors_and_blocked_loads_would_be_seen(tmp_path: Path) -> None:
    """The check above can fail: a page with a script error and a remote image (blocked
    by the same policy as the report's) shows up in the console log."""
    _chromium()
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'\">"
        "</head><body><img src='https://cdn.example.invalid/x.png'></body></html>"
    )
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><script>throw new Error('kaput')</script>")
    blocked = _console(_browse(page, tmp_path / "p1", "--dump-dom").stderr)
    assert any("Content Security Policy" in line for line in blocked)
    failed = _console(_browse(broken, tmp_path / "p2", "--dump-dom").stderr)
    assert any("kaput" in line for line in failed)


@pytest.mark.parametrize("option", ["--csv", "--html"])
def test_a_store_path_that_is_not_utf8_is_written_to_the_file_as_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    # The report names the store; a folder whose name is not UTF-8 is a lone surrogate in
    # Python (os.fsdecode). Encoding the report strictly as UTF-8 for the file raised
    # UnicodeEncodeError: "internal error", exit 4, no report. The file now holds the
    # name's own bytes, as `--csv -`/`--html -` write them to stdout.
    raw = os.fsencode(tmp_path) + b"/evidence-\xff"
    store = Path(os.fsdecode(raw))
    write_run(store, "alpha", clock=fixed_clock(1_764_460_800_000))
    target = tmp_path / ("audit" + option.replace("--", "."))
    code = _report(store, "--all", option, str(target), monkeypatch=monkeypatch)
    err = capsys.readouterr().err
    assert code == ExitCode.OK, err
    assert "internal error" not in err
    assert raw in target.read_bytes()


@pytest.mark.parametrize("option", ["--csv", "--html"])
def test_a_reader_gone_keeps_the_reports_exit_code(store: Path, option: str) -> None:
    # The read end of stdout is closed before the report is written: the EPIPE reached
    # click, whose rule for it is exit 1 (findings) for a complete store.
    write_run(store, "alpha", clock=fixed_clock(1_764_460_800_000))
    argv = ["report", "--all", "--store", str(store), option, "-"]
    done = run_agc_to_a_gone_reader(argv, {"SOURCE_DATE_EPOCH": EPOCH})
    assert (done.returncode, done.stderr) == (0, "report of 1 run(s): complete\n")
