"""Configuration documents with bounded nesting: a deep document is refused as a
``ValueError``, never a ``RecursionError`` (nor a value that breaks later steps)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.extensions import ExtensionRepository
from agc.extensions._documents import (
    MAX_DOCUMENT_DEPTH,
    DocumentTooDeepError,
    LoneSurrogateError,
    load_json,
    load_toml,
)
from agc.extensions._mcp import read_codex_config, read_mcp_json
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.extensions._documents": (
        "the bounded JSON/TOML loaders and their limits, below the importers"
    ),
    "agc.extensions._mcp": "the MCP config readers on hostile documents",
}


def _nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


@given(depth=st.integers(min_value=1, max_value=200_000))
@settings(max_examples=examples(30), deadline=None)
def test_json_deeper_than_the_limit_is_a_value_error(depth: int) -> None:
    text = '{"a": ' + _nested_json(depth) + "}"
    if depth + 1 > MAX_DOCUMENT_DEPTH:
        with pytest.raises(DocumentTooDeepError):
            load_json(text)
    else:
        assert load_json(text) == json.loads(text)


@given(depth=st.integers(min_value=1, max_value=200_000))
@settings(max_examples=examples(30), deadline=None)
def test_toml_deeper_than_the_limit_is_a_value_error(depth: int) -> None:
    text = "a = " + _nested_json(depth) + "\n"
    if depth + 1 > MAX_DOCUMENT_DEPTH:
        with pytest.raises(DocumentTooDeepError):
            load_toml(text)
    else:
        assert "a" in load_toml(text)


@pytest.mark.parametrize("depth", [MAX_DOCUMENT_DEPTH, 900, 200_000])
def test_mcp_readers_report_a_deep_document_as_an_error(depth: int) -> None:
    deep = _nested_json(depth)
    servers, error = read_mcp_json(
        ('{"mcpServers": {"a": {"command": "x", "env": {"K": ' + deep + "}}}}").encode()
    )
    assert (servers, error is not None) == ([], True)
    assert error is not None
    assert "deeper than" in error
    servers, error = read_codex_config(
        ('[mcp_servers.a]\ncommand = "x"\nargs = ' + deep + "\n").encode()
    )
    assert (servers, error is not None) == ([], True)
    assert error is not None
    assert "deeper than" in error


@pytest.mark.parametrize(
    ("relative", "text"),
    [
        (".mcp.json", '{"mcpServers": {"a": {"command": "x", "args": ' + _nested_json(900) + "}}}"),
        ("mcp.json", '{"a": {"command": "x", "args": ' + _nested_json(200_000) + "}}"),
        ("config.toml", '[mcp_servers.a]\ncommand = "x"\nargs = ' + _nested_json(200_000)),
        ("servers.json", '{"mcpServers": ' + _nested_json(200_000) + "}"),
        (".codex-plugin/plugin.json", '{"name": "p", "x": ' + _nested_json(200_000) + "}"),
    ],
)
def test_a_deeply_nested_configuration_is_noted_not_a_crash(
    tmp_path: Path, store: Path, relative: str, text: str
) -> None:
    folder = tmp_path / "src"
    (folder / relative).parent.mkdir(parents=True)
    (folder / relative).write_text(text, encoding="utf-8")
    result = ExtensionRepository(store).import_path(folder)
    assert [item.type for item in result.items] == ["unknown"]
    assert ExtensionRepository(store).load().items == result.items


@given(text=st.text(alphabet=st.characters(codec=None), max_size=8))
def test_a_json_string_with_a_lone_surrogate_is_refused_and_any_other_read(text: str) -> None:
    document = json.dumps({"k": text})  # ASCII: every surrogate is a \u escape
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        with pytest.raises(LoneSurrogateError):
            load_json(document)
    else:
        assert load_json(document) == {"k": text}


@pytest.mark.parametrize(
    ("relative", "text"),
    [
        (".mcp.json", '{"mcpServers": {"a\\ud800": {"command": "x"}}}'),
        (".mcp.json", '{"mcpServers": {"a": {"command": "x", "args": ["\\udc80"]}}}'),
        (".codex-plugin/plugin.json", '{"name": "p", "skills": "./\\udcff"}'),
    ],
)
def test_a_lone_surrogate_in_a_configuration_is_noted_not_a_crash(
    tmp_path: Path, store: Path, relative: str, text: str
) -> None:
    folder = tmp_path / "src"
    (folder / relative).parent.mkdir(parents=True)
    (folder / relative).write_text(text, encoding="utf-8")
    result = ExtensionRepository(store).import_path(folder)
    assert [item.type for item in result.items] == ["unknown"]
    assert "lone surrogate" in " ".join([*result.notes, result.items[0].last_error or ""])
    assert ExtensionRepository(store).load().items == result.items
