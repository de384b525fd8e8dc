"""Tests for agc._core.redact: the one secret detector.

The corpus (tests/_core/secret_corpus.py) plants real-format secrets of every kind in
every placement; the real transcripts bound the false positives; hypothesis drives the
properties (idempotent, nothing grows back, no planted secret survives).
"""

from __future__ import annotations

import base64
import json
import random
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core import redact
from agc._core.json import MAX_DEPTH
from agc._core.redact import (
    DEFAULT_MARKER,
    RULE_SOURCES,
    SECRET_KINDS,
    RedactionStats,
    contains_secret,
    credential_variable,
    redact_text,
    redact_value,
)
from tests._core.secret_corpus import (
    GLUED_PLACEMENTS,
    PLACEMENTS,
    Case,
    build_cases,
    build_secrets,
    run_case,
    strings_of,
    survivors,
)
from tests.conftest import REAL_FIXTURES, examples, real_fixture_files, require_shared

REPO_ROOT = Path(__file__).resolve().parents[2]
CASES = build_cases(every_cut=True)
KINDS = sorted({case.secret.kind for case in CASES})


def _cases_of(kind: str) -> list[Case]:
    return [case for case in CASES if case.secret.kind == kind]


# -- the corpus ------------------------------------------------------------------------


def test_corpus_is_large_and_varied() -> None:
    secrets = build_secrets()
    assert len(secrets) >= 90
    assert len({s.kind for s in secrets}) >= 40
    assert len({case.placement for case in CASES}) >= 10
    assert {case.placement for case in CASES} == set(PLACEMENTS)
    # Deterministic: the same seed gives the same corpus.
    assert [c.text for c in build_cases(every_cut=True)] == [c.text for c in CASES]


def test_corpus_target_at_least_98_percent_redacted() -> None:
    missed = [c for c in CASES if run_case(c, redact_text, redact_value)]
    share = 1 - len(missed) / len(CASES)
    assert share >= 0.98, Counter((c.secret.kind, c.placement) for c in missed)


@pytest.mark.parametrize("kind", KINDS)
def test_every_case_of_a_kind_is_redacted(kind: str) -> None:
    # Per kind: no case of it may leave a 12-character piece of the secret behind, nor
    # a short half of a secret cut by a line break on a line of its own.
    left = {
        case.placement: found
        for case in _cases_of(kind)
        if (found := run_case(case, redact_text, redact_value))
    }
    assert left == {}


def test_glued_prefixed_tokens_are_all_redacted() -> None:
    # Glued after base64 (left, both sides), inside a JSON string, in a URL query: every
    # prefixed token whose documented format is strict enough, 100 %.
    glued = [c for c in CASES if c.placement in GLUED_PLACEMENTS]
    kinds = {c.secret.kind for c in glued}
    assert len(kinds) >= 40
    assert {"openai-project", "gitlab-pat", "sendgrid", "databricks", "slack-bot", "github-pat",
            "github-fine-grained", "aws-akia", "aws-asia", "google-api-key", "huggingface",
            "npm", "pypi", "openai-legacy"} <= kinds  # fmt: skip
    missed = [(c.secret.kind, c.placement) for c in glued if run_case(c, redact_text, redact_value)]
    assert missed == []


def test_a_secret_cut_at_every_position_is_redacted_on_both_lines() -> None:
    split = [c for c in CASES if c.placement.startswith("split")]
    assert {"azure-ad-client-secret", "url-postgres", "openai-project", "aws-secret-key"} <= {
        c.secret.kind for c in split
    }
    missed = [(c.secret.kind, c.text) for c in split if run_case(c, redact_text, redact_value)]
    assert missed == []


@pytest.mark.parametrize("between", ["=", "==", "=.", "=_"])
def test_a_jwt_after_a_padded_signature_is_redacted_whole(between: str) -> None:
    """A signature's base64 padding ends it: a second token glued after ``==`` is its
    own token, never the tail of the first (its payload and signature were kept)."""
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    payload = base64.urlsafe_b64encode(b'{"sub":"9966194089","iat":1700000000}').decode()
    token = f"{header}.{payload.rstrip('=')}.PJ3_87UZ6JGx6ZbjBfEe2lzJY4gVFtvEshT0nem2Ojs"
    out = redact_text(f" {token}{between}{token} ")
    assert payload.rstrip("=")[:12] not in out, out
    assert "PJ3_87UZ6JGx" not in out, out


