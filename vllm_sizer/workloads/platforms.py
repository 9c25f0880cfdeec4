"""Readers of the serving platforms' custom resources, and the structural rule for any other
kind: ContainerViews for the reader (reader.py). Each shape cites its source in kinds.py (the
project's API types or CRD at a commit); the readers below follow those files.

- `find_pod_templates(obj)`: every pod spec (a mapping with a `containers` list of container
  mappings) anywhere below the object's top-level fields other than metadata/status, at most
  MAX_DEPTH levels down and MAX_NODES mappings visited. This reads RayCluster (head and worker
  groups), RayService (spec.rayClusterConfig), AIBrix RayClusterFleet (spec.template.spec) and
  StormService (spec.template.spec.roles[].template), Knative Service (spec.template),
  Dynamo v1beta1 (spec.components[].podTemplate), a KAITO Workspace's inference.template, and a
  CRD nobody wrote a table for.
- `read_kubeai_model`: KubeAI builds the pod itself (internal/modelcontroller/engine_vllm.go:
  `python3 -m vllm.entrypoints.openai.api_server --model=<url ref> --served-model-name=<name>
  <spec.args>`, `--enable-lora` with adapters, env from spec.env); its memory comes from the
  resourceProfile in KubeAI's own configuration, which the CR cannot carry: no patch path.
- `read_vllm_runtime`: production-stack's operator (operator/internal/controller/
  vllmruntime_controller.go) runs `/opt/venv/bin/vllm serve <modelURL> ...` with flags built
  from spec.model / spec.vllmConfig, and deploymentConfig.resources.memory as both request and
  limit: that field is the patch path.
- `read_dynamo`: DynamoGraphDeployment v1alpha1, services.<name>.extraPodSpec.mainContainer
  with the component's `resources` ({requests, limits} of {cpu, memory, gpu, gpuType});
  `python3 -m dynamo.vllm` takes vLLM's engine flags and is read as the api_server module.
- `read_ray_serve_llm`: RayService serveConfigV2 applications whose args carry `llm_configs`
  (ray.serve.llm): each config's engine_kwargs are vLLM's engine arguments; the engine runs in
  a Ray worker next to the raylet and the object store, so the estimate is reported, never
  written. A custom app is read from its code when a ConfigMap the Ray pods mount holds it
  (pyapp.py, never run), else from data/ray_apps.json for published apps fetched by
  working_dir or baked into the image, else from its runtime_env variables by name.
- `read_ray_job`: a RayJob's entrypoint script in a mounted ConfigMap (ray.data.llm's
  vLLMEngineProcessorConfig, vLLM's LLM): its engines on the accelerator worker group;
  `ray_job_entrypoint_on_head`: an entrypoint that is itself the vLLM command line runs on the
  head (the job's driver), its GPU worker groups are worker nodes of that engine.
- `read_kaito_workspace`: a preset is built and sized by KAITO itself (the vLLM runtime unless
  the kaito.sh/runtime annotation says transformers); inference.template is read by structure.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from . import pyapp
from .device import OTHER_ACCELERATORS
from .expand import pointer
from .limits import load_yaml
from .model import RayPlacement
from .view import ContainerView
from .vllm_args import Severity

MAX_DEPTH = 10
MAX_NODES = 5000
_SKIP_TOP = {"apiVersion", "kind", "metadata", "status"}
API_SERVER = "vllm.entrypoints.openai.api_server"
# Dynamo's vLLM workers: `dynamo.vllm` (components/src/dynamo/vllm/args.py adds AsyncEngineArgs to
# its parser) and `dynamo.vllm.omni`, its vLLM-Omni worker, which "accepts the same underlying vLLM
# engine arguments" plus vLLM-Omni's orchestration flags (docs.nvidia.com/dynamo/reference/backends/
# v-llm-omni-configuration). Any other `dynamo.vllm.X` module is not one of them.
DYNAMO_VLLM_MODULES = ("dynamo.vllm", "dynamo.vllm.omni")
DYNAMO_VLLM = re.compile(r"\bpython[0-9.]*\s+-m\s+dynamo\.vllm(?:\.omni)?(?![\w.])")


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def is_pod_spec(node: Any) -> bool:
    containers = node.get("containers") if isinstance(node, dict) else None
    return (
        isinstance(containers, list)
        and bool(containers)
        and all(
            isinstance(c, dict) and ("image" in c or "name" in c or "command" in c)
            for c in containers
        )
    )


# KServe runtimes and LLMInferenceService configs: templates an InferenceService or an
# LLMInferenceService takes its container from, never a server by themselves
RUNTIME_KINDS = ("ServingRuntime", "ClusterServingRuntime", "LLMInferenceServiceConfig")


def find_pod_templates(obj: dict[str, Any]) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """(path segments of the pod spec, pod spec) for every pod spec in the object, in document
    order; a pod spec's own children are not searched (no pods inside pods)."""
    found: list[tuple[tuple[str | int, ...], dict[str, Any]]] = []
    budget = [MAX_NODES]

    def walk(node: Any, path: tuple[str | int, ...]) -> None:
        if budget[0] <= 0 or len(path) > MAX_DEPTH:
            return
        if isinstance(node, dict):
            budget[0] -= 1
            if path and node.get("kind") in RUNTIME_KINDS and "apiVersion" in node:
                return  # an embedded KServe runtime (an OpenShift Template's objects) serves nothing
            if path and is_pod_spec(node):
                found.append((path, node))
                return
            for k, v in node.items():
                if not path and k in _SKIP_TOP:
                    continue
                if isinstance(v, (dict, list)):
                    walk(v, (*path, str(k)))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                if isinstance(v, (dict, list)):
                    walk(v, (*path, i))

    walk(obj, ())
    return found


def labels_path(spec_path: tuple[str | int, ...]) -> str | None:
    """Where the pods' labels live for a pod spec at `spec_path`: the PodTemplateSpec's
    metadata (…/template/spec → …/template/metadata/labels), or the Pod's own."""
    if spec_path == ("spec",):
        return "/metadata/labels"
    if spec_path and spec_path[-1] == "spec":
        return pointer(*spec_path[:-1], "metadata", "labels")
    return None


def structural_views(
    obj: dict[str, Any], patchable: bool, note: str | None = None
) -> list[ContainerView]:
    views: list[ContainerView] = []
    ray = str(obj.get("apiVersion", "")).startswith("ray.io/") or obj.get("kind") in RAY_FLEETS
    for path, pod_spec in find_pod_templates(obj):
        group_views = pod_views(
            pod_spec,
            path,
            patchable=patchable,
            labels=labels_path(path) if patchable else None,
            note=note,
        )
        if ray and any(p in ("headGroupSpec", "workerGroupSpecs") for p in path):
            template = _dict(_at(obj, path[:-1]))
            for v in group_views:
                if v.container_path.endswith("/containers/0"):
                    v.container = kuberay_container(
                        v.container, template, head="headGroupSpec" in path
                    )
        views.extend(group_views)
    return views


RAY_FLEETS = ("RayClusterFleet",)  # AIBrix: a RayCluster template, built by KubeRay
KUBERAY_OVERWRITE = "ray.io/overwrite-container-cmd"


def kuberay_container(
    c: dict[str, Any], template: dict[str, Any], head: bool = False
) -> dict[str, Any]:
    """The Ray container (index 0) of a head or worker group as KubeRay runs it: unless the
    command already holds `ray start` or the template says ray.io/overwrite-container-cmd, KubeRay
    replaces command/args by `/bin/bash -lc -- "<command args> && ulimit ...; ray start ..."`
    (ray-project/kuberay@feeaf72facab4881ba2b179248bb67315634e229:
    ray-operator/controllers/ray/common/pod.go:878-913): the image's ENTRYPOINT never runs, and
    a container with no command only starts Ray."""
    annotations = _dict(_dict(template.get("metadata")).get("annotations"))
    # KubeRay always appends KUBERAY_GEN_RAY_START_CMD, the `ray start` it generated, to the
    # container's env, so a command may run `$KUBERAY_GEN_RAY_START_CMD` itself (pod.go:1277-1280)
    start = "ray start" + (" --head" if head else "")
    out = dict(c)
    out["env"] = [*_list(c.get("env")), {"name": "KUBERAY_GEN_RAY_START_CMD", "value": start}]
    if str(annotations.get(KUBERAY_OVERWRITE, "")).lower() == "true":
        return out
    words = [str(w) for key in ("command", "args") for w in _list(c.get(key))]
    cmd = " ".join(words)
    if "ray start" in cmd or "KUBERAY_GEN_RAY_START_CMD" in cmd:
        return out
    generated = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; " + start
    out["command"] = ["/bin/bash", "-lc", "--"]
    out["args"] = [f"{cmd} && {generated}" if cmd else generated]
    return out


