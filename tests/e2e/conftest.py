"""Fixtures for the end-to-end suite: the pinned real clients and the model server.

``codex_bin`` / ``claude_bin`` / ``gemini_bin`` install the pinned client once per cache (see
:mod:`tests.e2e.clients`) and skip, with the reason, only when node/npm are absent; any
other install failure fails the test with npm's output. ``model_server`` starts a
scripted server per test and fails the test if a client tried to reach another host.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final, cast

import pytest

from tests.e2e.clients import (
    CACHE_DIR,
    PINNED,
    RUNTIME_DIRS,
    ClientName,
    ClientUnavailableError,
    ensure_client,
    stop_residents,
)
from tests.e2e.model_server import ModelServer, Script


def _client(name: ClientName) -> Path:
    try:
        return ensure_client(name)
    except ClientUnavailableError as exc:
        if exc.missing_tools:
            pytest.skip(str(exc))
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The pinned Codex CLI's native binary."""
    return _client("codex")


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The pinned Claude Code native binary."""
    return _client("claude")


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    """The pinned Gemini CLI's bundled script (run by the ``node`` on PATH)."""
    binary = _client("gemini")
    if shutil.which("node") is None:
        pytest.skip("node is needed to run the Gemini CLI (not found on PATH)")
    return binary


@pytest.fixture(autouse=True)
def _no_resident_capture_left() -> Iterator[None]:
    """After each test, stop the resident capture processes agc's hook client started
    in the sandboxes the test made (each sandbox has its own socket folder,
    ``$XDG_RUNTIME_DIR``), rather than leave them to their idle exit; a module's shared
    sandboxes are stopped at the module's end (:func:`_no_resident_capture_left_by_module`)."""
    made_before = len(RUNTIME_DIRS)
    yield
    for folder in RUNTIME_DIRS[made_before:]:
        stop_residents(folder)


@pytest.fixture(scope="module", autouse=True)
def _no_resident_capture_left_by_module() -> Iterator[None]:
    """At a module's end, stop the resident capture processes of every sandbox still
    open (those of module-scoped fixtures, torn down before this)."""
    yield
    for folder in list(RUNTIME_DIRS):
        stop_residents(folder)


@pytest.fixture
def model_server(tmp_path: Path) -> Iterator[Callable[[Script], ModelServer]]:
    """A factory: ``model_server(script)`` starts a server for this test.

    At teardown every server is stopped, and the test fails if any client tried to
    reach a host other than the server (through the proxy the sandboxes set).
    """
    started: list[ModelServer] = []

    def start(script: Script) -> ModelServer:
        server = ModelServer(script, log=tmp_path / f"requests-{len(started)}.jsonl")
        server.__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)
    attempts = [attempt for server in started for attempt in server.outside_attempts]
    assert not attempts, f"a client tried to reach the outside: {attempts}"


# --- the results table ------------------------------------------------------------------
# A test appends its rows and figures to the lists its fixtures give it; at its teardown
# they go into the test's report (``user_properties``), which pytest-xdist sends from the
# worker that ran the test to the process that prints the summary. The table is built from
# the reports, so it is the same with one process or several.

_RESULT: Final = "agc-e2e-result"
_FIGURE: Final = "agc-e2e-figure"
_RESULTS: list[tuple[str, str, str, str]] = []
_FIGURES: list[tuple[str, str]] = []


@pytest.fixture
def e2e_results(request: pytest.FixtureRequest) -> Iterator[list[tuple[str, str, str, str]]]:
    """Rows (client, scenario, step, result) for the table printed at the end of the run."""
    rows: list[tuple[str, str, str, str]] = []
    yield rows
    request.node.user_properties.extend((_RESULT, row) for row in rows)


@pytest.fixture
def e2e_figures(request: pytest.FixtureRequest) -> Iterator[list[tuple[str, str]]]:
    """(measurement, figures) lines printed in their own section at the end of the run."""
    lines: list[tuple[str, str]] = []
    yield lines
    request.node.user_properties.extend((_FIGURE, line) for line in lines)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "teardown":
        return
    for name, value in report.user_properties:
        if name == _RESULT:
            client, scenario, step, result = cast("Sequence[str]", value)
            _RESULTS.append((client, scenario, step, result))
        elif name == _FIGURE:
            measurement, figures = cast("Sequence[str]", value)
            _FIGURES.append((measurement, figures))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` the tests that share one client's module-scoped
    ``world`` (test_resume_clients.py) run in one worker, so that client's runs are made
    once, not once per worker. (A module whose tests all share one fixture names its
    group itself: ``pytestmark = pytest.mark.xdist_group(...)``.)"""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "world" in callspec.params:
            item.add_marker(pytest.mark.xdist_group(f"world-{callspec.params['world']}"))


#: The order of the table's lines and columns (what is not named here follows, in the
#: order first seen): the clients, the crash shapes, the steps.
_ORDER: Final = (
    ("codex", "claude", "gemini"),
    ("clean", "killed", "ends-after-call", "torn"),
    ("import+verify+check", "strip", "synthesize", "native resume"),
)


def _ranked(names: list[str], known: Sequence[str]) -> dict[str, int]:
    """Each name's place: those in ``known`` in its order, then the others as given."""
    ordered = [name for name in known if name in names]
    ordered += [name for name in names if name not in known]
    return {name: index for index, name in enumerate(ordered)}


def results_table(rows: list[tuple[str, str, str, str]]) -> str:
    """The rows as a Markdown table: one line per client and scenario, one column per step;
    lines and columns in a fixed order (see ``_ORDER``), whichever process sent a row
    first."""
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for client, scenario, step, result in rows:
        cells.setdefault((client, scenario), {})[step] = result
    clients = _ranked(list(dict.fromkeys(c for c, _ in cells)), _ORDER[0])
    scenarios = _ranked(list(dict.fromkeys(s for _, s in cells)), _ORDER[1])
    steps = list(_ranked(list(dict.fromkeys(row[2] for row in rows)), _ORDER[2]))
    lines = [
        "| client | scenario | " + " | ".join(steps) + " |",
        "|---|---|" + "---|" * len(steps),
    ]
    for client, scenario in sorted(cells, key=lambda k: (clients[k[0]], scenarios[k[1]])):
        by_step = cells[(client, scenario)]
        row = [by_step.get(step, "") for step in steps]
        lines.append(f"| {client} | {scenario} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _FIGURES:
        terminalreporter.section("agc e2e: figures")
        for name, figures in _FIGURES:
            terminalreporter.write_line(f"{name}: {figures}")
    if not _RESULTS:
        return
    table = results_table(_RESULTS)
    terminalreporter.section("agc e2e: client x scenario x result")
    terminalreporter.write_line(table)
    target = CACHE_DIR / "last-results.md"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        versions = ", ".join(pin.spec for pin in PINNED.values())
        target.write_text(f"Clients: {versions}\n\n{table}\n", encoding="utf-8")
    except OSError:
        pass
