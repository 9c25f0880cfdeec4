"""Pod-level verdicts told on the top-level owner (kmock): a pod the webhook sized at creation
→ PodsSized on the Deployment (and vllm-sizer.io/pods on it) or on a custom resource (Event
only, never patched); a FailedCreate Event carrying the validating webhook's denial →
PodsDenied on the top-level owner."""

from __future__ import annotations

import copy

import pytest

from vllm_sizer.operator.controller import OomWatcher, PodVerdicts
from vllm_sizer.workloads.api_names import PODS_ANNOTATION, SIZED_LABEL

from .conftest import DEPLOYMENTS, current, events, example, put, requests_of, stored

REPLICASETS = "apps/v1/replicasets"
WIDGETS = "example.com/v1/widgets"
DECISION = "mutate: limits.memory 8.0Gi → 27.3Gi, requests.memory 8.0Gi → 27.3Gi"
DENIAL = ('admission webhook "validate.vllm-sizer.io" denied the request: vllm-sizer: Pod '
          'llm/qwen3-lora-cpu-7d9f- container vllm: memory limit 8.0Gi is below the estimated peak 24.7Gi')


def rs_owned_by(kmock, kind: str, api_version: str, name: str, uid: str) -> dict:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "qwen3-lora-cpu-7d9f", "namespace": "llm", "uid": "rs-uid",
                       "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": name,
                                            "uid": uid, "controller": True}]}}
    put(kmock, REPLICASETS, rs)
    return rs


def sized_pod(name: str = "qwen3-lora-cpu-7d9f-x2x4z", uid: str = "pod-1") -> dict:
    spec = copy.deepcopy(example("01-cpu-lora-deployment")["spec"]["template"]["spec"])
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "llm", "uid": uid,
                         "labels": {"app": "qwen3-lora-cpu", SIZED_LABEL: "true"},
                         "annotations": {"vllm-sizer.io/decision": DECISION,
                                         "vllm-sizer.io/estimate": "24.7Gi"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": "qwen3-lora-cpu-7d9f", "uid": "rs-uid",
                                              "controller": True}]},
            "spec": spec, "status": {"phase": "Pending"}}


def deployment(kmock) -> dict:
    dep = stored(example("01-cpu-lora-deployment"))
    dep["metadata"]["uid"] = "dep-uid"
    put(kmock, DEPLOYMENTS, dep)
    rs_owned_by(kmock, "Deployment", "apps/v1", dep["metadata"]["name"], "dep-uid")
    return dep


@pytest.mark.asyncio
async def test_pod_sized_at_creation_is_told_on_the_deployment_once(kmock, api, settings):
    kmock.resources[REPLICASETS] = {}
    dep = deployment(kmock)
    watcher = OomWatcher(api, settings, verdicts=PodVerdicts(api, settings))
    await watcher.handle_pod(sized_pod())
    (ev,) = events(kmock, "llm")
    assert ev["reason"] == "PodsSized" and ev["type"] == "Normal"
    assert ev["involvedObject"]["kind"] == "Deployment"
    assert ev["involvedObject"]["uid"] == "dep-uid"
    assert DECISION in ev["message"] and "24.7Gi" in ev["message"]
    stored_dep = current(kmock, DEPLOYMENTS, "llm", dep["metadata"]["name"])
    assert stored_dep["metadata"]["annotations"][PODS_ANNOTATION] == f"sized at creation: {DECISION}"
    assert stored_dep["spec"] == dep["spec"]  # the template is never touched
    # the next pod of the same owner with the same verdict: no second Event
    await watcher.handle_pod(sized_pod("qwen3-lora-cpu-7d9f-abcde", "pod-2"))
    assert len(events(kmock, "llm")) == 1
    # a restarted controller: the Event's fixed name makes the API server refuse a duplicate
    again = PodVerdicts(api, settings)
    await again.pod_sized(sized_pod("qwen3-lora-cpu-7d9f-zzzzz", "pod-3"))
    assert len(events(kmock, "llm")) == 1


@pytest.mark.asyncio
async def test_owner_of_an_unknown_kind_gets_the_event_and_is_never_patched(kmock, api, settings):
    kmock.resources[REPLICASETS] = {}
    kmock.resources[WIDGETS] = {}
    widget = {"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": "w", "namespace": "llm", "uid": "w-uid"}, "spec": {}}
    put(kmock, WIDGETS, widget)
    rs_owned_by(kmock, "Widget", "example.com/v1", "w", "w-uid")
    verdicts = PodVerdicts(api, settings)
    ev = await verdicts.pod_sized(sized_pod())
    assert ev["involvedObject"] == {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w",
                                    "namespace": "llm", "uid": "w-uid"}
    assert not [r for r in requests_of(kmock, "PATCH")]
    assert current(kmock, WIDGETS, "llm", "w") == widget


@pytest.mark.asyncio
async def test_failed_create_denial_is_told_on_the_top_level_owner(kmock, api, settings):
    kmock.resources[REPLICASETS] = {}
    deployment(kmock)
    failed = {"apiVersion": "v1", "kind": "Event", "reason": "FailedCreate", "type": "Warning",
              "metadata": {"name": "qwen3-lora-cpu-7d9f.1", "namespace": "llm"},
              "involvedObject": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "llm",
                                 "name": "qwen3-lora-cpu-7d9f", "uid": "rs-uid"},
              "message": f"Error creating: {DENIAL}"}
    verdicts = PodVerdicts(api, settings)
    ev = await verdicts.pod_denied(failed)
    assert ev["reason"] == "PodsDenied" and ev["type"] == "Warning"
    assert ev["involvedObject"]["kind"] == "Deployment"
    assert "is below the estimated peak 24.7Gi" in ev["message"]
    assert "ReplicaSet/qwen3-lora-cpu-7d9f" in ev["message"]
    assert await verdicts.pod_denied(failed) is None  # the ReplicaSet retries: told once
    other = {**failed, "message": "Error creating: pods \"x\" is forbidden: exceeded quota"}
    assert await verdicts.pod_denied(other) is None


@pytest.mark.asyncio
async def test_bare_pod_and_unserved_namespace_tell_nobody(kmock, api, settings):
    bare = sized_pod()
    del bare["metadata"]["ownerReferences"]
    verdicts = PodVerdicts(api, settings)
    assert await verdicts.pod_sized(bare) is None
    system = sized_pod(uid="p-sys")
    system["metadata"]["namespace"] = "kube-system"
    assert await verdicts.pod_sized(system) is None
    assert events(kmock) == []


def test_the_watch_follows_failed_create_events_by_field_selector(api, settings):
    watcher = OomWatcher(api, settings, verdicts=PodVerdicts(api, settings))
    assert ("/api/v1/events", {"fieldSelector": "reason=FailedCreate"}) in watcher.watches()
    assert ("/api/v1/pods", {"labelSelector": f"{SIZED_LABEL}=true"}) in watcher.watches()
    assert len(OomWatcher(api, settings).watches()) == 1
