from __future__ import annotations

import copy
import pathlib
import uuid
from typing import Any

import pytest
import yaml

from vllm_sizer.operator.controller import KubeApi, api_client_for
from vllm_sizer.operator.settings import OperatorSettings

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples"
DEPLOYMENTS = "apps/v1/deployments"


def example(name: str, kind: str = "Deployment") -> dict[str, Any]:
    for doc in yaml.safe_load_all((EXAMPLES / f"{name}.yaml").read_text()):
        if doc and doc.get("kind") == kind:
            return doc
    raise LookupError(f"{kind} not in {name}")


def stored(obj: dict[str, Any], rv: str = "1") -> dict[str, Any]:
    """`obj` as the API server would return it (uid, resourceVersion)."""
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("uid", str(uuid.uuid4()))
    obj["metadata"].setdefault("resourceVersion", rv)
    return obj


def put(kmock: Any, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    kmock.objects[resource, meta.get("namespace"), meta["name"]] = obj
    return obj


def current(kmock: Any, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
    return _plain(kmock.objects[resource, namespace, name])


def _plain(x: Any) -> Any:
    if hasattr(x, "items"):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return x


def events(kmock: Any, namespace: str | None = None) -> list[dict[str, Any]]:
    out = []
    for (res, ns, _name), obj in list(kmock.objects.items()):
        if str(getattr(res, "plural", "")) == "events" and (namespace is None or ns == namespace):
            if not obj.deleted:
                out.append(_plain(obj))
    return out


def requests_of(kmock: Any, method: str) -> list[Any]:
    return [r for r in kmock if str(r.method.value if hasattr(r.method, "value") else r.method)
            .upper() == method.upper()]


@pytest.fixture
def settings() -> OperatorSettings:
    return OperatorSettings()


@pytest.fixture
def api(kmock) -> KubeApi:
    kmock.resources["v1/events"] = {}
    kmock.resources["v1/configmaps"] = {}
    kmock.resources["v1/pods"] = {}
    kmock.resources[DEPLOYMENTS] = {}
    client = api_client_for(str(kmock.url).rstrip("/"))
    return KubeApi(lambda: client, timeout=5)
