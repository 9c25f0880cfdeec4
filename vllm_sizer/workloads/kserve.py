"""KServe: InferenceService (v1beta1) predictors with their ServingRuntime merged in, the
Hugging Face server's argument handling, and LLMInferenceService (v1alpha1 / v1alpha2).

How KServe builds the predictor container (pkg/controller/.../utils MergeRuntimeContainers and
the InferenceService defaulter), as modelled here:
- the runtime's container (kserve-container) is the base; the InferenceService's model spec
  overrides it field by field: `args` = runtime args then InferenceService args (argparse: the
  latter win), `env` merged by name (InferenceService wins), `resources` merged key by key
  (a runtime's limits.memory survives unless the InferenceService sets one), `image`/`command`
  replaced when set;
- missing cpu / memory requests and limits are filled with KServe's defaults (1 / 2Gi);
- `{{.Name}}`, `{{.Namespace}}`, `{{.Labels.x}}`, `{{.Annotations.x}}` in the runtime's
  command/args/env are replaced; a storageUri is downloaded to /mnt/models.
Without a runtime from the caller the stock ClusterServingRuntime for the modelFormat is read,
but the view is `patch_blocked` unless the InferenceService sets its own limits.memory: the real
runtime's limit is unknown, and writing one could lower it. Callers pass only the runtimes of the
InferenceService's namespace (policy/cluster.py).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..estimator.versions import VllmVersion
from .expand import pointer
from .limits import json_copy
from .view import ContainerView
from .vllm_args import (
    FLAGS,
    UNEXPECTED_POSITIONAL,
    Diagnostic,
    ParsedVllm,
    Severity,
    parse_vllm_args,
)

MODEL_DIR = "/mnt/models"
DEFAULT_RESOURCES = {"cpu": "1", "memory": "2Gi"}

# Stock ClusterServingRuntimes (kserve/kserve config/runtimes), reduced to what sizing reads.
STOCK_RUNTIMES: dict[str, dict[str, Any]] = {
    "huggingface": {
        "name": "kserve-huggingfaceserver",
        "container": {
            "name": "kserve-container",
            "image": "kserve/huggingfaceserver:latest",
            "command": ["python", "-m", "huggingfaceserver"],  # the image's ENTRYPOINT
            "args": ["--model_name={{.Name}}"],
            "resources": {
                "requests": {"cpu": "1", "memory": "2Gi"},
                "limits": {"cpu": "1", "memory": "2Gi"},
            },
        },
    },
    # A predictor with a workerSpec only takes runtimes that have one (multi-node; kserve/kserve
    # @aaac4e2 pkg/apis/serving/v1beta1/predictor_model.go:115-123): the stock one is
    # config/runtimes/kserve-huggingfaceserver-multinode.yaml (its head script, reduced to the
    # lines that start processes: Ray's head, then the server with KServe's parallel sizes).
    "huggingface-multinode": {
        "name": "kserve-huggingfaceserver-multinode",
        "container": {
            "name": "kserve-container",
            "image": "kserve/huggingfaceserver:latest-gpu",
            "command": [
                "bash",
                "-c",
                'export MODEL_DIR_ARG=""\n'
                "ray start --head --disable-usage-stats --include-dashboard false\n"
                "python -m huggingfaceserver ${MODEL_DIR_ARG} "
                "--tensor-parallel-size=${TENSOR_PARALLEL_SIZE} "
                "--pipeline-parallel-size=${PIPELINE_PARALLEL_SIZE} $0 $@",
            ],
            "args": ["--model_name={{.Name}}"],
            "resources": {
                "requests": {"cpu": "2", "memory": "6Gi"},
                "limits": {"cpu": "4", "memory": "12Gi"},
            },
        },
        # its worker: waits for the head's GCS with `ray health-check`, then joins it
        "workerSpec": {
            "pipelineParallelSize": 1,
            "tensorParallelSize": 1,
            "containers": [
                {
                    "name": "worker-container",
                    "image": "kserve/huggingfaceserver:latest-gpu",
                    "command": [
                        "bash",
                        "-c",
                        "export RAY_HEAD_ADDRESS=${HEAD_SVC}.${POD_NAMESPACE}.svc.cluster.local:6379\n"
                        'until ray health-check --address "${RAY_HEAD_ADDRESS}"; do sleep 5; done\n'
                        'ray start --address="${RAY_HEAD_ADDRESS}" --block',
                    ],
                    "resources": {
                        "requests": {"cpu": "2", "memory": "6Gi"},
                        "limits": {"cpu": "4", "memory": "12Gi"},
                    },
                    "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "3Gi"}}],
        },
    },
    "vllm": {
        "name": "kserve-vllmserver",
        "container": {
            "name": "kserve-container",
            "image": "vllm/vllm-openai:latest",
            "command": ["python", "-m", "vllm.entrypoints.openai.api_server"],
            "args": ["--port=8080", "--served-model-name={{.Name}}", "--model=/mnt/models"],
            "resources": {
                "requests": {"cpu": "1", "memory": "2Gi"},
                "limits": {"cpu": "1", "memory": "2Gi"},
            },
        },
    },
}

# KServe model-server and Hugging Face server flags (name with underscores → takes a value).
HF_FLAGS: dict[str, bool] = {
    "model_name": True,
    "model_id": True,
    "model_dir": True,
    "model_revision": True,
    "tokenizer_revision": True,
    "backend": True,
    "task": True,
    "max_length": True,
    "max_model_len": True,
    "max_log_len": True,
    "dtype": True,
    "disable_lower_case": False,
    "disable_special_tokens": False,
    "trust_remote_code": False,
    "return_probabilities": False,
    "return_token_type_ids": False,
    "return_raw_logits": False,
    "pooling": True,
    "http_port": True,
    "grpc_port": True,
    "workers": True,
    "max_threads": True,
    "max_asyncio_workers": True,
    "enable_grpc": True,
    "enable_docs_url": True,
    "enable_latency_logging": True,
    "configure_logging": True,
    "log_config_file": True,
    "access_log_format": True,
    "predictor_host": True,
    "predictor_protocol": True,
    "predictor_use_ssl": True,
    "predictor_request_timeout_seconds": True,
    "predictor_request_retries": True,
    "enable_predictor_health_check": False,
    "add_special_tokens": True,
    "disable_log_requests": False,
    "tensor_input_names": True,
    "input_names": True,
    "return_attention_mask": False,
    "kserve_storage": True,
}


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


# metav1.ObjectMeta's fields (k8s.io/apimachinery/pkg/apis/meta/v1/types.go): what a runtime's
# template can name. Those the API server sets (UID, ...) are known only once the object exists.
OBJECT_META_FIELDS = {
    "Name": "name",
    "GenerateName": "generateName",
    "Namespace": "namespace",
    "SelfLink": None,
    "UID": None,
    "ResourceVersion": None,
    "Generation": None,
    "CreationTimestamp": None,
    "DeletionTimestamp": None,
    "DeletionGracePeriodSeconds": None,
    "Labels": "labels",
    "Annotations": "annotations",
    "OwnerReferences": None,
    "Finalizers": None,
    "ManagedFields": None,
}
_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.S)
_FIELD_CHAIN = re.compile(r"(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_INDEX = re.compile(r'index\s+\.(Labels|Annotations)\s+"((?:[^"\\]|\\.)*)"')
_CHILD_NAME = re.compile(r'ChildName\s+((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\s+(?:"([^"\\]*)"|`([^`]*)`)')
# a template's field chain (names after the dot) → its text; None: known only to the cluster
Resolver = Callable[[list[str]], "str | None"]


class _TemplateError(Exception):
    """A field the template's data does not have: Go's execution error, KServe's failure."""


