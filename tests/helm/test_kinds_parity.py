"""`check` and the webhook see the same kinds, from one table (vllm_sizer/workloads/kinds.py):
every kind `check` sizes (patches or denies) is a webhook rule of the Python builder, of the
chart (files/served-resources.yaml, generated) and of manifests/install.yaml, and no other kind
is ever patched or denied by `check`."""

from __future__ import annotations

import copy
import pathlib

import pytest
import yaml

from vllm_sizer.cli.check import load_documents
from vllm_sizer.operator.webhook.configurations import rules
from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings
from vllm_sizer.workloads import kinds

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "platforms"
C = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
     "resources": {"limits": {"memory": "1Gi", "nvidia.com/gpu": "1"}}}


def _nest(path: str, leaf: dict) -> dict:
    out: dict = leaf
    for part in reversed(path.split(".")[1:]):
        out = {part: out}
    return out


def _data(name: str, kind: str) -> dict:
    return next(d for d in yaml.safe_load_all((DATA / name).read_text()) if d and d["kind"] == kind)


def sample(k: kinds.KindSpec) -> dict:
    """A vLLM object of kind `k` whose memory limit (1Gi) is too small."""
    meta = {"name": "x", "namespace": "llm"}
    base = {"apiVersion": k.api_version, "kind": k.kind, "metadata": meta}
    pod = {"containers": [copy.deepcopy(C)]}
    if k.pod_specs:
        return {**base, **_nest(k.pod_specs[0], pod)}
    head = {"headGroupSpec": {"template": {"spec": pod}}}
    shapes = {
        "InferenceService": {"spec": {"predictor": {"model": {
            "modelFormat": {"name": "vllm"}, "storageUri": "hf://Qwen/Qwen3-0.6B",
            "resources": {"limits": {"memory": "1Gi", "nvidia.com/gpu": "1"}}}}}},
        "LLMInferenceService": {"spec": {"model": {"uri": "hf://Qwen/Qwen3-0.6B"}, "template": {
            "containers": [{**copy.deepcopy(C), "name": "main"}]}}},
        "RayCluster": {"spec": head},
        "RayService": {"spec": {"rayClusterConfig": head}},
        "RayClusterFleet": {"spec": {"template": {"spec": head}}},
        "StormService": {"spec": {"template": {"spec": {"roles": [{"name": "r", "template": {"spec": pod}}]}}}},
    }
    if k.kind in shapes:
        return {**base, **shapes[k.kind]}
    if k.kind == "DynamoGraphDeployment":
        obj = copy.deepcopy(_data("dynamo-agg-v1alpha1.yaml", k.kind))
        obj["spec"]["services"]["VllmDecodeWorker"]["resources"]["limits"]["memory"] = "1Gi"
        return obj
    if k.kind == "VLLMRuntime":
        obj = copy.deepcopy(_data("production-stack-vllmruntime.yaml", k.kind))
        obj["spec"]["deploymentConfig"]["resources"]["memory"] = "1Gi"
        return obj
    raise AssertionError(f"no sample for served kind {k.kind}: add one")


def sized_by_check(obj: dict) -> bool:
    """What `vllm-sizer check` does with the object: patch (mutate) or deny (enforce)."""
    mutate = review_object(obj, policy=PolicySettings(mode="mutate"))
    deny = review_object(obj, policy=PolicySettings(mode="enforce"))
    return bool(mutate.patch) or deny.verdict == "deny"


@pytest.mark.parametrize("k", kinds.served(), ids=lambda k: k.kind)
def test_every_served_kind_is_sized_by_check(k):
    assert sized_by_check(sample(k)), k.kind


@pytest.mark.parametrize("obj", [
    _data("kubeai-model.yaml", "Model"),
    _data("kaito-workspace.yaml", "Workspace"),
    {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
     "spec": {"template": {"spec": {"containers": [C]}}}},
    {**_data("kaito-workspace.yaml", "Workspace"),
     "inference": {"template": {"spec": {"containers": [C]}}}},
], ids=["kubeai-Model", "kaito-Workspace", "unknown-CRD", "kaito-template"])
def test_kinds_the_webhook_does_not_serve_are_never_sized_by_check(obj):
    assert kinds.lookup(obj["apiVersion"], obj["kind"]) is None or \
        not kinds.lookup(obj["apiVersion"], obj["kind"]).served
    assert not sized_by_check(obj)


def _rule_set(rs: list[dict]) -> set[tuple]:
    return {(r["apiGroups"][0], r["apiVersions"][0], r["resources"][0], tuple(r["operations"]))
            for r in rs}


def test_the_webhook_rules_are_the_served_kinds_everywhere():
    table = {(k.group, k.version, k.plural, k.operations) for k in kinds.served()}
    assert _rule_set(rules()) == table
    generated = yaml.safe_load((ROOT / "helm/vllm-sizer/files/served-resources.yaml").read_text())
    assert {(d["group"], d["version"], d["plural"], tuple(d["operations"])) for d in generated} == table
    assert {d["plural"] for d in generated if d["watched"]} == \
        {p for _g, _v, p, _k in kinds.watched_resources()}
    install = [d for d in load_documents([str(ROOT / "manifests" / "install.yaml")])
               if d["kind"].endswith("WebhookConfiguration")]
    assert len(install) == 2
    for cfg in install:
        assert _rule_set(cfg["webhooks"][0]["rules"]) == table