def _at(obj: Any, path: tuple[str | int, ...]) -> Any:
    cur = obj
    for p in path:
        cur = (
            cur[p]
            if isinstance(cur, list) and isinstance(p, int) and p < len(cur)
            else (_dict(cur).get(p) if isinstance(p, str) else None)
        )
    return cur


def pod_views(
    pod_spec: dict[str, Any],
    base: tuple[str | int, ...],
    *,
    patchable: bool = True,
    labels: str | None = None,
    note: str | None = None,
) -> list[ContainerView]:
    views = []
    for list_name in ("containers", "initContainers"):
        for idx, c in enumerate(_list(pod_spec.get(list_name))):
            c = _dict(c)
            if not c:
                continue
            if list_name == "initContainers" and c.get("restartPolicy") != "Always":
                continue  # only sidecars keep running next to the others
            c = dynamo_rewrite(c)
            views.append(
                ContainerView(
                    name=str(c.get("name") or f"{list_name}[{idx}]"),
                    container=c,
                    pod_spec=pod_spec,
                    container_path=pointer(*base, list_name, idx),
                    resources_path=pointer(*base, list_name, idx, "resources"),
                    patchable=patchable,
                    labels_path=labels,
                    notes=[("info", note)] if note else [],
                )
            )
    return views


def dynamo_rewrite(c: dict[str, Any]) -> dict[str, Any]:
    """`python3 -m dynamo.vllm[.omni] ARGS` (in command, args or a `sh -c` script) → the api_server
    module with ARGS (the model as `--model`, as Dynamo takes it): Dynamo's vLLM worker parses
    vLLM's engine flags (components/src/dynamo/vllm/args.py adds AsyncEngineArgs to its
    parser) plus its own."""
    if not any(
        isinstance(w, str) and "dynamo.vllm" in w
        for key in ("command", "args")
        for w in _list(c.get(key))
    ):
        return c  # the common case: no copy
    out = dict(c)
    command, args = _list(c.get("command")), _list(c.get("args"))
    if (
        len(command) == 1
        and str(command[0]).rsplit("/", 1)[-1].startswith("python")
        and args[:1] == ["-m"]
        and args[1:2]
        and args[1] in DYNAMO_VLLM_MODULES
    ):
        # `command: [python3]`, `args: [-m, dynamo.vllm, ...]`: the module is in args
        c = {**c, "command": [], "args": [*command, *args]}
        out["command"] = []
    for key in ("command", "args"):
        items = _list(c.get(key))
        new: list[Any] = []
        i = 0
        while i < len(items):
            w = items[i]
            if (
                isinstance(w, str)
                and w == "-m"
                and i + 1 < len(items)
                and items[i + 1] in DYNAMO_VLLM_MODULES
            ):
                if (
                    new
                    and isinstance(new[-1], str)
                    and new[-1].rsplit("/", 1)[-1].startswith("python")
                ):
                    new.pop()
                new += ["python3", "-m", API_SERVER]
                i += 2
                continue
            new.append(DYNAMO_VLLM.sub("python3 -m " + API_SERVER, w) if isinstance(w, str) else w)
            i += 1
        if key in c:
            out[key] = new
    out["_dynamo"] = True
    image = out.get("image")
    if isinstance(image, str) and "ai-dynamo/" in image and ":" in image.rsplit("/", 1)[-1]:
        # nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.7.1 is tagged with Dynamo's release, not
        # vLLM's: the tag must not be read as a vLLM version
        out["image"] = image.rsplit(":", 1)[0]
        out["_dynamo_tag"] = image.rsplit(":", 1)[1]
    return out


# ------------------------------------------------------------------ KubeAI Model
def _hf_ref(url: str) -> str:
    for prefix in ("hf://", "huggingface://"):
        if url.lower().startswith(prefix):
            return url[len(prefix) :].split("@", 1)[0].strip("/")
    if url.startswith("pvc://"):
        return "/model"
    return url


def _profile_resources(profile: str) -> tuple[dict[str, Any], list[tuple[Severity, str]]]:
    """KubeAI resourceProfile "<name>:<count>" → what the reader can tell of the device; the
    profile's requests/limits live in KubeAI's configuration (helm values resourceProfiles),
    not in the CR."""
    name, _, count = profile.partition(":")
    count = count if count.isdigit() else "1"
    low = name.lower()
    if low.startswith("nvidia-gpu"):
        return {"limits": {"nvidia.com/gpu": count}}, []
    if low.startswith("amd-gpu"):
        return {"limits": {"amd.com/gpu": count}}, []
    if low.startswith("google-tpu"):
        return {"limits": {"google.com/tpu": count}}, []
    if low.startswith("cpu"):
        return {}, [("info", f"resourceProfile {profile}: read as a CPU pod")]
    return {}, [
        (
            "warning",
            f"resourceProfile {profile!r}: its device and memory are in KubeAI's "
            "configuration, unknown here",
        )
    ]


def read_kubeai_model(obj: dict[str, Any]) -> list[ContainerView]:
    spec = _dict(obj.get("spec"))
    if str(spec.get("engine", "")).upper() != "VLLM":
        return []  # OLlama, FasterWhisper, Infinity: not vLLM
    meta = _dict(obj.get("metadata"))
    url = str(spec.get("url") or "")
    model = _hf_ref(url)
    args = [f"--model={model}", f"--served-model-name={meta.get('name') or ''}"]
    if url.startswith("s3://") and not spec.get("cacheProfile"):
        args.append("--load-format=runai_streamer")
    args += [str(a) for a in _list(spec.get("args"))]
    env = [{"name": str(k), "value": str(v)} for k, v in sorted(_dict(spec.get("env")).items())]
    if spec.get("adapters"):
        args.append("--enable-lora")
    profile = str(spec.get("resourceProfile") or "")
    resources, notes = _profile_resources(profile) if profile else ({}, [])
    if profile.lower().startswith("cpu"):
        env.append({"name": "VLLM_TARGET_DEVICE", "value": "cpu"})
    container = {
        "name": "server",
        "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
        "args": args,
        "env": env,
        "resources": resources,
    }
    if spec.get("image"):
        container["image"] = spec["image"]
    notes.append(
        (
            "info",
            "KubeAI builds this pod (python3 -m vllm.entrypoints.openai.api_server "
            "from spec.url and spec.args); its memory limit comes from the resourceProfile in "
            "KubeAI's configuration, which the Model cannot carry, so the Model is not "
            "changed: the pod-level webhook sizes its pods when KubeAI creates them",
        )
    )
    return [
        ContainerView(
            name="server",
            container=container,
            pod_spec={},
            container_path=pointer("spec"),
            resources_path=pointer("spec", "resources"),
            storage_uri=url or None,
            patchable=False,
            notes=notes,
        )
    ]


