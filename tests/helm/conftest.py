"""Shared fixtures for the chart tests: the render script loaded as a module, cached renders.

Rendering uses helm-python-sdk (Helm's Go SDK behind a C ABI, installed from the `test` extra);
where its native library cannot load (a platform with no wheel), every test here is skipped
with the reason.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "render-manifests.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("render_manifests", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


rm = _load_script()

try:
    import helm_python

    helm_python.helm_sdk_version()  # loads the native library
    HELM_SKIP_REASON = None
except Exception as exc:  # noqa: BLE001 - ImportError, OSError from ctypes, HelmLibraryError
    HELM_SKIP_REASON = (f"helm-python-sdk is not usable here ({type(exc).__name__}: {exc}); "
                        "install the test extra on a platform with a helm-python-sdk wheel")

requires_helm = pytest.mark.skipif(HELM_SKIP_REASON is not None, reason=HELM_SKIP_REASON or "")

# The value sets the issue asks for, each rendered and validated.
MATRIX: dict[str, dict[str, Any]] = {
    "defaults": {},
    "cert-manager": {"certManager": {"enabled": True}},
    "cert-manager-clusterissuer": {"certManager": {"enabled": True,
                                                   "issuerRef": {"name": "ca-issuer",
                                                                 "kind": "ClusterIssuer"}}},
    "existing-secret": {"existingSecret": "my-webhook-tls"},
    "enforce": {"mode": "enforce", "failurePolicy": "Fail", "webhook": {"replicas": 3}},
    "metrics-servicemonitor": {"metrics": {"serviceMonitor": {"enabled": True,
                                                              "labels": {"release": "prom"}}}},
    "everything": {
        "mode": "warn", "headroom": 0.25, "rounding": "1Gi", "pinCpuKvGiB": 8,
        "largestNodeMemory": "512Gi", "failClosed": True, "timeoutSeconds": 3,
        "namespaces": ["ml", "inference"], "excludedNamespaces": ["kube-system", "monitoring"],
        "namespaceSelector": {"matchLabels": {"team": "ml"}},
        "objectSelector": {"matchExpressions": [{"key": "vllm-sizer.io/skip",
                                                 "operator": "DoesNotExist"}]},
        "modelConfigs": {"namespace": "model-configs", "ttlSeconds": 60},
        "hub": {"enabled": True, "endpoint": "https://hf-mirror.internal",
                "tokenSecret": {"name": "hf-token", "key": "token"}},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infra",
                         "effect": "NoSchedule"}],
        "priorityClassName": "system-cluster-critical",
        "imagePullSecrets": [{"name": "regcred"}],
        "image": {"repository": "registry.example/vllm-sizer", "tag": "dev", "pullPolicy": "Always"},
        "extraEnv": [{"name": "PYTHONASYNCIODEBUG", "value": "0"}],
        "webhook": {"podAnnotations": {"a": "b"}, "podLabels": {"c": "d"},
                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                   "whenUnsatisfiable": "ScheduleAnyway",
                                                   "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "webhook"}}}]},
        "metrics": {"serviceMonitor": {"enabled": True}},
    },
    "no-controller": {"controller": {"enabled": False}, "metrics": {"enabled": False},
                      "webhook": {"pdb": {"enabled": False}}, "matchConditions": False},
}


@lru_cache(maxsize=None)
def _render_cached(key: str) -> tuple:
    values = json.loads(key)
    return tuple(rm.documents(rm.render(values)))


def render_docs(values: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any], str]]:
    """(template, object, text) documents of a render; objects are copies (safe to mutate)."""
    docs = _render_cached(json.dumps(values or {}, sort_keys=True))
    return [(p, copy.deepcopy(o), t) for p, o, t in docs]


def render_objects(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [o for _p, o, _t in render_docs(values)]


def by_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def one(objs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in by_kind(objs, kind) if name is None or o["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in extra.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out
