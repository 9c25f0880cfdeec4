"""Hostile input on the controller's paths (kmock as the API server): Events and owner
references another tenant controls, bodies deeper than a recursive copy can follow, and
objects the API server would never send but a Kopf handler must still survive."""

from __future__ import annotations

import copy
from collections.abc import Mapping

import pytest

from vllm_sizer.operator.controller import PodVerdicts, Sizer
from vllm_sizer.operator.controller.kube import resource_path
from vllm_sizer.operator.settings import OperatorSettings
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads.api_names import PODS_ANNOTATION

from .corpus_mutants import RecordingApi
from ..operator.controller.conftest import DEPLOYMENTS, current, events, example, put, stored

REPLICASETS = "apps/v1/replicasets"
DENIAL = ('admission webhook "validate.vllm-sizer.io" denied the request: vllm-sizer: '
          "container vllm: memory limit 8.0Gi is below the estimated peak 24.7Gi")


def _victim(kmock, ns: str = "victim") -> dict:
    """A Deployment and its ReplicaSet in another tenant's namespace."""
    kmock.resources[REPLICASETS] = {}
    dep = stored(example("01-cpu-lora-deployment"))
    dep["metadata"].update(namespace=ns, uid="dep-uid")
    put(kmock, DEPLOYMENTS, dep)
    put(kmock, REPLICASETS, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "rs", "namespace": ns, "uid": "rs-uid",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                          "name": dep["metadata"]["name"], "uid": "dep-uid",
                                          "controller": True}]}})
    return dep


@pytest.mark.asyncio
async def test_an_event_naming_another_namespace_never_reaches_it(kmock, api, settings):
    """A user who may post Events in their own namespace posts a FailedCreate Event whose
    involvedObject is another tenant's ReplicaSet (the API server accepts a differing
    involvedObject.namespace on an Event with an eventTime): nothing is read, posted or
    written in the other namespace."""
    dep = _victim(kmock)
    hostile = {"apiVersion": "v1", "kind": "Event", "reason": "FailedCreate", "type": "Warning",
               "eventTime": "2026-01-01T00:00:00.000000Z",
               "metadata": {"name": "evil.1", "namespace": "attacker"},
               "involvedObject": {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                  "namespace": "victim", "name": "rs", "uid": "rs-uid"},
               "message": f"Error creating: {DENIAL} (forged)"}
    verdicts = PodVerdicts(api, settings)
    await verdicts.pod_denied(hostile)
    assert events(kmock, "victim") == []
    after = current(kmock, DEPLOYMENTS, "victim", dep["metadata"]["name"])
    assert PODS_ANNOTATION not in (after["metadata"].get("annotations") or {})
    assert not [r for r in kmock if "/namespaces/victim/" in str(r.url)]


@pytest.mark.parametrize("name", [".", "..", "", "a/b", "%2e%2e", 5, ["x"]])
def test_resource_path_refuses_a_name_that_is_no_path_segment(name):
    """An ownerReference's name is not validated by the API server: `.` (urllib3 drops dot
    segments) would turn a GET of one object into a LIST of the namespace, `..` into a GET of
    the namespace; "" (or None) into the collection."""
    with pytest.raises(ValueError):
        resource_path("apps/v1", "deployments", "ns", name)
    if name != "":  # no namespace: a cluster-scoped path
        with pytest.raises(ValueError):
            resource_path("apps/v1", "deployments", name, "x")
    assert resource_path("apps/v1", "deployments", "ns", "a.b-c") == (
        "/apis/apps/v1/namespaces/ns/deployments/a.b-c")


@pytest.mark.parametrize("api_version", ["..", "../..", "apps/v1/x", "apps/..", "", 5, "a?b/v1"])
def test_resource_path_refuses_an_api_version_that_is_no_group_version(api_version):
    with pytest.raises(ValueError):
        resource_path(api_version, "deployments", "ns", "x")


@pytest.mark.asyncio
@pytest.mark.parametrize("name", [".", ".."])
async def test_owner_reference_dot_names_read_nothing(kmock, api, settings, name):
    _victim(kmock, "llm")
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "llm", "uid": "p1",
                        "labels": {"vllm-sizer.io/sized": "true"},
                        "annotations": {"vllm-sizer.io/decision": "mutate: limits.memory a → b"},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": name, "uid": "x", "controller": True}]}}
    verdicts = PodVerdicts(api, settings)
    await verdicts.pod_sized(pod)
    gets = [str(r.url) for r in kmock if str(getattr(r.method, "value", r.method)).upper() == "GET"]
    assert not [u for u in gets if u.rstrip("/").endswith("/deployments")
                or u.rstrip("/").endswith("/namespaces/llm")], gets


def _nested(depth: int):
    v = "x"
    for _ in range(depth):
        v = {"a": v}
    return v


class _KopfBody(Mapping):
    """What Kopf hands a handler: a read-only mapping over the watch event, not a dict."""

    def __init__(self, raw):
        self._raw = raw

    def __getitem__(self, key):
        return self._raw[key]

    def __iter__(self):
        return iter(self._raw)

    def __len__(self):
        return len(self._raw)


@pytest.mark.asyncio
@pytest.mark.parametrize("patch_existing", [True, False])
async def test_a_deeply_nested_custom_resource_is_sized(patch_existing):
    """A custom resource may keep free-form fields nested as deep as the API server's decoder
    allows (10,000): the controller's copy of Kopf's body and its patched copy of the object
    (ObjectDecision.mutated) must not recurse per level."""
    dep = stored(example("01-cpu-lora-deployment"))
    dep["metadata"]["namespace"] = "llm"
    dep["spec"]["template"]["spec"]["containers"][0]["x-extra"] = _nested(3000)
    api = RecordingApi()
    sizer = Sizer(api, OperatorSettings(patch_existing=patch_existing))
    result = await sizer.size(_KopfBody(dep))
    assert result.action == ("patched" if patch_existing else "annotated"), result
    assert result.reason in ("Sized", "Undersized")