# ------------------------------------------------------------------ production-stack VLLMRuntime
def read_vllm_runtime(obj: dict[str, Any]) -> list[ContainerView]:
    spec = _dict(obj.get("spec"))
    model = _dict(spec.get("model"))
    vc = _dict(spec.get("vllmConfig"))
    dc = _dict(spec.get("deploymentConfig"))
    res = _dict(dc.get("resources"))
    url = str(model.get("modelURL") or "")
    args: list[str] = [url, "--host", "0.0.0.0", "--port", str(vc.get("port") or 8000)]
    if model.get("enableLoRA"):
        args.append("--enable-lora")
    args.append(
        "--enable-chunked-prefill"
        if vc.get("enableChunkedPrefill")
        else "--no-enable-chunked-prefill"
    )
    args.append(
        "--enable-prefix-caching" if vc.get("enablePrefixCaching") else "--no-enable-prefix-caching"
    )
    for key, flag in (("maxModelLen", "--max-model-len"), ("maxNumSeqs", "--max-num-seqs")):
        if isinstance(model.get(key), int) and model[key] > 0:
            args += [flag, str(model[key])]
    if model.get("dtype"):
        args += ["--dtype", str(model["dtype"])]
    if isinstance(vc.get("tensorParallelSize"), int) and vc["tensorParallelSize"] > 0:
        args += ["--tensor-parallel-size", str(vc["tensorParallelSize"])]
    if vc.get("gpuMemoryUtilization"):
        args += ["--gpu-memory-utilization", str(vc["gpuMemoryUtilization"])]
    if isinstance(vc.get("maxLoras"), int) and vc["maxLoras"] > 0:
        args += ["--max-loras", str(vc["maxLoras"])]
    args += [str(a) for a in _list(vc.get("extraArgs"))]
    env = [{"name": "VLLM_USE_V1", "value": "1" if vc.get("v1") else "0"}]
    env += [e for e in _list(vc.get("env")) if isinstance(e, dict)]
    resources: dict[str, Any] = {}
    if res.get("memory") is not None:
        resources = {"limits": {"memory": res["memory"]}, "requests": {"memory": res["memory"]}}
    if res.get("gpu"):
        gpu_type = str(res.get("gpuType") or "nvidia.com/gpu")
        resources.setdefault("limits", {})[gpu_type] = str(res["gpu"])
    image = _dict(dc.get("image"))
    name = str(image.get("name") or "")
    registry = str(image.get("registry") or "")
    full = f"{registry}/{name}" if registry and name else name
    container = {
        "name": "vllm",
        "image": full or None,
        "command": ["/opt/venv/bin/vllm", "serve"],
        "args": args,
        "env": env,
        "resources": resources,
    }
    pod_spec: dict[str, Any] = {}
    if dc.get("shmSize"):
        pod_spec["volumes"] = [
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": dc["shmSize"]}}
        ]
        container["volumeMounts"] = [{"name": "shm", "mountPath": "/dev/shm"}]
    if dc.get("runtimeClass"):
        pod_spec["runtimeClassName"] = dc["runtimeClass"]
    mem_ptr = pointer("spec", "deploymentConfig", "resources", "memory")
    return [
        ContainerView(
            name="vllm",
            container=container,
            pod_spec=pod_spec,
            container_path=pointer("spec", "vllmConfig"),
            resources_path=pointer("spec", "deploymentConfig", "resources"),
            limit_path=mem_ptr,
            request_path=mem_ptr,
            env_path=pointer("spec", "vllmConfig", "env"),
            storage_uri=None,
            labels_path=None,
            notes=[
                (
                    "info",
                    "production-stack's operator builds the vllm container from spec.model "
                    "and spec.vllmConfig; deploymentConfig.resources.memory is its request and limit",
                )
            ],
        )
    ]


# ------------------------------------------------------------------ Dynamo
FRONTEND = "frontend"  # componentType / type of Dynamo's HTTP frontend (runs no engine)
# Dynamo components that run no engine: the HTTP frontend (python -m dynamo.frontend) and the
# SLA planner (python -m planner_sla), whatever image they use
NO_ENGINE_COMPONENTS = {FRONTEND, "planner"}


