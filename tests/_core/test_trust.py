"""Tests for agc._core.signature_rule.judge_trust: the one judgement of a signature.

Run manifests, resume snapshots and the ledger's seal records are all judged by it, so
each class of signature is tested here once, as a property over arbitrary documents:
no signature, a key that is not trusted, a trusted key over other bytes, a malformed
``signature`` member, and a required signature with no trusted key to check it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from hypothesis import given
from hypothesis import strategies as st

from agc._core.canonical import canonical_json
from agc._core.signature_rule import Trust, judge_trust, signature_required
from agc._core.signing import SigningKey, key_id_of, sign_document
from agc.errors import UsageError

_PRIVATE = Ed25519PrivateKey.generate()
KEY = SigningKey(_PRIVATE, key_id_of(_PRIVATE.public_key()))
TRUSTED: dict[str, Ed25519PublicKey] = {KEY.key_id: _PRIVATE.public_key()}
_OTHER = Ed25519PrivateKey.generate()
OTHER = SigningKey(_OTHER, key_id_of(_OTHER.public_key()))  # a key nobody trusts

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.text(st.characters(codec="utf-8"), max_size=20)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
DOCUMENTS = st.dictionaries(
    st.text(st.characters(codec="utf-8"), max_size=8).filter(lambda key: key != "signature"),
    _VALUES,
    max_size=5,
)
"""Unsigned JSON documents (RFC 8785 can canonicalize every one)."""
REQUIRED = st.booleans()
KEY_SETS = st.sampled_from([None, {}, TRUSTED, {OTHER.key_id: _OTHER.public_key()}])


def _never_read() -> Mapping[str, Any]:
    raise AssertionError("the signature was read without a trusted key to check it")


@given(document=DOCUMENTS, keys=KEY_SETS, required=REQUIRED, null=st.booleans())
def test_no_signature_is_unsigned_and_fails_only_when_required(
    document: dict[str, Any], keys: dict[str, Ed25519PublicKey] | None, required: bool, null: bool
) -> None:
    if null:
        document = {**document, "signature": None}
    for signed in (None, document):
        trust = judge_trust(signed, keys, required=required)
        assert (trust.reason, trust.status, trust.key_id) == ("absent", "unsigned", None)
        assert trust.code == ("unsigned" if required else None)


@given(document=DOCUMENTS, required=REQUIRED, trusted=st.booleans())
def test_a_key_not_trusted_always_fails_as_unknown_key(
    document: dict[str, Any], required: bool, trusted: bool
) -> None:
    keys = TRUSTED if trusted else {KEY.key_id + "0": _PRIVATE.public_key()}
    signed = sign_document(document, OTHER if trusted else KEY)
    trust = judge_trust(signed, keys, required=required)
    assert (trust.reason, trust.status, trust.code) == (
        "untrusted-key",
        "unknown-key",
        "unknown-key",
    )
    assert trust.key_id == (OTHER if trusted else KEY).key_id


@given(document=DOCUMENTS, required=REQUIRED, lazy=st.booleans())
def test_a_trusted_key_over_these_bytes_is_valid(
    document: dict[str, Any], required: bool, lazy: bool
) -> None:
    signed = sign_document(document, KEY)
    trust = judge_trust((lambda: signed) if lazy else signed, TRUSTED, required=required)
    assert trust == Trust("valid", required, KEY.key_id)
    assert (trust.status, trust.code) == ("signature-valid", None)


@given(document=DOCUMENTS, required=REQUIRED, key=st.text(max_size=8), value=_VALUES)
def test_a_trusted_key_over_another_document_is_bad(
    document: dict[str, Any], required: bool, key: str, value: object
) -> None:
    signed = sign_document(document, KEY)
    changed = {**signed, key: value} if key != "signature" else signed
    trust = judge_trust(changed, TRUSTED, required=required)
    if canonical_json(changed) == canonical_json(signed):  # nothing changed
        assert trust.reason == "valid"
    else:
        assert (trust.reason, trust.status, trust.code) == (
            "invalid",
            "bad-signature",
            "bad-signature",
        )


@given(document=DOCUMENTS, required=REQUIRED, lazy=st.booleans())
def test_a_valid_signature_of_other_bytes_is_bad(
    document: dict[str, Any], required: bool, lazy: bool
) -> None:
    signed = sign_document(document, KEY)
    asked: list[Mapping[str, Any]] = []

    def covers(judged: Mapping[str, Any]) -> bool:
        asked.append(judged)
        return False

    trust = judge_trust(
        (lambda: signed) if lazy else signed, TRUSTED, required=required, covers=covers
    )
    assert (trust.reason, trust.status, trust.code) == (
        "other-bytes",
        "bad-signature",
        "bad-signature",
    )
    assert asked == [signed]
    assert judge_trust(signed, TRUSTED, required=required, covers=False).reason == "other-bytes"


def _malformed(signature: dict[str, Any]) -> st.SearchStrategy[object]:
    """``signature`` (a well-formed member) made malformed in each documented way."""
    return st.one_of(
        st.just({**signature, "extra": 1}),
        st.sampled_from(sorted(signature)).map(
            lambda name: {k: v for k, v in signature.items() if k != name}
        ),
        st.sampled_from(["rsa", "Ed25519", "", None, 1]).map(
            lambda algorithm: {**signature, "algorithm": algorithm}
        ),
        st.sampled_from([None, 7, ["k"], {"k": 1}]).map(lambda kid: {**signature, "key_id": kid}),
        st.sampled_from(["", "not base64!", "AAAA", signature["value"][:-4]]).map(
            lambda value: {**signature, "value": value}
        ),
        st.sampled_from([[], "sig", 1, True]),
    )


@given(data=st.data(), document=DOCUMENTS, required=REQUIRED)
def test_a_malformed_signature_member_is_bad_when_checked(
    data: st.DataObject, document: dict[str, Any], required: bool
) -> None:
    signed = sign_document(document, KEY)
    broken = {**signed, "signature": data.draw(_malformed(signed["signature"]))}
    trust = judge_trust(broken, TRUSTED, required=required)
    assert (trust.reason, trust.status, trust.code) == ("invalid", "bad-signature", "bad-signature")
    # A key id is shown only when it is one (64 lower-case hex digits).
    member = broken["signature"]
    shown = member.get("key_id") if isinstance(member, dict) else None
    assert trust.key_id == (shown if shown == KEY.key_id else None)


@given(data=st.data(), document=DOCUMENTS, keys=st.sampled_from([None, {}]), lazy=st.booleans())
def test_required_without_trusted_keys_fails_every_signature_as_unknown_key(
    data: st.DataObject,
    document: dict[str, Any],
    keys: dict[str, Ed25519PublicKey] | None,
    lazy: bool,
) -> None:
    signed = sign_document(document, data.draw(st.sampled_from([KEY, OTHER])))
    if data.draw(st.booleans()):
        signed = {**signed, "signature": data.draw(_malformed(signed["signature"]))}
    required = signature_required(keys, require_signature=True, allow_unsigned=False)
    trust = judge_trust(_never_read if lazy else signed, keys, required=required)
    assert (trust.reason, trust.status, trust.code) == (
        "no-trusted-key",
        "not-checked",
        "unknown-key",
    )
    # Not required: the same signature passes, not checked (and, detached, not read).
    relaxed = judge_trust(_never_read if lazy else signed, keys, required=False)
    assert (relaxed.reason, relaxed.code) == ("no-trusted-key", None)
    assert judge_trust(None, keys, required=required).code == "unsigned"


def test_a_detached_null_signature_is_absent() -> None:
    trust = judge_trust(lambda: {"a": 1, "signature": None}, TRUSTED, required=True)
    assert (trust.reason, trust.code) == ("absent", "unsigned")


def test_a_wrong_signature_value_of_the_right_shape_is_bad() -> None:
    signed = sign_document({"a": 1}, KEY)
    forged = base64.b64encode(bytes(64)).decode("ascii")
    trust = judge_trust(
        {**signed, "signature": {**signed["signature"], "value": forged}}, TRUSTED, required=False
    )
    assert (trust.reason, trust.code, trust.key_id) == ("invalid", "bad-signature", KEY.key_id)


@pytest.mark.parametrize(
    ("keys", "require", "allow", "required"),
    [
        (None, False, False, False),
        ({}, False, False, False),
        (TRUSTED, False, False, True),
        (TRUSTED, False, True, False),
        (None, True, False, True),
    ],
)
def test_the_rule_of_when_a_signature_is_required(
    keys: dict[str, Ed25519PublicKey] | None, require: bool, allow: bool, required: bool
) -> None:
    assert signature_required(keys, require_signature=require, allow_unsigned=allow) is required


def test_require_and_allow_unsigned_contradict() -> None:
    with pytest.raises(UsageError):
        signature_required(TRUSTED, require_signature=True, allow_unsigned=True)
