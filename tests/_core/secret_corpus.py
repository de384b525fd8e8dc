"""A deterministic corpus of real-format secrets in the places agents put them.

Built from a seed (no file, no network): every secret is random in the documented
format of its provider, so the corpus tests the detector against formats, not against
memorised strings. Each :class:`Secret` is placed in every placement that applies to it
(:data:`PLACEMENTS`): prose, glued to CJK text or punctuation, JSON-escaped once and
twice, wrapped across two lines (raw and JSON-escaped), under ``"id"`` or under a key
that names it, in a URL, in a header, in an environment assignment, after a
command-line flag, in a Markdown code block.

A case counts as redacted when no piece of its secret (12 characters or more, in a
sliding window) is left in the output: a half-redacted token is not redacted.

Run ``python -m tests._core.secret_corpus`` for the figures (kinds, placements, the
share redacted, per kind).
"""

from __future__ import annotations

import base64
import itertools
import json
import random
import string
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agc._core import redact

__all__ = [
    "PLACEMENTS",
    "Case",
    "Secret",
    "build_cases",
    "build_secrets",
    "strings_of",
    "survivors",
]

SEED = 20261130
WINDOW = 12

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "_-"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
B32 = string.ascii_uppercase + "234567"
UPPER_ALNUM = string.ascii_uppercase + string.digits
PASSWORD_CHARS = ALNUM + "!*_+-"
BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


@dataclass(frozen=True)
class Secret:
    """One generated secret.

    Attributes:
        kind: the corpus kind (``openai-project`` …), finer than the detector's.
        detects_as: the kind the detector must report (``openai-key`` …).
        value: the secret (what must not survive).
        carriers: texts that hold it as it is found in the wild (``value`` itself for a
            token that identifies itself; ``aws_secret_access_key = …`` for one that
            needs its name).
        structured: JSON values holding it under a key that names it.
        self_identifying: recognisable without context (a prefixed token, a PEM key).
        wrap_from: offsets where a line break may be put (``None``: not wrapped).
        lines: a multi-line secret's lines of key material (PEM).
    """

    kind: str
    detects_as: str
    value: str
    carriers: tuple[str, ...]
    structured: tuple[Any, ...] = ()
    self_identifying: bool = True
    wrap_from: int | None = None
    lines: tuple[str, ...] = ()

    def pieces(self) -> tuple[str, ...]:
        return self.lines or (self.value,)


@dataclass(frozen=True)
class Case:
    """A secret in one placement: ``text`` for :func:`redact_text`, or ``value`` for
    :func:`redact_value` (then ``text`` is ``None``)."""

    secret: Secret
    placement: str
    text: str | None = None
    value: Any = None
    pieces: tuple[str, ...] = field(default=())
    exact: tuple[str, ...] = field(default=())
    """Strings that must not be left whole in the output (a short half of a secret cut
    by a line break, with the line breaks around it)."""