def _dynamo_resources(res: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for section in ("limits", "requests"):
        item = _dict(res.get(section))
        sec: dict[str, Any] = {}
        if item.get("memory") not in (None, ""):
            sec["memory"] = item["memory"]
        if item.get("cpu") not in (None, ""):
            sec["cpu"] = item["cpu"]
        if item.get("gpu") not in (None, ""):
            sec[str(item.get("gpuType") or "nvidia.com/gpu")] = str(item["gpu"])
        if sec:
            out[section] = sec
    return out


def read_dynamo(obj: dict[str, Any]) -> list[ContainerView]:
    spec = _dict(obj.get("spec"))
    views: list[ContainerView] = []
    if "components" in spec and "services" not in spec:  # v1beta1: podTemplate per component
        for i, comp in enumerate(_list(spec.get("components"))):
            comp = _dict(comp)
            if str(comp.get("type", "")).lower() in NO_ENGINE_COMPONENTS:
                continue
            tmpl = _dict(comp.get("podTemplate"))
            base: tuple[str | int, ...] = ("spec", "components", i, "podTemplate")
            for v in pod_views(
                _dict(tmpl.get("spec")),
                (*base, "spec"),
                labels=pointer(*base, "metadata", "labels"),
            ):
                v.name = f"{comp.get('name') or i}/{v.name}"
                views.append(v)
        return views
    for name, svc in _dict(spec.get("services")).items():
        svc = _dict(svc)
        if str(svc.get("componentType", "")).lower() in NO_ENGINE_COMPONENTS:
            continue  # Dynamo's frontend or planner: no engine
        extra = _dict(svc.get("extraPodSpec"))
        main = _dict(extra.get("mainContainer"))
        base = ("spec", "services", str(name))
        labels = pointer(*base, "extraPodMetadata", "labels")
        if main:
            c = dynamo_rewrite(dict(main))
            c.setdefault("name", "main")
            comp_res = _dynamo_resources(_dict(svc.get("resources")))
            own_mem = _dict(_dict(main.get("resources")).get("limits")).get("memory") is not None
            if own_mem:
                res_path = pointer(*base, "extraPodSpec", "mainContainer", "resources")
            else:
                res_path = pointer(*base, "resources")
                merged = {
                    s: {**_dict(comp_res.get(s)), **_dict(_dict(main.get("resources")).get(s))}
                    for s in ("limits", "requests")
                    if comp_res.get(s) or _dict(main.get("resources")).get(s)
                }
                c["resources"] = merged
            envs = [e for e in _list(svc.get("envs")) if isinstance(e, dict)]
            if envs:
                c["env"] = envs + _list(c.get("env"))
            views.append(
                ContainerView(
                    name=f"{name}/{c.get('name')}",
                    container=c,
                    pod_spec=extra,
                    container_path=pointer(*base, "extraPodSpec", "mainContainer"),
                    resources_path=res_path,
                    labels_path=labels,
                    env_path=pointer(*base, "extraPodSpec", "mainContainer", "env"),
                )
            )
        for v in pod_views(extra, (*base, "extraPodSpec"), labels=labels):
            v.name = f"{name}/{v.name}"
            views.append(v)
    return views


# ------------------------------------------------------------------ KubeRay / Ray Serve LLM
def _kwargs_flags(kwargs: dict[str, Any]) -> list[str]:
    flags: list[str] = []
    for key, value in kwargs.items():
        flag = "--" + str(key).replace("_", "-")
        if value is True:
            flags.append(flag)
        elif value is False:
            flags.append("--no-" + flag[2:])
        elif value is None:
            continue
        elif isinstance(value, (dict, list)):
            flags += [flag, json.dumps(value)]
        else:
            flags += [flag, str(value)]
    return flags


def ray_cluster_spec(obj: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    spec = _dict(obj.get("spec"))
    if obj.get("kind") == "RayService":
        return _dict(spec.get("rayClusterConfig")), ("spec", "rayClusterConfig")
    if obj.get("kind") == "RayJob":
        return _dict(spec.get("rayClusterSpec")), ("spec", "rayClusterSpec")
    return spec, ("spec",)


def _ray_app_files(
    cluster: dict[str, Any], config_maps: dict[str, dict[str, str]]
) -> dict[str, str]:
    """File name → text of every ConfigMap file the Ray pods mount (an app's module, a job's
    script), by the name it has in the pod (items' paths)."""
    files: dict[str, str] = {}
    groups = [_dict(cluster.get("headGroupSpec"))] + [
        _dict(g) for g in _list(cluster.get("workerGroupSpecs"))
    ]
    for group in groups:
        pod = _dict(_dict(group.get("template")).get("spec"))
        for vol in _list(pod.get("volumes")):
            cm = _dict(_dict(vol).get("configMap"))
            data = config_maps.get(str(cm.get("name") or ""))
            if not data:
                continue
            items = [_dict(i) for i in _list(cm.get("items"))]
            pairs = [(str(i.get("key")), str(i.get("path") or "")) for i in items] or [
                (k, k) for k in data
            ]
            for key, path in pairs:
                if isinstance(data.get(key), str):
                    files.setdefault(path.rsplit("/", 1)[-1], data[key])
    return files


def _ray_config_map_names(cluster: dict[str, Any]) -> set[str]:
    groups = [_dict(cluster.get("headGroupSpec"))] + [
        _dict(g) for g in _list(cluster.get("workerGroupSpecs"))
    ]
    return {
        str(_dict(_dict(vol).get("configMap")).get("name"))
        for g in groups
        for vol in _list(_dict(_dict(g.get("template")).get("spec")).get("volumes"))
        if _dict(_dict(vol).get("configMap")).get("name")
    }


def _py_engines(
    source: str, env: dict[str, str], where: str
) -> list[tuple[str, str | None, list[str], str]]:
    """(engine name, model, vLLM flags, how) of the engines a Python app builds (pyapp)."""
    out: list[tuple[str, str | None, list[str], str]] = []
    for k, engine in enumerate(pyapp.read_engines(source, env)):
        how = f"{engine.call}(...) in {where}, read from its code"
        if engine.unknown:
            how += " (computed from what the manifest does not show, so vLLM's default is "
            how += "assumed: " + ", ".join(engine.unknown[:5]) + ")"
        # `device` is a keyword of old EngineArgs, not a flag to read: the pod says the device
        kwargs = {key: v for key, v in engine.kwargs.items() if key != "device"}
        out.append((str(k), engine.model, _kwargs_flags(kwargs), how))
    return out


def _gpu_group(
    cluster: dict[str, Any], base: tuple[str, ...]
) -> tuple[dict[str, Any], str, dict[str, Any]] | None:
    """(container, container pointer, pod spec) of the first worker group whose Ray container
    Ray declares accelerators on (ray_start_accelerators: rayStartParams may say more or fewer
    than the container's limit), else the first worker container, else the head's."""
    candidates: list[tuple[dict[str, Any], str, dict[str, Any], dict[str, Any]]] = []
    for i, group in enumerate(_list(cluster.get("workerGroupSpecs"))):
        pod = _dict(_dict(_dict(group).get("template")).get("spec"))
        for j, c in enumerate(_list(pod.get("containers"))):
            candidates.append(
                (
                    _dict(c),
                    pointer(*base, "workerGroupSpecs", i, "template", "spec", "containers", j),
                    pod,
                    _dict(group) if j == 0 else {},
                )
            )
    head_group = _dict(cluster.get("headGroupSpec"))
    head = _dict(_dict(head_group.get("template")).get("spec"))
    for j, c in enumerate(_list(head.get("containers"))):
        candidates.append(
            (
                _dict(c),
                pointer(*base, "headGroupSpec", "template", "spec", "containers", j),
                head,
                head_group if j == 0 else {},
            )
        )
    for c, ptr, pod, group in candidates:
        if group:  # the Ray container: what `ray start` declares
            count = ray_start_accelerators(group, c)[0]
            if (_container_accelerators(c) if count is None else count) > 0:
                return c, ptr, pod
        elif _container_accelerators(c) > 0:
            return c, ptr, pod
    return candidates[0][:3] if candidates else None


# KubeRay's `ray start` accelerator flags (ray-project/kuberay@feeaf72facab4881ba2b179248bb67315634e229
# ray-operator/controllers/ray/common/pod.go): the group's top-level `resources` overwrite
# rayStartParams (updateRayStartParamsResources :1649-1675, called for the head :229 and each
# worker group :664: a GPU key sets num-gpus, other names go to --resources), then
# generateRayStartCommand :1390-1416 adds num-gpus from the Ray container's first GPU limit
# (utils.IsGPUResourceKey: a name ending in "gpu", or a MIG slice); TPU / Neuron limits go to
# --resources as custom resources (not read here). Ray places GPU bundles by what
# `ray start` declares, not by what the container's limit says. Only containers[0] (KubeRay's
# RayContainerIndex) runs `ray start`.
KUBERAY_RAY_START = (
    "ray-project/kuberay@feeaf72 ray-operator/controllers/ray/common/pod.go:1390-1416, 1649-1675"
)
_RAY_CONTAINER = re.compile(
    r"^(.*/(?:headGroupSpec|workerGroupSpecs/\d+))/template/spec/containers/0$"
)
_MIG = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")


def _ray_gpu_key(name: str) -> bool:
    low = name.lower()
    return low.endswith("gpu") or bool(_MIG.search(low))


def _whole(value: Any) -> int | None:
    """A count as `ray start` takes it (--num-gpus is an int): None when it is not one."""
    if isinstance(value, bool):
        return None
    try:
        n = int(str(value).strip().strip("'\"` "))
    except ValueError:
        try:
            f = float(str(value).strip().strip("'\"` "))
        except ValueError:
            return None
        if f != int(f):
            return None
        n = int(f)
    return n if 0 <= n <= 1_000_000 else None


def ray_start_accelerators(
    group: dict[str, Any], container: dict[str, Any]
) -> tuple[int | None, str]:
    """(GPUs Ray declares on a KubeRay group's pods, where that count comes from) for its Ray
    container, as KubeRay builds `ray start` (KUBERAY_RAY_START): the group's `resources`, else
    rayStartParams num-gpus, else the container's first GPU limit. None: no GPU count reaches
    `ray start` (a TPU or Neuron pod: KubeRay passes those as custom resources in other units,
    so their ranks stay the container's own count)."""
    params = _dict(group.get("rayStartParams"))
    limits_ = _dict(_dict(container.get("resources")).get("limits"))
    for name, value in _dict(group.get("resources")).items():
        if _ray_gpu_key(str(name)) and _whole(value) is not None:
            return _whole(value) or 0, f"the group's resources {name}: {value}"
    if "num-gpus" in params:
        n = _whole(params["num-gpus"])
        if n is not None:
            return n, f"rayStartParams num-gpus: {params['num-gpus']}"
    for key in sorted(str(k) for k in limits_):
        if _ray_gpu_key(key):
            return (_whole(limits_[key]) or 0), f"the container's {key} limit"
    if any(is_accelerator(str(k)) for k in limits_):
        return None, "an accelerator Ray counts as a custom resource"
    return 0, "no GPU limit or rayStartParams num-gpus"


def _pointer_get(obj: Any, ptr: str) -> Any:
    node = obj
    for raw in ptr.split("/")[1:]:
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def annotate_ray_nodes(obj: dict[str, Any], views: list[ContainerView]) -> None:
    """Each view of a KubeRay group's Ray container (containers[0] of the head or a worker
    group, and the Ray Serve / RayJob engines placed there) learns the accelerators Ray
    declares on that pod, and says so where rayStartParams or the group's resources override
    the container's limit."""
    for view in views:
        m = _RAY_CONTAINER.match(view.container_path)
        if m is None:
            continue
        group = _dict(_pointer_get(obj, m.group(1)))
        container = _dict(_pointer_get(obj, view.container_path))
        count, source = ray_start_accelerators(group, container)
        view.ray_accelerators = count
        if count is not None and source.startswith(("rayStartParams", "the group's")):
            own = _container_accelerators(container)
            if own != count:
                view.notes.append(
                    (
                        "info",
                        f"Ray declares {count} GPU(s) on this pod ({source}; the container asks "
                        f"for {own}): Ray places the engine's GPU workers by that count "
                        f"({KUBERAY_RAY_START})",
                    )
                )


def _container_accelerators(container: dict[str, Any]) -> int:
    for key, value in _dict(_dict(container.get("resources")).get("limits")).items():
        if is_accelerator(str(key)):
            return _whole(value) or 0
    return 0


def is_accelerator(resource: str) -> bool:
    """A GPU or another accelerator (google.com/tpu, aws.amazon.com/neuron, ...): a TPU worker
    group holds the engine as a GPU group does."""
    low = str(resource).lower()
    return "gpu" in low or low.startswith(OTHER_ACCELERATORS)


# Custom Ray Serve vLLM apps (not ray.serve.llm) build vLLM's engine arguments from their
# runtime_env env_vars; the published samples use these names (GoogleCloudPlatform/
# kubernetes-engine-samples@2b50365 ai-ml/gke-ray/rayserve/llm/serve.py:126-127 MODEL_ID,
# TENSOR_PARALLELISM; awslabs/ai-on-eks@41a979e blueprints/inference/vllm-rayserve-gpu/
# vllm_serve.py:33-38 MODEL_ID, GPU_MEMORY_UTILIZATION, MAX_MODEL_LEN, MAX_NUM_SEQ(S),
# MAX_NUM_BATCHED_TOKENS; ai-ml/gke-ray/rayserve/llm/tpu/serve_tpu.py:48,84-91 and
# ray-project/kuberay@feeaf72 ray-operator/config/samples/vllm/serve_tpu.py:32,68-75
# tensor_parallel_size = the TPU chips, TPU_CHIPS when Ray has not seen the TPU host yet). The
# app's code is not visible: read by name, and said so.
RAY_APP_ENV_FLAGS = {
    "MODEL_ID": "--model",
    "MODEL_NAME": "--model",
    "TENSOR_PARALLELISM": "--tensor-parallel-size",
    "TENSOR_PARALLEL_SIZE": "--tensor-parallel-size",
    "TPU_CHIPS": "--tensor-parallel-size",
    "PIPELINE_PARALLEL_SIZE": "--pipeline-parallel-size",
    "MAX_MODEL_LEN": "--max-model-len",
    "MAX_NUM_SEQS": "--max-num-seqs",
    "MAX_NUM_SEQ": "--max-num-seqs",
    "MAX_NUM_BATCHED_TOKENS": "--max-num-batched-tokens",
    "GPU_MEMORY_UTILIZATION": "--gpu-memory-utilization",
    "DTYPE": "--dtype",
    "QUANTIZATION": "--quantization",
    "KV_CACHE_DTYPE": "--kv-cache-dtype",
}


# Published apps whose code the RayService does not carry (a working_dir archive, the image):
# what they build the engine from, with the source of each row (data/ray_apps.json)
RAY_APPS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "ray_apps.json").read_text()
)["apps"]