def _meta_field(meta: dict[str, Any], names: list[str], where: str) -> str | None:
    """A field chain on metav1.ObjectMeta (names after it): its text, None when only the
    cluster knows it, _TemplateError when ObjectMeta has no such field."""
    if names[0] not in OBJECT_META_FIELDS:
        raise _TemplateError(f"can't evaluate field {names[0]} in type {where}")
    key = OBJECT_META_FIELDS[names[0]]
    if key in ("name", "namespace", "generateName") and len(names) == 1:
        return str(meta.get(key) or "")
    if key in ("labels", "annotations") and len(names) == 2:
        value = _dict(meta.get(key)).get(names[1])
        return "<no value>" if value is None else str(value)
    return None


def _render(text: Any, resolve: Resolver, errors: list[str] | None, name: str) -> Any:
    """Go text/template actions of one string: field chains (`resolve`), `index .Labels "k"`,
    `ChildName .X "suffix"` (knative kmeta.ChildName, when short enough to be a plain join);
    anything else stays as written (known only when KServe renders it)."""
    if not isinstance(text, str) or "{{" not in text or "}}" not in text:
        return text

    def field(expr: str) -> str | None:
        try:
            return resolve(expr[1:].split("."))
        except _TemplateError as exc:
            if errors is not None:
                errors.append(f'template: {name}: executing "{name}" at <{expr}>: {exc}')
            return None

    def repl(m: re.Match[str]) -> str:
        expr = m.group(1)
        if _FIELD_CHAIN.fullmatch(expr):
            value = field(expr)
            return str(m.group(0)) if value is None else value
        im = _INDEX.fullmatch(expr)
        if im:
            value = field(f".{im.group(1)}.{im.group(2)}")  # index of a map: its value or ""
            return "" if value in (None, "<no value>") else value
        cm = _CHILD_NAME.fullmatch(expr)
        if cm:
            parent = field(cm.group(1))
            suffix = cm.group(2) if cm.group(2) is not None else cm.group(3)
            # kmeta.ChildName: parent+suffix up to 63 characters, else a hashed form
            if parent is not None and len(parent + suffix) <= 63:
                return parent + suffix
        return str(m.group(0))

    return _ACTION.sub(repl, text)


def substitute(text: Any, meta: dict[str, Any], errors: list[str] | None = None) -> Any:
    """KServe's placeholders in a ServingRuntime's container: it executes each string holding
    `{{` and `}}` as a Go text/template over the InferenceService's metav1.ObjectMeta
    (kserve/kserve pkg/controller/v1beta1/inferenceservice/utils/placeholder.go
    ReplacePlaceholders). `.Name`, `.Namespace`, `.GenerateName`, `.Labels.k` /
    `.Annotations.k` (a missing key prints Go's "<no value>"), `index .Labels "k"` (missing:
    ""). A field ObjectMeta does not have (`{{ .Spec.Model.Name }}`) is Go's execution error,
    on which KServe creates no predictor: its text is appended to `errors`. Fields the API
    server sets (UID, ...), functions and pipelines stay as written."""
    return _render(text, lambda n: _meta_field(meta, n, "v1.ObjectMeta"), errors, "container-tmpl")


def template_failure(errors: list[str], kserve_says: str, outcome: str) -> str | None:
    """ContainerView.stops for KServe's template errors (None: none)."""
    if not errors:
        return None
    return (
        f"KServe cannot render the template ({errors[0]}): its controller stops with "
        f'"{kserve_says}" and {outcome}, so this container never runs'
    )


def llmisvc_resolver(obj: dict[str, Any]) -> Resolver:
    """Fields of KServe's LLMInferenceServiceConfig template data: the LLMInferenceService
    (embedded: .ObjectMeta, .Spec, promoted .Name / .Namespace) and .GlobalConfig
    (pkg/controller/v1alpha1/llmisvc/config_merge.go ReplaceVariables, missingkey=error).
    .Spec.Model.Name is the object's, defaulted to its name (llminferenceservice_defaults.go
    SetDefaults)."""
    meta = _dict(obj.get("metadata"))
    spec = _dict(obj.get("spec"))

    def resolve(names: list[str]) -> str | None:
        if names[0] == "ObjectMeta" and len(names) > 1:
            return _meta_field(meta, names[1:], "v1.ObjectMeta")
        if names == ["Spec", "Model", "Name"]:
            name = _dict(spec.get("model")).get("name")
            return str(name) if isinstance(name, str) and name else str(meta.get("name") or "")
        if names[0] in ("Spec", "Status", "GlobalConfig", "TypeMeta", "Kind", "APIVersion"):
            return None  # other fields: not read here
        return _meta_field(meta, names, "struct { *v1alpha1.LLMInferenceService; ... }")

    return resolve