def _pick(rng: random.Random, alphabet: str, size: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


def _random_token(rng: random.Random, alphabet: str, size: int) -> str:
    """Random, and never a plain word: it holds a digit and both letter cases when the
    alphabet has them (as a random token of this size almost always does)."""
    while True:
        value = _pick(rng, alphabet, size)
        needs = [set(string.digits), set(string.ascii_lowercase), set(string.ascii_uppercase)]
        if all(not (set(alphabet) & need) or set(value) & need for need in needs):
            return value


def _password(rng: random.Random) -> str:
    return (
        _random_token(rng, ALNUM, rng.randint(8, 12))
        + _pick(rng, "!*_+-", 1)
        + (_random_token(rng, PASSWORD_CHARS, rng.randint(3, 6)))
    )


def _b64url_json(data: dict[str, Any]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _checksummed(entropy: str) -> str:
    """GitHub's and npm's token body: 30 random base62 characters and their CRC32 in 6
    base62 digits (0-9A-Z a-z), as both providers document their token format."""
    value = zlib.crc32(entropy.encode())
    digits = ""
    for _ in range(6):
        value, digit = divmod(value, 62)
        digits = BASE62[digit] + digits
    return entropy + digits


def _token(kind: str, detects_as: str, prefix: str, body: str) -> Secret:
    value = prefix + body
    return Secret(kind, detects_as, value, (value,), wrap_from=len(prefix) + 2)


def _token_secrets(rng: random.Random) -> Iterator[Secret]:
    r = rng

    def tok(alphabet: str, size: int) -> str:
        return _random_token(r, alphabet, size)

    marker = "T3BlbkFJ"  # "OpenAI" in base64, inside every OpenAI key
    yield _token("openai-legacy", "openai-key", "sk-", tok(ALNUM, 20) + marker + tok(ALNUM, 20))
    yield _token("openai-legacy-48", "openai-key", "sk-", tok(ALNUM, 48))
    for kind, prefix in (
        ("openai-project", "sk-proj-"),
        ("openai-service-account", "sk-svcacct-"),
        ("openai-admin", "sk-admin-"),
    ):
        yield _token(kind, "openai-key", prefix, tok(B64URL, 74) + marker + tok(B64URL, 74))
    yield _token("anthropic-api", "anthropic-key", "sk-ant-api03-", tok(B64URL, 93) + "AA")
    yield _token("anthropic-admin", "anthropic-key", "sk-ant-admin01-", tok(B64URL, 93) + "AA")
    yield _token("openrouter", "openrouter-key", "sk-or-v1-", tok(HEX, 64))
    yield _token("groq", "groq-key", "gsk_", tok(ALNUM, 52))
    yield _token("xai", "xai-key", "xai-", tok(ALNUM, 80))
    yield _token("aws-akia", "aws-access-key", "AKIA", tok(B32, 16))
    yield _token("aws-asia", "aws-access-key", "ASIA", tok(B32, 16))
    for kind, prefix in (
        ("github-pat", "ghp_"),
        ("github-oauth", "gho_"),
        ("github-user-to-server", "ghu_"),
        ("github-server-to-server", "ghs_"),
        ("github-refresh", "ghr_"),
    ):
        yield _token(kind, "github-token", prefix, _checksummed(tok(ALNUM, 30)))
    yield _token(
        "github-fine-grained", "github-token", "github_pat_", tok(ALNUM, 22) + "_" + tok(ALNUM, 59)
    )
    for kind, prefix in (
        ("gitlab-pat", "glpat-"),
        ("gitlab-runner", "glrt-"),
        ("gitlab-deploy", "gldt-"),
    ):
        yield _token(kind, "gitlab-token", prefix, tok(B64URL, 20))
    digits = string.digits
    yield _token(
        "slack-bot",
        "slack-token",
        "xoxb-",
        f"{tok(digits, 12)}-{tok(digits, 13)}-{tok(ALNUM, 24)}",
    )
    yield _token(
        "slack-user",
        "slack-token",
        "xoxp-",
        f"{tok(digits, 12)}-{tok(digits, 12)}-{tok(digits, 13)}-{tok(HEX, 32)}",
    )
    yield _token(
        "slack-app",
        "slack-token",
        "xapp-",
        f"1-A{tok(UPPER_ALNUM, 10)}-{tok(digits, 13)}-{tok(HEX, 64)}",
    )
    path = f"T{tok(UPPER_ALNUM, 8)}/B{tok(UPPER_ALNUM, 10)}/{tok(ALNUM, 24)}"
    webhook = "https://hooks.slack.com/services/" + path
    yield Secret("slack-webhook", "slack-webhook", path, (webhook,), wrap_from=12)
    yield _token("stripe-live", "stripe-key", "sk_live_", tok(ALNUM, r.choice((24, 99))))
    yield _token("stripe-test", "stripe-key", "sk_test_", tok(ALNUM, r.choice((24, 99))))
    yield _token("stripe-restricted", "stripe-key", "rk_live_", tok(ALNUM, 99))
    yield _token("stripe-webhook-secret", "stripe-key", "whsec_", tok(ALNUM, 32))
    # Google's API keys go on with "Sy" after "AIza" (as every published one does).
    yield _token("google-api-key", "google-api-key", "AIzaSy", tok(B64URL, 33))
    yield _token("google-oauth-access", "google-oauth-token", "ya29.", tok(B64URL, 150))
    yield _token("google-client-secret", "google-oauth-token", "GOCSPX-", tok(B64URL, 28))
    azure_ad = tok(ALNUM, 3) + r.choice(digits) + "Q~" + tok(ALNUM + "_~.-", 34)
    yield Secret("azure-ad-client-secret", "azure-client-secret", azure_ad, (azure_ad,))
    header = _b64url_json({"alg": "HS256", "typ": "JWT"})
    payload = _b64url_json({"sub": tok(digits, 10), "name": "Ada", "iat": 1700000000})
    jwt = f"{header}.{payload}.{tok(B64URL, 43)}"
    yield Secret("jwt", "jwt", jwt, (jwt,), wrap_from=4)
    yield _token("npm", "npm-token", "npm_", _checksummed(tok(ALNUM, 30)))
    yield _token("pypi", "pypi-token", "pypi-AgEIcHlwaS5vcmc", tok(B64URL, 120))
    yield _token("huggingface", "huggingface-token", "hf_", tok(string.ascii_letters, 34))
    yield _token("twilio-api-key", "twilio-key", "SK", tok(HEX, 32))
    yield _token("sendgrid", "sendgrid-key", "SG.", f"{tok(B64URL, 22)}.{tok(B64URL, 43)}")
    yield _token("mailgun", "mailgun-key", "key-", tok(HEX, 32))
    yield _token("digitalocean", "digitalocean-token", "dop_v1_", tok(HEX, 64))
    yield _token("shopify", "shopify-token", "shpat_", tok(HEX, 32))
    yield _token("databricks", "databricks-token", "dapi", tok(HEX, 32))
    bot = f"{r.randint(10**9, 10**10 - 1)}:AA{tok(B64URL, 33)}"
    yield Secret("telegram-bot", "telegram-bot-token", bot, (bot,), wrap_from=14)
    yield _token("docker-pat", "docker-token", "dckr_pat_", tok(B64URL, 27))
    yield _token("vault", "vault-token", "hvs.", tok(B64URL, 90))
    yield _token("linear", "linear-key", "lin_api_", tok(ALNUM, 40))
    yield _token("perplexity", "perplexity-key", "pplx-", tok(ALNUM, 48))


def _pem(
    rng: random.Random, kind: str, label: str, lines: int, width: int = 64, **opts: Any
) -> Secret:
    body = [_random_token(rng, B64, width) for _ in range(lines)]
    body.append(_random_token(rng, B64, rng.randint(10, 40)) + "==")
    headers: list[str] = list(opts.get("headers", ()))
    cut = bool(opts.get("cut", False))
    begin, end = f"-----BEGIN {label}-----", f"-----END {label}-----"
    parts = [begin, *headers]
    if headers:
        parts.append("")
    parts += body
    if opts.get("checksum"):
        parts.append("=" + _random_token(rng, B64, 4))
    if not cut:
        parts.append(end)
    else:
        parts = parts[: 1 + len(headers) + 3]
        body = body[:3]
    text = "\n".join(parts)
    return Secret(kind, "private-key", text, (text,), lines=tuple(body))


def _pem_secrets(rng: random.Random) -> Iterator[Secret]:
    yield _pem(rng, "pem-rsa", "RSA PRIVATE KEY", 6)
    yield _pem(rng, "pem-ec", "EC PRIVATE KEY", 2)
    yield _pem(rng, "pem-pkcs8", "PRIVATE KEY", 5)
    yield _pem(rng, "pem-pkcs8-encrypted", "ENCRYPTED PRIVATE KEY", 5)
    yield _pem(rng, "pem-openssh", "OPENSSH PRIVATE KEY", 5, width=70)
    yield _pem(rng, "pem-dsa", "DSA PRIVATE KEY", 4)
    yield _pem(
        rng,
        "pem-rsa-legacy-encrypted",
        "RSA PRIVATE KEY",
        5,
        headers=("Proc-Type: 4,ENCRYPTED", f"DEK-Info: AES-128-CBC,{_pick(rng, HEX, 32).upper()}"),
    )
    yield _pem(
        rng,
        "pem-pgp",
        "PGP PRIVATE KEY BLOCK",
        5,
        headers=("Version: GnuPG v2",),
        checksum=True,
    )
    yield _pem(rng, "pem-cut-off", "PRIVATE KEY", 5, cut=True)


def _context_secrets(rng: random.Random) -> Iterator[Secret]:
    r = rng
    aws = _random_token(r, B64, 40)
    yield Secret(
        "aws-secret-key",
        "aws-secret-key",
        aws,
        (
            f"aws_secret_access_key = {aws}",
            f'"SecretAccessKey": "{aws}",',
            f"aws configure set aws_secret_access_key {aws}",
            f"export AWS_SECRET_ACCESS_KEY={aws}",
        ),
        (
            {"SecretAccessKey": aws, "AccessKeyId": "AKIA" + "EXAMPLE"},
            {"aws_secret_access_key": aws},
        ),
        self_identifying=False,
        wrap_from=4,
    )
    session = _random_token(r, B64, 300)
    yield Secret(
        "aws-session-token",
        "aws-session-token",
        session,
        (f"aws_session_token = {session}", f'"SessionToken": "{session}"'),
        ({"SessionToken": session},),
        self_identifying=False,
    )
    storage = _random_token(r, B64, 86) + "=="
    yield Secret(
        "azure-storage-key",
        "azure-storage-key",
        storage,
        (
            "DefaultEndpointsProtocol=https;AccountName=acct7;"
            f"AccountKey={storage};EndpointSuffix=core.windows.net",
            f"AZURE_STORAGE_KEY={storage}",
        ),
        self_identifying=False,
    )
    opaque = _random_token(r, ALNUM + "._~-", 40)
    yield Secret(
        "bearer-opaque",
        "bearer-token",
        opaque,
        (
            f"Authorization: Bearer {opaque}",
            f'curl -s -H "Authorization: Bearer {opaque}" https://api.example.com/v1/items',
            f"bearer {opaque}",
        ),
        self_identifying=False,
    )
    user_pass = f"deploy{r.randint(1, 99)}:{_password(r)}"
    basic = base64.b64encode(user_pass.encode()).decode()
    yield Secret(
        "basic-auth-header",
        "basic-auth",
        basic,
        (
            f"Authorization: Basic {basic}",
            f"curl -H 'Authorization: Basic {basic}' https://ci.example.com/",
        ),
        self_identifying=False,
    )
    curl_pw = _password(r)
    yield Secret(
        "curl-user-password",
        "basic-auth",
        curl_pw,
        (f"curl -u admin:{curl_pw} https://registry.example.com/v2/",),
        self_identifying=False,
    )
    api_key = _random_token(r, ALNUM, 32)
    yield Secret(
        "api-key-header",
        "api-key-header",
        api_key,
        (f"X-Api-Key: {api_key}", f'curl -H "x-api-key: {api_key}" https://api.example.com/'),
        self_identifying=False,
    )
    for kind, template in (
        ("url-https", "https://deploy:{}@git.example.com/org/repo.git"),
        ("url-postgres", "postgres://app:{}@db.internal:5432/app"),
        ("url-mongodb", "mongodb+srv://admin:{}@cluster0.ab1cd.mongodb.net/test?retryWrites=true"),
        ("url-redis", "redis://:{}@cache.internal:6379/0"),
        ("url-mysql", "mysql://root:{}@127.0.0.1:3306/shop"),
    ):
        password = _password(r)
        yield Secret(
            kind, "url-password", password, (template.format(password),), self_identifying=False
        )
    query = _random_token(r, B64URL, 40)
    yield Secret(
        "url-query-token",
        "url-token",
        query,
        (f"https://api.example.com/v1/export?access_token={query}&format=csv",),
        self_identifying=False,
    )
    for kind, detects_as, templates in (
        ("env-password", "password-assignment",
         ("DB_PASSWORD={}", "export POSTGRES_PASSWORD={}", "PASSWORD='{}'")),
        ("env-secret-key", "secret-assignment", ("SECRET_KEY={}", 'DJANGO_SECRET_KEY="{}"')),
        ("env-token", "secret-assignment",
         ("SERVICE_TOKEN={}", 'export CI_DEPLOY_TOKEN="{}"', "  API_TOKEN: {}")),
        ("env-api-key", "secret-assignment", ("MY_SERVICE_API_KEY={}",)),
        ("json-password", "password-assignment", ('"password": "{}"',)),
        ("yaml-client-secret", "secret-assignment", ("client_secret: {}",)),
        ("cli-password-flag", "password-assignment",
         ("mysql --password={} shop", "pg_dump --password {} app")),
        ("mysql-p", "password-assignment", ("mysql -u root -p{} shop",)),
    ):  # fmt: skip
        value = _password(r) if "password" in detects_as else _random_token(r, ALNUM, 32)
        structured: tuple[Any, ...] = ()
        if kind == "json-password":
            structured = ({"user": "admin", "password": value},)
        if kind == "yaml-client-secret":
            structured = ({"client_id": "app", "client_secret": value},)
        yield Secret(
            kind,
            detects_as,
            value,
            tuple(t.format(value) for t in templates),
            structured,
            self_identifying=False,
        )


def build_secrets(seed: int = SEED, copies: int = 2) -> list[Secret]:
    """``copies`` secrets of every kind, generated from ``seed``."""
    rng = random.Random(seed)
    out: list[Secret] = []
    for _ in range(copies):
        out += [*_token_secrets(rng), *_pem_secrets(rng), *_context_secrets(rng)]
    return out


# -- placements ----------------------------------------------------------------------


def _wrap(secret: Secret, rng: random.Random) -> tuple[str, str] | None:
    if secret.wrap_from is None:
        return None
    value = secret.value
    if len(value) - 8 <= secret.wrap_from:
        return None
    cut = rng.randint(secret.wrap_from, len(value) - 8)
    return value[:cut], value[cut:]


def _wrapped_carrier(
    secret: Secret, carrier: str, rng: random.Random
) -> tuple[str, tuple[str, str]] | None:
    halves = _wrap(secret, rng)
    if halves is None or secret.value not in carrier:
        return None
    return carrier.replace(secret.value, halves[0] + "\n" + halves[1], 1), halves


PLACEMENTS: tuple[str, ...] = (
    "prose",
    "glued-cjk",
    "glued-punctuation",
    "json-escaped",
    "json-escaped-twice",
    "wrapped",
    "wrapped-json-escaped",
    "under-id",
    "under-its-name",
    "url",
    "header",
    "env",
    "cli-flag",
    "markdown",
    "glued-base64-left",
    "glued-base64-right",
    "glued-base64-both",
    "glued-json",
    "glued-url-query",
    "split",
    "split-json-escaped",
    "wrapped-terminal",
)

GLUED_PLACEMENTS = ("glued-base64-left", "glued-base64-both", "glued-json", "glued-url-query")
"""Placements where a token follows a letter or digit (no word boundary before it)."""

# Prefixed tokens found only with a word boundary before them (docs/secrets.md): random
# base64 holds their documented format by accident too often (20 to 26 bits), or they
# have no prefix of their own. They are glued on the right in the corpus.
NOT_GLUED_LEFT: dict[str, str] = {
    "openai-legacy-48": "sk- and 48 letters or digits without T3BlbkFJ: 20 bits",
    "groq": "gsk_ and 52 letters or digits: 26 bits",
    "xai": "xai- and 80 letters or digits: 27.7 bits",
    "jwt": "eyJ: base64 of JSON inside base64 is common",
    "telegram-bot": "no prefix: a bot id of digits",
    "slack-webhook": "a URL",
    "azure-ad-client-secret": "no prefix",
}
# Secrets cut by a line break at every position inside them (beyond the prefixed
# tokens): those that need no name before them, or that sit in a URL.
SPLIT_KINDS_BESIDES_TOKENS = (
    "azure-ad-client-secret", "jwt", "telegram-bot", "slack-webhook", "aws-secret-key",
    "url-https", "url-postgres", "url-mongodb", "url-redis", "url-mysql",
)  # fmt: skip
TERMINAL_WIDTHS = (40, 80)
EVERY_CUT = (
    "glued-base64-left", "glued-base64-right", "glued-base64-both", "glued-json",
    "glued-url-query", "split", "split-json-escaped", "wrapped-terminal",
)  # fmt: skip
"""The placements built only by ``build_cases(every_cut=True)``."""

_GLUE = ("[{}]", "<{}>", "'{}'", "({})", "key={}&", "`{}`", "“{}”", "{}.txt", "{},")


def _cases_for(secret: Secret, rng: random.Random, index: int) -> Iterator[Case]:
    pieces = secret.pieces()
    for number, carrier in enumerate(secret.carriers):
        glue = _GLUE[(index + number) % len(_GLUE)]
        yield Case(
            secret, "prose", f"Here is what you asked for: {carrier} (keep it safe).", None, pieces
        )
        yield Case(secret, "glued-cjk", f"我的配置是{carrier}请保密", None, pieces)
        yield Case(secret, "glued-punctuation", glue.format(carrier), None, pieces)
        content = f"# written by the agent\n{carrier}\nDEBUG=false\n"
        once = json.dumps({"path": "config/app.env", "content": content})
        yield Case(secret, "json-escaped", once, None, pieces)
        yield Case(secret, "json-escaped-twice", json.dumps({"arguments": once}), None, pieces)
        yield Case(secret, "markdown", f"Output:\n```\n{carrier}\n```\n", None, pieces)
        wrapped = _wrapped_carrier(secret, carrier, rng)
        if wrapped is not None:
            text, halves = wrapped
            split_pieces = tuple(h for h in halves if len(h) >= 8)
            line = f"$ cat token.txt\n{text}\n$ echo done"
            yield Case(secret, "wrapped", line, None, split_pieces)
            escaped = json.dumps({"type": "function_call_output", "output": line})
            yield Case(secret, "wrapped-json-escaped", escaped, None, split_pieces)
    for value in secret.structured:
        yield Case(secret, "under-its-name", None, value, pieces)
        yield Case(secret, "under-its-name", json.dumps(value), None, pieces)
    if not secret.self_identifying or "\n" in secret.value or secret.kind == "slack-webhook":
        return
    token = secret.value
    yield Case(
        secret, "under-id", None, {"type": "function_call", "id": token, "name": "run"}, pieces
    )
    yield Case(secret, "under-id", json.dumps({"id": token, "object": "item"}), None, pieces)
    urls = (
        f"https://x-access-token:{token}@github.com/org/repo.git",
        f"https://api.example.com/v1/data?api_key={token}",
        f"wss://stream.example.com/socket?token={token}&v=2",
    )
    yield Case(secret, "url", urls[index % len(urls)], None, pieces)
    headers = (
        f'curl -s -H "Authorization: Bearer {token}" https://api.example.com/v1/me',
        f"X-Api-Key: {token}",
        f"Authorization: token {token}",
    )
    yield Case(secret, "header", headers[index % len(headers)], None, pieces)
    envs = (
        f"export SERVICE_API_KEY={token}",
        f'OPENAI_API_KEY="{token}"',
        f"TOKEN={token} npm publish",
    )
    yield Case(secret, "env", envs[index % len(envs)], None, pieces)
    yield Case(secret, "cli-flag", f"deploy --token {token} --yes", None, pieces)
    yield from _glued_cases(secret, rng)


def _b64_glue(rng: random.Random, *, ending: bool) -> str:
    """Standard base64 of random bytes; a left glue ends in a letter or digit."""
    while True:
        glue = base64.b64encode(rng.randbytes(rng.randint(3, 24))).decode()
        if ending:
            return glue
        glue = glue.rstrip("=")
        if glue[-1] in ALNUM:
            return glue


def _glued_cases(secret: Secret, rng: random.Random) -> Iterator[Case]:
    token, pieces = secret.value, secret.pieces()
    left, right = _b64_glue(rng, ending=False), _b64_glue(rng, ending=True)
    yield Case(secret, "glued-base64-right", f"blob {token}{right} end", None, pieces)
    if secret.kind in NOT_GLUED_LEFT:
        return
    yield Case(secret, "glued-base64-left", f"blob {left}{token} end", None, pieces)
    yield Case(secret, "glued-base64-both", f"{left}{token}{right}", None, pieces)
    blob = json.dumps({"type": "reasoning", "encrypted_content": f"{left}{token}{right}"})
    yield Case(secret, "glued-json", blob, None, pieces)
    url = f"https://cdn.example.com/a.js?v={left}{token}{right}&x=1"
    yield Case(secret, "glued-url-query", url, None, pieces)


def _split_cases(secret: Secret) -> Iterator[Case]:
    """The secret cut by one line break at every position inside it (raw and
    JSON-escaped), and its carrier wrapped at terminal widths."""
    carrier = secret.carriers[0]
    value = secret.value
    at = carrier.index(value)
    before, after = carrier[:at], carrier[at + len(value) :]
    for cut in range(1, len(value)):
        head, rest = value[:cut], value[cut:]
        text = f"$ cat token.txt\n{before}{head}\n{rest}{after}\n$ echo done"
        line_one, line_two = f"\n{before}{head}\n", f"\n{rest}{after}\n"
        pieces = tuple(h for h in (head, rest) if len(h) >= 8)
        exact = tuple(line for line, h in ((line_one, head), (line_two, rest)) if len(h) < 8)
        yield Case(secret, "split", text, None, pieces, exact)
        escaped = json.dumps({"type": "function_call_output", "output": text})
        exact_escaped = tuple(json.dumps(line)[1:-1] for line in exact)
        yield Case(secret, "split-json-escaped", escaped, None, pieces, exact_escaped)
    line = f"$ echo {carrier}"
    start = line.index(value)
    for width in TERMINAL_WIDTHS:
        cuts = [c for c in range(width, len(line), width) if start < c < start + len(value)]
        if not cuts:
            continue
        wrapped = "\n".join(line[c : c + width] for c in range(0, len(line), width))
        bounds = [start, *cuts, start + len(value)]
        segments = [line[a:b] for a, b in itertools.pairwise(bounds)]
        rows = wrapped.split("\n")
        exact = tuple(
            f"\n{row}\n" for row in rows if any(seg in row and len(seg) < 8 for seg in segments)
        )
        pieces = tuple(seg for seg in segments if len(seg) >= 8)
        yield Case(secret, "wrapped-terminal", f"{wrapped}\n$ ", None, pieces, exact)


def build_cases(seed: int = SEED, copies: int = 2, *, every_cut: bool = False) -> list[Case]:
    """Every secret of :func:`build_secrets` in every placement that applies to it.

    ``every_cut``: also the placements of :data:`EVERY_CUT`: glued inside base64, JSON
    and URLs, wrapped at terminal widths, and each secret cut by a line break at every
    position inside it (some 13,300 cases more; the callers that pass a whole corpus
    through a feature keep the 1,904 cases of the other placements)."""
    rng = random.Random(seed + 1)
    secrets = build_secrets(seed, copies)
    cases = [
        case for index, secret in enumerate(secrets) for case in _cases_for(secret, rng, index)
    ]
    for secret in secrets:
        bare = secret.self_identifying and secret.carriers == (secret.value,)
        if (bare and not secret.lines) or secret.kind in SPLIT_KINDS_BESIDES_TOKENS:
            cases += [c for c in _split_cases(secret) if every_cut]
    if not every_cut:
        cases = [c for c in cases if c.placement not in EVERY_CUT]
    return cases


# -- checking --------------------------------------------------------------------------


def strings_of(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings_of(item)


def survivors(pieces: tuple[str, ...], output: str) -> list[str]:
    """The windows of ``pieces`` (12 characters, or the whole of a shorter piece) that
    ``output`` still holds."""
    found = []
    for piece in pieces:
        size = min(WINDOW, len(piece))
        for start in range(0, len(piece) - size + 1):
            window = piece[start : start + size]
            if window in output:
                found.append(window)
                break
    return found


def run_case(
    case: Case,
    redact_text: Callable[[str], str],
    redact_value: Callable[[Any], Any],
) -> list[str]:
    """Redact one case; return the windows of its secret that survived."""
    if case.text is not None:
        output = redact_text(case.text)
    else:
        output = "\n".join(strings_of(redact_value(case.value)))
    return survivors(case.pieces, output) + [line for line in case.exact if line in output]


def report(redact_text: Callable[[str], str], redact_value: Callable[[Any], Any]) -> dict[str, Any]:
    """Figures for a detector: totals, and redacted/total per kind and per placement."""
    cases = build_cases(every_cut=True)
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    by_placement: dict[str, Counter[str]] = defaultdict(Counter)
    missed: list[tuple[str, str]] = []
    for case in cases:
        ok = not run_case(case, redact_text, redact_value)
        for table, key in ((by_kind, case.secret.kind), (by_placement, case.placement)):
            table[key]["total"] += 1
            table[key]["redacted"] += ok
        if not ok:
            missed.append((case.secret.kind, case.placement))
    redacted = sum(c["redacted"] for c in by_kind.values())
    return {
        "secrets": len(build_secrets()),
        "kinds": len(by_kind),
        "placements": len(by_placement),
        "cases": len(cases),
        "redacted": redacted,
        "redacted_share": round(redacted / len(cases), 4),
        "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
        "by_placement": {k: dict(v) for k, v in sorted(by_placement.items())},
        "missed": missed,
    }


def main() -> int:
    figures = report(redact.redact_text, redact.redact_value)
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
