"""Pod-level sizing against a real API server with its controller-manager: a plain ReplicaSet
owned by an object of a test CRD (a controller vllm-sizer does not know) creates a vLLM pod;
the webhook sizes the pod at creation, the ReplicaSet and its owner are not modified, and the
controller tells the owner (PodsSized). With the pods in enforce mode the ReplicaSet cannot
create them and the owner carries the PodsDenied Event.

Needs kube-controller-manager (the ReplicaSet controller creates the pods); no kubelet: the pods
stay Pending, which is enough for admission."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest

from .conftest import EXAMPLES
from tests.expected import NEED_01_QUANTITY

pytestmark = pytest.mark.e2e

GROUP = "e2e.vllm-sizer.io"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


@pytest.fixture(scope="module")
def widget_crd(kube: Any):
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = client.ApiextensionsV1Api(kube)
    try:
        api.create_custom_resource_definition(CRD)
    except ApiException as exc:
        if exc.status != 409:
            raise
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        crd = api.read_custom_resource_definition(CRD["metadata"]["name"])
        if any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or [])):
            break
        time.sleep(0.3)
    else:
        raise AssertionError("the test CRD was not established")
    yield CRD["metadata"]["name"]
    try:
        api.delete_custom_resource_definition(CRD["metadata"]["name"])
    except ApiException:
        pass


def make_widget(kube: Any, namespace: str, name: str) -> dict:
    from kubernetes import client

    return client.CustomObjectsApi(kube).create_namespaced_custom_object(
        GROUP, "v1", namespace, "widgets",
        {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name},
         "spec": {"engine": "vllm"}})


def replicaset_of(widget: dict, namespace: str, name: str, pod_annotations: dict | None = None) -> dict:
    import yaml

    dep = next(d for d in yaml.safe_load_all((EXAMPLES / "01-cpu-lora-deployment.yaml").read_text())
               if d and d["kind"] == "Deployment")
    tmpl = copy.deepcopy(dep["spec"]["template"])
    tmpl["metadata"]["labels"] = {"app": name}
    if pod_annotations:
        tmpl["metadata"]["annotations"] = dict(pod_annotations)
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": namespace,
                         "ownerReferences": [{"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                                              "name": widget["metadata"]["name"],
                                              "uid": widget["metadata"]["uid"], "controller": True}]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": tmpl}}


def wait_for(what: str, fn, timeout: float = 90, dev=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}" + ("\n" + dev.output()[-3000:] if dev else ""))


def owner_events(kube: Any, namespace: str, uid: str, reason: str) -> list:
    from kubernetes import client

    evs = client.CoreV1Api(kube).list_namespaced_event(
        namespace, field_selector=f"involvedObject.uid={uid}").items
    return [e for e in evs if e.reason == reason and e.source and e.source.component == "vllm-sizer"]


def test_pod_of_an_unknown_controller_is_sized_at_creation(kube, namespace, dev, widget_crd):
    from kubernetes import client

    widget = make_widget(kube, namespace, "w-sized")
    rs = replicaset_of(widget, namespace, "w-sized-rs")
    apps = client.AppsV1Api(kube)
    created = json.loads(apps.create_namespaced_replica_set(namespace, rs, _preload_content=False).data)
    # the ReplicaSet itself is owned by a controller: not sent, not changed
    assert created["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] == "8Gi"
    core = client.CoreV1Api(kube)
    pods = wait_for("the ReplicaSet's pod", lambda: core.list_namespaced_pod(
        namespace, label_selector="app=w-sized-rs").items, dev=dev)
    pod = pods[0]
    c = pod.spec.containers[0]
    assert c.resources.limits["memory"] == NEED_01_QUANTITY  # raised from 8Gi at creation
    assert c.resources.requests["memory"] == NEED_01_QUANTITY
    assert pod.metadata.labels["vllm-sizer.io/sized"] == "true"
    assert pod.metadata.annotations["vllm-sizer.io/decision"].startswith("mutate: limits.memory 8.0Gi →")
    # neither the ReplicaSet nor its owner changed
    rs_now = apps.read_namespaced_replica_set("w-sized-rs", namespace)
    assert rs_now.spec.template.spec.containers[0].resources.limits["memory"] == "8Gi"
    assert rs_now.metadata.generation == created["metadata"]["generation"]
    w_now = client.CustomObjectsApi(kube).get_namespaced_custom_object(GROUP, "v1", namespace, "widgets", "w-sized")
    assert w_now["metadata"]["resourceVersion"] == widget["metadata"]["resourceVersion"]
    # the controller tells the owner
    (ev,) = wait_for("the PodsSized Event on the Widget",
                     lambda: owner_events(kube, namespace, widget["metadata"]["uid"], "PodsSized"), dev=dev)
    assert ev.involved_object.kind == "Widget" and "mutate: limits.memory 8.0Gi" in ev.message


def test_enforce_denies_the_pod_and_the_owner_carries_the_event(kube, namespace, dev, widget_crd):
    from kubernetes import client

    widget = make_widget(kube, namespace, "w-denied")
    rs = replicaset_of(widget, namespace, "w-denied-rs", {"vllm-sizer.io/mode": "enforce"})
    client.AppsV1Api(kube).create_namespaced_replica_set(namespace, rs)
    evs = wait_for("the PodsDenied Event on the Widget",
                   lambda: owner_events(kube, namespace, widget["metadata"]["uid"], "PodsDenied"), dev=dev)
    assert evs[0].type == "Warning"
    assert "memory limit 8.0Gi is below the estimated peak" in evs[0].message
    assert client.CoreV1Api(kube).list_namespaced_pod(namespace, label_selector="app=w-denied-rs").items == []
    w_now = client.CustomObjectsApi(kube).get_namespaced_custom_object(GROUP, "v1", namespace, "widgets", "w-denied")
    assert w_now["metadata"]["resourceVersion"] == widget["metadata"]["resourceVersion"]