def _published_app(
    app: dict[str, Any], worker_image: str, mounted: set[str] | None = None
) -> tuple[str, str | None, list[str], str] | None:
    """The RAY_APPS row of an app: its module fetched from a working_dir archive, in the
    worker's image, or in a ConfigMap the Ray pods mount (`mounted`) that the file lacks."""
    module = str(app.get("import_path") or "").split(":", 1)[0]
    runtime_env = _dict(app.get("runtime_env"))
    working_dir = str(runtime_env.get("working_dir") or "")
    repo = worker_image.split("@", 1)[0]
    if repo.rfind(":") > repo.rfind("/"):
        repo = repo[: repo.rfind(":")]
    for row in RAY_APPS:
        if row["module"] != module:
            continue
        if (
            ("working_dir" in row and working_dir.startswith(row["working_dir"]))
            or ("image" in row and (repo == row["image"] or repo.endswith("/" + row["image"])))
            or ("config_map" in row and row["config_map"] in (mounted or set()))
        ):
            env_vars = _dict(runtime_env.get("env_vars"))
            model: str | None = None
            flags: list[str] = []
            for var, (flag, default) in row["env"].items():
                value = env_vars.get(var)
                value = default if value is None or value == "" else str(value)
                if value is None:
                    continue
                if flag == "--model":
                    model = value
                else:
                    flags += [flag, value]
            how = (
                f"the published app {module} ({row['source']}): the runtime_env variables it "
                "reads and its code's own values"
            )
            return str(app.get("name") or "app"), model, flags + list(row["fixed"]), how
    return None


def _is_vllm_app(app: dict[str, Any], worker_image: str) -> bool:
    """A Ray Serve application that runs vLLM: ray.serve.llm, or an app whose import path,
    deployments, pip requirements, worker image or runtime_env variables (VLLM_XLA_CACHE_PATH:
    only vLLM reads a VLLM_* variable) name vLLM."""
    deployments = " ".join(str(_dict(d).get("name") or "") for d in _list(app.get("deployments")))
    runtime_env = _dict(app.get("runtime_env"))
    pip = runtime_env.get("pip")
    pip_words = " ".join(str(p) for p in (_list(pip) or _list(_dict(pip).get("packages"))))
    env_words = " ".join(str(k) for k in _dict(runtime_env.get("env_vars")))
    text = " ".join(
        [str(app.get("import_path") or ""), deployments, pip_words, worker_image, env_words]
    )
    return "vllm" in text.lower() or "ray-llm" in worker_image.lower()


# (engine name, model, vLLM flags, how they were read, its LLMConfig when ray.serve.llm's)
_Engine = tuple[str, str | None, list[str], str, dict[str, Any] | None]


def _serve_engines(
    app: dict[str, Any],
    worker_image: str,
    files: dict[str, str] | None = None,
    mounted: set[str] | None = None,
) -> list[_Engine]:
    """(engine name, model, vLLM flags, how they were read, LLMConfig) for each vLLM engine an
    application starts: ray.serve.llm's llm_configs, else the app's module when a ConfigMap the
    Ray pods mount holds it, else its runtime_env variables read by name."""
    out: list[_Engine] = []
    for k, llm in enumerate(_list(_dict(app.get("args")).get("llm_configs"))):
        llm = _dict(llm)
        loading = _dict(llm.get("model_loading_config"))
        source = loading.get("model_source") or loading.get("model_id")
        raw_kwargs = llm.get("engine_kwargs")
        kwargs = dict(_dict(raw_kwargs))
        if kwargs.get("device") == "auto":
            kwargs.pop("device")
        name = str(loading.get("model_id") or k)
        how = "Ray Serve LLM engine_kwargs"
        if raw_kwargs is not None and not isinstance(raw_kwargs, dict):
            # Ray's LLMConfig takes a mapping (and rejects anything else)
            how += (
                f", which is a {type(raw_kwargs).__name__}, not a mapping: its engine "
                "arguments are unknown (vLLM's defaults are read)"
            )
        out.append(
            (name, source if isinstance(source, str) else None, _kwargs_flags(kwargs), how, llm)
        )
    if out or str(app.get("import_path") or "").startswith("ray.serve.llm"):
        return out
    env_vars = _dict(_dict(app.get("runtime_env")).get("env_vars"))
    module = str(app.get("import_path") or "").split(":", 1)[0].rsplit(".", 1)[-1]
    source = (files or {}).get(module + ".py") if module else None
    if source is not None:
        env = {str(k): str(v) for k, v in env_vars.items() if isinstance(v, (str, int, float))}
        engines = _py_engines(source, env, f"{module}.py (a ConfigMap the Ray pods mount)")
        if engines:
            name = str(app.get("name") or "app")
            return [
                (name if len(engines) == 1 else f"{name}/{e[0]}", *e[1:], None) for e in engines
            ]
    published = _published_app(app, worker_image, mounted)
    if published is not None:
        return [(*published, None)]
    if not _is_vllm_app(app, worker_image):
        return []
    model: str | None = None
    flags: list[str] = []
    used: list[str] = []
    for key, value in env_vars.items():
        flag = RAY_APP_ENV_FLAGS.get(str(key).upper())
        if flag is None or value is None or isinstance(value, (dict, list)):
            continue
        used.append(str(key))
        if flag == "--model":
            model = model or str(value)
        elif flag not in flags:
            flags += [flag, str(value)]
    how = (
        f"the app's runtime_env env_vars read by name ({', '.join(used) or 'none of them'}): its code "
        "(import_path " + str(app.get("import_path") or "?") + ") is not visible, so what it "
        "does not take from them is read as vLLM's default"
    )
    return [(str(app.get("name") or "app"), model, flags, how, None)]


