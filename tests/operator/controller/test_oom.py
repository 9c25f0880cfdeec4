"""OOM evidence: OOMKilled vLLM containers of sized pods → Event + last-oom on the workload."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from prometheus_client import REGISTRY

from vllm_sizer.operator.controller import OomWatcher
from vllm_sizer.operator.controller.oom import SELECTOR, estimate_for, human_duration
from vllm_sizer.workloads.api_names import LAST_OOM_ANNOTATION, SIZED_LABEL

from .conftest import DEPLOYMENTS, current, events, example, put, requests_of, stored

REPLICASETS = "apps/v1/replicasets"
STATEFULSETS = "apps/v1/statefulsets"


def oom_counter(namespace: str, kind: str) -> float:
    return REGISTRY.get_sample_value("vllm_sizer_oomkills_total",
                                     {"namespace": namespace, "kind": kind}) or 0.0


def chain(kmock) -> tuple[dict, dict]:
    dep = stored(example("01-cpu-lora-deployment"))
    dep["metadata"]["uid"] = "dep-uid"
    dep["metadata"]["annotations"] = {"vllm-sizer.io/estimate": "24.1Gi"}
    put(kmock, DEPLOYMENTS, dep)
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "qwen3-lora-cpu-7d9f", "namespace": "llm", "uid": "rs-uid",
                       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                            "name": "qwen3-lora-cpu", "uid": "dep-uid",
                                            "controller": True}]}}
    put(kmock, REPLICASETS, rs)
    return dep, rs


def oom_pod(owner_kind: str = "ReplicaSet", owner_name: str = "qwen3-lora-cpu-7d9f",
            restarts: int = 1, where: str = "lastState",
            finished: str = "2026-11-30T06:05:00Z") -> dict:
    spec = copy.deepcopy(example("01-cpu-lora-deployment")["spec"]["template"]["spec"])
    term = {"exitCode": 137, "reason": "OOMKilled", "startedAt": "2026-11-30T06:02:30Z",
            "finishedAt": finished, "containerID": "containerd://abc"}
    status = {"name": "vllm", "restartCount": restarts, "ready": False,
              "state": {"running": {"startedAt": "2026-11-30T06:05:10Z"}}, "lastState": {}}
    if where == "state":
        status["state"] = {"terminated": term}
    else:
        status["lastState"] = {"terminated": term}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "qwen3-lora-cpu-7d9f-x2x4z", "namespace": "llm",
                         "uid": "pod-uid", "labels": {"app": "qwen3-lora-cpu", SIZED_LABEL: "true"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner_kind,
                                              "name": owner_name, "uid": "o", "controller": True}]},
            "spec": spec, "status": {"phase": "Running", "containerStatuses": [status]}}


@pytest.mark.asyncio
async def test_oomkilled_pod_leaves_event_annotation_and_metric_on_the_deployment(kmock, api, settings):
    chain(kmock)
    kmock.resources[REPLICASETS] = {}
    before = oom_counter("llm", "Deployment")
    watcher = OomWatcher(api, settings)
    records = await watcher.handle_pod(oom_pod())

    assert len(records) == 1
    (ev,) = events(kmock, "llm")
    assert ev["reason"] == "OOMKilled" and ev["type"] == "Warning"
    assert ev["involvedObject"]["kind"] == "Deployment"
    assert ev["involvedObject"]["name"] == "qwen3-lora-cpu"
    assert ev["message"] == ("container vllm of pod qwen3-lora-cpu-7d9f-x2x4z was OOMKilled after "
                             "running 2m30s: memory limit 8Gi, vllm-sizer estimate 24.1Gi, restarts 1")
    ann = current(kmock, DEPLOYMENTS, "llm", "qwen3-lora-cpu")["metadata"]["annotations"]
    assert json.loads(ann[LAST_OOM_ANNOTATION]) == {
        "time": "2026-11-30T06:05:00Z", "pod": "qwen3-lora-cpu-7d9f-x2x4z", "container": "vllm",
        "limit": "8Gi", "estimate": "24.1Gi", "restarts": 1}
    assert oom_counter("llm", "Deployment") == before + 1

    # The same pod state again (a MODIFIED event, a relist): nothing new.
    assert await watcher.handle_pod(oom_pod()) == []
    # The same kill first seen in `state`, then in `lastState` after the restart: once.
    w2 = OomWatcher(api, settings)  # (restarted: only the stored time deduplicates)
    kill = "2026-11-30T06:20:00Z"  # a later kill of another pod
    first = await w2.handle_pod(oom_pod(restarts=0, where="state", finished=kill))
    second = await w2.handle_pod(oom_pod(restarts=1, where="lastState", finished=kill))
    assert len(first) == 1 and second == []
    assert oom_counter("llm", "Deployment") == before + 2


@pytest.mark.asyncio
async def test_a_restarted_operator_does_not_report_a_recorded_kill_again(kmock, api, settings):
    chain(kmock)
    kmock.resources[REPLICASETS] = {}
    await OomWatcher(api, settings).handle_pod(oom_pod())
    n = len(events(kmock))
    restarted = OomWatcher(api, settings)  # empty memory, the annotation is stored
    assert await restarted.handle_pod(oom_pod()) == []
    assert len(events(kmock)) == n
    # A later kill of the same container (restart 2) is new evidence.
    later = await restarted.handle_pod(oom_pod(restarts=2, finished="2026-11-30T06:09:00Z"))
    assert len(later) == 1 and len(events(kmock)) == n + 1
    ann = current(kmock, DEPLOYMENTS, "llm", "qwen3-lora-cpu")["metadata"]["annotations"]
    assert json.loads(ann[LAST_OOM_ANNOTATION])["restarts"] == 2


@pytest.mark.asyncio
async def test_statefulset_owner_and_unlabelled_or_other_kills(kmock, api, settings):
    sts = stored(example("04-sh-c-statefulset", "StatefulSet"))
    put(kmock, STATEFULSETS, sts)
    kmock.resources[STATEFULSETS] = {}
    pod = oom_pod(owner_kind="StatefulSet", owner_name=sts["metadata"]["name"])
    pod["metadata"]["namespace"] = sts["metadata"]["namespace"]
    pod["spec"] = copy.deepcopy(sts["spec"]["template"]["spec"])
    pod["status"]["containerStatuses"][0]["name"] = pod["spec"]["containers"][0]["name"]
    (rec,) = await OomWatcher(api, settings).handle_pod(pod)
    assert rec.workload["kind"] == "StatefulSet"
    assert events(kmock)[0]["involvedObject"]["kind"] == "StatefulSet"

    unlabelled = oom_pod()
    del unlabelled["metadata"]["labels"][SIZED_LABEL]
    not_oom = oom_pod()
    not_oom["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"] = "Error"
    w = OomWatcher(api, settings)
    assert await w.handle_pod(unlabelled) == [] and await w.handle_pod(not_oom) == []


@pytest.mark.asyncio
async def test_the_watch_selects_sized_pods_server_side_and_reports_kills(kmock, api, settings):
    chain(kmock)
    kmock.resources[REPLICASETS] = {}
    put(kmock, "v1/pods", oom_pod())
    watcher = OomWatcher(api, settings)
    await watcher.start()
    try:
        for _ in range(100):
            if events(kmock):
                break
            await asyncio.sleep(0.05)
        assert [e["reason"] for e in events(kmock)] == ["OOMKilled"]
        # A kill that happens while watching arrives through the watch stream.
        pod = oom_pod(restarts=2, finished="2026-11-30T06:09:00Z")
        pod["metadata"]["name"] = "qwen3-lora-cpu-7d9f-other"
        pod["metadata"]["uid"] = "pod-uid-2"
        await api.post("/api/v1/namespaces/llm/pods", pod)
        for _ in range(100):
            if len(events(kmock)) == 2:
                break
            await asyncio.sleep(0.05)
        assert len(events(kmock)) == 2
    finally:
        await watcher.stop()
    pod_reads = [r for r in requests_of(kmock, "GET") if r.url.path == "/api/v1/pods"]
    assert pod_reads and all(r.params.get("labelSelector") == SELECTOR for r in pod_reads)
    assert any(r.params.get("watch") == "true" for r in pod_reads)


def test_helpers():
    assert estimate_for("24.1Gi", "vllm") == "24.1Gi"
    assert estimate_for("a=1.0Gi,vllm=3.5Gi", "vllm") == "3.5Gi"
    assert estimate_for("a=1.0Gi", "vllm") is None and estimate_for(None, "x") is None
    # a container that runs several engine replicas: its pod total is what the limit had to hold
    assert estimate_for("llm=14.4Gi,llm (pod total)=111.0Gi", "llm") == "111.0Gi"
    assert human_duration(42) == "42s" and human_duration(150) == "2m30s"
    assert human_duration(7300) == "2h01m"


@pytest.mark.asyncio
async def test_stop_ends_the_consumer_even_when_an_api_call_loses_the_cancellation(api, settings):
    """Python 3.11's asyncio.wait_for (KubeApi's timeout) can drop a cancellation that lands as
    the call completes; the consumer then must still end on stop(), not wait on its queue."""
    watcher = OomWatcher(api, settings)
    entered = asyncio.Event()

    async def swallowing_handle_pod(pod):
        entered.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            return []  # what a lost cancellation looks like from here

    watcher.handle_pod = swallowing_handle_pod
    queue: asyncio.Queue = asyncio.Queue()
    queue.put_nowait({"metadata": {"name": "p"}})
    watcher._tasks.append(asyncio.get_running_loop().create_task(watcher._consume(queue)))
    await asyncio.wait_for(entered.wait(), 5)
    await asyncio.wait_for(watcher.stop(), 10)  # hangs without the stop flag check


def test_the_watch_lists_in_chunks_and_queues_only_pods_it_would_act_on():
    """Every pod of a sized template carries the label: the initial listing is paged, and pods
    with no OOMKilled termination (and, with verdicts, no webhook decision to tell) are dropped
    in the watch thread instead of queued."""
    import asyncio

    from vllm_sizer.operator.controller import PodVerdicts
    from vllm_sizer.operator.controller.oom import LIST_CHUNK
    from vllm_sizer.operator.settings import OperatorSettings

    pod_name = "qwen3-lora-cpu-7d9f-x2x4z"
    plain = {"metadata": {"name": "p", "labels": {SIZED_LABEL: "true"}}, "status": {}}
    killed = oom_pod()
    decided = {"metadata": {"name": "d", "annotations": {
        "vllm-sizer.io/decision": "mutate: limits.memory 8.0Gi → 27.3Gi"}}}
    pages = {"": ({"items": [plain, killed], "metadata": {"continue": "t1"}}),
             "t1": ({"items": [decided, plain], "metadata": {"resourceVersion": "42"}})}
    queries = []

    class PagedApi:
        def request_sync(self, method, path, query=None, **_):
            queries.append(dict(query))
            return pages[query.get("continue", "")]

    loop = asyncio.new_event_loop()
    try:
        queue: asyncio.Queue = asyncio.Queue()
        for verdicts, expected in ((None, [pod_name]), (True, [pod_name, "d"])):
            queries.clear()
            w = OomWatcher(PagedApi(), OperatorSettings(),
                           verdicts=PodVerdicts(PagedApi(), OperatorSettings()) if verdicts else None)
            rv = w._list("/api/v1/pods", loop, queue, {"labelSelector": SELECTOR})
            loop.run_until_complete(asyncio.sleep(0))
            got = []
            while not queue.empty():
                got.append(queue.get_nowait()["metadata"]["name"])
            assert rv == "42" and got == expected
            assert [q.get("continue") for q in queries] == [None, "t1"]
            assert all(q["limit"] == str(LIST_CHUNK) and q["labelSelector"] == SELECTOR
                       for q in queries)
    finally:
        loop.close()
