"""The controller's sizing of pre-existing objects, against kmock (an HTTP Kubernetes emulator)."""

from __future__ import annotations

import copy
import json

import jsonpatch
import pytest

from vllm_sizer.operator.controller import Sizer, sized_label_patch
from vllm_sizer.workloads.api_names import DECISION_ANNOTATION, ESTIMATE_ANNOTATION, LAST_EVENT_ANNOTATION, SIZED_LABEL
from vllm_sizer.operator.controller.kube import JSON_PATCH
from vllm_sizer.operator.settings import OperatorSettings
from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings

from .conftest import DEPLOYMENTS, current, events, example, put, requests_of, stored
from tests.expected import FIT_02, NEED_01_GI, NEED_01_QUANTITY

UNDERSIZED = "01-cpu-lora-deployment"  # 8Gi limit, needs NEED_01_GI


def limits(obj: dict) -> str:
    return obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"]


@pytest.mark.asyncio
async def test_pre_existing_undersized_deployment_is_annotated_and_gets_one_event(kmock, api, settings):
    dep = put(kmock, DEPLOYMENTS, stored(example(UNDERSIZED)))
    result = await Sizer(api, settings).size(dep)

    assert result.action == "annotated" and result.reason == "Undersized"
    obj = current(kmock, DEPLOYMENTS, "llm", "qwen3-lora-cpu")
    ann = obj["metadata"]["annotations"]
    assert ann[ESTIMATE_ANNOTATION].endswith("Gi")
    assert ann[DECISION_ANNOTATION] == f"warn: undersized, needs {NEED_01_GI}"
    assert ann[LAST_EVENT_ANNOTATION].startswith("Undersized ")
    assert json.loads(ann["vllm-sizer.io/breakdown"])["vllm"]
    assert limits(obj) == "8Gi", "the controller must not touch a running template"
    assert SIZED_LABEL not in obj["spec"]["template"]["metadata"]["labels"]

    patches = requests_of(kmock, "PATCH")
    assert len(patches) == 1
    assert patches[0].headers["Content-Type"] == "application/merge-patch+json"
    assert set(patches[0].data) == {"metadata"}  # annotations only

    evs = events(kmock, "llm")
    assert len(evs) == 1
    ev = evs[0]
    assert ev["reason"] == "Undersized" and ev["type"] == "Warning"
    assert ev["involvedObject"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                   "name": "qwen3-lora-cpu", "namespace": "llm",
                                   "uid": dep["metadata"]["uid"], "resourceVersion": "1"}
    assert "memory limit 8.0Gi is below the estimated peak" in ev["message"]
    assert f"set resources.limits.memory to at least {NEED_01_GI}" in ev["message"]
    assert ev["source"] == {"component": "vllm-sizer"}


@pytest.mark.asyncio
async def test_second_resume_with_annotations_stored_posts_nothing(kmock, api, settings):
    put(kmock, DEPLOYMENTS, stored(example(UNDERSIZED)))
    await Sizer(api, settings).size(current(kmock, DEPLOYMENTS, "llm", "qwen3-lora-cpu"))
    n_requests = len(list(kmock))

    # The operator restarts: a new Sizer (empty memory) sees the object with its annotations.
    again = current(kmock, DEPLOYMENTS, "llm", "qwen3-lora-cpu")
    again["metadata"]["resourceVersion"] = "2"
    result = await Sizer(api, settings).size(again)

    assert result.action == "unchanged" and result.event is None
    assert len(events(kmock)) == 1
    assert len(list(kmock)) == n_requests, "no API call at all when nothing changed"


@pytest.mark.asyncio
async def test_same_body_twice_in_one_process_is_handled_once(kmock, api, settings):
    dep = put(kmock, DEPLOYMENTS, stored(example(UNDERSIZED)))
    sizer = Sizer(api, settings)
    await sizer.size(copy.deepcopy(dep))
    result = await sizer.size(copy.deepcopy(dep))  # stale body (resume mixed into an update)
    assert result.action == "unchanged"
    assert len(events(kmock)) == 1


