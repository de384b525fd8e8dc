"""The deployment contract: what is declared, never what a Secret holds."""

from __future__ import annotations

import json

import pytest

from agc.errors import DeploymentManifestError, UsageError
from agc.readiness import BaseUrlRule, ContractSpec, EnvRequirement, check_contract, parse_manifests

SECRET_VALUE = "sk-proj-" + "Q" * 30


def _deployment(env: str, *, kind: str = "Deployment", env_from: str = "") -> str:
    spec = "spec:\n  template:\n    spec:\n"
    indent = "      "
    if kind == "CronJob":
        spec = "spec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n"
        indent = "          "
    body = f"{indent}containers:\n{indent}  - name: api\n{indent}    env:\n"
    body += "".join(f"{indent}      {line}\n" for line in env.strip().splitlines())
    if env_from:
        body += f"{indent}    envFrom:\n{indent}      {env_from}\n"
    return f"kind: {kind}\nmetadata: {{name: cloud-api}}\n{spec}{body}"


KEY = EnvRequirement(name="OPENAI_API_KEY", secret="provider-keys", key="openai-api-key")
REF = "- name: OPENAI_API_KEY\n  valueFrom: {{secretKeyRef: {{{ref}}}}}"
GOOD_REF = REF.format(ref="name: provider-keys, key: openai-api-key")


def _check(text: str, spec: ContractSpec) -> tuple[bool, str | None, set[str], str]:
    verdict = check_contract(parse_manifests(text, source="m.yaml"), spec, environment="dev")
    document = json.dumps(verdict.to_dict())
    assert verdict.level == "SOURCE"
    return verdict.passed, verdict.blocker, {r.code for r in verdict.reasons}, document


def test_a_declared_secret_ref_passes() -> None:
    passed, blocker, codes, _ = _check(_deployment(GOOD_REF), ContractSpec(env=(KEY,)))
    assert passed
    assert blocker is None
    assert codes == {"secret-ref-declared"}


@pytest.mark.parametrize(
    ("env", "code"),
    [
        (f"- {{name: OPENAI_API_KEY, value: {SECRET_VALUE}}}", "secret-as-literal"),
        (
            REF.format(ref="name: other, key: openai-api-key"),
            "secret-ref-wrong",
        ),
        (
            "- name: OPENAI_API_KEY\n  valueFrom: {secretKeyRef: {name: provider-keys, key: k2}}",
            "secret-ref-wrong",
        ),
        (
            "- name: OPENAI_API_KEY\n  valueFrom: {configMapKeyRef: {name: c, key: k}}",
            "secret-ref-missing",
        ),
        (
            REF.format(ref="name: provider-keys, key: openai-api-key, optional: true"),
            "secret-ref-optional",
        ),
        ("- {name: OTHER, value: x}", "env-missing"),
    ],
)
def test_credential_findings_never_quote_a_value(env: str, code: str) -> None:
    passed, blocker, codes, document = _check(_deployment(env), ContractSpec(env=(KEY,)))
    assert not passed
    assert blocker == "credential"
    assert code in codes
    assert SECRET_VALUE not in document


def test_env_from_is_named_but_not_trusted() -> None:
    text = _deployment("- {name: OTHER, value: x}", env_from="- secretRef: {name: provider-keys}")
    verdict = check_contract(
        parse_manifests(text, source="m"), ContractSpec(env=(KEY,)), environment="dev"
    )
    assert not verdict.passed
    assert "envFrom (secretRef provider-keys)" in verdict.reasons[0].message


def test_secret_data_is_dropped_when_parsed() -> None:
    text = (
        f"kind: Secret\nmetadata: {{name: provider-keys}}\ndata:\n  k: {SECRET_VALUE}\n"
        f"stringData:\n  k2: {SECRET_VALUE}\n---\n" + _deployment(GOOD_REF)
    )
    documents = parse_manifests(text, source="m")
    assert SECRET_VALUE not in repr(documents)
    assert documents[0].body["metadata"] == {"name": "provider-keys"}


def test_a_plain_env_value_is_checked() -> None:
    spec = ContractSpec(env=(EnvRequirement(name="AGENT_PROVIDER", value="codex-stdio"),))
    ok = _check(_deployment("- {name: AGENT_PROVIDER, value: codex-stdio}"), spec)
    assert ok[0]
    wrong = _check(_deployment("- {name: AGENT_PROVIDER, value: openai-fallback}"), spec)
    assert not wrong[0]
    assert wrong[1] == "runner"
    assert "env-value-wrong" in wrong[2]


BASE = "PROVIDER_BASE_URL"


