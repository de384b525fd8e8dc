"""The optional dependencies (the extras of pyproject.toml): agc loads none of them unless
the feature that needs it is used, and a feature whose extra is missing is a usage error
(exit 2, ``missing-extra``) whose hint is the ``pip install`` that adds it, never a
traceback (exit 4).

Each test makes the imports fail in this process: ``sys.modules[name] = None`` makes
``import name`` raise ``ModuleNotFoundError`` as on an install without the package, and
the agc modules that hold the package are dropped so that they import again.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agc.cli.app import SUBCOMMANDS
from agc.cli.app import main as agc_main
from agc.cli.verify_main import main as verify_main
from agc.errors import MissingExtraError
from agc.exitcodes import ExitCode
from tests.conftest import write_run

# The top-level modules each extra brings (those agc imports, and the ones they pull in
# that the core install does not have).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "s3": ("boto3", "botocore", "s3transfer"),
    "scale": ("dask", "distributed"),
    "serve": ("starlette", "uvicorn", "mcp", "mcp_types", "pydantic", "pydantic_core"),
}
REACHES_INSIDE = {
    "agc.serve._supervisor": "the library's default session factory, where the MCP SDK is needed",
}

EVERY_EXTRA_MODULE = tuple(name for names in EXTRA_MODULES.values() for name in names)


@pytest.fixture(autouse=True)
def _same_modules_after() -> Iterator[None]:
    """Every module a test imports again or for the first time is forgotten after it,
    with its attribute on its package: later tests see the modules they saw before."""
    saved = dict(sys.modules)
    yield
    for name in [name for name in sys.modules if name not in saved]:
        module = sys.modules.pop(name)
        parent, _, child = name.rpartition(".")
        if parent in saved and getattr(saved[parent], child, None) is module:
            delattr(saved[parent], child)


def _block(monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...], fresh: tuple[str, ...]) -> None:
    """Make ``import`` of each of ``names`` (and their submodules) fail, and drop the
    modules ``fresh`` (and their submodules) so that their next import runs again; all
    is put back after the test."""

    def under(prefixes: tuple[str, ...]) -> list[str]:
        return [m for m in sys.modules if any(m == p or m.startswith(p + ".") for p in prefixes)]

    for name in under(fresh):
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and hasattr(sys.modules[parent], child):
            monkeypatch.delattr(sys.modules[parent], child)
        monkeypatch.delitem(sys.modules, name)
    for name in {*under(names), *names}:
        monkeypatch.setitem(sys.modules, name, None)


def _says_the_extra(err: str, extra: str) -> None:
    assert "Traceback" not in err
    assert "error: " in err
    assert f"hint: {MissingExtraError.install_hint(extra)}" in err
    # never the PyPI project of the same name
    assert f"'agc[{extra}]'" not in err


def test_the_error_names_the_feature_the_package_and_the_extra() -> None:
    with (
        pytest.raises(MissingExtraError) as raised,
        MissingExtraError.raised_for("s3", feature="an s3:// store"),
    ):
        raise ModuleNotFoundError("No module named 'boto3'", name="boto3")
    error = raised.value
    assert error.exit_code == ExitCode.USAGE
    assert error.to_dict() == {
        "code": "missing-extra",
        "message": "an s3:// store needs the optional package 'boto3', which is not "
        "installed: it comes with agc's s3 extra",
        "hint": MissingExtraError.install_hint("s3"),
    }


@pytest.mark.parametrize(
    ("direct_url", "hint"),
    [
        # a clone installed editable (`make demo`, `pip install -e ./agc`)
        (
            '{"url": "file:///home/u/src/agc", "dir_info": {"editable": true}}',
            "pip install -e '/home/u/src/agc[s3]'",
        ),
        # a clone installed as a copy, a path with a space in it
        ('{"url": "file:///home/u/my%20agc", "dir_info": {}}', "pip install '/home/u/my agc[s3]'"),
        # from its repository, as the CI recipe installs it
        (
            '{"url": "https://example.com/agc", "vcs_info": {"vcs": "git", '
            '"requested_revision": "v0.1.0", "commit_id": "0123abcd"}}',
            "pip install 'agc[s3] @ git+https://example.com/agc@v0.1.0'",
        ),
        # where it came from is not known (a wheel, no direct_url.json, not JSON)
        ("", "in agc's clone: pip install -e '.[s3]'"),
        (
            '{"url": "https://example.com/agc-0.1.0.tar.gz", "archive_info": {}}',
            "in agc's clone: pip install -e '.[s3]'",
        ),
        ("{", "in agc's clone: pip install -e '.[s3]'"),
    ],
)
def test_the_hint_adds_the_extra_to_agc_where_it_was_installed_from(
    direct_url: str, hint: str
) -> None:
    # PEP 610's direct_url.json says where pip took agc from; `pip install 'agc[s3]'`
    # would fetch the unrelated PyPI project named agc.
    assert MissingExtraError.install_hint("s3", direct_url) == hint


@pytest.mark.parametrize("name", ["agc.integrity._nothing", None])
def test_a_module_of_agc_that_fails_to_import_is_no_missing_extra(name: str | None) -> None:
    # A module of agc's own missing is a broken install or a bug (exit 4), never a
    # reason to install an extra; so is an import error that names no module.
    with pytest.raises(ModuleNotFoundError), MissingExtraError.raised_for("s3", feature="x"):
        raise ModuleNotFoundError("gone", name=name)


def test_every_front_door_and_command_module_imports_without_any_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each heavy import is where its feature is used: agc, its features and every
    # command module load on the core install alone.
    _block(monkeypatch, EVERY_EXTRA_MODULE, fresh=("agc",))
    for module in (
        "agc",
        "agc.integrity",
        "agc.resume",
        "agc.ledger",
        "agc.extensions",
        "agc.readiness",
        "agc.capture",
        "agc.serve",
        "agc.cli.verify_main",
        *sorted({sub.module for sub in SUBCOMMANDS}),
    ):
        importlib.import_module(module)
    assert not [name for name in EVERY_EXTRA_MODULE if sys.modules.get(name) is not None]


def test_the_http_app_of_agc_serve_needs_the_serve_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _block(monkeypatch, EXTRA_MODULES["serve"], fresh=("agc.serve",))
    serve = importlib.import_module("agc.serve")
    assert serve.ServeConfig is not None  # the rest of the front door is there
    with pytest.raises(MissingExtraError) as raised:
        serve.create_app  # noqa: B018 - the lazy attribute is the import
    assert raised.value.hint == MissingExtraError.install_hint("serve")
    assert "'starlette'" in raised.value.message


def test_the_codex_mcp_server_session_needs_the_serve_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The library's default session factory: app-server sessions need no MCP SDK.
    from agc.serve import ServeConfig  # noqa: PLC0415
    from agc.serve._supervisor import default_session_factory  # noqa: PLC0415

    _block(monkeypatch, ("mcp", "mcp_types"), fresh=("agc.serve._mcpserver",))
    config = ServeConfig(workspace=tmp_path, codex_home=tmp_path / "home")
    make = default_session_factory(config, client_version="0")
    assert make("app-server").protocol == "app-server"
    with pytest.raises(MissingExtraError) as raised:
        make("mcp-server")
    assert raised.value.hint == MissingExtraError.install_hint("serve")
    assert "codex mcp-server" in raised.value.message


S3_STORE = "s3://evidence/team"


_S3_ENTRIES = [
    ("agc-verify", ["r1", "--store", S3_STORE]),
    ("agc-verify", ["--all", "--store", S3_STORE]),
    ("agc", ["verify", "r1", "--store", S3_STORE]),
    ("agc", ["runs", "--store", S3_STORE]),
    ("agc", ["export", "r1", "--store", S3_STORE]),
    ("agc", ["recover", "r1", "--store", S3_STORE]),
]


@pytest.mark.parametrize(
    ("entry", "argv"),
    [
        *_S3_ENTRIES,
        *((entry, [*argv, "--json"]) for entry, argv in _S3_ENTRIES[:4]),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else value,
)
def test_an_s3_store_without_the_s3_extra_is_exit_2_naming_it(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    entry: str,
    argv: list[str],
) -> None:
    _block(monkeypatch, EXTRA_MODULES["s3"], fresh=())
    run = verify_main if entry == "agc-verify" else agc_main
    code = run(argv)
    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE, err
    _says_the_extra(err, "s3")
    assert "'boto3'" in err
    if "--json" in argv:
        assert json.loads(out)["error"]["code"] == "missing-extra"


def test_an_s3_store_without_the_s3_extra_is_refused_by_record(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import feed_stdin  # noqa: PLC0415

    _block(monkeypatch, EXTRA_MODULES["s3"], fresh=())
    feed_stdin(monkeypatch, b'{"role": "user"}\n')
    code = agc_main(["record", "--run-id", "r1", "--store", S3_STORE])
    assert code == ExitCode.USAGE
    _says_the_extra(capsys.readouterr().err, "s3")


@pytest.mark.parametrize("entry", ["agc-verify", "agc verify"])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_dask_scheduler_without_the_scale_extra_is_exit_2_naming_it(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    store: Path,
    entry: str,
    as_json: bool,
) -> None:
    write_run(store)
    _block(monkeypatch, EXTRA_MODULES["scale"], fresh=())
    argv = ["--all", "--store", str(store), "--scheduler", "tcp://127.0.0.1:9"]
    argv += ["--json"] if as_json else []
    code = verify_main(argv) if entry == "agc-verify" else agc_main(["verify", *argv])
    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE, err
    _says_the_extra(err, "scale")
    if as_json:
        assert json.loads(out)["error"]["code"] == "missing-extra"


@pytest.mark.parametrize(
    ("blocked", "protocol", "package"),
    [
        ("starlette", "app-server", "starlette"),
        ("uvicorn", "app-server", "uvicorn"),
        ("mcp", "mcp-server", "mcp"),
        ("mcp", "auto", "mcp"),  # auto falls back to mcp-server
    ],
)
def test_agc_serve_without_the_serve_extra_is_exit_2_before_it_starts(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    blocked: str,
    protocol: str,
    package: str,
) -> None:
    _block(monkeypatch, (blocked,), fresh=("agc.serve._app", "agc.serve._mcpserver"))
    store = tmp_path / "store"
    argv = ["serve", "--workspace", str(tmp_path), "--store", str(store), "--port", "0"]
    code = agc_main([*argv, "--protocol", protocol])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE, err
    _says_the_extra(err, "serve")
    assert f"'{package}'" in err
    assert not store.exists()  # nothing was started or written
