"""Tests for agc._core.sidecar: the one-line ``<hex>  <name>\\n`` format, strictly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc._core.digest import ALGORITHMS, Algorithm
from agc._core.sidecar import Sidecar, format_sidecar, parse_sidecar, sidecar_name
from agc.errors import SidecarInvalidError

HEX = "0123456789abcdef" * 4
NAME = "r1.jsonl"


def test_format_is_the_b3sum_line() -> None:
    assert format_sidecar(HEX, NAME) == f"{HEX}  {NAME}\n".encode()


def test_sidecar_names() -> None:
    assert sidecar_name(NAME, "blake3") == "r1.jsonl.b3"
    assert sidecar_name(NAME, "sha256") == "r1.jsonl.sha256"


@pytest.mark.parametrize("algorithm", ["blake3", "sha256"])
def test_parse_round_trip(algorithm: Algorithm) -> None:
    parsed = parse_sidecar(format_sidecar(HEX, NAME), algorithm=algorithm)
    assert parsed == Sidecar(digest=HEX, file_name=NAME, legacy=False)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        pytest.param(f"{HEX.upper()}  {NAME}\n".encode(), "lower-case", id="upper-case-hex"),
        pytest.param(f"{HEX}  {NAME}\r\n".encode(), "CR", id="crlf"),
        pytest.param(f"{HEX}  {NAME}\n{HEX}  {NAME}\n".encode(), "more than one line", id="two"),
        pytest.param(f"{HEX}   {NAME}\n".encode(), "spacing", id="three-spaces"),
        pytest.param(f"{HEX}  {NAME} \n".encode(), "spacing", id="trailing-space"),
        pytest.param(f"{HEX} {NAME}\n".encode(), "spacing", id="one-space"),
        pytest.param(f"{HEX} *{NAME}\n".encode(), "spacing", id="binary-marker"),
        pytest.param(f"{HEX}  {NAME}".encode(), "newline", id="no-newline"),
        pytest.param(f"{HEX[:-2]}  {NAME}\n".encode(), "62 hex", id="short-digest"),
        pytest.param(f"{HEX}\n".encode(), "no file name", id="digest-only-blake3"),
        pytest.param(f"{HEX}  dir/{NAME}\n".encode(), "file name", id="path-in-name"),
        pytest.param(b"", "empty", id="empty"),
        pytest.param(b"hello  r1.jsonl\n", "hex digest", id="not-hex"),
        pytest.param(b"x" * 5000, "bytes", id="too-large"),
        pytest.param(HEX.encode() + b"  r\xff.jsonl\n", "not UTF-8", id="name-not-utf8"),
    ],
)
def test_bad_sidecars_are_rejected_with_the_problem(data: bytes, problem: str) -> None:
    with pytest.raises(SidecarInvalidError, match=problem):
        parse_sidecar(data, algorithm="blake3")


def test_legacy_digest_only_sha256_is_accepted_as_legacy() -> None:
    for data in (f"{HEX}\n".encode(), HEX.encode()):
        assert parse_sidecar(data, algorithm="sha256") == Sidecar(HEX, None, legacy=True)


@pytest.mark.parametrize(
    ("digest", "name"),
    [(HEX.upper(), NAME), (HEX[:-1], NAME), (HEX, "a/b"), (HEX, "a\nb"), (HEX, ""), (HEX, " x")],
)
def test_format_refuses_what_it_could_not_parse_back(digest: str, name: str) -> None:
    with pytest.raises(ValueError, match=r"sidecar|hex"):
        format_sidecar(digest, name)


_NAME_CHARS = st.characters(codec="utf-8", exclude_characters="/\\\r\n")


@given(
    digest=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    name=st.text(alphabet=_NAME_CHARS, min_size=1, max_size=60).filter(lambda s: s == s.strip(" ")),
    algorithm=st.sampled_from(ALGORITHMS),
)
def test_property_format_then_parse_round_trips(
    digest: str, name: str, algorithm: Algorithm
) -> None:
    parsed = parse_sidecar(format_sidecar(digest, name), algorithm=algorithm)
    assert (parsed.digest, parsed.file_name, parsed.legacy) == (digest, name, False)


@given(data=st.binary(max_size=200), algorithm=st.sampled_from(ALGORITHMS))
def test_property_parser_only_raises_sidecar_invalid(data: bytes, algorithm: Algorithm) -> None:
    try:
        parsed = parse_sidecar(data, algorithm=algorithm)
    except SidecarInvalidError as exc:
        error: SidecarInvalidError | None = exc
    else:
        error = None
    if error is not None:
        assert error.message.startswith("sidecar ")
    else:
        # Whatever parses is exactly what format_sidecar writes (or a legacy line).
        if parsed.legacy:
            assert algorithm == "sha256"
            assert data.rstrip(b"\n") == parsed.digest.encode()
        else:
            assert parsed.file_name is not None
            assert format_sidecar(parsed.digest, parsed.file_name) == data