def read_ray_serve_llm(
    obj: dict[str, Any], config_maps: dict[str, dict[str, str]] | None = None
) -> list[ContainerView]:
    """The vLLM engines a RayService's serveConfigV2 starts (Ray Serve LLM's llm_configs, or a
    custom vLLM app configured by env_vars), each on the worker group that holds the GPUs.
    Reported, never patched: the engine shares its pod with Ray."""
    raw = _dict(obj.get("spec")).get("serveConfigV2")
    if not isinstance(raw, str) or not raw.strip():
        return []
    try:
        config = load_yaml(raw)  # bounded: aliases, size, depth (limits.py)
    except Exception as exc:  # noqa: BLE001 - yaml raises many types
        return [
            ContainerView(
                name="serveConfigV2",
                container={},
                pod_spec={},
                container_path=pointer("spec", "serveConfigV2"),
                resources_path="",
                patchable=False,
                bare=True,
                notes=[
                    (
                        "error",
                        "serveConfigV2 is not valid YAML "
                        f"({str(exc).splitlines()[0]}): its LLM configs are unknown",
                    )
                ],
            )
        ]
    cluster, base = ray_cluster_spec(obj)
    target = _gpu_group(cluster, base)
    c = target[0] if target else {}
    files = _ray_app_files(cluster, config_maps or {})
    mounted = _ray_config_map_names(cluster)
    engines = [
        engine
        for app in _list(_dict(config).get("applications"))
        for engine in _serve_engines(_dict(app), str(c.get("image") or ""), files, mounted)
    ]
    return _ray_engine_views(obj, engines, "Ray Serve")


# A RayJob entrypoint that is itself a vLLM server command line (`vllm serve M ...`, `python -m
# vllm.entrypoints.openai.api_server ...`), possibly after other shell commands
_SERVER_ENTRYPOINT = re.compile(
    r"(?:^|[;&|(]\s*)(?:exec\s+)?(?:vllm\s+serve\b|python3?\s+-m\s+vllm\.entrypoints\.)"
)


def ray_job_entrypoint_on_head(obj: dict[str, Any], views: list[ContainerView]) -> None:
    """A RayJob whose spec.entrypoint starts a vLLM server: KubeRay's submitter runs `ray job
    submit -- <entrypoint>` and Ray's job supervisor runs it as the driver on the head node
    (ray-project/kuberay@feeaf72facab4881ba2b179248bb67315634e229
    ray-operator/controllers/ray/common/job.go GetK8sJobCommand; the driver is placed on the
    head unless entrypoint resources say otherwise), so the head container is read as running
    it after its `ray start`; the engine's Ray executor then places its GPU workers on the
    worker groups (read as worker nodes). An entrypoint that runs a Python script is read by
    read_ray_job instead."""
    entry = _dict(obj.get("spec")).get("entrypoint")
    if obj.get("kind") != "RayJob" or not isinstance(entry, str):
        return
    entry = entry.strip()
    if not entry or len(entry) > 64_000 or not _SERVER_ENTRYPOINT.search(entry):
        return
    head = next(
        (v for v in views if "/headGroupSpec/" in v.container_path and not v.bare),
        None,
    )
    if head is None or not head.container_path.endswith("/containers/0"):
        return
    c = dict(head.container)
    words = [str(w) for key in ("command", "args") for w in _list(c.get(key))]
    script = " ".join(words[3:]) if words[:3] == ["/bin/bash", "-lc", "--"] else " ".join(words)
    c["command"] = ["/bin/bash", "-lc", "--"]
    c["args"] = [f"{script}; {entry}" if script else entry]
    head.container = c
    head.notes.append(
        (
            "info",
            "the RayJob's entrypoint runs as the job's driver on the head node (after the "
            "head's `ray start`): read as this container's command",
        )
    )


def read_ray_job(
    obj: dict[str, Any], config_maps: dict[str, dict[str, str]] | None = None
) -> list[ContainerView]:
    """The vLLM engines a RayJob's entrypoint script builds (ray.data.llm's
    vLLMEngineProcessorConfig, vLLM's LLM, ...), when a ConfigMap the Ray pods mount holds the
    script: on the worker group with the accelerators, reported, never patched."""
    spec = _dict(obj.get("spec"))
    entry = spec.get("entrypoint")
    if not isinstance(entry, str):
        return []
    scripts = [w.rsplit("/", 1)[-1] for w in entry.split() if w.endswith(".py")]
    cluster, _ = ray_cluster_spec(obj)
    files = _ray_app_files(cluster, config_maps or {})
    source = next((files[s] for s in scripts if s in files), None)
    if source is None:
        return []
    env: dict[str, str] = {}
    raw = spec.get("runtimeEnvYAML")
    if isinstance(raw, str):
        try:
            runtime_env = _dict(load_yaml(raw))  # bounded (limits.py)
        except Exception:  # noqa: BLE001 - yaml raises many types; then no variables known
            runtime_env = {}
        env_vars = _dict(runtime_env.get("env_vars"))
        env = {str(k): str(v) for k, v in env_vars.items() if isinstance(v, (str, int, float))}
    engines = _py_engines(source, env, f"the job's entrypoint ({entry[:80]})")
    return _ray_engine_views(obj, [(*e, None) for e in engines], "The RayJob")


def _ray_engine_views(obj: dict[str, Any], engines: list[_Engine], who: str) -> list[ContainerView]:
    cluster, base = ray_cluster_spec(obj)
    target = _gpu_group(cluster, base)
    c, ptr, pod = target if target else ({}, "", {})
    worker = str(c.get("name") or "")
    views: list[ContainerView] = []
    for name, model, flags, how, llm in engines:
        view_name = worker if worker and len(engines) == 1 else f"{worker or 'ray'}/{name}"
        if model is None:  # vLLM's default model would be a guess: the app's code picks one
            views.append(
                ContainerView(
                    name=view_name,
                    container={},
                    pod_spec=pod,
                    container_path=ptr or pointer("spec", "serveConfigV2"),
                    resources_path="",
                    patchable=False,
                    pods_sized_at_creation=False,
                    bare=True,
                    notes=[
                        (
                            "warning",
                            f"Ray Serve vLLM app {name}: its code (not in the manifest) "
                            "picks the model, so the engine is not sized",
                        )
                    ],
                )
            )
            continue
        argv = ["vllm", "serve", model, *flags]
        on_worker = "/workerGroupSpecs/" in ptr
        notes: list[tuple[Severity, str]] = [
            (
                "warning",
                f"{who} runs this vLLM engine inside a Ray worker "
                f"({worker or 'no worker group found'}): "
                + (
                    "sized as one pod of that group: its own GPUs' ranks, the engine's "
                    "replica and engine core (Ray Serve LLM puts them in the placement group's "
                    "first bundle with a GPU worker: ray-project/ray@898d8a70 python/ray/llm/"
                    "_internal/serve/core/server/llm_server.py "
                    "_merge_replica_actor_and_child_actor_bundles; any pod of the group may get "
                    "it) and Ray's node processes; "
                    if on_worker
                    else "the estimate is the engine's alone; the raylet and "
                )
                + "the Ray object store (30% of the pod's memory by default, shared memory "
                "reserved, not written by vLLM) come on top, so vllm-sizer does not change the "
                "worker's limit",
            ),
            ("error" if "not a mapping" in how else "info", f"engine arguments from {how}"),
        ]
        placement = (
            ray_serve_placement(llm, name, worker) if on_worker and llm is not None else None
        )
        views.append(
            ContainerView(
                # named after the worker container that runs it (one engine), else per engine
                name=view_name,
                container={**c, "command": argv, "args": []},
                pod_spec=pod,
                container_path=ptr or pointer("spec", "serveConfigV2"),
                resources_path=(ptr + "/resources") if ptr else "",
                patchable=False,
                pods_sized_at_creation=False,
                notes=notes,
                node_role="replica" if on_worker else None,
                ray_placement=placement,
            )
        )
    return views