@pytest.mark.asyncio
async def test_changed_decision_posts_a_new_event(kmock, api, settings):
    put(kmock, DEPLOYMENTS, stored(example(UNDERSIZED)))
    await Sizer(api, settings).size(current(kmock, DEPLOYMENTS, "llm", "qwen3-lora-cpu"))
    obj = current(kmock, DEPLOYMENTS, "llm", "qwen3-lora-cpu")
    obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "32Gi"
    obj["metadata"]["resourceVersion"] = "3"
    kmock.objects[DEPLOYMENTS, "llm", "qwen3-lora-cpu"] = obj
    result = await Sizer(api, settings).size(obj)
    assert result.reason == "Sized"
    assert [e["reason"] for e in events(kmock)] == ["Undersized", "Sized"] or \
        sorted(e["reason"] for e in events(kmock)) == ["Sized", "Undersized"]
    assert "limit 32.0Gi covers the estimated peak" in result.message


@pytest.mark.asyncio
async def test_object_sized_by_the_webhook_gets_one_sized_event_and_no_rewrite(kmock, api, settings):
    obj = stored(example(UNDERSIZED))
    admitted = review_object(obj, None, PolicySettings()).mutated(obj)  # what the webhook admits
    put(kmock, DEPLOYMENTS, admitted)
    result = await Sizer(api, settings).size(admitted)
    assert result.reason == "Sized"
    assert set(result.annotations) == {LAST_EVENT_ANNOTATION}, "the webhook's annotations stay"
    ann = current(kmock, DEPLOYMENTS, "llm", "qwen3-lora-cpu")["metadata"]["annotations"]
    assert ann[DECISION_ANNOTATION].startswith(f"mutate: limits.memory 8.0Gi → {NEED_01_GI}")


@pytest.mark.asyncio
async def test_unknown_model_is_cannot_size(kmock, api, settings):
    dep = put(kmock, DEPLOYMENTS, stored(example("10-configmap-model-config")))
    result = await Sizer(api, settings).size(dep)
    assert result.reason == "CannotSize"
    (ev,) = events(kmock)
    assert ev["type"] == "Warning" and "no config.json known for model 'acme/support-3b'" in ev["message"]
    assert "acme--support-3b" in ev["message"]  # the way to supply it (the ConfigMap key)
    ann = current(kmock, DEPLOYMENTS, "llm", "acme-support")["metadata"]["annotations"]
    assert set(ann) == {LAST_EVENT_ANNOTATION}


@pytest.mark.asyncio
async def test_not_vllm_controller_owned_and_excluded_namespaces_are_skipped(kmock, api):
    settings = OperatorSettings(excluded_namespaces=["kube-system", "batch"])
    sizer = Sizer(api, settings)
    nginx = stored(example("08-nginx-deployment"))
    owned = stored(example(UNDERSIZED))
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "serving.kserve.io/v1beta1",
                                             "kind": "InferenceService", "name": "x",
                                             "uid": "u", "controller": True}]
    excluded = stored(example(UNDERSIZED))
    excluded["metadata"]["namespace"] = "batch"
    for obj in (nginx, owned, excluded):
        assert not sizer.wants(obj)
        assert (await sizer.size(obj)).action == "skipped"
    assert list(kmock) == []


class RecordingApi:
    """A stand-in for KubeApi that records calls (kmock's emulator applies merge patches only)."""

    def __init__(self):
        self.calls: list[tuple] = []

    async def patch(self, path, body, content_type="application/merge-patch+json"):
        self.calls.append(("PATCH", path, body, content_type))
        return {}

    async def post(self, path, body):
        self.calls.append(("POST", path, body))
        return body

    async def get(self, path, **query):
        raise AssertionError("no reads expected")


@pytest.mark.asyncio
async def test_patch_existing_raises_the_limit_adds_the_label_and_guards_the_version():
    api = RecordingApi()
    obj = stored(example(UNDERSIZED), rv="7")
    result = await Sizer(api, OperatorSettings(patch_existing=True)).size(obj)
    assert result.action == "patched" and result.reason == "Sized"
    (patch_call, event_call) = api.calls
    _, path, ops, content_type = patch_call
    assert path == "/apis/apps/v1/namespaces/llm/deployments/qwen3-lora-cpu"
    assert content_type == JSON_PATCH
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    patched = jsonpatch.apply_patch(obj, ops)
    assert limits(patched) == NEED_01_QUANTITY
    assert patched["spec"]["template"]["metadata"]["labels"][SIZED_LABEL] == "true"
    assert patched["metadata"]["annotations"][LAST_EVENT_ANNOTATION].startswith("Sized ")
    assert event_call[2]["reason"] == "Sized" and f"limit 8.0Gi → {NEED_01_GI}" in event_call[2]["message"]

    # Patched once: the result re-read after a restart changes nothing.
    again = await Sizer(RecordingApi(), OperatorSettings(patch_existing=True)).size(
        {**patched, "metadata": {**patched["metadata"], "resourceVersion": "8"}})
    assert again.action == "unchanged"