def test_a_jwt_cut_in_its_signature_takes_the_rest_of_its_documented_size() -> None:
    # HS256 signs with 32 bytes: 43 base64url characters (RFC 7518, section 3.2).
    header = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    payload = "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9"
    signature = "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    token = f"{header}.{payload}.{signature}"
    for cut in range(len(token) - 5, len(token)):
        text = f"$ echo $JWT\n{token[:cut]}\n{token[cut:]}\nok"
        assert redact_text(text) == "$ echo $JWT\n[REDACTED:jwt]\nok"
    # A short line after a whole signature is not taken.
    assert redact_text(f"{token}\nok\n") == "[REDACTED:jwt]\nok\n"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("glued tokenghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5", True),  # no checksum
        ("YWJj" + "sk-" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5aB3dE5gH7jK9" + "ZW5k", True),
        ("risk-assessment-framework-for-the-whole-project-and-more", True),
        ("YWJj" + "AIza" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3f" + "ZW5k", True),
        ("YWJj" + "AIzaSy" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3" + "ZW5k", False),
        ("YWJj" + "glpat-" + "aB3dE5gH7jK9mN1pQ3sT" + "ZW5k=", False),
    ],
)
def test_a_glued_token_needs_its_documented_format(text: str, kept: bool) -> None:
    assert (redact_text(text) == text) is kept


def _encodings(raw: bytes) -> Iterator[str]:
    """Random bytes as agents print them: standard and URL-safe base64, lower- and
    upper-case hex; bare, in a JSON string, and wrapped at 76 characters as MIME does
    (RFC 2045)."""
    for blob in (
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        raw.hex(),
        raw.hex().upper(),
    ):
        yield blob
        yield json.dumps({"encrypted_content": blob})
        yield "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))


@settings(max_examples=examples(200), deadline=None)
@given(seed=st.integers(0, 2**64 - 1), size=st.integers(1, 3000))
def test_property_random_base64_and_hex_blobs_are_never_redacted(seed: int, size: int) -> None:
    # Uniformly random bytes, as a cipher text or a digest is.
    for text in _encodings(random.Random(seed).randbytes(size)):
        assert redact_text(text) == text


def test_megabytes_of_random_base64_and_hex_hold_no_secret() -> None:
    # 1 MiB of random bytes in every encoding: a glued-token format that random base64
    # holds once in a few million characters (sk- and 48 letters or digits, 20 bits)
    # would be found here several times.
    raw = random.Random(20261206).randbytes(2**20)
    changed = [text[:40] for text in _encodings(raw) if contains_secret(text)]
    assert changed == []


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_reported_under_its_detector_kind(kind: str) -> None:
    case = next(c for c in _cases_of(kind) if c.placement == "prose")
    stats = RedactionStats()
    assert case.text is not None
    redact_text(case.text, stats)
    assert case.secret.detects_as in stats.by_kind, stats.to_dict()
    assert case.secret.detects_as in SECRET_KINDS


def test_every_rule_names_its_public_source() -> None:
    assert {kind for kind, _ in RULE_SOURCES} <= set(SECRET_KINDS)
    assert all(source.strip() for _, source in RULE_SOURCES)


def test_docs_list_every_kind() -> None:
    text = (REPO_ROOT / "docs" / "secrets.md").read_text(encoding="utf-8")
    missing = [kind for kind in SECRET_KINDS if f"`{kind}`" not in text]
    assert missing == []


# -- what is kept ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Authorization: Bearer abcdefghijklmnop",
            "Authorization: Bearer [REDACTED:bearer-token]",
        ),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [REDACTED:aws-secret-key]",
        ),
        (
            "postgres://app:Xk29!pq7@db:5432/app",
            "postgres://app:[REDACTED:url-password]@db:5432/app",
        ),
        ("DB_PASSWORD=hunter22 ./run", "DB_PASSWORD=[REDACTED:password-assignment] ./run"),
        (
            "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "https://hooks.slack.com/services/[REDACTED:slack-webhook]",
        ),
        ("mysql --password=hunter22 db", "mysql --password=[REDACTED:password-assignment] db"),
        ("echo token: abcdefgh12345678", "echo token: [REDACTED:secret-assignment]"),
    ],
)
def test_context_is_kept_and_only_the_secret_replaced(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_replacement_keeps_json_valid_and_counts_kinds() -> None:
    secret = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"
    arguments = json.dumps(
        {"cmd": f"curl -H 'Authorization: token {secret}'", "env": {"GITHUB_TOKEN": secret}}
    )
    stats = RedactionStats()
    out = redact_text(arguments, stats)
    assert json.loads(out) == {
        "cmd": "curl -H 'Authorization: token [REDACTED:github-token]'",
        "env": {"GITHUB_TOKEN": "[REDACTED:github-token]"},
    }
    assert stats.to_dict() == {"github-token": 2}
    assert stats.total == 2


def test_marker_can_be_chosen_but_never_breaks_json() -> None:
    assert redact_text("key sk-abcdefghijklmnopqrstuvwx", marker="[secret]") == "key [secret]"
    for bad in ('"x"', "a\\b", "line\nbreak"):
        with pytest.raises(ValueError, match="marker"):
            redact_text("sk-abcdefghijklmnopqrstuvwx", marker=bad)
    assert DEFAULT_MARKER == "[REDACTED:{kind}]"


def test_contains_secret() -> None:
    assert contains_secret("use AKIAIOSFODNN7EXAMPLE now")
    assert not contains_secret("use the AWS console now")


# -- false positives ---------------------------------------------------------------------

ORDINARY = [
    "task-build-the-frontend-with-react-and-more skills AKIA sk-short ghp_x Bearer x",
    "Basic gameplay loop: collect tokens, Bearer of the crown",
    "collect 5 tokens per level; max_tokens: 4096; input_tokens=1200",
    "const token = await getToken(); const apiKey = process.env.OPENAI_API_KEY;",
    "password: str = field(default=None)  # the user's password",
    "signing_key: SigningKey | None = None, private_key: Ed25519PrivateKey",
    "export OPENAI_API_KEY=$OPENAI_API_KEY; TOKEN=${TOKEN:-}; SECRET_KEY=<your-secret-key>",
    "Authorization: Bearer <token>  Authorization: Bearer YOUR_ACCESS_TOKEN",
    "postgres://user:password@localhost:5432/db and redis://:${REDIS_PASSWORD}@cache",
    '"jsonwebtoken": "^9.0.2", "nextPageToken": "CAUQAA", "pad_token": "<pad>"',
    "git push -u origin main && pip install -U pip && mysql --version",
    "API_KEY = os.getenv('API_KEY'); secret = settings.SECRET; token = response.token",
    "see https://example.com/docs?page=2&key=value and the --token flag",
    "secrets: inherit\n    password: ${{ secrets.DB_PASSWORD }}",
    "sha256:0b7f9e5c1d2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4",
    "call_0Hq3kAqz2vN9x8Yt toolu_01A09q90qw90lq917835lq9 fc_67890abcdef msg_0123456789",
    # Words one a line are no token wrapped across lines (IANA's list of domains).
    "AS\nASDA\nASIA\nASSOCIATES\nAT\nATHLETA\nATTORNEY\nAU\nAUCTION\nAUDI\nAUDIBLE",
    "disk-\nusage-report-for-the-whole-cluster\nask-\nquestions-about-the-deployment-now",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact_text(text) == text


def _quoted_header_source() -> str:
    """About 33,000 characters of Python whose strings quote PEM headers, no key."""
    lines = [
        "import base64",
        'PEM_HEADER = "-----BEGIN PRIVATE KEY-----"',
        "RSA_HEADER = '-----BEGIN RSA PRIVATE KEY-----'",
        'FOOTER = "-----END PRIVATE KEY-----"',
        "def is_pem(text: str) -> bool:",
        '    return text.startswith("-----BEGIN ") and "PRIVATE KEY-----" in text',
    ]
    body = [
        f"def helper_{i}(value: int) -> int:\n    return value * {i} + len('x' * {i})"
        for i in range(560)
    ]
    return "\n".join(lines + body) + "\n"


def test_a_quoted_pem_header_in_source_code_wipes_nothing() -> None:
    source = _quoted_header_source()
    assert len(source) > 33_000
    # As a file's text, and as the JSON arguments of a Write tool call.
    assert redact_text(source) == source
    arguments = json.dumps({"file_path": "pem.py", "content": source})
    assert redact_text(arguments) == arguments
    assert redact_value({"input": {"content": source}}) == {"input": {"content": source}}


def test_a_cut_off_pem_key_is_removed_but_the_text_after_it_stays() -> None:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" * 2
    text = f"key:\n-----BEGIN PRIVATE KEY-----\n{body}\n{body}\n\nThanks, that was all."
    assert redact_text(text) == "key:\n[REDACTED:private-key]\n\nThanks, that was all."


def test_pem_blocks_of_every_type_are_removed_whole() -> None:
    for label in (
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ):
        block = f"-----BEGIN {label}-----\nMIIEow{'A' * 64}\n=abcd\n-----END {label}-----"
        assert redact_text(f"a\n{block}\nb") == "a\n[REDACTED:private-key]\nb"
    ssh2 = '---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: "rsa-key"\n' + "P2/56w" * 12
    assert redact_text(ssh2 + "\n---- END SSH2 ENCRYPTED PRIVATE KEY ----") == (
        "[REDACTED:private-key]"
    )


@pytest.mark.parametrize("path", real_fixture_files(), ids=lambda p: p.name)
def test_real_transcripts_keep_ids_and_signatures(path: Path) -> None:
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        assert redact_value(record) == record


def test_real_transcripts_false_positives_at_most_half_a_percent() -> None:
    require_shared(REAL_FIXTURES)
    lines = [
        line
        for path in real_fixture_files()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert len(lines) > 500
    changed_text = sum(redact_text(line) != line for line in lines)
    changed_value = 0
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        changed_value += redact_value(record) != record
    assert changed_text / len(lines) <= 0.005
    assert changed_value / len(lines) <= 0.005


# -- structured values -------------------------------------------------------------------


def test_a_secret_under_any_key_is_redacted_and_provider_ids_are_kept() -> None:
    secret = "sk-proj-" + "Zq3" * 20
    value = {
        "id": secret,
        "call_id": "call_0Hq3kAqz2vN9x8Yt",
        "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
        "signature": "EqQBCkYIARgCIkDx" + "q9/" * 40 + "==",
        "encrypted_content": "gAAAAABo" + "Xy-_3" * 60,
        "content": [{"type": "redacted_thinking", "data": "EmwKAhgB" + "aZ09" * 30}],
    }
    out = redact_value(value)
    assert out["id"] == "[REDACTED:openai-key]"
    assert {k: out[k] for k in value if k != "id"} == {k: value[k] for k in value if k != "id"}


def test_a_value_under_a_key_that_names_it_is_redacted() -> None:
    stats = RedactionStats()
    out = redact_value(
        {
            "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "password": "Tr0ub4dor&3",
            "client_secret": "q8Zr3xK0pW2vM6nB",
            "token": "<your token>",
            "max_tokens": "4096",
            "sha": "a" * 40,
        },
        stats,
    )
    assert out == {
        "SecretAccessKey": "[REDACTED:aws-secret-key]",
        "password": "[REDACTED:password-assignment]",
        "client_secret": "[REDACTED:secret-assignment]",
        "token": "<your token>",
        "max_tokens": "4096",
        "sha": "a" * 40,
    }
    assert stats.to_dict() == {
        "aws-secret-key": 1,
        "password-assignment": 1,
        "secret-assignment": 1,
    }


def test_keys_are_scanned_too() -> None:
    key = "xoxb-123456789012-1234567890123-abcdefghijABCDEFGHIJ1234"
    assert redact_value({key: 1}) == {"[REDACTED:slack-token]": 1}


# -- properties --------------------------------------------------------------------------

_SECRETS = build_secrets()
_FILLER = st.text(
    alphabet=st.sampled_from(list("abcXYZ019 _-=:./\\\"'\n\t{}[]()@?&密钥ä")), max_size=24
)
# Never an ASCII letter or digit right before a token: a token glued to a word
# ("tokenghp_…") is not found (see docs/secrets.md, limits).
_GLUE = st.sampled_from([" ", "\n", "\\n", "=", ":", "'", '"', '\\"', "密", "(", "/"])


@st.composite
def _planted(draw: st.DrawFn) -> tuple[str, list[str]]:
    """Filler text with secrets (as their carriers) glued in at random places."""
    parts: list[str] = []
    pieces: list[str] = []
    for _ in range(draw(st.integers(0, 3))):
        secret = draw(st.sampled_from(_SECRETS))
        carrier = draw(st.sampled_from(secret.carriers))
        parts += [draw(_FILLER), draw(_GLUE), carrier, draw(_GLUE)]
        pieces += secret.pieces()
    parts.append(draw(_FILLER))
    text = "".join(parts)
    if draw(st.booleans()):
        text = json.dumps({"content": text})
    return text, pieces


_BARE_TOKENS = [
    s.value
    for s in _SECRETS
    if s.self_identifying and s.carriers == (s.value,) and "\n" not in s.value
]
_SETTINGS = settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@_SETTINGS
@given(case=_planted())
def test_property_no_planted_secret_survives(case: tuple[str, list[str]]) -> None:
    text, pieces = case
    assert survivors(tuple(pieces), redact_text(text)) == []


@_SETTINGS
@given(case=_planted())
def test_property_redaction_is_idempotent_and_nothing_grows_back(
    case: tuple[str, list[str]],
) -> None:
    once = redact_text(case[0])
    assert redact_text(once) == once
    # Nothing in the output is a secret again: the replacements completed no new one.
    assert not contains_secret(once)


@_SETTINGS
@given(text=st.text(max_size=200))
def test_property_any_text_redacts_to_a_fixed_point(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once
    assert not contains_secret(once)


@_SETTINGS
@given(
    text=st.text(
        alphabet=st.characters(exclude_characters="\\", exclude_categories=["Cs"]),
        max_size=120,
    )
)
def test_property_json_stays_valid(text: str) -> None:
    document = json.dumps({"arguments": text})
    assert isinstance(json.loads(redact_text(document)), dict)


@_SETTINGS
@given(value=st.recursive(
    st.sampled_from([*_BARE_TOKENS, "ok", "call_1"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["id", "text", "password", "input", "k"]), inner, max_size=3),
    max_leaves=8,
))  # fmt: skip
def test_property_redact_value_leaves_no_planted_secret(value: Any) -> None:
    # Tokens that identify themselves, alone as values (a bare AWS secret key or
    # password is 40 random characters like any other: its name is what gives it away).
    out = "\n".join(strings_of(redact_value(value)))
    planted = tuple(s for s in strings_of(value) if len(s) > 8)
    assert survivors(planted, out) == []


_U_ESCAPE = re.compile(r"\\+u([0-9A-Fa-f]{4})")


def _u_decoded(text: str) -> str:
    """What a reader that decodes JSON \\uXXXX escapes (at any depth) reads."""
    return _U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


@st.composite
def _u_escaped(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A carrier whose characters are written as JSON \\uXXXX escapes at random
    places (its prefix too: "\\u0073k-proj-…"), escaped once or twice."""
    secret = draw(st.sampled_from([s for s in _SECRETS if "\n" not in "".join(s.carriers)]))
    carrier = draw(st.sampled_from(secret.carriers))
    chosen = draw(st.sets(st.integers(0, len(carrier) - 1), min_size=1, max_size=6))
    slashes = "\\" * draw(st.sampled_from([1, 2]))
    escaped = "".join(
        f"{slashes}u{ord(c):04x}" if i in chosen else c for i, c in enumerate(carrier)
    )
    return draw(_FILLER) + draw(_GLUE) + escaped + draw(_GLUE) + draw(_FILLER), list(
        secret.pieces()
    )


@_SETTINGS
@given(case=_u_escaped())
def test_property_a_secret_spelled_with_json_u_escapes_is_redacted(
    case: tuple[str, list[str]],
) -> None:
    text, pieces = case
    assert contains_secret(text)
    out = redact_text(text)
    assert survivors(tuple(pieces), _u_decoded(out)) == []
    assert redact_text(out) == out


_SOLIDUS_ESCAPE = re.compile(r"\\+/")
_WITH_SLASH = [
    s for s in _SECRETS if "\n" not in "".join(s.carriers) and any("/" in c for c in s.carriers)
]


@st.composite
def _solidus_escaped(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A carrier holding "/" (a URL with a password, a webhook, a key named in a path)
    with each "/" written as JSON's escaped solidus "\\/", as PHP's json_encode does,
    escaped once or twice, and some other characters as \\uXXXX escapes."""
    secret = draw(st.sampled_from(_WITH_SLASH))
    carrier = draw(st.sampled_from([c for c in secret.carriers if "/" in c]))
    slashes = "\\" * draw(st.sampled_from([1, 2]))
    chosen = draw(st.sets(st.integers(0, len(carrier) - 1), max_size=3))
    escaped = "".join(
        slashes + "/" if c == "/" else (f"{slashes}u{ord(c):04X}" if i in chosen else c)
        for i, c in enumerate(carrier)
    )
    return draw(_FILLER) + draw(_GLUE) + escaped + draw(_GLUE) + draw(_FILLER), list(
        secret.pieces()
    )


@_SETTINGS
@given(case=_solidus_escaped())
def test_property_a_secret_spelled_with_json_escaped_solidus_is_redacted(
    case: tuple[str, list[str]],
) -> None:
    text, pieces = case
    assert contains_secret(text)
    out = redact_text(text)
    assert survivors(tuple(pieces), _SOLIDUS_ESCAPE.sub("/", _u_decoded(out))) == []
    assert redact_text(out) == out


@pytest.mark.parametrize(
    "text",
    [
        r'"\u00e9t\u00e9"',
        r'print("caf\u00e9 na\u00efve r\u00e9sum\u00e9")',
        r'x = "\u0070\u0061\u0073\u0073word manager"',
        r"var re = /^https?:\/\/([^:\/]+):([^@\/]+)@/;",
        r'"https:\/\/user@github.com\/org\/repo.git"',
        r'"\ud83d\ude00 \u4f60\u597d"',
    ],
)
def test_escaped_ordinary_text_is_kept(text: str) -> None:
    assert redact_text(text) == text


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.mark.parametrize("depth", [MAX_DEPTH - 2, 5 * MAX_DEPTH])
def test_redact_value_of_a_deeply_nested_value(depth: int) -> None:
    """A value as deep as agc's JSON reader accepts (a tool call's input in a history)
    and deeper is redacted, not a RecursionError: the walk keeps no Python frame per
    level."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    stats = RedactionStats()
    out = redact_value(_nested(depth, token), stats)
    for level in reversed(range(depth)):  # compared level by level: == itself recurses
        out = out[0] if level % 2 else out["k"]
    assert out == "[REDACTED:github-token]"
    assert stats.by_kind == {"github-token": 1}


@given(
    value=st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.sampled_from(
                ["x", "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2", "password=hunter2hunter2"]
            ),
        ),
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(
                st.sampled_from(
                    ["a", "password", "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8", "b"]
                ),
                children,
                max_size=4,
            ),
        ),
        max_leaves=20,
    )
)
def test_redact_value_keeps_structure_and_key_order(value: Any) -> None:
    """Lists keep their length and order, objects their key order, every string is
    redacted as on its own (the walk's order changes nothing)."""
    out = redact_value(value)
    assert json.dumps(out) == json.dumps(_reference(value))


def _reference(value: Any) -> Any:
    """The recursive definition, for comparison."""
    if isinstance(value, str):
        return redact_value(value)
    if isinstance(value, list):
        return [_reference(item) for item in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            single = redact_value({key: item}) if isinstance(item, str) else None
            if single is not None:
                out.update(single)
            else:
                out[redact_text(key)] = _reference(item)
        return out
    return value


# -- keys that the redaction makes equal -----------------------------------------------

_GH_A = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
_GH_B = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
_GH_C = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
_GH = "[REDACTED:github-token]"


def test_two_secret_keys_of_one_kind_both_keep_their_member() -> None:
    stats = RedactionStats()
    out = redact_value({_GH_A: 1, "id": "x", _GH_B: {"n": 2}}, stats)
    assert list(out.items()) == [(f"{_GH}-1", 1), ("id", "x"), (f"{_GH}-2", {"n": 2})]
    assert stats.to_dict() == {"github-token": 2}


def test_a_redacted_key_meeting_a_literal_marker_key_keeps_both() -> None:
    out = redact_value({_GH: "was already a marker", _GH_A: "held a token"})
    assert out == {f"{_GH}-1": "was already a marker", f"{_GH}-2": "held a token"}


def test_new_names_skip_the_keys_the_object_already_holds() -> None:
    value = {_GH_A: 1, f"{_GH}-1": 2, _GH_B: 3, f"{_GH}-2": 4, _GH_C: 5, f"{_GH}-4": 6}
    out = redact_value(value)
    assert list(out.items()) == [
        (f"{_GH}-3", 1),
        (f"{_GH}-1", 2),
        (f"{_GH}-5", 3),
        (f"{_GH}-2", 4),
        (f"{_GH}-6", 5),
        (f"{_GH}-4", 6),
    ]


def test_keys_that_collide_only_once_redacted_under_another_marker() -> None:
    out = redact_value({f"token {_GH_A}": 1, f"token {_GH_B}": 2}, marker="[secret]")
    assert out == {"token [secret]-1": 1, "token [secret]-2": 2}


def test_a_key_that_meets_no_other_is_its_redacted_text() -> None:
    out = redact_value({_GH_A: 1, f"{_GH}-1": 2, "password": "Tr0ub4dor&3"})
    assert list(out) == [_GH, f"{_GH}-1", "password"]
    assert out["password"] == "[REDACTED:password-assignment]"


def test_keys_made_equal_deep_down_keep_their_members_without_recursion() -> None:
    value: Any = {_GH_A: "a", _GH_B: "b"}
    for _ in range(5 * MAX_DEPTH):
        value = {"k": value}
    out = redact_value(value)
    for _ in range(5 * MAX_DEPTH):
        out = out["k"]
    assert out == {f"{_GH}-1": "a", f"{_GH}-2": "b"}


def test_distinct_names_renames_only_the_texts_shared_by_different_originals() -> None:
    # An original met again (one call id in a call and its result) is one original.
    pairs = [("a1", "A"), ("b", "B"), ("a2", "A"), ("a1", "A"), ("c", "A-1")]
    assert redact.distinct_names(pairs) == {"a1": "A-2", "a2": "A-3"}
    assert redact.distinct_names([("a", "A"), ("a", "A"), ("b", "B")]) == {}


_KEY_KINDS = ("github-token", "openai-key", "slack-token")
_KEY_TOKENS = [s.value for s in _SECRETS if s.value in _BARE_TOKENS and s.detects_as in _KEY_KINDS]
_KEY_MARKERS = [DEFAULT_MARKER.format(kind=kind) for kind in _KEY_KINDS]
# Keys: real-format tokens (several of each kind, alone or after a word), the markers
# they redact to (alone, after the same word, or with a suffix a renaming would give),
# and plain words.
_KEYS = st.one_of(
    st.tuples(st.sampled_from(["", "call_", "key "]), st.sampled_from(_KEY_TOKENS)).map("".join),
    st.tuples(
        st.sampled_from(["", "call_", "key "]),
        st.sampled_from(_KEY_MARKERS),
        st.sampled_from(["", "", "-1", "-2", "-3", "-1-1"]),
    ).map("".join),
    st.sampled_from(["id", "text", "password", "k", "alpha-1", "content"]),
)
_VALUES = st.recursive(
    st.sampled_from([*_KEY_TOKENS[:4], "ok", "Tr0ub4dor&3"]) | st.integers(0, 3) | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=12,
)


def _check_members(value: Any, out: Any) -> None:
    """Each object of ``value`` and its copy ``out``: as many members, in order, each
    under its redacted key (or that key and ``-<n>`` when it meets another), each
    value as redacted on its own."""
    if isinstance(value, list):
        assert isinstance(out, list)
        assert len(out) == len(value)
        for item, new_item in zip(value, out, strict=True):
            _check_members(item, new_item)
    elif isinstance(value, dict):
        assert isinstance(out, dict)
        assert len(out) == len(value)
        texts = [redact_text(key) for key in value]
        for (key, item), text, (new_key, new_item) in zip(
            value.items(), texts, out.items(), strict=True
        ):
            if texts.count(text) == 1:
                assert new_key == text
            else:
                assert re.fullmatch(re.escape(text) + r"-[1-9][0-9]*", new_key)
            (alone,) = redact_value({key: item}).values()
            assert json.dumps(new_item) == json.dumps(alone)
            _check_members(item, new_item)
    else:
        assert out == value or isinstance(value, str)


def _keys_of(value: Any) -> Iterator[str]:
    if isinstance(value, list):
        for item in value:
            yield from _keys_of(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _keys_of(item)


@_SETTINGS
@given(value=st.dictionaries(_KEYS, _VALUES, max_size=6))
def test_property_no_member_is_lost_when_keys_redact_to_one_text(value: dict[str, Any]) -> None:
    stats = RedactionStats()
    out = redact_value(value, stats)
    _check_members(value, out)
    # No planted secret in any key or value; nothing the detector would take again.
    planted = tuple(t for t in _KEY_TOKENS if any(t in s for s in strings_of(value)))
    assert survivors(planted, "\n".join(strings_of(out))) == []
    assert not any(contains_secret(key) for key in _keys_of(out))
    # Deterministic, and a fixed point: redacting the copy again changes nothing.
    assert json.dumps(redact_value(json.loads(json.dumps(value)))) == json.dumps(out)
    assert json.dumps(redact_value(out)) == json.dumps(out)
    # Each secret counted once: as if each member were redacted on its own.
    alone = RedactionStats()
    for key, item in value.items():
        redact_value({key: item}, alone)
    assert stats.by_kind == alone.by_kind


_ENV_NAMES = st.one_of(
    st.from_regex(r"[A-Z][A-Z0-9_]{0,30}", fullmatch=True),
    st.sampled_from(
        ["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "MAX_TOKENS", "NEXT_PAGE_TOKEN"]
    ),
)


@settings(max_examples=examples(300))
@given(name=_ENV_NAMES)
def test_a_variable_names_a_secret_exactly_when_its_value_would_be_redacted_as_one(
    name: str,
) -> None:
    """credential_variable is the detector's own rule for names, not a second list: a
    name it classifies by a secret word is one under which redact_value replaces a
    credential-shaped value, and the other way round."""
    value = "Zq8rT2" * 7
    by_rule = redact_value({name: value})[name] != value
    kind = credential_variable(name)
    if kind == "credential-variable":
        return  # granted by other means (SSH_AUTH_SOCK, DATABASE_URL): no secret word
    assert (kind is not None) is by_rule


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("AWS_SECRET_ACCESS_KEY", "aws-secret-key"),
        ("GITHUB_TOKEN", "secret-assignment"),
        ("PG_PASSWORD", "password-assignment"),
        ("SSH_AUTH_SOCK", "credential-variable"),
        ("DATABASE_URL", "credential-variable"),
        ("SENTRY_DSN", "credential-variable"),
        ("MAX_TOKENS", None),
        ("PATH", None),
    ],
)
def test_credential_variables_by_name(name: str, kind: str | None) -> None:
    assert credential_variable(name) == kind