@pytest.mark.parametrize(
    ("env", "rule", "code"),
    [
        (
            f"- {{name: {BASE}, value: 'http://egress.internal:17680/v1/responses'}}",
            BaseUrlRule(env=BASE, proxy_required=True),
            "base-url-declared",
        ),
        (
            f"- {{name: {BASE}, value: 'https://api.openai.com/v1'}}",
            BaseUrlRule(env=BASE, proxy_required=True),
            "base-url-public-host",
        ),
        (
            f"- {{name: {BASE}, value: 'https://eu.api.openai.com/v1'}}",
            BaseUrlRule(env=BASE, proxy_required=True),
            "base-url-public-host",
        ),
        (
            f"- {{name: {BASE}, value: 'https://api.openai.com/v1'}}",
            BaseUrlRule(env=BASE),
            "base-url-declared",
        ),
        (
            f"- {{name: {BASE}, value: 'http://a/v1'}}",
            BaseUrlRule(env=BASE, expected="http://b/v1"),
            "base-url-wrong",
        ),
        (f"- {{name: {BASE}, value: 'not a url'}}", BaseUrlRule(env=BASE), "base-url-invalid"),
        (
            f"- name: {BASE}\n  valueFrom: {{secretKeyRef: {{name: s, key: k}}}}",
            BaseUrlRule(env=BASE),
            "base-url-unverifiable",
        ),
        ("- {name: OTHER, value: x}", BaseUrlRule(env=BASE), "base-url-missing"),
        (
            f"- name: {BASE}\n  valueFrom: {{configMapKeyRef: {{name: egress, key: url}}}}",
            BaseUrlRule(env=BASE, proxy_required=True, public_hosts=("egress.internal",)),
            "base-url-public-host",
        ),
    ],
)
def test_the_base_url_contract(env: str, rule: BaseUrlRule, code: str) -> None:
    config_map = (
        "kind: ConfigMap\nmetadata: {name: egress}\ndata: {url: 'http://egress.internal/v1'}\n---\n"
    )
    passed, _, codes, _ = _check(config_map + _deployment(env), ContractSpec(base_url=rule))
    assert codes == {code}
    assert passed is (code == "base-url-declared")


def test_lists_and_cronjobs_are_workloads() -> None:
    cron = _deployment(GOOD_REF, kind="CronJob")
    listed = "kind: List\nitems:\n" + "".join(
        f"    {line}\n" if i else f"  - {line}\n" for i, line in enumerate(cron.splitlines())
    )
    assert _check(listed, ContractSpec(env=(KEY,)))[0]


def test_selecting_a_missing_workload_fails() -> None:
    spec = ContractSpec(workloads=("gateway",), env=(KEY,))
    passed, blocker, codes, _ = _check(_deployment(GOOD_REF), spec)
    assert not passed
    assert blocker == "runner"
    assert codes == {"workload-missing"}


def test_bad_yaml_is_named() -> None:
    with pytest.raises(DeploymentManifestError, match=r"m\.yaml is not valid YAML at line 2"):
        parse_manifests("a: 1\n  b: [\n", source="m.yaml")
    with pytest.raises(DeploymentManifestError, match="not a Kubernetes object"):
        parse_manifests("- 1\n- 2\n", source="m.yaml")


def test_yaml_tags_construct_nothing() -> None:
    with pytest.raises(DeploymentManifestError):
        parse_manifests("!!python/object/apply:os.system ['true']\n", source="m.yaml")


def test_an_empty_contract_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="requires nothing"):
        check_contract([], ContractSpec(), environment="dev")


def _alias_bomb(containers: int, copies: int) -> str:
    env = ", ".join(f"{{name: E{i}, value: x}}" for i in range(50))
    return "\n".join(
        [
            "kind: List",
            "defs:",
            f"  env: &env [{env}]",
            "  c: &c {name: api, env: *env}",
            "  cs: &cs [" + ", ".join(["*c"] * containers) + "]",
            "  d: &d {kind: Deployment, metadata: {name: w},"
            " spec: {template: {spec: {containers: *cs}}}}",
            "items: [" + ", ".join(["*d"] * copies) + "]",
        ]
    )


def test_a_yaml_alias_bomb_is_refused_before_it_is_walked() -> None:
    # 20 KB of text; expanded, 1000 x 1000 containers of 50 env entries each.
    text = _alias_bomb(1000, 1000)
    assert len(text) < 20_000
    with pytest.raises(DeploymentManifestError, match="aliases expand to more than 100000"):
        parse_manifests(text, source="bomb.yaml")


def test_a_self_containing_alias_is_refused_not_walked_forever() -> None:
    with pytest.raises(DeploymentManifestError, match="aliases expand"):
        parse_manifests("kind: List\nitems: &loop [*loop]\n", source="loop.yaml")


def test_anchors_that_share_an_env_block_are_still_checked() -> None:
    text = (
        "kind: Deployment\nmetadata: {name: cloud-api}\nspec:\n  template:\n    spec:\n"
        "      containers:\n"
        "        - {name: api, env: &env [{name: AGENT_PROVIDER, value: codex-stdio}]}\n"
        "        - {name: worker, env: *env}\n"
    )
    documents = parse_manifests(text, source="m.yaml")
    spec = ContractSpec(env=(EnvRequirement(name="AGENT_PROVIDER", value="codex-stdio"),))
    assert check_contract(documents, spec, environment="dev").passed


_POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: api\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (_POD + "    env: [{name: A, value: " + "9" * 5000 + "}]\n", "cannot convert"),
        (_POD + "    env: [{name: A, value: 0x" + "f" * 20_000 + "}]\n", "integer of 80000 bits"),
        (_POD + "    env: [{name: A, value: " + "9" * 20 + "}]\n", "integer of 67 bits"),
        (_POD + "    " + "9" * 300 + ": key\n", "integer of 997 bits"),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nests too deep"),
    ],
    ids=["decimal-over-4300-digits", "wide-hex", "over-64-bits", "integer-key", "deep"],
)
def test_a_value_no_kubernetes_object_holds_is_a_manifest_error(text: str, problem: str) -> None:
    # Each was an unexpected exception (exit 4) from the YAML reader or from printing.
    with pytest.raises(DeploymentManifestError, match=problem):
        parse_manifests(text, source="deploy.yaml")


def test_a_64_bit_integer_is_still_read() -> None:
    text = _POD + "    env: [{name: A, value: '1'}]\n    ports: [{containerPort: " + str(2**63 - 1)
    documents = parse_manifests(text + "}]\n", source="deploy.yaml")
    assert len(documents) == 1
