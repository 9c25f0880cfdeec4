"""Objects and measures shared by the hostile-input tests of the reader paths (mounted scripts,
platforms, downloads, model paths, numbers): bounds are asserted on memory (tracemalloc) and on
what the reader says, never on wall-clock time."""

from __future__ import annotations

import tracemalloc

from vllm_sizer.workloads import ReadContext
from vllm_sizer.workloads.quantity import parse_quantity

IMG = "vllm/vllm-openai:v0.11.0"
PEAK = 64 * 2**20
GiB = 2**30


def deployment(container, pod=None, ns="team-a", name="x"):
    spec = {"containers": [{"name": "v", **container}], **(pod or {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": "x"}},
                     "template": {"metadata": {"labels": {"app": "x"}}, "spec": spec}}}


def peak_of(fn, *args):
    tracemalloc.start()
    try:
        out = fn(*args)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < PEAK, f"peak {peak / 2**20:.0f} MiB"
    return out


def internal_errors(ws):
    return [d.message for w in ws for d in w.diagnostics if "internal error" in d.message]


def memory_limits(decision):
    return [parse_quantity(op["value"]) for op in decision.patch
            if op["path"].endswith("limits/memory")]


def mounted(command, files, mounts=None, volumes=None):
    c = {"image": IMG, "command": command,
         "volumeMounts": mounts or [{"name": "s", "mountPath": "/s"}]}
    pod = {"volumes": volumes or [{"name": "s", "configMap": {"name": "scripts"}}]}
    return deployment(c, pod), ReadContext(config_maps={"scripts": files})
