"""json_pieces: a document whose long lists are written one item at a time is, joined,
json_document's text of the whole, byte for byte: orjson's or the json module's, with
``\\u`` escapes everywhere when any string holds a lone surrogate; and emit_json writes
it so on stdout."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.json import has_lone_surrogate
from agc._core.report import JsonItems, listed
from agc.cli import _jsontext
from agc.cli._jsontext import json_document, json_pieces
from agc.cli.common import emit_json
from tests.conftest import examples

_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["\ud800", "a\udfffb", "é", "日本", '\n\t"\\', "😀", ""]),
)
_ATOM = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**64, max_value=2**70),  # written by the json module
    st.floats(allow_nan=False, allow_infinity=False),
    _TEXT,
)
_VALUE = st.recursive(
    _ATOM,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=12,
)


@st.composite
def _documents(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    """A dict whose members are JSON values, dicts like it, and JsonItems (of values,
    rendered as themselves or wrapped; their escapes told or not)."""
    document: dict[str, Any] = {}
    for key in draw(st.lists(_TEXT, max_size=5, unique=True)):
        kind = draw(
            st.sampled_from(["value", "items", "dict"] if depth < 2 else ["value", "items"])
        )
        if kind == "value":
            document[key] = draw(_VALUE)
        elif kind == "dict":
            document[key] = draw(_documents(depth + 1))
        else:
            items = tuple(draw(st.lists(_VALUE, max_size=5)))
            wrap = draw(st.booleans())
            render = (lambda item: {"item": item, "n": [1, 2]}) if wrap else (lambda item: item)
            told = draw(st.booleans())
            escapes = any(has_lone_surrogate(render(item)) for item in items) if told else None
            document[key] = JsonItems(items, render, escapes=escapes)
    return document


@settings(max_examples=examples(300), deadline=None)
@given(document=_documents(), batch=st.sampled_from([1, 2, 3, _jsontext._BATCH]))
def test_the_pieces_joined_are_the_whole_documents_text(
    document: dict[str, Any], batch: int
) -> None:
    whole = json_document(listed(document))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_jsontext, "_BATCH", batch)  # items written a few at a time
        assert "".join(json_pieces(document)) == whole
    assert json.loads(whole) == json.loads(json.dumps(listed(document)))


def test_a_long_list_is_given_a_batch_of_items_at_a_time() -> None:
    items = [{"n": n, "text": "x" * 10} for n in range(10 * _jsontext._BATCH)]
    document = {"a": 1, "nested": {"findings": JsonItems(items, dict)}, "z": []}
    pieces = list(json_pieces(document))
    whole = json_document(listed(document))
    assert max(map(len, pieces)) < len(whole) / 9
    assert "".join(pieces) == whole


def test_items_are_written_one_at_a_time_when_a_batch_would_not_fit_the_layout() -> None:
    items = [1, {"a": [2, 3]}]
    lead, between = "\n    ", ";\n    "  # not a comma then the lead: one at a time
    text = "".join(_jsontext._batches(items, lead, between, escaped=False))
    assert text == '\n    1;\n    {\n      "a": [\n        2,\n        3\n      ]\n    }'


def test_a_lone_surrogate_in_one_item_escapes_the_whole_document() -> None:
    items = ["é", "\udc80", "日本"]
    for escapes in (True, None):
        document = {"source": "café", "items": JsonItems(items, str, escapes=escapes)}
        text = "".join(json_pieces(document))
        assert text == json_document(listed(document))
        assert text.isascii()
        assert "\\u00e9" in text
        assert "\\udc80" in text


def test_an_empty_list_of_items_is_written_as_the_encoder_writes_one() -> None:
    document = {"findings": JsonItems((), str), "after": {"x": JsonItems([], str)}}
    assert "".join(json_pieces(document)) == json_document({"findings": [], "after": {"x": []}})


def test_a_placeholder_in_the_input_falls_back_to_the_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "urandom", bytes)  # zeros: a known name
    name = f"agc-items-{'0' * 32}-0"
    document = {"source": f"{name}-a", "items": JsonItems([1, 2], int)}
    assert "".join(json_pieces(document)) == json_document(listed(document))


def test_emit_json_writes_the_document_and_a_line_break(capsys: pytest.CaptureFixture[str]) -> None:
    document = {"schema_version": 1, "findings": JsonItems(range(3000), lambda n: {"n": n})}
    emit_json(document)
    assert capsys.readouterr().out == json_document(listed(document)) + "\n"
    emit_json([1, "two"])  # not a dict: written whole, as always
    assert capsys.readouterr().out == json_document([1, "two"]) + "\n"
