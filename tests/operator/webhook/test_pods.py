"""Pod-level sizing over the real TLS server: a vLLM pod whose template vllm-sizer did not size
(made by an operator it does not read, by a workload created before the install, or bare) is
sized on CREATE; a pod created from a sized template is left alone; an UPDATE is never patched;
enforce mode denies with the usual message. The CEL matchConditions keep non-vLLM pods and
pods from sized templates from being sent at all."""

from __future__ import annotations

import copy

import jsonpatch
import pytest

from vllm_sizer.operator.settings import MUTATE_PATH, VALIDATE_PATH, OperatorSettings
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads.api_names import DECISION_ANNOTATION, ESTIMATE_ANNOTATION, SIZED_LABEL
from vllm_sizer.workloads.model import ReadContext
from vllm_sizer.workloads.quantity import parse_quantity

from .conftest import lora_deployment, review

POD = ("", "v1", "Pod")


def lora_pod(owner: tuple[str, str] | None = ("apps/v1", "ReplicaSet"), labelled: bool = False,
             limit: str = "8Gi", annotations: dict | None = None) -> dict:
    """A pod as the ReplicaSet controller creates it from examples/01's template."""
    dep = lora_deployment(limit)
    tmpl = dep["spec"]["template"]
    meta = {"generateName": "qwen3-lora-cpu-7c9f8d-", "namespace": "llm",
            "labels": {**tmpl["metadata"]["labels"], "pod-template-hash": "7c9f8d"},
            "annotations": dict(annotations or {})}
    if labelled:
        meta["labels"][SIZED_LABEL] = "true"
    if owner:
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1],
                                    "name": "qwen3-lora-cpu-7c9f8d", "uid": "a1b2",
                                    "controller": True, "blockOwnerDeletion": True}]
    spec = copy.deepcopy(tmpl["spec"])
    spec.update(serviceAccountName="default", nodeName=None, priority=0,
                enableServiceLinks=True, preemptionPolicy="PreemptLowerPriority")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {}}


def pod_review(pod: dict, operation: str = "CREATE", old: dict | None = None) -> dict:
    return review(pod, operation, old=old, kind=POD, resource="pods")


@pytest.mark.asyncio
@pytest.mark.parametrize("owner", [("apps/v1", "ReplicaSet"), ("example.com/v1", "Widget"), None])
async def test_unsized_vllm_pod_is_sized_on_create(start_webhook, owner):
    hook = await start_webhook()
    pod = lora_pod(owner, labelled=owner is not None and owner[0] == "example.com/v1")
    resp = await hook.post(MUTATE_PATH, pod_review(pod))
    assert resp["allowed"] is True
    mutated = jsonpatch.apply_patch(pod, _ops(resp))
    expected = review_object(pod, ReadContext(), OperatorSettings().policy(), label_pods=True)
    assert mutated == expected.mutated(pod)
    c = mutated["spec"]["containers"][0]["resources"]
    assert parse_quantity(c["limits"]["memory"]) > 8 * 1024**3  # raised, never lowered
    assert c["requests"]["memory"] == c["limits"]["memory"]
    assert c["limits"]["cpu"] == "8"
    ann = mutated["metadata"]["annotations"]
    assert ann[DECISION_ANNOTATION].startswith("mutate: limits.memory 8.0Gi →") and ann[ESTIMATE_ANNOTATION]
    assert mutated["metadata"]["labels"][SIZED_LABEL] == "true"  # the OOM watch follows it
    assert mutated["metadata"].get("ownerReferences") == pod["metadata"].get("ownerReferences")
    # reinvocation: nothing more
    again = await hook.post(MUTATE_PATH, pod_review(mutated))
    assert "patch" not in again


@pytest.mark.asyncio
async def test_pod_from_a_sized_template_is_left_alone(start_webhook):
    hook = await start_webhook()
    pod = lora_pod(("apps/v1", "ReplicaSet"), labelled=True)
    for path in (MUTATE_PATH, VALIDATE_PATH):
        resp = await hook.post(path, pod_review(pod))
        assert resp["allowed"] is True and "patch" not in resp and "warnings" not in resp


@pytest.mark.asyncio
async def test_pod_update_is_never_patched(start_webhook):
    hook = await start_webhook(mode="enforce")
    pod = lora_pod()
    newer = copy.deepcopy(pod)
    newer["metadata"]["labels"]["extra"] = "1"
    for path in (MUTATE_PATH, VALIDATE_PATH):
        resp = await hook.post(path, pod_review(newer, "UPDATE", old=pod))
        assert resp == {"uid": resp["uid"], "allowed": True}


@pytest.mark.asyncio
async def test_enforce_denies_the_pod_with_the_usual_message(start_webhook):
    hook = await start_webhook(mode="enforce")
    pod = lora_pod(limit="12Gi")
    expected = review_object(pod, ReadContext(), OperatorSettings(mode="enforce").policy())
    assert expected.verdict == "deny"
    v = await hook.post(VALIDATE_PATH, pod_review(pod))
    assert v["allowed"] is False
    assert v["status"]["code"] == 403 and v["status"]["message"] == expected.message
    assert v["status"]["message"].startswith("vllm-sizer: Pod llm/qwen3-lora-cpu-7c9f8d- container vllm")


@pytest.mark.asyncio
async def test_pod_skip_annotation_and_non_vllm_pod(start_webhook):
    hook = await start_webhook()
    skipped = lora_pod(annotations={"vllm-sizer.io/skip": "true"})
    assert "patch" not in await hook.post(MUTATE_PATH, pod_review(skipped))
    web = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w", "namespace": "llm"},
           "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}
    resp = await hook.post(MUTATE_PATH, pod_review(web))
    assert resp == {"uid": resp["uid"], "allowed": True}


def _ops(resp: dict) -> list:
    from .conftest import decode_patch
    ops = decode_patch(resp)
    assert ops, resp
    return ops


# ---- CEL: which pod CREATEs are sent ------------------------------------------------------------

celpy = pytest.importorskip("celpy")


def sent(obj: dict, kind: str = "Pod", group: str = "") -> bool:
    from vllm_sizer.operator.webhook.configurations import match_conditions

    env = celpy.Environment()
    act = {"object": celpy.json_to_cel(obj),
           "request": celpy.json_to_cel({"kind": {"group": group, "version": "v1", "kind": kind},
                                         "operation": "CREATE"})}
    out = []
    for cond in match_conditions():
        value = env.program(env.compile(cond["expression"])).evaluate(act)
        assert isinstance(value, celpy.celtypes.BoolType), (cond["name"], value)
        out.append(bool(value))
    return all(out)


def test_cel_pod_creates():
    assert sent(lora_pod(("apps/v1", "ReplicaSet"), labelled=False)) is True
    assert sent(lora_pod(("apps/v1", "ReplicaSet"), labelled=True)) is False  # sized template
    assert sent(lora_pod(("ray.io/v1", "RayCluster"), labelled=True)) is False
    assert sent(lora_pod(("example.com/v1", "Widget"), labelled=True)) is True  # unknown operator
    assert sent(lora_pod(None, labelled=True)) is True  # bare
    empty = lora_pod(("apps/v1", "ReplicaSet"))
    empty["metadata"]["labels"][SIZED_LABEL] = ""
    assert sent(empty) is True
    web = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "w", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                         "name": "r", "uid": "u", "controller": True}]},
           "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}
    assert sent(web) is False
    # the same owner chain on a Deployment still means "its owner is sized"
    dep = lora_deployment()
    dep["metadata"]["ownerReferences"] = web["metadata"]["ownerReferences"]
    assert sent(dep, "Deployment", "apps") is False