# Ray Serve's replica counts (ray-project/ray@570dadc python/ray/serve/config.py
# AutoscalingConfig: min_replicas 1, max_replicas 1 unless set) and Ray Serve LLM's defaults
# (ray@01c8975 python/ray/llm/_internal/serve/core/server/builder.py DEFAULT_DEPLOYMENT_OPTIONS:
# an autoscaling_config with only target_ongoing_requests, so one replica unless the
# LLMConfig's deployment_config says more)
RAY_SERVE_REPLICAS_SOURCE = (
    "ray@570dadc python/ray/serve/config.py AutoscalingConfig, ray@01c8975 "
    "python/ray/llm/_internal/serve/core/server/builder.py DEFAULT_DEPLOYMENT_OPTIONS"
)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _gpus(bundle: Any) -> float | None:
    """A bundle's accelerators (GPU, or TPU for a TPU engine); None: not a number."""
    b = _dict(bundle)
    total = 0.0
    for key in ("GPU", "TPU"):
        v = b.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            return None
        total += float(v)
    return total


def ray_serve_placement(llm: dict[str, Any], engine: str, container: str) -> RayPlacement:
    """How Ray Serve places one LLMConfig's replicas: how many may run (num_replicas,
    autoscaling_config max_replicas, Ray Serve LLM's default of one), the accelerators of each
    replica's placement group (placement_group_config when set, else one per GPU worker), the
    replica actor's own GPUs (ray_actor_options), max_replicas_per_node and accelerator_type."""
    dc = _dict(llm.get("deployment_config"))
    n, auto = dc.get("num_replicas"), dc.get("autoscaling_config")
    replicas: int | None
    if _count(n) is not None:
        replicas, source = _count(n), f"num_replicas {n}"
    elif n == "auto":
        replicas = None
        source = 'num_replicas "auto" (autoscaled: bounded here by the pod\'s accelerators only)'
    elif isinstance(auto, dict) and _count(auto.get("max_replicas")) is not None:
        replicas = _count(auto.get("max_replicas"))
        source = f"autoscaling_config max_replicas {replicas}"
    else:
        replicas = 1
        source = f"one replica: Ray Serve's defaults ({RAY_SERVE_REPLICAS_SOURCE})"
    pgc = _dict(llm.get("placement_group_config"))
    replica_acc = worker_acc = None
    if pgc.get("bundle_per_worker") is not None:
        worker_acc = _gpus(pgc.get("bundle_per_worker"))
    elif isinstance(pgc.get("bundles"), list):
        each = [_gpus(b) for b in pgc["bundles"]]
        replica_acc = None if any(g is None for g in each) else sum(g or 0.0 for g in each)
    actor = _dict(dc.get("ray_actor_options")).get("num_gpus", 0)
    actor_acc = (
        float(actor) if isinstance(actor, (int, float)) and not isinstance(actor, bool) else 0.0
    )
    per_node = _count(dc.get("max_replicas_per_node"))
    kind = llm.get("accelerator_type")
    return RayPlacement(
        engine=engine,
        container=container,
        replicas=replicas,
        replicas_source=source,
        replica_accelerators=replica_acc,
        worker_accelerators=worker_acc,
        actor_accelerators=max(actor_acc, 0.0),
        max_per_node=per_node if per_node else None,
        accelerator_type=str(kind) if isinstance(kind, str) and kind else None,
    )


# ------------------------------------------------------------------ KAITO Workspace
_KAITO = json.loads((Path(__file__).parent / "data" / "kaito_presets.json").read_text())
KAITO_PRESETS: dict[str, str] = _KAITO["presets"]  # preset name → Hugging Face id
KAITO_SOURCE = "{repo}@{commit}:{path}".format(**_KAITO["source"])
# KAITO's --gpu-memory-utilization: 0.84, 0.82 on A10 instance types
# (kaito-project/kaito@056b8280b1a8debf644bc6f4399e913a1f9c7e70: pkg/model/interface.go:380-392)
KAITO_GPU_UTIL, KAITO_GPU_UTIL_A10 = "0.84", "0.82"
KAITO_LORA_SOURCE = (
    "kaito-project/kaito@056b8280b1a8debf644bc6f4399e913a1f9c7e70: pkg/model/interface.go:448-450, "
    "pkg/workspace/inference/preset_inferences.go:611"
)


def _kaito_config_flags(
    name: Any, config_maps: dict[str, dict[str, str]]
) -> tuple[list[str], list[tuple[Severity, str]]]:
    """KAITO appends each key of the config file's `vllm:` section as `--key value`
    (presets/workspace/inference/vllm/inference_api.py:128-146); the file is the key
    inference_config.yaml of the ConfigMap `inference.config` (pkg/model/interface.go:55,483)."""
    if not isinstance(name, str) or not name:
        return [], []
    data = config_maps.get(name)
    if data is None:
        return [], [
            (
                "warning",
                f"the vLLM parameters in ConfigMap {name} are not visible here: KAITO's "
                "defaults are assumed for what they would set",
            )
        ]
    raw = data.get("inference_config.yaml")
    try:
        loaded = load_yaml(raw) if raw else {}  # bounded (limits.py)
    except Exception as exc:  # noqa: BLE001 - yaml raises many types
        return [], [("error", f"ConfigMap {name}: inference_config.yaml is not YAML ({exc})")]
    section = loaded.get("vllm") if isinstance(loaded, dict) else loaded
    if section is not None and not isinstance(section, dict):
        # KAITO's inference_api.py reads the file as a mapping and its `vllm:` as one
        where = "its vllm: section" if isinstance(loaded, dict) else "the file"
        return [], [
            (
                "error",
                f"ConfigMap {name}: inference_config.yaml, {where} is a "
                f"{type(section).__name__}, not a mapping: its vLLM parameters are unknown",
            )
        ]
    vllm = _dict(section)
    flags: list[str] = []
    for key, value in vllm.items():
        flags += [f"--{key}", str(value)]
    return flags, [("info", f"vLLM parameters from ConfigMap {name} (inference_config.yaml)")]


def _kaito_views(
    obj: dict[str, Any],
    inference: dict[str, Any],
    resource: dict[str, Any],
    base: tuple[str, ...],
    config_maps: dict[str, Any],
) -> list[ContainerView]:
    views: list[ContainerView] = []
    preset = _dict(inference.get("preset"))
    runtime = str(
        _dict(_dict(obj.get("metadata")).get("annotations")).get("kaito.sh/runtime") or "vllm"
    )
    name = preset.get("name")
    if isinstance(name, str) and name and runtime.lower() != "transformers":
        model = KAITO_PRESETS.get(name.lower()) or (name if "/" in name else None)
        instance = str(resource.get("instanceType") or "")
        util = KAITO_GPU_UTIL_A10 if "_a10_" in instance.lower() + "_" else KAITO_GPU_UTIL
        flags, notes = _kaito_config_flags(inference.get("config"), config_maps)
        argv = ["python3", "/workspace/vllm/inference_api.py"]
        argv += (["--model", model] if model else []) + ["--gpu-memory-utilization", util]
        adapters = [a for a in _list(inference.get("adapters")) if isinstance(a, dict)]
        if adapters:
            # AdaptersEnabled (len(inference.adapters) > 0) adds --enable-lora to the
            # controller's parameters (KAITO_LORA_SOURCE); the wrapper then loads every adapter
            # under /mnt/adapter as --lora-modules
            argv.append("--enable-lora")
        if adapters:
            notes.append(
                (
                    "info",
                    f"{len(adapters)} adapter(s) in inference.adapters: KAITO adds --enable-lora "
                    f"({KAITO_LORA_SOURCE}); their ranks are not visible (vLLM's max_lora_rank "
                    "default)",
                )
            )
        notes = [
            (
                "info",
                f"KAITO preset {name}"
                + (f" serves {model} ({KAITO_SOURCE})" if model else " is not in KAITO's list")
                + "; KAITO builds the pod and sizes it from the preset and the instance type "
                "itself; the pods it creates are sized at creation by the pod-level webhook",
            ),
            *notes,
        ]
        views.append(
            ContainerView(
                name="inference",
                container={"name": "inference", "command": argv + flags},
                pod_spec={},
                container_path=pointer(*base, "preset"),
                resources_path="",
                patchable=False,
                notes=notes,
                device_hint=(
                    "cuda",
                    f"KAITO provisions NVIDIA GPU instance types ({instance or 'instanceType'})",
                ),
            )
        )
    template = _dict(inference.get("template"))
    if template:
        views += pod_views(
            _dict(template.get("spec")),
            (*base, "template", "spec"),
            patchable=False,
            note="KAITO runs inference.template as given; the Workspace is not "
            "changed: its pods are sized at creation by the pod-level webhook",
        )
    return views