@pytest.mark.asyncio
async def test_enforce_annotation_is_observed_as_warn_on_existing_objects(kmock, api, settings):
    dep = put(kmock, DEPLOYMENTS, stored(example("02-cpu-lora-undersized-enforce")))
    result = await Sizer(api, settings).size(dep)
    assert result.reason == "Undersized"
    ann = current(kmock, DEPLOYMENTS, "llm", "qwen3-lora-cpu-strict")["metadata"]["annotations"]
    assert ann["vllm-sizer.io/mode"] == "enforce", "the user's annotation is left alone"
    assert f"--max-num-batched-tokens {FIT_02}" in events(kmock)[0]["message"]


# ------------------------------------------------------------------------ sized_label_patch
def test_sized_label_patch_shapes():
    dep = example(UNDERSIZED)
    ops = sized_label_patch(dep)
    assert ops == [{"op": "add", "path": "/spec/template/metadata/labels/vllm-sizer.io~1sized",
                    "value": "true"}]
    labelled = jsonpatch.apply_patch(dep, ops)
    assert sized_label_patch(labelled) == []
    assert labelled["spec"]["selector"] == dep["spec"]["selector"], "never the selector"

    bare = {"kind": "Job", "spec": {"template": {"spec": {"containers": []}}}}
    out = jsonpatch.apply_patch(bare, sized_label_patch(bare))
    assert out["spec"]["template"]["metadata"]["labels"] == {SIZED_LABEL: "true"}

    lws = {"kind": "LeaderWorkerSet", "spec": {"leaderWorkerTemplate": {
        "workerTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {}}}}}
    out = jsonpatch.apply_patch(lws, sized_label_patch(lws))
    assert out["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"] == {
        "a": "b", SIZED_LABEL: "true"}
    assert "leaderTemplate" not in out["spec"]["leaderWorkerTemplate"]

    isvc = {"kind": "InferenceService", "spec": {"predictor": {"model": {}}}}
    out = jsonpatch.apply_patch(isvc, sized_label_patch(isvc))
    assert out["spec"]["predictor"]["labels"] == {SIZED_LABEL: "true"}
    assert sized_label_patch({"kind": "ConfigMap"}) == []
    assert sized_label_patch("garbage") == []  # type: ignore[arg-type]

    # Appended after a mutation's own ops, the whole patch applies in order.
    decision = review_object(dep, None, PolicySettings())
    mutated = decision.mutated(dep)
    both = jsonpatch.apply_patch(dep, decision.patch + sized_label_patch(mutated))
    assert both["spec"]["template"]["metadata"]["labels"][SIZED_LABEL] == "true"


@pytest.mark.asyncio
async def test_kopf_handler_maps_api_errors():
    import logging

    import kopf

    from vllm_sizer.operator.controller import ApiError, register

    class Failing(Sizer):
        status = 500

        async def size(self, body, patch=None):
            raise ApiError(self.status, "x")

    sizer = Failing(RecordingApi(), OperatorSettings())
    registry = kopf.OperatorRegistry()
    register(registry, sizer)
    handler = registry._changing.get_all_handlers()[0].fn
    log = logging.getLogger("test")
    sizer.status = 404
    assert await handler(body={}, logger=log) is None
    sizer.status = 403
    with pytest.raises(kopf.PermanentError):
        await handler(body={}, logger=log)
    sizer.status = 409
    with pytest.raises(kopf.TemporaryError):
        await handler(body={}, logger=log)


@pytest.mark.asyncio
async def test_event_names_are_stable_so_a_repost_after_a_crash_is_refused_not_duplicated():
    from vllm_sizer.operator.controller.kube import ApiError
    from vllm_sizer.operator.controller.sizing import post_event

    class Api:
        def __init__(self):
            self.names = set()

        async def post(self, path, body):
            name = body["metadata"]["name"]
            if name in self.names:
                raise ApiError(409, "AlreadyExists")
            self.names.add(name)

    api, obj = Api(), {"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "d", "namespace": "n", "uid": "u1"}}
    await post_event(api, obj, "Sized", "m", name="d.abc")
    await post_event(api, obj, "Sized", "m", name="d.abc")  # the repost: 409, not an error
    assert api.names == {"d.abc"}
    with pytest.raises(ApiError):  # without a fixed name a 409 is still an error
        class Conflict(Api):
            async def post(self, path, body):
                raise ApiError(409, "AlreadyExists")
        await post_event(Conflict(), obj, "Sized", "m")


@pytest.mark.asyncio
async def test_mode_off_after_a_mutation_rewrites_the_annotations(kmock, api, settings):
    """The webhook mutated the object; later its owner turned sizing off. The controller must
    not leave the old mutation's text and estimate on it: the annotations describe it as it is."""
    obj = stored(example(UNDERSIZED))
    admitted = review_object(obj, None, PolicySettings()).mutated(obj)
    admitted["metadata"]["annotations"]["vllm-sizer.io/mode"] = "off"
    put(kmock, DEPLOYMENTS, admitted)
    result = await Sizer(api, settings).size(admitted)
    assert result.action == "annotated" and result.reason is None
    ann = current(kmock, DEPLOYMENTS, "llm", "qwen3-lora-cpu")["metadata"]["annotations"]
    assert ann[DECISION_ANNOTATION] == "off: not sized (vllm-sizer mode is off)"
    assert ESTIMATE_ANNOTATION not in ann and "vllm-sizer.io/breakdown" not in ann
    assert events(kmock, "llm") == []
    assert limits(current(kmock, DEPLOYMENTS, "llm", "qwen3-lora-cpu")) == limits(admitted)


@pytest.mark.asyncio
async def test_with_kopfs_patch_the_annotations_ride_on_it_and_nothing_else_is_written():
    """In the Kopf handler the annotations go into Kopf's patch of the cycle (Kopf writes them
    with its own state in one merge patch); the Event is still posted first."""
    api = RecordingApi()
    patch: dict = {}
    result = await Sizer(api, OperatorSettings()).size(stored(example(UNDERSIZED)), patch)
    assert result.action == "annotated" and result.reason == "Undersized"
    assert [c[0] for c in api.calls] == ["POST"], "the Event only: no PATCH of its own"
    ann = patch["metadata"]["annotations"]
    assert ann[DECISION_ANNOTATION] == f"warn: undersized, needs {NEED_01_GI}"
    assert ann[LAST_EVENT_ANNOTATION].startswith("Undersized ")
    assert set(patch) == {"metadata"} and set(patch["metadata"]) == {"annotations"}


def test_wants_reads_once_per_version_and_a_status_update_is_no_new_version():
    from vllm_sizer.operator.controller.sizing import read_version
    from vllm_sizer.workloads.reader import read_workloads

    reads = []

    def read(obj, ctx):
        reads.append(obj["metadata"]["resourceVersion"])
        return read_workloads(obj, ctx)

    sizer = Sizer(RecordingApi(), OperatorSettings(), read=read)
    obj = stored(example(UNDERSIZED), rv="1")
    obj["metadata"]["generation"] = 3
    assert sizer.wants(obj)
    status = copy.deepcopy(obj)  # the controller-manager's status update: same generation
    status["metadata"]["resourceVersion"] = "2"
    status["status"] = {"observedGeneration": 3, "replicas": 1}
    kopf_state = copy.deepcopy(status)  # Kopf's own state changes nothing the reader reads
    kopf_state["metadata"]["resourceVersion"] = "3"
    kopf_state["metadata"]["annotations"] = {"controller.vllm-sizer.io/last-handled-configuration": "{}"}
    assert sizer.wants(status) and sizer.wants(kopf_state)
    assert reads == ["1"]
    assert read_version(status["metadata"]) == read_version(obj["metadata"])

    skipped = copy.deepcopy(obj)  # a new input annotation: read again
    skipped["metadata"]["resourceVersion"] = "4"
    skipped["metadata"]["annotations"] = {"vllm-sizer.io/skip": "true"}
    sizer.wants(skipped)
    respec = copy.deepcopy(obj)  # a spec change bumps the generation
    respec["metadata"]["resourceVersion"], respec["metadata"]["generation"] = "5", 4
    assert sizer.wants(respec)
    assert reads == ["1", "4", "5"]
    no_generation = copy.deepcopy(obj)  # without a generation: one read per resourceVersion
    del no_generation["metadata"]["generation"]
    no_generation["metadata"]["resourceVersion"] = "6"
    assert sizer.wants(no_generation) and sizer.wants(no_generation)
    assert reads == ["1", "4", "5", "6"]