def render_llmisvc(value: Any, obj: dict[str, Any], errors: list[str]) -> Any:
    """Every string of `value` (a merged spec's container) rendered as KServe renders the
    LLMInferenceServiceConfig it builds."""
    resolve = llmisvc_resolver(obj)
    return json_copy(value, leaf=lambda v: _render(v, resolve, errors, "config"))


def merge_resources(base: Any, override: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for section in ("limits", "requests"):
        merged = {**_dict(_dict(base).get(section)), **_dict(_dict(override).get(section))}
        if merged:
            out[section] = merged
    for k, v in _dict(override).items():
        if k not in ("limits", "requests"):
            out[k] = v
    return out


def fill_defaults(resources: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """KServe's defaulter: missing cpu / memory requests and limits get 1 / 2Gi."""
    out = json_copy(resources)
    filled: list[str] = []
    for section in ("requests", "limits"):
        sec = out.setdefault(section, {})
        if not isinstance(sec, dict):
            sec = out[section] = {}
        for key, value in DEFAULT_RESOURCES.items():
            if key not in sec:
                sec[key] = value
                filled.append(f"{section}.{key}")
    return out, filled


def merge_env(base: Any, override: Any) -> list[Any]:
    by_name: dict[str, Any] = {}
    order: list[str] = []
    for item in _list(base) + _list(override):
        name = _dict(item).get("name")
        if not isinstance(name, str):
            continue
        if name not in by_name:
            order.append(name)
        by_name[name] = item
    return [by_name[n] for n in order]


def _runtime_container(runtime: dict[str, Any]) -> dict[str, Any]:
    containers = _list(_dict(runtime.get("spec")).get("containers"))
    for c in containers:
        if _dict(c).get("name") == "kserve-container":
            return _dict(c)
    return _dict(containers[0]) if containers else {}


def _format_name(model: dict[str, Any]) -> str:
    fmt = _dict(model.get("modelFormat")).get("name")
    return str(fmt).lower() if fmt else ""


def resolve_runtime(
    model: dict[str, Any],
    serving: dict[str, dict[str, Any]],
    cluster: dict[str, dict[str, Any]],
    multinode: bool = False,
) -> tuple[str, dict[str, Any] | None, list[tuple[Severity, str]]]:
    """(runtime name, runtime object or None for a stock runtime, notes). A multi-node
    predictor (workerSpec) auto-selects only runtimes with a workerSpec, and the others only
    runtimes without one (predictor_model.go:115-123)."""
    notes: list[tuple[Severity, str]] = []
    fmt = _format_name(model)
    wanted = model.get("runtime")
    if isinstance(wanted, str) and wanted:
        if wanted in serving:
            return wanted, _dict(serving[wanted]), notes
        if wanted in cluster:
            return wanted, _dict(cluster[wanted]), notes
        known = next((k for k, v in STOCK_RUNTIMES.items() if v["name"] == wanted), None)
        if known is None:
            notes.append(
                (
                    "warning",
                    f"runtime {wanted!r} not given to the reader: KServe's stock "
                    f"runtime for modelFormat {fmt or '?'} assumed",
                )
            )
        return wanted, None, notes
    candidates: list[tuple[int, int, str, dict[str, Any]]] = []
    for rank, pool in enumerate((serving, cluster)):
        for name, rt in pool.items():
            spec = _dict(_dict(rt).get("spec"))
            if spec.get("disabled") is True or bool(spec.get("workerSpec")) != multinode:
                continue
            for f in _list(spec.get("supportedModelFormats")):
                f = _dict(f)
                if str(f.get("name", "")).lower() == fmt and f.get("autoSelect") is True:
                    prio = f.get("priority")
                    prio = prio if isinstance(prio, int) else 0
                    candidates.append((-prio, rank, name, _dict(rt)))
    if candidates:
        candidates.sort(key=lambda c: (c[0], c[1], c[2]))
        return candidates[0][2], candidates[0][3], notes
    stock = STOCK_RUNTIMES.get(f"{fmt}-multinode" if multinode else fmt)
    return (
        (stock["name"] if stock else f"(stock runtime for {fmt or 'unknown format'})"),
        None,
        notes,
    )


def read_isvc(
    obj: dict[str, Any], serving: dict[str, dict[str, Any]], cluster: dict[str, dict[str, Any]]
) -> list[ContainerView]:
    meta = _dict(obj.get("metadata"))
    predictor = _dict(_dict(obj.get("spec")).get("predictor"))
    views: list[ContainerView] = []
    model_key = None
    if isinstance(predictor.get("model"), dict):
        model_key = "model"
    elif isinstance(predictor.get("huggingface"), dict):  # framework shorthand
        model_key = "huggingface"
    if model_key:
        model = dict(predictor[model_key])
        if model_key == "huggingface":
            model.setdefault("modelFormat", {"name": "huggingface"})
        views.extend(_model_view(obj, meta, predictor, model, model_key, serving, cluster))
    for idx, c in enumerate(_list(predictor.get("containers"))):
        c = _dict(c)
        if not c:
            continue
        resources = _dict(c.get("resources"))
        notes: list[tuple[Severity, str]] = []
        merged = dict(c)
        if c.get("name", "kserve-container") == "kserve-container" or idx == 0:
            filled_res, filled = fill_defaults(resources)
            merged["resources"] = filled_res
            if any(f.endswith("memory") for f in filled):
                notes.append(
                    (
                        "info",
                        "memory "
                        + ", ".join(f for f in filled if f.endswith("memory"))
                        + " not set: KServe's default 2Gi applies",
                    )
                )
        views.append(
            ContainerView(
                name=str(c.get("name") or f"container-{idx}"),
                container=merged,
                pod_spec=predictor,
                container_path=pointer("spec", "predictor", "containers", idx),
                resources_path=pointer("spec", "predictor", "containers", idx, "resources"),
                storage_uri=_storage_uri(predictor, c),
                notes=notes,
            )
        )
    return views


def _storage_uri(model: dict[str, Any], container: dict[str, Any] | None = None) -> str | None:
    uri = model.get("storageUri")
    if isinstance(uri, str) and uri:
        return uri
    path = _dict(model.get("storage")).get("path")
    if isinstance(path, str):
        return path
    for e in _list(_dict(container).get("env")):
        value = _dict(e).get("value")
        if _dict(e).get("name") == "STORAGE_URI" and isinstance(value, str):
            return value
    return None


def _model_view(
    obj: dict[str, Any],
    meta: dict[str, Any],
    predictor: dict[str, Any],
    model: dict[str, Any],
    model_key: str,
    serving: dict[str, dict[str, Any]],
    cluster: dict[str, dict[str, Any]],
) -> list[ContainerView]:
    """The predictor's container (the head, multi-node) and, multi-node, its worker's."""
    fmt = _format_name(model)
    worker = predictor.get("workerSpec")
    multinode = isinstance(worker, dict)
    name, runtime, notes = resolve_runtime(model, serving, cluster, multinode)
    if runtime is not None:
        rc = json_copy(_runtime_container(runtime))
        rt_spec = _dict(runtime.get("spec"))
    else:
        stock = STOCK_RUNTIMES.get(f"{fmt}-multinode" if multinode else fmt)
        if stock is None:
            for v in STOCK_RUNTIMES.values():  # a named stock runtime with another format
                if v["name"] == name:
                    stock = v
        rc = json_copy(stock["container"]) if stock else {}
        rt_spec = {"workerSpec": json_copy(stock["workerSpec"])} if stock and multinode else {}
        if stock is None:
            notes.append(
                (
                    "warning",
                    f"modelFormat {fmt or '(none)'} has no known stock runtime "
                    "and none was given: the container's command is unknown",
                )
            )
    tmpl_errors: list[str] = []
    for key in ("command", "args"):
        if isinstance(rc.get(key), list):
            rc[key] = [substitute(a, meta, tmpl_errors) for a in rc[key]]
    rc["env"] = [
        {**e, "value": substitute(e["value"], meta, tmpl_errors)}
        if isinstance(_dict(e).get("value"), str)
        else e
        for e in _list(rc.get("env"))
    ]
    merged = dict(rc)
    for key in ("image", "command", "workingDir"):
        if model.get(key):
            merged[key] = model[key]
    merged["args"] = [
        substitute(a, meta, tmpl_errors)
        for a in [*_list(rc.get("args")), *_list(model.get("args"))]
    ]
    merged["env"] = merge_env(rc.get("env"), model.get("env"))
    nodes: int | None = None
    if multinode or _dict(rt_spec.get("workerSpec")):
        # KServe puts the parallel sizes into the head container's env: the InferenceService's
        # workerSpec over the runtime's, default 1 (predictor.go:564-578, 627-634)
        sizes = []
        for env_name, key in (
            ("PIPELINE_PARALLEL_SIZE", "pipelineParallelSize"),
            ("TENSOR_PARALLEL_SIZE", "tensorParallelSize"),
        ):
            value = _dict(worker).get(key, _dict(rt_spec.get("workerSpec")).get(key, 1))
            sizes.append({"name": env_name, "value": str(value)})
        merged["env"] = merge_env(merged["env"], sizes)
        notes.append(
            (
                "info",
                "multi-node predictor: KServe sets "
                + ", ".join(f"{e['name']}={e['value']}" for e in sizes)
                + "; the estimate is the head pod's: its own GPUs' ranks"
                + (
                    " (vLLM's mp executor: no Ray)"
                    if str(_dict(rt_spec.get("annotations")).get(MP_BACKEND_ANNOTATION, "")) == "mp"
                    else " and the Ray head"
                ),
            )
        )
    merged["envFrom"] = _list(rc.get("envFrom")) + _list(model.get("envFrom"))
    merged["volumeMounts"] = _list(rc.get("volumeMounts")) + _list(model.get("volumeMounts"))
    resources, filled = fill_defaults(merge_resources(rc.get("resources"), model.get("resources")))
    merged["resources"] = resources
    if any(f.endswith("memory") for f in filled):
        notes.append(
            (
                "info",
                "memory "
                + ", ".join(f for f in filled if f.endswith("memory"))
                + " set by neither runtime nor InferenceService: KServe's default 2Gi applies",
            )
        )
    patch_blocked = None
    own_limit = _dict(_dict(model.get("resources")).get("limits")).get("memory")
    if runtime is None and own_limit is None:
        # The pod's limit is the runtime's unless the InferenceService sets one: writing one
        # from an assumed stock runtime could lower the real runtime's (9Gi over its 40Gi).
        patch_blocked = (
            f"its memory limit comes from runtime {name!r}, which vllm-sizer was "
            "not given (not listed in the InferenceService's namespace nor as a "
            "ClusterServingRuntime): set resources.limits.memory on the "
            "InferenceService, or let vllm-sizer read the runtime"
        )
        notes.append(("warning", "runtime " + repr(name) + " unknown: " + patch_blocked))
    storage = _storage_uri(model)
    hf = (
        fmt == "huggingface"
        or "huggingfaceserver" in str(merged.get("image", ""))
        or "huggingfaceserver" in " ".join(str(a) for a in _list(merged.get("command")))
    )
    if hf and storage and not any(str(a).startswith("--model_dir") for a in merged["args"]):
        merged["args"].append(f"--model_dir={MODEL_DIR}")
    pod_spec = {**{k: v for k, v in rt_spec.items() if k not in ("containers",)}, **predictor}
    pod_spec["volumes"] = _list(rt_spec.get("volumes")) + _list(predictor.get("volumes"))
    worker_view = None
    if multinode:
        nodes, worker_view = _worker_view(
            meta, _dict(worker), rt_spec, runtime is None, merged, name, notes
        )
    head = ContainerView(
        name=str(model.get("name") or rc.get("name") or "kserve-container"),
        container=merged,
        pod_spec=pod_spec,
        container_path=pointer("spec", "predictor", model_key),
        resources_path=pointer("spec", "predictor", model_key, "resources"),
        storage_uri=storage,
        runtime=name,
        notes=notes,
        patch_blocked=patch_blocked,
        multinode_nodes=nodes,
        stops=template_failure(
            tmpl_errors,
            "failed to replace placeholders in serving runtime Container",
            "no predictor is created",
        ),
    )
    if worker_view is not None:
        worker_view.storage_uri = storage
    return [head] if worker_view is None else [head, worker_view]


# ------------------------------------------------------------------ multinode predictor worker
# KServe's GPU resource names (kserve/kserve@aaac4e2 pkg/constants/constants.go:310-325,
# DefaultGPUResourceTypeList; the serving.kserve.io/gpu-resource-types annotation adds others)
GPU_TYPES = ("nvidia.com/gpu", "amd.com/gpu", "intel.com/gpu", "habana.ai/gaudi")
WORKER_CONTAINER = "worker-container"  # constants.go:503 WorkerContainerName
MP_BACKEND_ANNOTATION = "multinode/executor-backend"  # constants.go:746-747, value "mp"


def _gpu_request(c: dict[str, Any]) -> tuple[str | None, int]:
    """(GPU resource name, count) of a container's *requests*, as KServe counts them
    (utils.GetGPUResourceQtyByType(..., "Request"): pkg/utils/utils.go:468-489@aaac4e2); a
    GPU only in limits counts 0 there. The name is the one in limits or requests, for the
    controller's overwrite (deployment_reconciler.go:407-445 addGPUResourceToDeployment)."""
    res = _dict(c.get("resources"))
    name = None
    for section in ("limits", "requests"):
        for key in _dict(res.get(section)):
            if key in GPU_TYPES and name is None:
                name = str(key)
    for key, value in _dict(res.get("requests")).items():
        if key in GPU_TYPES:
            try:
                n = int(str(value))
            except ValueError:
                return str(key), 0
            return str(key), n if 0 <= n < 10**6 else 0
    return name, 0


def ray_node_layout(
    tp: int, pp: int, head_gpus: int, worker_gpus: int, mp: bool
) -> tuple[int, int, int] | str:
    """(Ray nodes, GPUs of the head, GPUs of each worker pod) as KServe's controller computes
    them, or why it refuses (kserve/kserve@aaac4e2 pkg/controller/v1beta1/inferenceservice/
    components/predictor.go: computeRayNodeAndGPUs :689-762, computeMpNodeAndGPUs :767-772).
    The worker Deployment has nodes − 1 replicas (deployment_reconciler.go:91-101)."""
    if mp:
        return pp, tp, tp
    total = tp * pp

    def ceil_div(a: int, b: int) -> int:
        return 1 if b == 0 else -(-a // b)

    if worker_gpus > 0:
        nodes = ceil_div(total, worker_gpus)
        if head_gpus > 0:
            if ceil_div(total, head_gpus) == 1:
                nodes = 1
        else:
            head_gpus = total - worker_gpus * (nodes - 1)
        if nodes == 1:
            worker_gpus, head_gpus = 0, total
    elif head_gpus > 0:
        nodes, worker_gpus = 1, 1
        if total - head_gpus > 0:
            nodes = ceil_div(total - head_gpus, 1) + 1
    else:
        return total, 1, 1  # no GPU requested anywhere: one GPU per node
    if total > head_gpus + worker_gpus * (nodes - 1):
        return (
            f"the total required number of GPUs({total}) is less than the number of GPUs "
            f"assigned to the head node({head_gpus}) + worker node({worker_gpus * (nodes - 1)})"
        )
    return nodes, head_gpus, worker_gpus


def _set_gpus(c: dict[str, Any], name: str | None, count: int) -> None:
    """The controller's overwrite of a pod's GPU limit and request (addGPUResourceToDeployment:
    the container's GPU type, else nvidia.com/gpu)."""
    res = dict(_dict(c.get("resources")))
    for section in ("limits", "requests"):
        res[section] = {**_dict(res.get(section)), (name or GPU_TYPES[0]): str(count)}
    c["resources"] = res


def _worker_view(
    meta: dict[str, Any],
    isvc_worker: dict[str, Any],
    rt_spec: dict[str, Any],
    stock: bool,
    head: dict[str, Any],
    runtime: str,
    head_notes: list[tuple[Severity, str]],
) -> tuple[int | None, ContainerView | None]:
    """(Ray nodes when more than one, the worker Deployment's container) of a multinode
    predictor, built as KServe's controller builds `<isvc>-predictor-worker`: the runtime's
    workerSpec container named worker-container merged with the InferenceService's workerSpec
    containers[0] (MergeServingRuntimeAndInferenceServiceSpecs: utils.go:493-523 and
    MergeRuntimeContainers :253-264, runtime args then the InferenceService's), its GPUs set
    to the layout's, and KServe's env (predictor.go:556-680 multiNodeProcess)."""
    rt_worker = _dict(rt_spec.get("workerSpec"))
    sizes = {
        key: isvc_worker.get(key, rt_worker.get(key, 1))
        for key in ("tensorParallelSize", "pipelineParallelSize")
    }
    tp, pp = sizes["tensorParallelSize"], sizes["pipelineParallelSize"]
    if not all(type(v) is int and 1 <= v < 10**4 for v in (tp, pp)):
        head_notes.append(
            (
                "warning",
                "workerSpec parallel sizes are not integers ≥ 1: the worker pods are not read",
            )
        )
        return None, None
    rt_containers = [_dict(c) for c in _list(rt_worker.get("containers"))]
    base = next((c for c in rt_containers if c.get("name") == WORKER_CONTAINER), None)
    if base is None:
        head_notes.append(
            (
                "warning",
                f"runtime {runtime!r} has no workerSpec container named {WORKER_CONTAINER}: "
                'KServe refuses the predictor ("failed to find worker-container in '
                'ServingRuntime containers"); its worker pods are not read',
            )
        )
        return None, None
    own_list = _list(isvc_worker.get("containers"))
    own = _dict(own_list[0]) if own_list else {}
    merged = json_copy(base)
    for key in ("command", "args"):
        if isinstance(merged.get(key), list):
            merged[key] = [substitute(a, meta) for a in merged[key]]
    for key in ("image", "command", "workingDir"):
        if own.get(key):
            merged[key] = own[key]
    merged["args"] = [
        substitute(a, meta) for a in [*_list(base.get("args")), *_list(own.get("args"))]
    ]
    mp = str(_dict(rt_spec.get("annotations")).get(MP_BACKEND_ANNOTATION, "")) == "mp"
    head_type, head_gpus = _gpu_request(head)
    merged["resources"] = merge_resources(base.get("resources"), own.get("resources"))
    worker_type, worker_gpus = _gpu_request(merged)
    layout = ray_node_layout(tp, pp, head_gpus, worker_gpus, mp)
    if isinstance(layout, str):
        head_notes.append(("error", f"KServe refuses this multinode predictor: {layout}"))
        return None, None
    nodes, head_gpus, worker_gpus = layout
    _set_gpus(head, head_type, head_gpus)
    head_notes.append(
        (
            "info",
            f"KServe lays the Ray cluster out as {nodes} node(s): the head with {head_gpus} "
            f"GPU(s)"
            + (
                f", {nodes - 1} worker pod(s) with {worker_gpus} each"
                if nodes > 1
                else " (no worker pods)"
            )
            + " (predictor.go computeRayNodeAndGPUs / computeMpNodeAndGPUs)",
        )
    )
    if nodes <= 1:
        return None, None
    _set_gpus(merged, worker_type, worker_gpus)
    kserve_env = [
        {"name": "RAY_NODE_COUNT", "value": str(nodes)},
        {"name": "REQUEST_GPU_COUNT", "value": str(worker_gpus)},
        {"name": "PIPELINE_PARALLEL_SIZE", "value": str(pp)},
        {"name": "TENSOR_PARALLEL_SIZE", "value": str(tp)},
        {"name": "ISVC_NAME", "value": str(meta.get("name") or "")},
    ]
    merged["env"] = merge_env(merge_env(base.get("env"), own.get("env")), kserve_env)
    merged["envFrom"] = _list(base.get("envFrom")) + _list(own.get("envFrom"))
    merged["volumeMounts"] = _list(base.get("volumeMounts")) + _list(own.get("volumeMounts"))
    pod_spec = {
        **{k: v for k, v in rt_worker.items() if k != "containers"},
        **{k: v for k, v in isvc_worker.items() if k != "containers"},
    }
    pod_spec["volumes"] = _list(rt_worker.get("volumes")) + _list(isvc_worker.get("volumes"))
    notes: list[tuple[Severity, str]] = (
        [
            (
                "info",
                f"the runtime's {MP_BACKEND_ANNOTATION}: mp: KServe runs {nodes} node(s) of vLLM's "
                "own multi-node launch (no Ray); these worker pods are node ranks 1.. of the head's "
                "engine, each running its own command line",
            )
        ]
        if mp
        else []
    )
    notes += [
        (
            "info",
            f"KServe's worker Deployment {meta.get('name') or '?'}-predictor-worker: "
            f"{nodes - 1} pod(s) with {worker_gpus} GPU(s) each, its container the runtime's "
            f"{WORKER_CONTAINER} merged with the InferenceService's workerSpec container",
        )
    ]
    patchable, patch_blocked = True, None
    if own_list:
        path = pointer("spec", "predictor", "workerSpec", "containers", 0)
        if stock and _dict(_dict(own.get("resources")).get("limits")).get("memory") is None:
            patch_blocked = (
                f"its memory limit comes from runtime {runtime!r}'s workerSpec, which "
                "vllm-sizer was not given: set resources.limits.memory on the "
                "InferenceService's workerSpec container, or let vllm-sizer read the runtime"
            )
    else:
        # The worker container lives in the runtime only. vllm-sizer does not add one to the
        # InferenceService: that would pin a limit the runtime's owner sets for every
        # InferenceService using it (a later raise there would no longer apply here), and
        # the ServingRuntime is not the object under review, so it is never patched either.
        # The estimate is reported (warn), with where to put the limit; the worker pods run
        # `ray start`, so the pod-level webhook does not size them at creation either.
        path = pointer("spec", "predictor", "workerSpec")
        patchable = False
        notes.append(
            (
                "warning",
                f"the worker container comes from runtime {runtime!r} only: vllm-sizer "
                "reports its estimate and changes nothing (set resources.limits.memory in "
                "spec.predictor.workerSpec.containers[0], named worker-container, or in the "
                "runtime's workerSpec)",
            )
        )
    return nodes, ContainerView(
        name=str(own.get("name") or WORKER_CONTAINER),
        container=merged,
        pod_spec=pod_spec,
        container_path=path,
        resources_path=path + "/resources" if own_list else "",
        runtime=runtime,
        notes=notes,
        patch_blocked=patch_blocked,
        patchable=patchable,
        pods_sized_at_creation=False,
        injected_env=("HEAD_SVC", "WORKER_SVC", "POD_NAMESPACE", "POD_NAME", "POD_IP"),
        # Ray: the worker only joins the head's Ray cluster (linked to the head's engine by the
        # reader); mp: it runs its own `vllm serve --nnodes N --headless` as a node rank > 0
        # of the head's engine (the head is node 0), read from its own command line
        ray_worker_of_head=not mp,
        node_role="worker" if mp else None,
        multinode_nodes=nodes if mp else None,
    )


# ------------------------------------------------------------------ Hugging Face server args
@dataclass
class HfArgs:
    model_id: str | None = None
    model_name: str | None = None
    model_dir: str | None = None
    backend: str | None = None
    dtype: str | None = None


def parse_hf_args(
    tokens: list[str],
    version: VllmVersion | None = None,
    config_loader: Callable[[str], dict[str, Any] | None] | None = None,
) -> tuple[ParsedVllm, HfArgs]:
    """`python -m huggingfaceserver` arguments: KServe's own flags, then every vLLM flag, read
    with parse_known_args (unknown flags are silently ignored by the server: warned here)."""
    hf = HfArgs()
    rest: list[str] = []
    ignored: list[Diagnostic] = []
    i, n = 0, len(tokens)
    while i < n:
        tok = str(tokens[i])
        i += 1
        if tok.startswith("--"):
            key, eq, inline = tok[2:].partition("=")
            if key in HF_FLAGS and key != "dtype":  # KServe's own flags: underscores
                value = None
                if HF_FLAGS[key]:
                    if eq:
                        value = inline
                    elif i < n and not str(tokens[i]).startswith("--"):
                        value = str(tokens[i])
                        i += 1
                if key in ("model_id", "model_name", "model_dir", "backend") and value is not None:
                    setattr(hf, key, value)
                elif key in ("max_model_len", "max_length") and value is not None:
                    rest += ["--max-model-len", value]  # dest max_model_len, read by vLLM too
                continue
            if "_" in key:
                # The server's parser is a plain argparse.ArgumentParser (vLLM's flags added by
                # make_arg_parser): no `_` → `-` rewriting, and parse_known_args drops the flag.
                if not eq and i < n and not str(tokens[i]).startswith("-"):
                    i += 1
                dashed = key.replace("_", "-")
                if dashed not in FLAGS:
                    close = difflib.get_close_matches(dashed, list(FLAGS), n=1, cutoff=0.8)
                    dashed = close[0] if close else dashed
                ignored.append(
                    Diagnostic(
                        "warning",
                        "KServe's Hugging Face server does not rewrite `_` to `-` and "
                        "reads its arguments with parse_known_args: this flag is silently ignored "
                        f"(write --{dashed})",
                        flag="--" + key,
                        raw=inline if eq else None,
                    )
                )
                continue
            if key not in FLAGS and not key.startswith("no-") and len(key) >= 3:
                # plain argparse accepts a unique prefix of a long flag (allow_abbrev)
                matches = [f for f in FLAGS if f.startswith(key)]
                if len(matches) == 1:
                    ignored.append(
                        Diagnostic(
                            "info",
                            f"read as --{matches[0]}: argparse accepts unique abbreviations",
                            flag="--" + key,
                        )
                    )
                    tok = "--" + matches[0] + (eq + inline if eq else "")
        rest.append(tok)
    parsed = parse_vllm_args(
        rest, version=version, config_loader=config_loader, positional_model=False
    )
    known = set(FLAGS) | {k.replace("_", "-") for k in HF_FLAGS}
    for flag in parsed.unknown_flags:
        close = difflib.get_close_matches(
            flag.lstrip("-").replace("_", "-"), list(known), n=1, cutoff=0.8
        )
        hint = f" (did you mean --{close[0]}?)" if close else ""
        parsed.diagnostics.append(
            Diagnostic(
                "warning",
                "flag not known to vllm-sizer: KServe's Hugging Face server reads its "
                f"arguments with parse_known_args, so a misspelled flag is silently ignored{hint}",
                flag=flag,
            )
        )
    parsed.diagnostics[:] = [
        d for d in parsed.diagnostics if not d.message.startswith(UNEXPECTED_POSITIONAL)
    ] + [
        Diagnostic("warning", "positional argument ignored by the Hugging Face server", raw=d.raw)
        for d in parsed.diagnostics
        if d.message.startswith(UNEXPECTED_POSITIONAL)
    ]
    parsed.diagnostics.extend(ignored)
    if "dtype" in parsed.values:
        hf.dtype = parsed.values["dtype"]
    return parsed, hf


# ------------------------------------------------------------------ LLMInferenceService
def _lora_flags(lora: dict[str, Any]) -> tuple[list[str], list[tuple[Severity, str]]]:
    flags: list[str] = []
    notes: list[tuple[Severity, str]] = []
    # KServe (addLoRAVLLMArgs) puts, in front of the container's args: --enable-lora
    # --max-lora-rank=R --max-loras=N --max-cpu-loras=C --lora-modules '{"name":..,"path":..}'...
    adapters = _list(lora.get("adapters"))
    keys = {
        "maxRank": "--max-lora-rank",
        "maxAdapters": "--max-loras",
        "maxCpuAdapters": "--max-cpu-loras",
    }
    if adapters or any(k in lora for k in keys):
        flags.append("--enable-lora")
    for key, flag in keys.items():
        if lora.get(key) is not None and not isinstance(lora.get(key), (dict, list)):
            flags.append(f"{flag}={lora[key]}")
    modules: list[str] = []
    for idx, a in enumerate(adapters):
        a = _dict(a)
        uri = a.get("uri") or a.get("storageUri") or a.get("path")
        name = a.get("name") or f"adapter-{idx}"
        if uri:
            modules.append(f"{name}={uri}")
    if modules:
        flags += ["--lora-modules", *modules]
    return flags, notes


# KServe's managed DRA: the controller adds a claim of this device class to the pods
# (kserve/kserve@aaac4e2 pkg/constants/constants.go:144, pkg/validation/managed_dra.go:37-43,
# pkg/controller/v1alpha2/llmisvc/managed_dra.go:86)
MANAGED_DRA_CLASS = "serving.kserve.io/exp-dra-device-class"


def _data_parallel_flags(par: dict[str, Any], container: dict[str, Any], worker: bool) -> list[str]:
    """The flags KServe's data-parallel templates add when an LLMInferenceService has worker
    pods and spec.parallelism.data / dataLocal (pkg/controller/v1alpha2/llmisvc/
    config_merge.go:336-351 picks config-llm-worker-data-parallel): the leader runs
    `--data-parallel-size-local DL --api-server-count ${VLLM_API_SERVER_COUNT:-8}`, each worker
    `--data-parallel-size-local DL --headless` (config/llmisvcconfig/
    config-llm-worker-data-parallel.yaml:188-199, 470-481; kserve/kserve@aaac4e2)."""
    local = par.get("dataLocal")
    local = local if isinstance(local, int) and not isinstance(local, bool) and local > 0 else 1
    flags = ["--data-parallel-size-local", str(local)]
    if worker:
        return [*flags, "--headless"]
    count = next(
        (
            str(_dict(e).get("value"))
            for e in _list(container.get("env"))
            if _dict(e).get("name") == "VLLM_API_SERVER_COUNT" and _dict(e).get("value")
        ),
        "8",
    )
    return [*flags, "--api-server-count", count]


def _strategic_merge(base: Any, over: Any) -> Any:
    """Kubernetes strategic merge of two LLMInferenceService specs, enough for sizing: maps
    merge key by key, lists of named items (containers, env, volumes) merge by name, other
    values and lists are replaced by the later one."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _strategic_merge(base[k], v) if k in base else v
        return out
    if (
        isinstance(base, list)
        and isinstance(over, list)
        and all(isinstance(i, dict) and "name" in i for i in base + over)
    ):
        merged = {i["name"]: i for i in base}
        for i in over:
            merged[i["name"]] = _strategic_merge(merged[i["name"]], i) if i["name"] in merged else i
        return list(merged.values())
    return over


def with_base_refs(
    obj: dict[str, Any], objects: dict[tuple[str, str], dict[str, Any]]
) -> tuple[dict[str, Any], list[tuple[Severity, str]]]:
    """The object with spec.baseRefs applied as KServe does: each LLMInferenceServiceConfig
    (its own namespace, else `kserve`), in order, then the object's own spec on top
    (config_merge.go:357-384 MergeSpecs(configs..., llmSvc.Spec)); notes say what was used."""
    spec = _dict(obj.get("spec"))
    refs = [_dict(r).get("name") for r in _list(spec.get("baseRefs"))]
    if not refs:
        return obj, []
    merged: Any = {}
    notes: list[tuple[Severity, str]] = []
    for name in refs[:32]:
        cfg = objects.get(("LLMInferenceServiceConfig", str(name)))
        if cfg is None:
            notes.append(
                (
                    "warning",
                    f"baseRef {name}: LLMInferenceServiceConfig not visible here, what it sets "
                    "is unknown",
                )
            )
            continue
        merged = _strategic_merge(merged, _dict(cfg.get("spec")))
        notes.append(("info", f"spec composed with LLMInferenceServiceConfig {name}"))
    merged = _strategic_merge(merged, {k: v for k, v in spec.items() if k != "baseRefs"})
    return {**obj, "spec": merged}, notes


def read_llmisvc(
    obj: dict[str, Any], objects: dict[tuple[str, str], dict[str, Any]] | None = None
) -> list[ContainerView]:
    obj, ref_notes = with_base_refs(obj, objects or {})
    spec = _dict(obj.get("spec"))
    dra = _dict(_dict(obj.get("metadata")).get("annotations")).get(MANAGED_DRA_CLASS)
    dra_classes = (dra.strip(),) if isinstance(dra, str) and dra.strip() else ()
    model = _dict(spec.get("model"))
    uri = model.get("uri") if isinstance(model.get("uri"), str) else None
    lora_flags, notes = _lora_flags(_dict(model.get("lora")))
    notes = ref_notes + notes
    views: list[ContainerView] = []
    for base, workload in ((("spec",), spec), (("spec", "prefill"), _dict(spec.get("prefill")))):
        if base == ("spec", "prefill") and not workload:
            continue
        par = _dict(workload.get("parallelism"))
        flags = list(lora_flags)
        for key, flag in (
            ("tensor", "--tensor-parallel-size"),
            ("pipeline", "--pipeline-parallel-size"),
            ("data", "--data-parallel-size"),
        ):
            if isinstance(par.get(key), int) and not isinstance(par.get(key), bool):
                flags += [flag, str(par[key])]
        # the leader pods (template) and, multi-node, the worker pods (worker: a PodSpec), whose
        # `main` container runs the same vLLM engine with its data-parallel ranks (KServe's
        # config-llm-worker-data-parallel): each is sized as a vLLM server
        pods = [("template", _dict(workload.get("template")))]
        if isinstance(workload.get("worker"), dict):
            pods.append(("worker", _dict(workload.get("worker"))))
        data_parallel = any(
            isinstance(par.get(k), int) and not isinstance(par.get(k), bool) and par[k] > 0
            for k in ("data", "dataLocal")
        )
        for where, pod in pods:
            containers = _list(pod.get("containers"))
            idx = next(
                (k for k, c in enumerate(containers) if _dict(c).get("name") == "main"), None
            )
            view_notes = list(notes)
            if idx is None:
                container: dict[str, Any] = {"name": "main"}
                idx = len(containers)
                view_notes.append(
                    (
                        "info",
                        "no `main` container in the object: it comes from KServe's "
                        "LLMInferenceServiceConfig; sized from spec.model",
                    )
                )
            else:
                container = _dict(containers[idx])
            # KServe renders the merged spec as a Go template over the object (ReplaceVariables)
            tmpl_errors: list[str] = []
            container = _dict(render_llmisvc(container, obj, tmpl_errors))
            pod_flags = list(flags)
            if data_parallel and len(pods) > 1:
                pod_flags += _data_parallel_flags(par, container, worker=where == "worker")
                view_notes.append(
                    (
                        "info",
                        "data parallel over worker pods: KServe's "
                        "config-llm-worker-data-parallel runs "
                        + (
                            "headless engines here" if where == "worker" else "the API servers here"
                        ),
                    )
                )
            views.append(
                ContainerView(
                    name="main",
                    container=container,
                    pod_spec=pod,
                    container_path=pointer(*base, where, "containers", idx),
                    resources_path=pointer(*base, where, "containers", idx, "resources"),
                    storage_uri=uri,
                    model_uri=uri,
                    extra_flags=pod_flags,
                    llmisvc=True,
                    notes=view_notes,
                    dra_classes=dra_classes,
                    stops=template_failure(
                        tmpl_errors, "failed to merge config", "creates no workload"
                    ),
                )
            )
    return views