def test_mutated_shares_what_the_patch_does_not_touch_and_changes_nothing():
    dep = example("01-cpu-lora-deployment")
    dep["spec"]["template"]["spec"]["containers"][0]["x-extra"] = _nested(5000)
    before = copy.deepcopy(dep["spec"]["template"]["spec"]["containers"][0]["resources"])
    decision = review_object(dep)
    assert decision.verdict == "mutate"
    after = decision.mutated(dep)
    c0 = after["spec"]["template"]["spec"]["containers"][0]
    assert c0["resources"] != before
    assert dep["spec"]["template"]["spec"]["containers"][0]["resources"] == before
    assert c0["x-extra"] is dep["spec"]["template"]["spec"]["containers"][0]["x-extra"]


HOSTILE_METADATA = [
    ("metadata", None), ("metadata", 5), ("metadata", ["x"]),
    ("name", None), ("name", 5), ("name", "."), ("name", ".."), ("name", "a/b"),
    ("namespace", 5), ("namespace", ".."), ("namespace", ["llm"]),
    ("annotations", ["x"]), ("annotations", {"vllm-sizer.io/mode": 5}),
    ("annotations", {5: "x"}), ("annotations", {"vllm-sizer.io/model-config": {"a": 1}}),
    ("labels", "x"), ("labels", {"app": None}),
    ("ownerReferences", 5), ("ownerReferences", [5]), ("ownerReferences", "x"),
]


@pytest.mark.asyncio
@pytest.mark.parametrize("patch_existing", [False, True])
@pytest.mark.parametrize(("key", "value"), HOSTILE_METADATA)
async def test_a_kopf_handler_given_a_body_the_api_server_never_sends(key, value,
                                                                      patch_existing):
    """Skipped with the reason, no request made, nothing raised (a raise in a Kopf handler
    is retried forever, with a traceback each time)."""
    dep = stored(example("01-cpu-lora-deployment"))
    dep["metadata"]["namespace"] = "llm"
    if key == "metadata":
        dep["metadata"] = value
    else:
        dep["metadata"][key] = value
    api = RecordingApi()
    sizer = Sizer(api, OperatorSettings(patch_existing=patch_existing))
    for body in (dep, _KopfBody(dep)):
        assert sizer.wants(body) is False
        result = await sizer.size(body, {})
        assert result.action == "skipped" and result.message
    assert api.calls == []


@pytest.mark.asyncio
@pytest.mark.parametrize(("key", "value"), HOSTILE_METADATA)
async def test_the_pod_watch_given_a_pod_the_api_server_never_sends(key, value, settings):
    from vllm_sizer.operator.controller import OomWatcher

    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "llm", "uid": "p1",
                        "labels": {"vllm-sizer.io/sized": "true"},
                        "annotations": {"vllm-sizer.io/decision": "mutate: limits.memory a → b"},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                             "name": "rs", "uid": "x", "controller": True}]},
           "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0"}]},
           "status": {"containerStatuses": [{"name": "vllm", "restartCount": 1, "lastState": {
               "terminated": {"reason": "OOMKilled"}}}]}}
    if key == "metadata":
        pod["metadata"] = value
    else:
        pod["metadata"][key] = value
    api = RecordingApi()
    watcher = OomWatcher(api, settings, verdicts=PodVerdicts(api, settings))
    assert await watcher.handle_pod(pod) == []
    event = {"apiVersion": "v1", "kind": "Event", "reason": "FailedCreate",
             "metadata": pod["metadata"], "involvedObject": {
                 "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "x"},
             "message": f"Error creating: {DENIAL}"}
    assert await watcher.verdicts.pod_denied(event) is None
    assert api.calls == []


@pytest.mark.asyncio
@pytest.mark.parametrize(("key", "value"), [("apiVersion", "nvidia.com/\x7fv1alpha1"),
                                            ("apiVersion", "apps/v1/x"), ("apiVersion", 5),
                                            ("kind", "Deploy ment"), ("kind", ["Deployment"])])
async def test_a_body_with_no_group_version_or_kind_is_skipped(key, value):
    """With patch_existing, the patch's path is built from apiVersion: one no request can
    carry raised ValueError out of the Kopf handler (found by the controller fuzz)."""
    dep = stored(example("01-cpu-lora-deployment"))
    dep["metadata"]["namespace"] = "llm"
    dep[key] = value
    api = RecordingApi()
    result = await Sizer(api, OperatorSettings(patch_existing=True)).size(dep, {})
    assert result.action == "skipped" and api.calls == []


@pytest.mark.asyncio
async def test_an_event_message_is_printable():
    """A container name with a line separator (a custom resource's names are not DNS labels)
    went into the Event's message as it was (found by the controller fuzz)."""
    dep = stored(example("01-cpu-lora-deployment"))
    dep["metadata"]["namespace"] = "llm"
    dep["spec"]["template"]["spec"]["containers"][0]["name"] = "vl\u2028lm\x1b[31m"
    api = RecordingApi()
    await Sizer(api, OperatorSettings()).size(dep, {})
    posted = [body for method, _p, body in api.calls if method == "POST"]
    assert posted and all(b["message"].isprintable() for b in posted), posted
