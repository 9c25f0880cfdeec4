"""The real Kopf operator (controller role) against kmock: a pre-existing undersized Deployment
is annotated with one Event; an operator restart (resume handlers run again) posts nothing new;
non-vLLM Deployments are invisible to Kopf (no state written on them)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import kopf
import pytest

from vllm_sizer.operator.controller import KubeApi, Sizer, api_client_for, register
from vllm_sizer.workloads.api_names import KOPF_PREFIX, LAST_EVENT_ANNOTATION

from .conftest import DEPLOYMENTS, current, events, example, put, stored
from tests.expected import FIT_02, NEED_01_GI, NEED_01_QUANTITY  # noqa: F401

NGINX = "web"


def declare(kmock) -> None:
    kmock.resources[DEPLOYMENTS] = kmock.ResourceInfo(
        kind="Deployment", singular="deployment", namespaced=True,
        verbs={"list", "watch", "get", "patch", "create", "delete", "update"})
    kmock.resources["v1/events"] = kmock.ResourceInfo(
        kind="Event", singular="event", namespaced=True, verbs={"create", "list", "get"})
    # Kopf waits for these two in discovery before it starts any watch.
    kmock.resources["v1/namespaces"] = kmock.ResourceInfo(
        kind="Namespace", singular="namespace", namespaced=False, verbs={"list", "watch", "get"})
    kmock.resources["apiextensions.k8s.io/v1/customresourcedefinitions"] = kmock.ResourceInfo(
        kind="CustomResourceDefinition", singular="customresourcedefinition", namespaced=False,
        verbs={"list", "watch", "get"})


class CountingSizer(Sizer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.results: list = []

    async def size(self, body, patch=None):
        result = await super().size(body, patch)
        self.results.append(result)
        return result


@contextlib.asynccontextmanager
async def operator(kmock):
    client = api_client_for(str(kmock.url).rstrip("/"))
    api = KubeApi(lambda: client, timeout=5)
    registry = kopf.OperatorRegistry()

    def login(**_):
        return kopf.ConnectionInfo(server=str(kmock.url).rstrip("/"), token="t")

    sizer = CountingSizer(api, _settings())
    register(registry, sizer, None, login=login,
             resources=(("apps", "v1", "deployments", "Deployment"),))
    stop = asyncio.Event()
    task = asyncio.create_task(kopf.operator(registry=registry, standalone=True, clusterwide=True,
                                             stop_flag=stop))
    try:
        yield sizer
    finally:
        stop.set()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(task, 15)


def _settings():
    from vllm_sizer.operator.settings import OperatorSettings
    return OperatorSettings()


async def wait_for(cond, timeout: float = 20.0) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if cond():
            return True
        await asyncio.sleep(0.1)
    return False


def annotations(kmock, name: str, namespace: str = "llm") -> dict:
    return current(kmock, DEPLOYMENTS, namespace, name)["metadata"].get("annotations") or {}


@pytest.mark.asyncio
async def test_kopf_operator_sizes_once_and_not_again_after_a_restart(kmock, caplog):
    caplog.set_level(logging.WARNING)
    declare(kmock)
    put(kmock, DEPLOYMENTS, stored(example("01-cpu-lora-deployment")))
    put(kmock, DEPLOYMENTS, stored(example("08-nginx-deployment")))

    async with operator(kmock):
        assert await wait_for(lambda: LAST_EVENT_ANNOTATION in annotations(kmock, "qwen3-lora-cpu")
                              and any(k.startswith(KOPF_PREFIX)
                                      for k in annotations(kmock, "qwen3-lora-cpu")))
        await asyncio.sleep(1.0)  # let Kopf settle (its own diff-base patch, the echo events)
    first = events(kmock)
    assert [e["reason"] for e in first] == ["Undersized"]
    ann = annotations(kmock, "qwen3-lora-cpu")
    assert ann["vllm-sizer.io/decision"] == f"warn: undersized, needs {NEED_01_GI}"
    assert not any("kopf.zalando.org" in k for k in ann), "Kopf's state under our own prefix"
    nginx = annotations(kmock, NGINX, "default")
    assert nginx == {} or not any(k.startswith(KOPF_PREFIX) for k in nginx), \
        "objects that are not vLLM are invisible to Kopf"

    async with operator(kmock) as sizer:  # a restart: resume handlers run again
        assert await wait_for(lambda: sizer.results)
        await asyncio.sleep(1.0)
    assert [r.action for r in sizer.results] == ["unchanged"], "resumed, compared, wrote nothing"
    assert len(events(kmock)) == 1, "no duplicate Event after a restart"


@pytest.mark.asyncio
async def test_killed_mid_startup_resumes_without_duplicates_or_lost_annotations(kmock, caplog):
    caplog.set_level(logging.WARNING)
    declare(kmock)
    n = 40
    base = example("01-cpu-lora-deployment")
    for i in range(n):
        obj = stored(base)
        obj["metadata"]["name"] = f"lora-{i:03d}"
        put(kmock, DEPLOYMENTS, obj)

    def annotated() -> int:
        return sum(LAST_EVENT_ANNOTATION in annotations(kmock, f"lora-{i:03d}") for i in range(n))

    async with operator(kmock):
        assert await wait_for(lambda: annotated() >= 5, timeout=30)
        # stopped here, part-way through the startup sizing
    partial = annotated()
    async with operator(kmock):
        assert await wait_for(lambda: annotated() == n, timeout=60), annotated()
        await asyncio.sleep(1.0)
    reasons: dict[str, list[str]] = {}
    for ev in events(kmock):
        reasons.setdefault(ev["involvedObject"]["name"], []).append(ev["reason"])
    assert reasons == {f"lora-{i:03d}": ["Undersized"] for i in range(n)}, \
        f"{partial} annotated before the stop"