def read_kaito_workspace(
    obj: dict[str, Any], config_maps: dict[str, Any] | None = None
) -> list[ContainerView]:
    """A KAITO Workspace (inference at the top level) or InferenceSet (spec.template): the
    preset's model and KAITO's vLLM command line, or the pod template it runs as given."""
    cms = config_maps or {}
    if obj.get("kind") == "InferenceSet":
        template = _dict(_dict(obj.get("spec")).get("template"))
        return _kaito_views(
            obj,
            _dict(template.get("inference")),
            _dict(template.get("resource")),
            ("spec", "template", "inference"),
            cms,
        )
    return _kaito_views(
        obj, _dict(obj.get("inference")), _dict(obj.get("resource")), ("inference",), cms
    )


# ------------------------------------------------------------------ llmaz Playground
# llmaz (InftyAI/llmaz@3c13ff343e28cdbe842fd3c659e3daf0d1e27e91): a Playground claims an
# OpenModel (cluster-scoped: spec.source.modelHub.modelID, or a uri) and runs a BackendRuntime;
# the vllm one is `python3 -m vllm.entrypoints.openai.api_server --model {{ .ModelPath }}
# --served-model-name {{ .ModelName }} ...` (chart/templates/backends/vllm.yaml), image
# vllm/vllm-openai:v0.7.3 (chart/values.global.yaml:25-28); the flavor's limits go to the pod.
LLMAZ_VLLM_IMAGE = "vllm/vllm-openai:v0.7.3"


def _llmaz_model(
    claim_name: Any, objects: dict[tuple[str, str], dict[str, Any]]
) -> tuple[str | None, dict[str, Any], list[tuple[Severity, str]]]:
    """(model id or URI, the first flavor's limits, notes) of an OpenModel by name."""
    model = _dict(objects.get(("OpenModel", str(claim_name))))
    if not model:
        return (
            None,
            {},
            [("warning", f"OpenModel {claim_name} is not visible here: its model is unknown")],
        )
    spec = _dict(model.get("spec"))
    source = _dict(spec.get("source"))
    hub = _dict(source.get("modelHub"))
    ident = hub.get("modelID") or source.get("uri")
    flavors = _list(_dict(spec.get("inferenceConfig")).get("flavors"))
    limits = _dict(_dict(flavors[0]).get("limits")) if flavors else {}
    return (
        (str(ident) if ident else None),
        limits,
        [("info", f"model from OpenModel {claim_name} ({'modelHub' if hub else 'uri'})")],
    )


def read_llmaz_playground(
    obj: dict[str, Any], objects: dict[tuple[str, str], dict[str, Any]] | None = None
) -> list[ContainerView]:
    spec = _dict(obj.get("spec"))
    brc = _dict(spec.get("backendRuntimeConfig"))
    backend = str(brc.get("backendName") or "vllm")
    if backend.lower() != "vllm":
        return []  # sglang, llama.cpp, tgi, ollama: not vLLM
    claims = [_dict(m) for m in _list(_dict(spec.get("modelClaims")).get("models"))]
    main = next((m for m in claims if m.get("role") in (None, "main")), None)
    draft = next((m for m in claims if m.get("role") == "draft"), None)
    name = _dict(spec.get("modelClaim")).get("modelName") or (main or {}).get("name")
    if not name:
        return []
    model, flavor_limits, notes = _llmaz_model(name, objects or {})
    argv = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    argv += ["--model", model] if model else []
    if draft:
        draft_model, _, draft_notes = _llmaz_model(draft.get("name"), objects or {})
        notes += draft_notes
        if draft_model:
            argv += ["--speculative_model", draft_model, "--num_speculative_tokens", "5"]
    argv += [str(a) for a in _list(brc.get("args"))]
    resources = dict(_dict(brc.get("resources")))
    limits = {**flavor_limits, **_dict(resources.get("limits"))}
    if limits:
        resources["limits"] = limits
    version = brc.get("version")
    image = f"vllm/vllm-openai:{version}" if isinstance(version, str) and version else None
    notes.append(
        (
            "info",
            "llmaz builds the pod from the vllm BackendRuntime (InftyAI/llmaz chart/templates/"
            "backends/vllm.yaml); the Playground is not changed: its pods are sized at creation"
            + (
                ""
                if _dict(resources.get("limits")).get("memory")
                else "; the memory limit comes "
                "from the BackendRuntime's recommended config, not visible here"
            ),
        )
    )
    return [
        ContainerView(
            name="model-runner",
            container={
                "name": "model-runner",
                "image": image or LLMAZ_VLLM_IMAGE,
                "command": argv,
                "env": _list(brc.get("envs")),
                "resources": resources,
            },
            pod_spec={},
            container_path=pointer("spec", "backendRuntimeConfig"),
            resources_path=pointer("spec", "backendRuntimeConfig", "resources"),
            patchable=False,
            notes=notes,
            unseen_model=None if model else f"OpenModel {name}",
        )
    ]


# ------------------------------------------------------------------ kthena ModelBooster
# kthena (volcano-sh/kthena@3cc057284c34469fcb0ed22a12dac84b1d120719): a ModelBooster becomes a
# ModelServing whose engine runs `python3 -m vllm.entrypoints.openai.api_server --model <the
# download path>` plus each worker config key as `--key value` (empty: the flag alone)
# (pkg/model-booster-controller/convert/model_serving.go:363-385, utils/template.go:85), with
# the worker's resources and the backend's env.
KTHENA_VLLM_TYPES = ("vllm", "vllmdisaggregated")


def _kthena_flags(config: dict[str, Any]) -> list[str]:
    flags: list[str] = []
    for key, value in config.items():
        flag = f"--{key}"
        if value is None or value == "" or value is True:
            flags.append(flag)
        elif value is False:
            continue
        elif isinstance(value, (dict, list)):
            flags += [flag, json.dumps(value)]
        else:
            flags += [flag, str(value).strip()]
    return flags


def read_model_booster(obj: dict[str, Any]) -> list[ContainerView]:
    spec = _dict(obj.get("spec"))
    backends = [_dict(spec.get("backend"))] if spec.get("backend") else []
    backends += [_dict(b) for b in _list(spec.get("backends"))]
    views: list[ContainerView] = []
    for b_idx, backend in enumerate(backends):
        if str(backend.get("type") or "").lower() not in KTHENA_VLLM_TYPES:
            continue
        uri = backend.get("modelURI")
        base = ("spec", "backend") if spec.get("backend") else ("spec", "backends", b_idx)
        for w_idx, worker in enumerate(_list(backend.get("workers"))):
            worker = _dict(worker)
            argv = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
            # the engine loads the downloaded copy of modelURI: hf://ORG/NAME names the repo
            model = str(uri)[len("hf://") :] if str(uri).startswith("hf://") else uri
            argv += ["--model", str(model)] if model else []
            argv += _kthena_flags(_dict(worker.get("config")))
            views.append(
                ContainerView(
                    name=str(worker.get("type") or f"worker-{w_idx}"),
                    container={
                        "name": str(worker.get("type") or "engine"),
                        "image": worker.get("image"),
                        "command": argv,
                        "env": _list(backend.get("env")) + _list(worker.get("env")),
                        "resources": _dict(worker.get("resources")),
                    },
                    pod_spec={},
                    container_path=pointer(*base, "workers", w_idx),
                    resources_path=pointer(*base, "workers", w_idx, "resources"),
                    storage_uri=str(uri) if uri else None,
                    patchable=False,
                    notes=[
                        (
                            "info",
                            "kthena makes a ModelServing from this backend (its engine runs "
                            "vLLM's api_server with the worker's config as flags, "
                            "model_serving.go:363-385); the ModelBooster is not changed: its "
                            "pods are sized at creation",
                        )
                    ],
                )
            )
    return views
