"""Kubernetes object → one Workload per vLLM container. Never raises.

Kinds come from one table (kinds.py), shared with the webhook configurations, the controller
and the chart: apps Deployment / StatefulSet / ReplicaSet / DaemonSet, batch Job / CronJob, v1
Pod and ReplicationController, LeaderWorkerSet, KServe InferenceService (predictor model spec
with its ServingRuntime, framework shorthand, custom containers) and LLMInferenceService,
Knative Service, KubeRay RayCluster / RayService (and serveConfigV2's Ray Serve LLM engine
arguments), AIBrix RayClusterFleet / StormService, Dynamo DynamoGraphDeployment,
production-stack VLLMRuntime; read only: KubeAI Model, KAITO Workspace (platforms.py). A
custom resource with no table is read by structure (its pod templates, wherever they are) and
reported on, never patched. Built-in kinds with no pod template: [].

Objects with a controller ownerReference (a KServe-made Deployment, an LWS-made StatefulSet, a
ReplicaSet of a Deployment, ...) and objects annotated `vllm-sizer.io/skip: "true"` are still
read, so audits see what they run, but every Workload carries `skip_reason`: the owner is sized
instead (or the pods, at creation), and mutating the child would fight its controller. Pods are
the exception: a Pod is skipped only when it carries the vllm-sizer.io/sized label and its
controller is a kind that creates pods from a template vllm-sizer sizes (ReplicaSet,
StatefulSet, Job, DaemonSet, ReplicationController, RayCluster); every other vLLM pod (made by
an operator vllm-sizer does not read, by a workload created before the install, or bare) is
sized when it is created.

A container is a vLLM container when its command (after `$(VAR)` expansion, the image's
ENTRYPOINT for vLLM and KServe images, and `sh -c` scripts) runs `vllm serve`, the
OpenAI api_server module or KServe's Hugging Face server; a vLLM image whose command cannot be
read gives a Workload without settings and a diagnostic; other containers give nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..estimator import catalog
from ..estimator.names import hub_cache_id, resolve_model
from ..estimator.versions import VllmVersion
from . import images, kinds, limits, platforms, pyapp, templates, vllm_flags
from .api_names import (
    ANNOTATION_MODEL_CONFIG,
    ANNOTATION_SKIP,
    ANNOTATION_VLLM_CONFIG,
    MODEL_CONFIGS_LABEL,
    SIZED_LABEL,
    TEMPLATE_UNKNOWN_ANNOTATION,
)
from .device import DeviceFacts, claim_device_classes, detect_device
from .execution import as_api_server_module, executed, executes_vllm
from .expand import kube_expand
from .kserve import MODEL_DIR, parse_hf_args, read_isvc, read_llmisvc
from .model import ModelConfigSource, ReadContext, Workload
from .quantity import parse_quantity
from .shell import SHELLS, find_shell, run_script
from .view import ContainerView
from .vllm_args import (
    UNEXPECTED_POSITIONAL,
    Diagnostic,
    env_settings,
    find_invocation,
    parse_vllm_args,
)

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# Words in an image's repository name that say it is not an engine, whatever else it says
# (vllm-router, vllm-mock, llm-d-inference-sim, ...): never assumed to run vLLM from its args
NOT_ENGINE_IMAGE_WORDS = (
    "router",
    "proxy",
    "gateway",
    "mock",
    "sim",
    "bench",
    "exporter",
    "operator",
    "controller",
    "sidecar",
    "scheduler",
    "epp",
)
# Whole words of an image's name that say it serves no model itself: a load balancer, a UI, a
# client, an evaluation or load test
NOT_ENGINE_IMAGE_TOKENS = frozenset(
    {
        "lb",
        "loadbalancer",
        "balancer",
        "dispatcher",
        "frontend",
        "ui",
        "webui",
        "client",
        "eval",
        "evals",
        "evaluation",
        "loadgen",
        "loadtest",
        "locust",
        "test",
        "tests",
        "e2e",
        "ingress",
        "envoy",
        "routing",
        "tokenizer",
    }
)
# A documentation placeholder left in a manifest: <model-path>, <YOUR_S3_BUCKET>
_PLACEHOLDER = re.compile(r"<[A-Za-z][\w.-]*>")
# A value the author fills in before applying: ${VAR} / $VAR (envsubst), $(VAR) the kubelet
# could not expand, {{ .Values.x }} (a template), <your-value>
_FILL_IN = re.compile(r"\$\{?[A-Za-z_]|\$\([A-Za-z_]|\{\{|<[A-Za-z][\w .-]*>")
# An image that is only a fill-in: ${VLLM_IMAGE}, $IMAGE, <CONTAINER_IMAGE>, {{ .Values.image }},
# or an upper-case word (image references are lower case, so V_IMAGE_URL names no image)
_FILL_IN_IMAGE = re.compile(
    r"\$\{?[A-Za-z_]\w*\}?|<[^<>]+>|\{\{.*\}\}|\$\([A-Za-z_]\w*\)|[A-Z][A-Z0-9_]*"
)


def _is_fill_in_image(image: str) -> bool:
    return _FILL_IN_IMAGE.fullmatch(image.strip()) is not None


RELEVANT_ENV = (
    "VLLM_CPU_KVCACHE_SPACE",
    "VLLM_TARGET_DEVICE",
    "LD_PRELOAD",
    "VLLM_ADDITIONAL_ARGS",
    "VLLM_USE_SIMPLE_KV_OFFLOAD",
    "LMCACHE_MAX_LOCAL_CPU_SIZE",
    "LMCACHE_LOCAL_CPU",
    "LMCACHE_CONFIG_FILE",
)
HF_SERVER_MODULE = "huggingfaceserver"
# Environment the LeaderWorkerSet controller adds to every pod (values known only at runtime).
LWS_ENV = ("LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX", "LWS_NAME")
NOT_RUNNING = {
    "echo",
    "printf",
    "logger",
    ":",
    "true",
    "false",
    "test",
    "[",
    "[[",
    "cat",
    "grep",
    "pip",
    "pip3",
    "uv",
    "which",
    "command",
    "type",
    "hash",
    "ls",
}
_CONFIG_KEYS = {"architectures", "model_type", "hidden_size", "num_hidden_layers"}


def skip_requested(value: Any) -> bool:
    """The vllm-sizer.io/skip annotation asks to skip: "true", "yes" or "1", any case, spaces
    around (one reading for the reader and the decision's mode override)."""
    return value is not None and str(value).strip().lower() in ("true", "yes", "1")


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def _str(x: Any) -> str | None:
    return x if isinstance(x, str) else None


def _words(x: Any) -> list[str]:
    """command / args items as strings (YAML may give numbers or booleans)."""
    out = []
    for item in _list(x):
        if isinstance(item, bool):
            out.append("true" if item else "false")
        elif isinstance(item, (str, int, float)):
            out.append(str(item))
        elif isinstance(item, (dict, list)):
            try:
                out.append(json.dumps(item))
            except (ValueError, TypeError, RecursionError):  # nested past the stack: no word
                out.append("[...]")
        elif item is not None:
            out.append(str(item))
    return out


# ---------------------------------------------------------------------------- object level
@dataclass
class _ObjectInfo:
    kind: str
    api_version: str
    namespace: str | None
    name: str
    annotations: dict[str, str]
    skip_reason: str | None
    context: ReadContext
    model_config: dict[str, Any] | None = None  # one config for every container
    model_configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # by model id
    vllm_config: dict[str, Any] | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @classmethod
    def of(cls, obj: dict[str, Any], context: ReadContext) -> _ObjectInfo:
        meta = _dict(obj.get("metadata"))
        annotations = {
            str(k): v for k, v in _dict(meta.get("annotations")).items() if isinstance(v, str)
        }
        info = cls(
            kind=str(obj.get("kind")),
            api_version=str(obj.get("apiVersion")),
            namespace=_str(meta.get("namespace")),
            name=_str(meta.get("name")) or _str(meta.get("generateName")) or "",
            annotations=annotations,
            skip_reason=None,
            context=context,
        )
        owner = next(
            (
                _dict(r)
                for r in _list(meta.get("ownerReferences"))
                if _dict(r).get("controller") is True
            ),
            None,
        )
        if info.kind == "Pod" and info.api_version == "v1":
            # Pods are sized at creation unless their template was: a pod created by a kind
            # vllm-sizer reads from a template it sized carries the sized label.
            labels = _dict(meta.get("labels"))
            if (
                owner is not None
                and labels.get(SIZED_LABEL) not in (None, "")
                and (kinds.group_of(str(owner.get("apiVersion", ""))), str(owner.get("kind")))
                in kinds.pod_owner_kinds()
            ):
                info.skip_reason = (
                    f"created by {owner.get('kind')}/{owner.get('name', '?')} "
                    f"from a template vllm-sizer sized ({SIZED_LABEL} label)"
                )
        elif owner is not None:
            info.skip_reason = (
                f"owned by {owner.get('kind', '?')}/{owner.get('name', '?')} "
                "(controller): its owner is sized instead, or its pods when "
                "they are created"
            )
        if info.skip_reason is None and skip_requested(annotations.get(ANNOTATION_SKIP)):
            info.skip_reason = f"{ANNOTATION_SKIP} annotation"
        raw = annotations.get(ANNOTATION_MODEL_CONFIG)
        if raw is not None:
            info._read_model_config(raw)
        raw = annotations.get(TEMPLATE_UNKNOWN_ANNOTATION)
        if raw is not None:
            info.diagnostics.extend(templates.unknown_parameter_notes(raw))
        raw = annotations.get(ANNOTATION_VLLM_CONFIG)
        if raw is not None:
            try:
                loaded = limits.load_yaml(raw)
            except limits.LimitExceeded as exc:
                loaded = None
                info.diagnostics.append(
                    Diagnostic(
                        "error",
                        f"annotation refused: {exc}; --config contents stay unknown",
                        ANNOTATION_VLLM_CONFIG,
                    )
                )
            except Exception as exc:  # noqa: BLE001 - yaml raises many types
                loaded = None
                info.diagnostics.append(
                    Diagnostic(
                        "error",
                        f"annotation is not valid YAML ({(str(exc).splitlines() or ['?'])[0]}): "
                        "--config contents stay unknown",
                        ANNOTATION_VLLM_CONFIG,
                    )
                )
            else:
                if isinstance(loaded, dict):
                    info.vllm_config = loaded
                else:
                    info.diagnostics.append(
                        Diagnostic(
                            "error",
                            "annotation must hold the --config YAML mapping",
                            ANNOTATION_VLLM_CONFIG,
                            raw[:80],
                        )
                    )
        return info

    def _read_model_config(self, raw: str) -> None:
        try:
            loaded = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            self.diagnostics.append(
                Diagnostic(
                    "error",
                    f"annotation is not valid JSON ({exc}): the model config is taken from "
                    "the catalog or resolver instead",
                    ANNOTATION_MODEL_CONFIG,
                    raw[:80],
                )
            )
            return
        if isinstance(loaded, dict) and (_CONFIG_KEYS & set(loaded) or not loaded):
            self.model_config = loaded if loaded else None
            if not loaded:
                self.diagnostics.append(
                    Diagnostic(
                        "error",
                        "annotation holds an empty object",
                        ANNOTATION_MODEL_CONFIG,
                        raw[:80],
                    )
                )
        elif isinstance(loaded, dict) and all(isinstance(v, dict) for v in loaded.values()):
            self.model_configs = {catalog.normalise_model_id(str(k)): v for k, v in loaded.items()}
        else:
            self.diagnostics.append(
                Diagnostic(
                    "error",
                    "annotation must be a config.json object (or an object of them keyed "
                    "by model id)",
                    ANNOTATION_MODEL_CONFIG,
                    raw[:80],
                )
            )

    def config_loader(self) -> Callable[[str], dict[str, Any] | None] | None:
        if self.vllm_config is None:
            return None
        cfg = self.vllm_config
        return lambda _path: cfg


# ---------------------------------------------------------------------------- public API
def read_workloads(obj: dict[str, Any], context: ReadContext | None = None) -> list[Workload]:
    """One Workload per vLLM container of a parsed Kubernetes object; [] when the object is not
    a workload kind or runs no vLLM. Never raises. An OpenShift Template gives the Workloads of
    the objects `oc process` makes from it (templates.py), never patchable: `check` flattens
    Templates before reading, and the webhook never receives one."""
    if templates.is_template(obj):
        return _read_template(obj, context)
    with limits.budget() as budget:
        if not isinstance(obj, dict):
            return []
        ctx = context if isinstance(context, ReadContext) else ReadContext()
        try:
            views = _views(obj, ctx)
            if not views:
                return []
            if obj.get("kind") in RAY_CLUSTER_KINDS:
                platforms.annotate_ray_nodes(obj, views)
            info = _ObjectInfo.of(obj, ctx)
        except Exception as exc:  # noqa: BLE001 - the reader must never raise
            # never "not vLLM" for an object that could not be read: that would admit it
            # unsized without a word
            return [_unreadable(obj, ctx, exc)]
        out: list[Workload] = []
        try:
            over = _past_container_bound(info, views)
        except Exception:  # noqa: BLE001 - the reader must never raise
            over = None
        views = views[: limits.MAX_CONTAINERS]
        for view in views:
            seen = budget.mark()
            view.joins_ray = False
            try:
                w = _read_view(info, view)
            except Exception as exc:  # noqa: BLE001
                w = _bare(
                    info,
                    view,
                    [
                        Diagnostic(
                            "error",
                            f"internal error reading this container: {type(exc).__name__}: {exc}",
                        )
                    ],
                )
            if w is not None and budget.since(seen):
                w = _over_bounds(w, budget.since(seen))
            if w is not None and over is not None:
                w = _over_bounds(w, [over.diagnostics[-1].message.removesuffix("; not sized")])
            if w is not None:
                out.append(w)
        if over is not None and not out:
            out.append(over)
        try:
            out = _link_multinode(info, obj, views, out)
            if info.kind == "Pod":
                out += _ray_worker_pods(info, obj, views)
        except Exception:  # noqa: BLE001 - the reader must never raise
            pass
        return out


def _unreadable(obj: dict[str, Any], ctx: ReadContext, exc: Exception) -> Workload:
    """The one Workload of an object whose containers could not be found (an internal error of
    the reader): unsized, never patched, with the error said."""
    try:
        info = _ObjectInfo.of(obj, ctx)
    except Exception:  # noqa: BLE001 - the reader must never raise
        meta = _dict(obj.get("metadata"))
        info = _ObjectInfo(
            kind=str(obj.get("kind")),
            api_version=str(obj.get("apiVersion")),
            namespace=_str(meta.get("namespace")),
            name=_str(meta.get("name")) or "",
            annotations={},
            skip_reason=None,
            context=ctx,
        )
    view = ContainerView(
        name="(object)",
        container={},
        pod_spec={},
        container_path="",
        resources_path="",
        patchable=False,
        bare=True,
    )
    what = f"{type(exc).__name__}: {str(exc)[:200]}"
    return _bare(
        info,
        view,
        [
            Diagnostic(
                "error", f"internal error finding this object's containers ({what}): not sized"
            )
        ],
    )


def _read_template(obj: dict[str, Any], context: ReadContext | None) -> list[Workload]:
    try:
        processed = templates.process_template(obj)
    except Exception:  # noqa: BLE001 - the reader must never raise
        return []
    out: list[Workload] = []
    for o in processed.objects:
        for w in read_workloads(o, context):
            w.patchable = False
            w.diagnostics.extend(
                Diagnostic("warning", p, container=w.container) for p in processed.problems
            )
            out.append(w)
    return out


# Labels the platforms put on the worker pods of a multi-node engine: (label, what it names)
# (kserve/kserve@aaac4e2 pkg/constants/constants.go InferenceServicePodLabelKey, set on the
# worker Deployment's pods by predictor.go:536-548 reconcileWorker; sigs.k8s.io/lws
# leaderworkerset.sigs.k8s.io/name; KubeRay ray.io/cluster)
RAY_WORKER_POD_LABELS = (
    ("serving.kserve.io/inferenceservice", "InferenceService"),
    ("leaderworkerset.sigs.k8s.io/name", "LeaderWorkerSet"),
    ("ray.io/cluster", "RayCluster"),
)


def _ray_worker_pods(
    info: _ObjectInfo, obj: dict[str, Any], views: list[ContainerView]
) -> list[Workload]:
    """A pod's container that only joins a multi-node engine's Ray cluster (KServe's predictor
    worker, an LWS worker, a KubeRay worker) runs that engine's GPU workers, whose settings live
    on the head pod, which a pod review does not see: never read as a vLLM server of its own,
    and not sized here; said once, naming the object that sizes it."""
    labels = _dict(_dict(obj.get("metadata")).get("labels"))
    owner = next(
        ((key, kind, str(labels[key])) for key, kind in RAY_WORKER_POD_LABELS if labels.get(key)),
        None,
    )
    if owner is None:
        return []
    out = []
    for view in views:
        if not view.joins_ray:
            continue
        why = (
            f"a worker node of {owner[1]} {owner[2][:100]}'s multi-node engine (it only joins the "
            "head's Ray cluster): the engine's settings live on the head pod, which this pod does "
            f"not show; not sized here: vllm-sizer sizes it where the {owner[1]} is reviewed"
        )
        out.append(_bare(info, view, [], skip_reason=why))
    return out


LWS_LEADER = "/spec/leaderWorkerTemplate/leaderTemplate/"
LWS_WORKER = "/spec/leaderWorkerTemplate/workerTemplate/"
# KubeRay's kinds (and AIBrix's fleet of RayClusters): a head group and worker groups
RAY_CLUSTER_KINDS = ("RayCluster", "RayService", "RayJob", *platforms.RAY_FLEETS)


@dataclass
class _RayGroup:
    """One engine spread over the pods of a Ray cluster: the Workload whose container starts
    it (the leader), the containers that only join its Ray cluster (worker nodes), the node
    count when known, and the leader's own GPUs when the pod says (None: its gpu_count)."""

    leader: Workload
    joiners: list[ContainerView]
    nodes: int | None
    note: str
    relabel_leader: bool = True  # False: the leader was read with its role already (KServe)
    leader_ranks: int | None = None


def _link_multinode(
    info: _ObjectInfo, obj: dict[str, Any], views: list[ContainerView], out: list[Workload]
) -> list[Workload]:
    """One home for multi-node engines whose worker pods only join the leader's Ray cluster
    (`ray start --address`, multi-node-serving.sh worker) while the leader starts the engine:
    a LeaderWorkerSet's worker template, KServe's predictor worker (workerSpec), a KubeRay
    worker group of a head that runs `vllm serve` over the cluster. The engine's GPU workers
    run on every node (one Ray actor per GPU), so each joining container is a Workload with
    the leader's engine settings and role "worker", and the leader's estimate counts only its
    own GPUs' ranks (role "leader")."""
    groups: list[_RayGroup | None] = []
    if info.kind == "LeaderWorkerSet":
        groups = [_lws_group(_dict(obj.get("spec")), views, out)]
    elif info.kind == "InferenceService":
        groups = [_kserve_group(views, out)]
    elif info.kind in RAY_CLUSTER_KINDS:
        groups = [_kuberay_group(obj, views, out)]
    elif info.kind == "ModelServing":
        groups = _kthena_groups(_dict(obj.get("spec")), views, out)
    for group in groups:
        if group is not None:
            out = _link_group(info, out, group)
    return out


def _link_group(info: _ObjectInfo, out: list[Workload], group: _RayGroup) -> list[Workload]:
    """The leader relabelled (its own ranks) and one worker-node Workload per joiner."""
    leader, nodes, note = group.leader, group.nodes, group.note

    def as_leader(w: Workload) -> Workload:
        if w.settings is None:
            return w
        ranks = group.leader_ranks if group.leader_ranks is not None else w.gpu_count or None
        update = {"node_role": "leader", "nodes": nodes, "local_ranks": ranks}
        diag = Diagnostic(
            "info",
            note
            + "this leader runs the API server, the engine core and the Ray head with "
            + (
                f"{ranks} of the engine's ranks (its GPUs)"
                if ranks is not None
                else "its own GPUs' ranks"
            )
            + "; the worker pods run the other ranks",
            container=w.container,
        )
        return dataclasses.replace(
            w,
            settings=w.settings.model_copy(update=update),
            diagnostics=[*w.diagnostics, diag],
            alternatives=[as_leader(a) for a in w.alternatives],
        )

    head = as_leader(leader) if group.relabel_leader else leader
    linked = [head if w is leader else w for w in out]
    for view in group.joiners:
        linked.append(_ray_worker_workload(info, view, head, nodes, note))
    return linked


KTHENA_ROLES = "/spec/template/roles/"


def _kthena_groups(
    spec: dict[str, Any], views: list[ContainerView], out: list[Workload]
) -> list[_RayGroup | None]:
    """kthena's ModelServing: each role is a group of an entry pod (entryTemplate) and
    workerReplicas worker pods (workerTemplate), as an LWS group (volcano-sh/kthena@3cc0572
    pkg/apis/workload/v1alpha1/servinggroup_types.go Role); the model-booster controller's
    multi-node vLLM runs multi-node-serving.sh leader in the entry pod and worker in the
    others (pkg/model-booster-controller/convert/model_serving.go). One engine per role."""
    roles = _list(_dict(spec.get("template")).get("roles"))
    groups: list[_RayGroup | None] = []
    for i, role in enumerate(roles[: limits.MAX_CONTAINERS]):
        entry, worker = f"{KTHENA_ROLES}{i}/entryTemplate/", f"{KTHENA_ROLES}{i}/workerTemplate/"
        joiners = [v for v in views if v.joins_ray and v.container_path.startswith(worker)]
        leader = next(
            (
                w
                for w in out
                if w.container_path.startswith(entry) and w.settings is not None and w.argv
            ),
            None,
        )
        if not joiners or leader is None:
            continue
        n = _dict(role).get("workerReplicas")
        nodes: int | None = None
        if isinstance(n, int) and not isinstance(n, bool) and 0 < n < limits.MAX_ARGS:
            nodes = n + 1
        note = (
            f"multi-node engine over {nodes} pods (the role's entry pod and workerReplicas "
            "workers): "
            if nodes
            else "multi-node engine over the role's pods: "
        )
        groups.append(_RayGroup(leader, joiners, nodes, note))
    return groups


def _lws_group(
    spec: dict[str, Any], views: list[ContainerView], out: list[Workload]
) -> _RayGroup | None:
    """A LeaderWorkerSet: the leader template's engine, the worker template's Ray joiners; the
    LWS size is the node count."""
    joiners = [v for v in views if v.joins_ray and v.container_path.startswith(LWS_WORKER)]
    leader = next(
        (
            w
            for w in out
            if w.container_path.startswith(LWS_LEADER) and w.settings is not None and w.argv
        ),
        None,
    )
    if not joiners or leader is None or leader.settings is None:
        return None
    size = _dict(spec.get("leaderWorkerTemplate")).get("size")
    nodes = size if isinstance(size, int) and not isinstance(size, bool) and size > 1 else None
    if nodes is not None and nodes > limits.MAX_ARGS:
        nodes = None
    note = (
        f"multi-node engine over {nodes} pods (the LWS size): "
        if nodes
        else "multi-node engine over the group's pods: "
    )
    return _RayGroup(leader, joiners, nodes, note)


def _kserve_group(views: list[ContainerView], out: list[Workload]) -> _RayGroup | None:
    """KServe's multinode predictor: the head (read as the leader, kserve.py lays the nodes out
    as KServe's controller does) and the worker Deployment's container (kserve.worker_view)."""
    joiners = [v for v in views if v.ray_worker_of_head and v.joins_ray]
    leader = next(
        (w for w in out if w.settings is not None and w.settings.node_role == "leader" and w.argv),
        None,
    )
    if not joiners or leader is None or leader.settings is None:
        return None
    nodes = leader.settings.nodes
    note = f"KServe multinode predictor over {nodes} pods (RAY_NODE_COUNT): " if nodes else ""
    return _RayGroup(leader, joiners, nodes, note, relabel_leader=False)


def _group_gpus(view: ContainerView) -> int:
    """Accelerators Ray declares on a Ray group's pod (`ray start --num-gpus`: KubeRay's
    rayStartParams or group resources, else the container's limit:
    platforms.ray_start_accelerators), else those its container asks for (its limits, else its
    requests)."""
    if view.ray_accelerators is not None:
        return view.ray_accelerators if view.ray_accelerators <= limits.MAX_ARGS else 0
    return _container_gpus(view)


def _container_gpus(view: ContainerView) -> int:
    """Accelerators the container asks for (its limits, else its requests): the GPUs its
    processes see, whatever Ray declares."""
    res = _dict(view.container.get("resources"))
    for section in ("limits", "requests"):
        for key, value in _dict(res.get(section)).items():
            if platforms.is_accelerator(str(key)):
                try:
                    n = int(str(value))
                except ValueError:
                    return 0
                return n if 0 < n <= limits.MAX_ARGS else 0
    return 0


def _kuberay_group(
    obj: dict[str, Any], views: list[ContainerView], out: list[Workload]
) -> _RayGroup | None:
    """A KubeRay cluster whose head container runs `vllm serve` (or the api_server) with more
    ranks than the head has GPUs, or with --distributed-executor-backend ray: vLLM's Ray
    executor places one GPU actor per rank over the cluster (a placement group of tp·pp GPU
    bundles), so every worker group that asks for accelerators and only runs Ray (`ray start`,
    KubeRay's generated command) holds ranks of it. CPU-only groups hold none."""
    leader = next(
        (
            w
            for w in out
            if "/headGroupSpec/" in w.container_path
            and w.settings is not None
            and w.argv
            and w.settings.node_role is None
        ),
        None,
    )
    if leader is None or leader.settings is None:
        return None
    joiners = [
        v
        for v in views
        if v.joins_ray and "/workerGroupSpecs/" in v.container_path and _group_gpus(v) > 0
    ]
    if not joiners:
        return None
    s = leader.settings
    world = s.tensor_parallel_size * s.pipeline_parallel_size
    head_view = next((v for v in views if v.container_path == leader.container_path), None)
    head_gpus = _group_gpus(head_view) if head_view is not None else 0
    argv = " ".join(leader.argv)
    ray_backend = bool(re.search(r"--distributed[-_]executor[-_]backend[= ]+ray\b", argv))
    seen = _container_gpus(head_view) if head_view is not None else 0
    if world <= seen and not ray_backend:
        # the engine fits the GPUs the head's processes see: vLLM's mp executor runs it there
        # (what Ray declares on the head does not matter to it), the workers hold none of it
        return None
    cluster, _ = platforms.ray_cluster_spec(obj)
    pods = 1
    for i, g in enumerate(_list(cluster.get("workerGroupSpecs"))):
        if any(f"/workerGroupSpecs/{i}/" in v.container_path for v in joiners):
            replicas = _dict(g).get("replicas", _dict(g).get("minReplicas", 1))
            ok = isinstance(replicas, int) and not isinstance(replicas, bool)
            pods += replicas if ok and 0 <= replicas <= limits.MAX_ARGS else 1
    note = (
        f"Ray cluster of {pods} pods (the head and its GPU worker groups' replicas) running "
        f"one engine of {world} rank(s) with vLLM's Ray executor: "
    )
    return _RayGroup(leader, joiners, pods if pods > 1 else None, note, leader_ranks=head_gpus)


def _node_ranks(view: ContainerView, gpu_count: int | None) -> int | None:
    """The ranks a node of a multi-node engine holds: the accelerators Ray declares on the pod
    (a KubeRay group's rayStartParams), else the container's."""
    if view.ray_accelerators is not None:
        return min(view.ray_accelerators, limits.MAX_ARGS)
    return gpu_count or None


def _ray_worker_workload(
    info: _ObjectInfo, view: ContainerView, leader: Workload, nodes: int | None, note: str
) -> Workload:
    """The worker template's container, sized as one worker node of the leader's engine."""
    c = view.container
    image = _str(c.get("image"))
    env, _unknown, _maybe, diags = _read_env(c, info.context.config_maps, view.injected_values)
    diags = [Diagnostic(sev, msg) for sev, msg in view.notes] + _stops(view) + diags
    resources = _dict(c.get("resources"))
    limit, request, patch_blocked = _memory_bounds(resources, view.patch_blocked, diags)
    dev = _view_device(info, view, c, image, env, resources, None)
    diags += dev.diagnostics
    assert leader.settings is not None
    update: dict[str, Any] = {
        "node_role": "worker",
        "nodes": nodes,
        "local_ranks": _node_ranks(view, dev.gpu_count),
        "memory_limit_bytes": limit,
        "dev_shm_memory": False,
        "dev_shm_bytes": None,
    }
    if dev.device in ("cuda", "rocm"):
        update |= {
            "gpu_memory_bytes": dev.gpu_memory_bytes or leader.settings.gpu_memory_bytes,
            "gpu_product": dev.gpu_product or leader.settings.gpu_product,
        }
    shm = _dev_shm(view, diags)
    update["dev_shm_memory"], update["dev_shm_bytes"] = shm
    diags.append(
        Diagnostic(
            "info",
            note + f"this worker joins the Ray cluster of container {leader.container} (the "
            "leader template) and runs the engine's GPU worker actors for its GPUs: sized with "
            "the leader's engine settings (no API server or engine core here)",
        )
    )
    return dataclasses.replace(
        leader,
        container=view.name,
        container_path=view.container_path,
        settings=leader.settings.model_copy(update=update),
        image=image,
        limit_bytes=limit,
        request_bytes=request,
        resources_path=view.resources_path,
        env=dict(env),
        effective_env=dict(env),
        diagnostics=[dataclasses.replace(d, container=view.name) for d in info.diagnostics + diags],
        skip_reason=info.skip_reason or view.skip_reason,
        gpu_count=dev.gpu_count,
        device=dev.device if dev.device != "unknown" else leader.device,
        argv=list(leader.argv),  # the leader's invocation this node's ranks belong to
        # the leader's script branches: each read as this worker node, the largest sized
        alternatives=[
            _ray_worker_workload(info, view, alt, nodes, note) for alt in leader.alternatives
        ],
        patch_blocked=patch_blocked,
        env_unknown=[],
        env_from=_env_from(c, info.context.config_maps)[1],
        **_view_fields(view),
    )


def _past_container_bound(info: _ObjectInfo, views: list[ContainerView]) -> Workload | None:
    """More containers (or Ray Serve engines) than limits.MAX_CONTAINERS: the first are read
    and none is sized, and when none of them is vLLM but one past the bound says vLLM or
    KServe's server anywhere in it, that one stands for the object, unsized (5000 engines in a
    serveConfigV2 took 27 s before)."""
    if len(views) <= limits.MAX_CONTAINERS:
        return None
    note = (
        f"more than {limits.MAX_CONTAINERS} containers in one object: only the first "
        f"{limits.MAX_CONTAINERS} are read"
    )
    limits.current().note(note)
    for view in views[limits.MAX_CONTAINERS :]:
        try:
            text = json.dumps(view.container, default=str).lower()
        except (ValueError, TypeError, RecursionError):
            text = "vllm"  # unreadable: it may be one
        if "vllm" in text or HF_SERVER_MODULE in text:
            return _bare(info, view, [Diagnostic("error", f"{note}; not sized")])
    return None


def _over_bounds(w: Workload, notes: list[str]) -> Workload:
    """A container whose command line was cut by an expansion bound (limits.py): its flags
    are not known in full, so it is not sized; each cut is named."""
    cut = [Diagnostic("error", f"{note}; not sized", container=w.container) for note in notes]
    return dataclasses.replace(w, settings=None, diagnostics=w.diagnostics + cut)


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _views(obj: dict[str, Any], ctx: ReadContext) -> list[ContainerView]:
    kind = obj.get("kind")
    api = obj.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api, str):
        return []
    spec_entry = kinds.lookup(api, kind)
    spec = _dict(obj.get("spec"))
    if kind in platforms.RUNTIME_KINDS:
        return []  # a template others take their container from (read through them)
    if spec_entry is None:
        if "." not in kinds.group_of(api):
            return []  # a built-in kind with no pod template (core, apps, batch, policy, ...)
        # a custom resource with no table: read by structure, report only (the webhook is not
        # registered for it; its pods are sized when they are created)
        found = platforms.structural_views(
            obj,
            patchable=False,
            note=f"{kind} is read by structure (pod templates found in the object); vllm-sizer "
            "does not change it: its pods are sized at creation by the pod-level webhook",
        )
        if kind == "RayJob" and kinds.group_of(api) == "ray.io":
            platforms.ray_job_entrypoint_on_head(obj, found)
            found += platforms.read_ray_job(obj, ctx.config_maps)
        return found
    group = spec_entry.group
    if not spec_entry.served:
        if kind == "Model":
            return platforms.read_kubeai_model(obj)
        if kind in ("Workspace", "InferenceSet"):
            return platforms.read_kaito_workspace(obj, ctx.config_maps)
        if kind == "Playground":
            return platforms.read_llmaz_playground(obj, ctx.objects)
        if kind == "ModelBooster":
            return platforms.read_model_booster(obj)
        return []
    if group in ("apps", "extensions") or kind in ("ReplicationController", "Job"):
        return _pod_views(
            _dict(_dict(spec.get("template")).get("spec")), ("spec", "template", "spec")
        )
    if kind == "CronJob":
        job = _dict(_dict(spec.get("jobTemplate")).get("spec"))
        return _pod_views(
            _dict(_dict(job.get("template")).get("spec")),
            ("spec", "jobTemplate", "spec", "template", "spec"),
        )
    if kind == "Pod":
        return _pod_views(spec, ("spec",))
    if kind == "LeaderWorkerSet":
        lwt = _dict(spec.get("leaderWorkerTemplate"))
        size = lwt.get("size")
        views: list[ContainerView] = []
        for key in ("leaderTemplate", "workerTemplate"):
            tmpl = _dict(lwt.get(key))
            if tmpl:
                for v in _pod_views(
                    _dict(tmpl.get("spec")), ("spec", "leaderWorkerTemplate", key, "spec")
                ):
                    v.injected_env = LWS_ENV
                    # the LWS controller's values (sigs.k8s.io/lws@060ab4d pkg/utils/pod/
                    # pod_utils.go:131-175): LWS_GROUP_SIZE is the size, the leader is index 0
                    if isinstance(size, int) and not isinstance(size, bool) and 0 < size < 10**6:
                        v.injected_values["LWS_GROUP_SIZE"] = str(size)
                    if key == "leaderTemplate":
                        v.injected_values["LWS_WORKER_INDEX"] = "0"
                    views.append(v)
        return views
    if group == "serving.kserve.io":
        if kind == "InferenceService":
            return read_isvc(obj, _dict(ctx.serving_runtimes), _dict(ctx.cluster_serving_runtimes))
        if kind == "LLMInferenceService":
            return read_llmisvc(obj, ctx.objects)
    if kind == "DynamoGraphDeployment":
        return platforms.read_dynamo(obj)
    if kind == "VLLMRuntime":
        return platforms.read_vllm_runtime(obj)
    views = platforms.structural_views(obj, patchable=True)
    if kind == "RayService":
        views += platforms.read_ray_serve_llm(obj, ctx.config_maps)
    return views


def _stops(view: ContainerView) -> list[Diagnostic]:
    """The platform's reason this container never runs (ContainerView.stops), as a diagnostic."""
    return [Diagnostic("error", view.stops, exits=True)] if view.stops else []


def _pod_views(pod_spec: dict[str, Any], base: tuple[str, ...]) -> list[ContainerView]:
    return platforms.pod_views(pod_spec, base, labels=platforms.labels_path(base))


# ---------------------------------------------------------------------------- container level
@dataclass
class _Located:
    kind: str  # "vllm" | "hf"
    flags: list[str]
    positional: bool
    env: dict[str, str]  # environment of the process (script exports, prefix assignments)
    unresolved: list[str]
    count: int = 1  # vLLM invocations seen
    files: dict[str, str] = field(default_factory=dict)  # written by the script before it
    fails: list[str] = field(default_factory=list)  # the shell exits before it runs (shell.py)


def _find_hf(argv: list[str]) -> list[str] | None:
    for idx, tok in enumerate(argv):
        if tok == "-m" and idx + 1 < len(argv) and argv[idx + 1] == HF_SERVER_MODULE:
            return argv[idx + 2 :]
        if os.path.basename(tok) == HF_SERVER_MODULE and (idx == 0 or argv[idx - 1] != "-m"):
            return argv[idx + 1 :]
    return None


def _prefix_env(argv: list[str], flags_start: int) -> dict[str, str]:
    """NAME=VALUE words before the invocation (`env A=1 vllm serve`, `A=1 vllm serve`)."""
    out = {}
    for tok in argv[:flags_start]:
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", tok, re.S)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def _eval_script(argv: list[str]) -> tuple[str, list[str]] | None:
    """`eval WORDS...`: the shell runs its arguments, joined by spaces, as a script (POSIX
    eval); KServe's data-parallel template and Ray start lines use it."""
    head = executed(argv)
    if len(head) > 1 and os.path.basename(head[0]) == "eval":
        return " ".join(head[1:]), ["sh"]
    return None


def _as_files(files: _Files | dict[str, str] | None) -> _Files:
    return files if isinstance(files, _Files) else _Files(written=dict(files or {}))


def _script_file(argv: list[str], files: _Files | dict[str, str]) -> tuple[str, list[str]] | None:
    """(script text, $0 and its arguments) when argv runs a script file whose text is known:
    `bash FILE ARGS`, `FILE ARGS`, `source FILE` with FILE mounted from a ConfigMap or written
    by the script before."""
    head = executed(argv)
    if not head or not files:
        return None
    prog = os.path.basename(head[0])
    if prog in SHELLS or prog in ("source", "."):
        args = [a for a in head[1:]]
        if not args or args[0].startswith("-"):
            return None
        path, rest = args[0], args[1:]
    else:
        path, rest = head[0], head[1:]
    text = files.get(path)
    return (text, [path, *rest]) if text is not None else None


def _locate_all(
    argv: list[str],
    env: dict[str, str],
    unknown: set[str],
    maybe_env: bool,
    depth: int = 0,
    files: _Files | dict[str, str] | None = None,
    api_server_copy: str | None = None,
) -> list[_Located]:
    """Every vLLM (or KServe HF server) invocation an argv can run: the argv itself, or each
    command of a `sh -c` script (both branches of an if/else, each case arm, ...), or of a
    script file whose text is known (`files`: mounted from a ConfigMap, written or copied by
    the script), in script order; identical invocations once. A script's command that runs
    vLLM's api_server.py as a file (or the image's copy of it, `api_server_copy`) is read as
    `python -m` the module, as the container's own command is."""
    files = _as_files(files)
    if depth > 0:
        as_module = as_api_server_module(argv, api_server_copy)
        if as_module is not None:
            argv = as_module
    inv = find_invocation(argv) if executes_vllm(argv) else None  # executed, not mentioned
    if inv is not None:
        flags, positional = inv
        return [
            _Located(
                "vllm", flags, positional, {**env, **_prefix_env(argv, len(argv) - len(flags))}, []
            )
        ]
    hf = _find_hf(argv) if executes_vllm(argv) else None
    if hf is not None:
        return [_Located("hf", hf, False, {**env, **_prefix_env(argv, len(argv) - len(hf))}, [])]
    sh = find_shell(argv) or _eval_script(argv) or _script_file(argv, files)
    if sh is None or depth >= 4:
        return []
    script, rest = sh
    found: list[_Located] = []
    seen: set[tuple[Any, ...]] = set()
    for cmd in run_script(script, env, unknown, maybe_env, positional=rest or ["sh"]):
        if cmd.words[0] in NOT_RUNNING:
            continue  # `echo "vllm serve ..."` prints, it does not run
        known = files.with_files(cmd.files)
        if cmd.words[0] == "cp" and len(cmd.words) == 3 and cmd.words[1] in known:
            # `cp /mounted/run.sh $HOME/run.sh`
            files = files.with_files({cmd.words[2]: known[cmd.words[1]]})
            continue
        for sub in _locate_all(
            cmd.words, cmd.env, unknown, maybe_env, depth + 1, known, api_server_copy
        ):
            key = (sub.kind, tuple(sub.flags), sub.positional, tuple(sorted(sub.env.items())))
            if key in seen:
                continue
            seen.add(key)
            sub.unresolved = cmd.unresolved + sub.unresolved
            sub.files = {**cmd.files, **sub.files}
            sub.fails = cmd.fails + sub.fails
            found.append(sub)
    for f in found:
        f.count = len(found)
    return found


# Programs that visibly start no model server: a vLLM-image container whose every command is
# one of these (a Ray worker joining its head, a pod that only sleeps, a download step) is not
# a vLLM server, so it gets no Workload. Anything else it runs (a script file, python, an
# unknown binary) may start vLLM out of sight, and keeps the "cannot size" warning.
NO_SERVER_PROGRAMS = {
    "sleep",
    "tail",
    "wait",
    "exit",
    "ulimit",
    "break",
    "continue",
    "set",
    "trap",
    "cd",
    "export",
    "unset",
    "mkdir",
    "cp",
    "mv",
    "rm",
    "ln",
    "chmod",
    "chown",
    "touch",
    "env",
    "id",
    "whoami",
    "hostname",
    "date",
    "nvidia-smi",
    "rocm-smi",
    "free",
    "df",
    "sync",
    "huggingface-cli",
    "hf",
    "curl",
    "wget",
    "git",
    "tar",
    "unzip",
    "aws",
    "gsutil",
    # LMCache's cache servers, a KV store and not an engine: lmcache_server (LMCache/LMCache@
    # 54641ca setup.py:84 console script), lmcache_experimental_server (run by KServe's LMCache
    # sample, kserve/website docs .../kvcache-offloading)
    "lmcache_server",
    "lmcache_experimental_server",
} | NOT_RUNNING
# vLLM's own clients: the load generator and the chat / completion clients send requests to a
# server elsewhere and start no engine (vllm/entrypoints/cli: bench serve, chat, complete,
# collect-env; `vllm bench latency|throughput` do run an engine); the pre-CLI load generator
# benchmarks/benchmark_serving.py (in the vllm-openai image's /vllm-workspace)
VLLM_CLIENT_SUBCOMMANDS = {"chat", "complete", "collect-env"}
VLLM_CLIENT_SCRIPTS = {"benchmark_serving.py", "benchmark_serving_structured_output.py"}
# Python modules run with `python -m MODULE` in vLLM images that load no model: Dynamo's
# OpenAI frontend and router (ai-dynamo/dynamo@04521f473b68375705a553f4082fac8254d71a2f:
# components/src/dynamo/frontend/main.py: an HTTP server that routes to the engine workers,
# dynamo.vllm; its pods carry no GPU). Only these names say "no server"; any other module is
# unknown (it may build an engine).
NO_SERVER_MODULES = {"dynamo.frontend"}


def _python_module(words: list[str]) -> str | None:
    """MODULE of `-m MODULE` at the head of a Python interpreter's arguments."""
    if len(words) > 1 and words[0] == "-m":
        return words[1]
    if words and words[0].startswith("-m") and len(words[0]) > 2:
        return words[0][2:]  # `-mMODULE`: Python takes the module glued to the option
    return None


def _vllm_client(sub: list[str]) -> bool:
    if not sub:
        return False
    if sub[0] in VLLM_CLIENT_SUBCOMMANDS:
        return True
    return sub[0] == "bench" and len(sub) > 1 and sub[1] == "serve"


# vLLM's multi-node example script: `multi-node-serving.sh worker` only runs `ray start
# --address=... --block` (vllm-project/vllm examples/online_serving/multi-node-serving.sh), as
# its predecessor, LWS's `ray_init.sh worker --ray_address=...`, did (kubernetes-sigs/lws@0102370
# docs/examples/vllm/build/ray_init.sh: the same worker / leader subcommands).
MULTI_NODE_SCRIPTS = ("multi-node-serving.sh", "ray_init.sh")


def _multi_node_subcommand(head: list[str]) -> str | None:
    """`worker` / `leader` when argv runs vLLM's multi-node script (directly or by bash / sh);
    "" for the script with no subcommand; None for anything else."""
    prog = os.path.basename(head[0])
    if prog in ("bash", "sh") and len(head) > 1:
        prog, head = os.path.basename(head[1]), head[1:]
    if prog not in MULTI_NODE_SCRIPTS:
        return None
    return head[1] if len(head) > 1 else ""


def _starts_no_server(
    argv: list[str],
    env: dict[str, str],
    unknown: set[str],
    maybe_env: bool,
    depth: int = 0,
    files: _Files | dict[str, str] | None = None,
) -> bool:
    """Whether every program argv runs (through wrappers and `sh -c` scripts) is visibly not a
    model server: Ray without --head starting a server, sleep, downloads, the multi-node
    worker script. False when anything runs that vllm-sizer cannot see into."""
    head = executed(argv)
    if not head:
        return not argv  # nothing runs at all (an empty script); a bare wrapper is unknown
    prog = os.path.basename(head[0])
    if prog == "ray":
        # `ray health-check` only probes the GCS (KServe's multinode worker waits with it)
        return len(head) > 1 and head[1] in ("start", "status", "stop", "health-check")
    if (sub := _multi_node_subcommand(head)) is not None:
        return sub == "worker"
    if prog == "vllm" and _vllm_client(head[1:]):
        return True
    files = _as_files(files)
    if re.fullmatch(r"python[0-9.]*", prog) and len(head) > 1:
        if _python_module(head[1:]) in NO_SERVER_MODULES:
            return True
        if head[1] == "-c" and len(head) > 2:
            # `python -c CODE`: the code is in the manifest (a download, a check): no server
            # when it names no vLLM and starts nothing it does not show
            return pyapp.starts_no_engine(head[2])
        if not head[1].startswith("-"):
            if os.path.basename(head[1]) in VLLM_CLIENT_SCRIPTS:
                return True
            text = files.get(head[1])  # a script mounted from a ConfigMap of the manifest
            return text is not None and pyapp.starts_no_engine(text)
    sh = find_shell(head) or _eval_script(head) or _script_file(head, files)
    if sh is not None:
        if depth >= 4:
            return False
        script, rest = sh
        cmds = run_script(script, env, unknown, maybe_env, positional=rest or ["sh"])
        return all(
            _starts_no_server(
                cmd.words, cmd.env, unknown, maybe_env, depth + 1, files.with_files(cmd.files)
            )
            for cmd in cmds
        )
    return prog in NO_SERVER_PROGRAMS


def _joins_ray(
    argv: list[str],
    env: dict[str, str],
    unknown: set[str],
    maybe_env: bool,
    depth: int = 0,
    files: _Files | dict[str, str] | None = None,
) -> bool:
    """Whether a program argv runs (through wrappers and `sh -c` scripts) joins a Ray cluster
    as a worker node: `ray start` without --head, or `multi-node-serving.sh worker`."""
    head = executed(argv)
    if not head:
        return False
    prog = os.path.basename(head[0])
    if prog == "ray":
        return len(head) > 1 and head[1] == "start" and "--head" not in head[2:]
    if (sub := _multi_node_subcommand(head)) is not None:
        return sub == "worker"
    files = _as_files(files)
    sh = find_shell(head) or _eval_script(head) or _script_file(head, files)
    if sh is None or depth >= 4:
        return False
    script, rest = sh
    cmds = run_script(script, env, unknown, maybe_env, positional=rest or ["sh"])
    return any(
        _joins_ray(cmd.words, cmd.env, unknown, maybe_env, depth + 1, files.with_files(cmd.files))
        for cmd in cmds
    )


def _locate(
    argv: list[str], env: dict[str, str], unknown: set[str], maybe_env: bool, depth: int = 0
) -> _Located | None:
    """The first invocation (count: how many there are)."""
    found = _locate_all(argv, env, unknown, maybe_env, depth)
    return found[0] if found else None


def _asks_for_help(flags: list[str]) -> bool:
    """`-h` / `--help` (vLLM's `--help=all`, `--help=<group>`) among the words argparse reads as
    options: it prints the help and exits before any engine starts."""
    for tok in flags[: limits.MAX_ARGS]:
        if tok == "--":
            return False
        if tok in ("-h", "--help") or tok.startswith("--help="):
            return True
    return False


def _fill_in_image_of_vllm(image: str, container: dict[str, Any], info: _ObjectInfo) -> bool:
    """An image the author fills in (V_IMAGE_URL, ${IMAGE}, <CONTAINER_IMAGE>) says nothing,
    so the name of the container or of the workload stands in for it: one that says vLLM, and
    no router, proxy or simulator (the args must still be a vLLM server's and nothing else)."""
    if not _is_fill_in_image(image):
        return False
    names = [str(container.get("name") or "").lower(), info.name.lower()]
    if not any("vllm" in n for n in names):
        return False
    return not any(
        any(word in n for word in NOT_ENGINE_IMAGE_WORDS)
        or NOT_ENGINE_IMAGE_TOKENS & set(re.split(r"[^a-z0-9]+", n))
        for n in names
    )


def _as_vllm_server(args: list[str], image: str | None) -> list[str] | None:
    """The vLLM entry point args-only fit, when they are a vLLM server's arguments and nothing
    else: they parse with vLLM's own parser (the image tag's version, else the newest) without
    unknown flags or errors and name a model: `--model X ...` (the api_server module) or
    `X --flag ...` (vllm serve's positional model). None otherwise."""
    name = images.repo_name(image)
    if any(role in name for role in NOT_ENGINE_IMAGE_WORDS) or (
        NOT_ENGINE_IMAGE_TOKENS & set(re.split(r"[^a-z0-9]+", name))
    ):
        return None  # a router, proxy, mock, simulator, balancer or client: takes --model too
    version = images.image_version(image)
    positional = not args[0].startswith("-")
    parsed = parse_vllm_args(args, version=version, positional_model=positional, strict=True)
    if not parsed.model or parsed.unknown_flags:
        return None
    # a value the author fills in (`--tensor-parallel-size ${GPU_COUNT}`) is no parse error of
    # the flags: the flag is still vLLM's, its value unknown (said by the read itself)
    if any(
        d.severity == "error" and not (d.raw is not None and _FILL_IN.search(d.raw))
        for d in parsed.diagnostics
    ):
        return None
    return ["vllm", "serve"] if positional else ["python3", "-m", API_SERVER_MODULE]


# a ConfigMap volume source: (its data, the `items` path → key, or None for every key)
_Source = tuple[dict[str, Any], dict[str, str] | None]
PATH_MAX = 4096  # Linux: no longer path can be opened, so none is a file the container reads


class _Files:
    """The files a container's commands can read, by path: those its scripts wrote or copied
    (`written`) over those mounted from the ConfigMaps the caller has, looked up on demand. A
    whole-map mount of a thousand keys, or a thousand mounts of one map, costs nothing until a
    script names one of its files (materialising them cost mounts x keys: 3000 x 3000 took
    200 s and 1.7 GB before)."""

    __slots__ = ("_lengths", "_mounts", "_seen", "_written")

    def __init__(
        self,
        mounts: dict[str, tuple[list[_Source], str | None]] | None = None,
        written: dict[str, str] | None = None,
    ):
        self._mounts = mounts or {}
        # mount points of whole directories, longest (most specific) first
        self._lengths = sorted(
            {len(k) for k, (_, sub) in self._mounts.items() if sub is None}, reverse=True
        )
        self._written = written or {}
        self._seen: dict[str, str | None] = {}

    def with_files(self, more: dict[str, str] | None) -> _Files:
        """These files over this table's (a script wrote them, or `cp` copied one there)."""
        if not more:
            return self
        out = _Files.__new__(_Files)
        out._mounts, out._lengths, out._seen = self._mounts, self._lengths, self._seen
        out._written = {**self._written, **more}
        return out

    def __bool__(self) -> bool:
        return bool(self._written or self._mounts)

    def get(self, path: object, default: str | None = None) -> str | None:
        if not isinstance(path, str):
            return default
        if path in self._written:
            return self._written[path]
        if path not in self._seen:
            self._seen[path] = self._mounted(path) if self._mounts else None
        found = self._seen[path]
        return default if found is None else found

    def __contains__(self, path: object) -> bool:
        return self.get(path) is not None

    def __getitem__(self, path: str) -> str:
        found = self.get(path)
        if found is None:
            raise KeyError(path)
        return found

    def _mounted(self, path: str) -> str | None:
        if not path.startswith("/") or len(path) > PATH_MAX:
            return None  # relative to an unknown workingDir, or longer than a path can be
        p = posixpath.normpath(path)
        key = p.rstrip("/")
        exact = self._mounts.get(key)
        if exact is not None and exact[1] is not None:  # a subPath mount: one file
            return _volume_file(exact[0], exact[1])
        for length in self._lengths:  # the deepest directory mount that holds the path
            m = self._mounts.get(p[:length]) if length < len(p) and p[length] == "/" else None
            if m is not None and m[1] is None:
                found = _volume_file(m[0], p[length + 1 :])
                if found is not None:
                    return found
        return None


def _volume_file(sources: list[_Source], rel: str) -> str | None:
    """The text at `rel` inside a ConfigMap (or projected) volume: its sources in order, the
    later winning; `items` (path → key) when given, else every key as a file."""
    for data, items in reversed(sources):
        key = items.get(rel) if items is not None else rel
        text = data.get(key) if isinstance(key, str) else None
        if isinstance(text, str):
            return text
    return None


def _mounted_files(view: ContainerView, config_maps: dict[str, dict[str, str]]) -> _Files:
    """The files the container mounts from ConfigMaps the caller has (the same namespace's;
    `check` gives those of its input): whole-map mounts, `items`, `subPath`, projected volumes.
    Names that are not strings (a list where a name should be) name nothing."""
    if not config_maps or not isinstance(config_maps, dict):
        return _Files()
    volumes: dict[str, dict[str, Any]] = {}
    for v in _list(view.pod_spec.get("volumes")):
        if isinstance(_dict(v).get("name"), str):
            volumes[v["name"]] = v
    by_volume: dict[str, list[_Source]] = {}
    mounts: dict[str, tuple[list[_Source], str | None]] = {}
    for m in _list(view.container.get("volumeMounts")):
        m = _dict(m)
        name, path = m.get("name"), m.get("mountPath")
        if not isinstance(name, str) or name not in volumes:
            continue
        if not isinstance(path, str) or not path.startswith("/") or len(path) > PATH_MAX:
            continue
        if name not in by_volume:
            by_volume[name] = _volume_sources(volumes[name], config_maps)
        sources = by_volume[name]
        if not sources:
            continue
        sub = m.get("subPath")
        mounts[posixpath.normpath(path).rstrip("/")] = (
            sources,
            posixpath.normpath(sub) if isinstance(sub, str) and sub else None,
        )
    return _Files(mounts)


def _volume_sources(vol: dict[str, Any], config_maps: dict[str, Any]) -> list[_Source]:
    """(ConfigMap data, items path → key or None) of a volume's ConfigMap sources the caller
    knows, each distinct source once (a projected volume may repeat one a thousand times)."""
    refs = [_dict(vol.get("configMap"))] + [
        _dict(_dict(src).get("configMap"))
        for src in _list(_dict(vol.get("projected")).get("sources"))
    ]
    out: list[_Source] = []
    seen: set[tuple[str, tuple[tuple[str, str], ...] | None]] = set()
    for ref in refs:
        name = ref.get("name")
        if not isinstance(name, str):
            continue
        data = config_maps.get(name)
        if not isinstance(data, dict) or not data:
            continue
        items: dict[str, str] | None = None
        if _list(ref.get("items")):
            items = {}
            for i in _list(ref.get("items")):
                key, rel = _dict(i).get("key"), _dict(i).get("path")
                if isinstance(key, str) and key and isinstance(rel, str) and rel:
                    items[posixpath.normpath(rel)] = key
            if not items:
                continue
        mark = (name, tuple(sorted(items.items())) if items is not None else None)
        if mark in seen:
            continue
        seen.add(mark)
        out.append((data, items))
    return out


_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")  # the kubelet skips other keys


def _env_from(
    container: dict[str, Any], config_maps: dict[str, dict[str, str]]
) -> tuple[dict[str, str], list[str]]:
    """The variables envFrom sets from ConfigMaps in the context (in order, later sources win,
    each key with the source's prefix), and the sources whose values are unknown (a Secret, a
    ConfigMap not in the context)."""
    env: dict[str, str] = {}
    unknown_sources: list[str] = []
    sources = _list(container.get("envFrom"))
    if len(sources) > limits.MAX_ENV_ENTRIES:
        # past the bound a source is not read, and what it may set is unknown (a later source
        # wins: one of them may set VLLM_CPU_KVCACHE_SPACE), never silently absent
        unknown_sources.append(
            f"{len(sources) - limits.MAX_ENV_ENTRIES} sources past the first "
            f"{limits.MAX_ENV_ENTRIES}"
        )
    keys_left = limits.MAX_ENV_FROM_KEYS
    for ef in sources[: limits.MAX_ENV_ENTRIES]:
        ef = _dict(ef)
        prefix = _str(ef.get("prefix")) or ""
        for key in ("configMapRef", "secretRef"):
            name = _dict(ef.get(key)).get("name")
            if not isinstance(name, str):
                continue
            data = config_maps.get(name) if key == "configMapRef" else None
            if data is None:
                unknown_sources.append(f"{key} {name}")
                continue
            if len(data) > keys_left:  # read as a Secret is: its variables unknown
                unknown_sources.append(
                    f"{key} {name}, past the {limits.MAX_ENV_FROM_KEYS} keys read of all sources"
                )
                continue
            keys_left -= len(data)
            for k, v in data.items():
                if isinstance(v, str) and _ENV_NAME.fullmatch(prefix + str(k)):
                    env[prefix + str(k)] = v
    return env, unknown_sources


def _read_env(
    container: dict[str, Any],
    config_maps: dict[str, dict[str, str]] | None = None,
    injected: dict[str, str] | None = None,
) -> tuple[dict[str, str], set[str], bool, list[Diagnostic]]:
    """The container's variables: envFrom's first (ConfigMaps in the context give their values),
    then env, which wins over envFrom as in the kubelet.

    `injected`: variables a controller puts at the front of the container's env with values
    known from the object (LWS_GROUP_SIZE: kubernetes-sigs/lws pkg/utils/pod/pod_utils.go
    addEnvVarsIfNotExists prepends them), so the kubelet has them when it expands the
    container's own env values (`PIPELINE_PARALLEL_SIZE=$(LWS_GROUP_SIZE)`). A name the
    container sets itself is not injected."""
    env, unknown_sources = _env_from(container, config_maps or {})
    unknown: set[str] = set()
    diags: list[Diagnostic] = []
    entries = _list(container.get("env"))
    own = {name for e in entries if isinstance(name := _dict(e).get("name"), str)}
    env.update({k: v for k, v in (injected or {}).items() if k not in own})
    if len(entries) > limits.MAX_ENV_ENTRIES:
        limits.current().note(
            f"more than {limits.MAX_ENV_ENTRIES} env entries: the values of the rest are unknown"
        )
        unknown |= {str(_dict(e).get("name")) for e in entries[limits.MAX_ENV_ENTRIES :]}
        entries = entries[: limits.MAX_ENV_ENTRIES]
    for item in entries:
        item = _dict(item)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            continue
        ref = _dict(_dict(item.get("valueFrom")).get("configMapKeyRef"))
        if ref and item.get("value") in (None, ""):
            # a key of a ConfigMap the caller has (check: the same file); the kubelet puts the
            # value in as is (no $(VAR) expansion)
            data = (
                (config_maps or {}).get(ref["name"]) if isinstance(ref.get("name"), str) else None
            )
            key = ref.get("key")
            if data is not None and isinstance(key, str) and isinstance(data.get(key), str):
                env[name] = data[key]
                unknown.discard(name)
                continue
        if item.get("valueFrom") is not None and item.get("value") in (None, ""):
            unknown.add(name)
            env.pop(name, None)
            if name in RELEVANT_ENV:
                diags.append(
                    Diagnostic(
                        "warning",
                        f"{name} comes from valueFrom: its value is unknown to vllm-sizer",
                        flag=name,
                    )
                )
            continue
        raw = item.get("value")
        value = (
            ""
            if raw is None
            else (("true" if raw else "false") if isinstance(raw, bool) else str(raw))
        )
        cut: list[str] = []
        value, _ = kube_expand(value, lambda n: env.get(n), cut)
        if cut:  # past the expansion bounds: the value the kubelet computes is unknown here
            env.pop(name, None)
            unknown.add(name)
            continue
        env[name] = value
        unknown.discard(name)
    maybe_env = bool(unknown_sources)
    if maybe_env:
        diags.append(
            Diagnostic(
                "info",
                "envFrom (" + (", ".join(unknown_sources) or "?") + "): variables "
                "it sets (e.g. VLLM_CPU_KVCACHE_SPACE) are unknown to vllm-sizer",
            )
        )
    return env, unknown, maybe_env, diags


def _memory(resources: dict[str, Any], section: str, diags: list[Diagnostic]) -> int | None:
    raw = _dict(resources.get(section)).get("memory")
    if raw is None:
        return None
    try:
        return parse_quantity(raw)
    except ValueError:
        diags.append(
            Diagnostic("error", "not a memory quantity", f"resources.{section}.memory", str(raw))
        )
        return None


def _memory_bounds(
    resources: dict[str, Any], blocked: str | None, diags: list[Diagnostic]
) -> tuple[int | None, int | None, str | None]:
    """(limit, request, why a patch is blocked) of a container's memory: an unreadable (or
    absurd: 1e31) quantity is not "unset", so nothing is ever written over it; a missing
    request is the limit, as Kubernetes defaults it."""
    limit = _memory(resources, "limits", diags)
    request = _memory(resources, "requests", diags)
    for section, value in (("limits", limit), ("requests", request)):
        raw_q = _dict(resources.get(section)).get("memory")
        if raw_q is not None and value is None:
            blocked = blocked or (
                f"resources.{section}.memory {str(raw_q)[:40]!r} "
                "is not a memory quantity vllm-sizer can read"
            )
    if request is None and limit is not None:
        request = limit
    return limit, request, blocked


def _dev_shm(view: ContainerView, diags: list[Diagnostic]) -> tuple[bool, int | None]:
    """(a memory-backed emptyDir is mounted at /dev/shm, its sizeLimit in bytes or None)."""
    mounts = {
        m["name"]
        for m in _list(view.container.get("volumeMounts"))
        if _dict(m).get("mountPath") in ("/dev/shm", "/dev/shm/") and isinstance(m.get("name"), str)
    }
    for vol in _list(view.pod_spec.get("volumes")):
        vol = _dict(vol)
        if isinstance(vol.get("name"), str) and vol["name"] in mounts:
            ed = _dict(vol.get("emptyDir"))
            if ed.get("medium") != "Memory":
                continue
            if ed.get("sizeLimit") is None:
                return True, None
            try:
                return True, parse_quantity(ed["sizeLimit"])
            except ValueError:
                diags.append(
                    Diagnostic(
                        "warning", "not a quantity", "emptyDir.sizeLimit", str(ed["sizeLimit"])
                    )
                )
                return True, None
    return False, None


def _default_model(version: VllmVersion | None) -> str:
    if version is not None and not version.at_least(0, 9):
        return "facebook/opt-125m"
    return "Qwen/Qwen3-0.6B"


def _storage_model(uri: str) -> str:
    """hf://org/name → org/name; other URIs as written (the catalog matches a path ending in
    org/name)."""
    for prefix in ("hf://", "huggingface://"):
        if uri.lower().startswith(prefix):
            return uri[len(prefix) :].split("@", 1)[0].strip("/")
    return uri


def _bare(
    info: _ObjectInfo, view: ContainerView, diags: list[Diagnostic], skip_reason: str | None = None
) -> Workload:
    c = view.container
    return Workload(
        kind=info.kind,
        api_version=info.api_version,
        namespace=info.namespace,
        name=info.name,
        container=view.name,
        container_path=view.container_path,
        settings=None,
        model=None,
        model_config=None,
        model_config_source="none",
        image=_str(c.get("image")),
        limit_bytes=None,
        request_bytes=None,
        resources_path=view.resources_path,
        annotations=dict(info.annotations),
        diagnostics=[dataclasses.replace(d, container=view.name) for d in info.diagnostics + diags],
        skip_reason=info.skip_reason or skip_reason or view.skip_reason,
        runtime=view.runtime,
        **_view_fields(view),
    )


def _view_fields(view: ContainerView) -> dict[str, Any]:
    placement = view.ray_placement
    if placement is not None and view.ray_accelerators is not None:
        placement = dataclasses.replace(placement, pod_accelerators=view.ray_accelerators)
    return dict(
        ray_placement=placement,
        patchable=view.patchable,
        pods_sized_at_creation=view.pods_sized_at_creation,
        labels_path=view.labels_path,
        limit_path=view.limit_path,
        request_path=view.request_path,
        env_path=view.env_path,
    )


def _view_device(
    info: _ObjectInfo,
    view: ContainerView,
    container: dict[str, Any],
    image: str | None,
    env: dict[str, str],
    resources: dict[str, Any],
    arg_device: str | None,
) -> DeviceFacts:
    """The device of a container as its view shows it: resources, the pod spec, its DRA claims
    (the view's classes and those of the claim objects in the context), the platform's hint."""
    return detect_device(
        image=image,
        arg_device=arg_device,
        env=env,
        resources=resources,
        pod_spec=view.pod_spec,
        container=container,
        dra_classes=view.dra_classes + claim_device_classes(view.pod_spec, info.context.objects),
        hint=view.device_hint,
    )


def _read_view(info: _ObjectInfo, view: ContainerView) -> Workload | None:
    c = view.container
    image = _str(c.get("image"))
    diags: list[Diagnostic] = [Diagnostic(sev, msg) for sev, msg in view.notes] + _stops(view)
    budget = limits.current()
    mark = budget.mark()  # a container whose scripts were cut is never "no server"
    if view.bare:
        return _bare(info, view, diags)
    if c.get("_dynamo"):
        diags.append(
            Diagnostic(
                "info",
                "python -m dynamo.vllm takes vLLM's engine flags: read as "
                "vLLM's api_server (Dynamo's own flags are not read)",
            )
        )
        if c.get("_dynamo_tag"):
            diags.append(
                Diagnostic(
                    "info",
                    f"image tag {c['_dynamo_tag']} is Dynamo's release, "
                    "not vLLM's: the vLLM version is unknown",
                )
            )

    env, unknown, maybe_env, env_diags = _read_env(
        c, info.context.config_maps, view.injected_values
    )
    diags += env_diags
    unknown |= {name for name in view.injected_env if name not in env}

    # command / args with the kubelet's $(VAR) expansion
    kube_unresolved: list[str] = []

    def kx(words: list[str]) -> list[str]:
        out = []
        for w in words:
            text, missing = kube_expand(w, lambda n: env.get(n))
            kube_unresolved.extend(missing)
            out.append(text)
        return out

    # past limits.MAX_ARGS words the command line cannot be read in full (later flags win in
    # argparse): one word more than the bound is kept so the vLLM invocation is seen and cut,
    # the rest is never expanded or parsed (a million args took 7-45 s before)
    raw_command = _list(c.get("command"))
    raw_args = _list(c.get("args"))
    if len(raw_command) + len(raw_args) > limits.MAX_ARGS:
        budget.note(f"a command line of more than {limits.MAX_ARGS} arguments: cut")
        raw_command = raw_command[: limits.MAX_ARGS + 1]
        raw_args = raw_args[: max(0, limits.MAX_ARGS + 1 - len(raw_command))]
    command = kx(_words(raw_command))
    args = kx(_words(raw_args))
    placeholders = sorted({m for w in command + args for m in _PLACEHOLDER.findall(w)})
    if placeholders:
        diags.append(
            Diagnostic(
                "warning",
                f"placeholder {', '.join(placeholders[:3])} left in the command line: fill it in "
                "(read as the word the author meant; a shell would take its `<` and `>` as "
                "redirections and lose the word after it)",
            )
        )
    for name in dict.fromkeys(kube_unresolved):
        if name in view.injected_env and name not in env:
            diags.append(
                Diagnostic(
                    "info",
                    f"$({name}) is set by the LeaderWorkerSet controller: read literally",
                    flag=f"$({name})",
                )
            )
        elif name in unknown:
            diags.append(
                Diagnostic(
                    "warning",
                    f"$({name}) comes from valueFrom: its value is unknown, read literally",
                    flag=f"$({name})",
                )
            )
        elif maybe_env:
            diags.append(
                Diagnostic(
                    "warning",
                    f"$({name}) may come from envFrom: its value is unknown, read literally",
                    flag=f"$({name})",
                )
            )
        else:
            diags.append(
                Diagnostic(
                    "warning",
                    f"$({name}) is not in the container's env: the kubelet leaves it literally",
                    flag=f"$({name})",
                )
            )

    if command:
        argv = command + args
    elif view.llmisvc:
        argv = args  # KServe's LLMInferenceServiceConfig supplies the command, not the image
    else:
        ep = images.entrypoint_for(image)
        if ep is not None:
            if ep[-1] != HF_SERVER_MODULE and (
                find_invocation(args) is not None or find_shell(args)
            ):
                diags.append(
                    Diagnostic(
                        "error",
                        f"args repeat a command although the image's ENTRYPOINT "
                        f"({' '.join(ep)}) runs first: vLLM will reject the arguments and the pod "
                        "will not start; sized from the command in args",
                    )
                )
                argv = args
            else:
                argv = ep + args
                row = images.vendor_image(image)
                diags.append(
                    Diagnostic(
                        "info",
                        f"command from the image's ENTRYPOINT "
                        f"({' '.join(ep)}, "
                        + (f"from {row.source}" if row else "by image tag")
                        + ")",
                    )
                )
        elif (
            view.llmisvc
            or find_invocation(args) is not None
            or find_shell(args)
            or _find_hf(args) is not None
        ):
            argv = args
        elif (
            image
            and ("vllm" in image.lower() or _fill_in_image_of_vllm(image, c, info))
            and args
            and (args[0].startswith("-") or _as_vllm_server(args, image))
            and _python_module(args) is None
        ):
            # An image name alone is no evidence of a vLLM server; an unknown image that says
            # vLLM and gets nothing but a vLLM server's arguments (a model and vLLM's own flags)
            # is built to take them: sized as that entry point, said as assumed.
            row = images.vendor_image(image)
            served = _as_vllm_server(args, image) if row is None else None
            if served:
                argv = [*served, *args]
                which = (
                    f"image {image} is a placeholder to fill in (the container or workload "
                    "name says vLLM)"
                    if _is_fill_in_image(image)
                    else f"image {image}: its ENTRYPOINT is unknown to vllm-sizer"
                )
                diags.append(
                    Diagnostic(
                        "warning",
                        f"{which}; only args are given, and they are a vLLM server's model and "
                        "flags and nothing else, so the ENTRYPOINT is assumed to be "
                        f"`{' '.join(served)}` (give the command, e.g. command: [vllm, serve], "
                        "to be sure)",
                    )
                )
            else:
                why = (
                    f"its build file has no ENTRYPOINT that runs vLLM ({row.source})"
                    if row
                    else "its ENTRYPOINT is unknown to vllm-sizer and the args are not all "
                    "vLLM flags with a --model"
                )
                diags.append(
                    Diagnostic(
                        "warning",
                        f"image {image}: only args are given and {why}: not sized (give "
                        "the command, e.g. command: [vllm, serve])",
                    )
                )
                argv = args
        elif _python_module(args) is not None:
            # args that begin with Python's `-m MODULE` (vLLM has no `-m` option): the image's
            # ENTRYPOINT is a Python interpreter and the args name the program it runs
            argv = ["python", *args]
        else:
            argv = args

    as_module = as_api_server_module(argv, images.api_server_copy(image))
    if as_module is not None:
        # vLLM's api_server.py run as a script file (the installed module's file, or the copy a
        # known image keeps of it): vLLM's OpenAI server, read as `python -m <module>`
        # the script's place: the first word that differs (`-m MODULE` replaced it)
        at = next(
            k for k, (old, new) in enumerate(zip(argv, as_module, strict=False)) if old != new
        )
        script = argv[at]
        diags.append(
            Diagnostic(
                "info",
                f"{script} is vLLM's api_server.py run as a script: read as "
                f"`python -m {as_module[at + 1]}`",
            )
        )
        argv = as_module

    mounted = _mounted_files(view, info.context.config_maps)
    found = _locate_all(
        argv, env, unknown, maybe_env, files=mounted, api_server_copy=images.api_server_copy(image)
    )
    # KServe's Hugging Face server with --backend=huggingface runs Transformers, not vLLM; an
    # invocation asking for --help prints it and exits (argparse), whatever else it says
    candidates = [
        cand
        for cand in found
        if not _asks_for_help(cand.flags)
        and (
            cand.kind != "hf"
            or (parse_hf_args(cand.flags[: limits.MAX_ARGS])[1].backend or "auto").lower()
            != "huggingface"
        )
    ]
    if not candidates and found and not budget.since(mark):
        return None
    located = candidates[0] if candidates else None
    if any(
        len(c.flags) > limits.MAX_ARGS or any(len(f) > limits.MAX_ARG_CHARS for f in c.flags)
        for c in candidates
    ):
        limits.current().note(
            f"the vLLM command line has more than {limits.MAX_ARGS} "
            f"arguments or one longer than {limits.MAX_ARG_CHARS} characters"
        )
        return _bare(info, view, diags)
    extra_flags = list(view.extra_flags)
    if view.llmisvc:
        additional = _eval_words(env.get("VLLM_ADDITIONAL_ARGS", ""))
        if "--lora-modules" in additional + args and "--enable-lora" in extra_flags:
            # KServe (userSuppliedLoRAConfig): adapters given by hand replace spec.model.lora
            cut = extra_flags.index("--enable-lora")
            extra_flags = extra_flags[:cut]
            diags.append(
                Diagnostic(
                    "info",
                    "--lora-modules given in the container: KServe does "
                    "not add spec.model.lora's flags",
                )
            )
        if located is None and command:
            # the container replaces KServe's command with its own that runs no vLLM (the
            # llm-d inference simulator, a mock): not a vLLM server
            return None
        if located is None:
            # KServe's template: vllm serve <model> ... $VLLM_ADDITIONAL_ARGS, then the
            # container's args, in front of which KServe puts the LoRA flags
            argv = ["vllm", "serve", MODEL_DIR, *additional, *extra_flags, *args]
            located = _Located("vllm", argv[2:], True, dict(env), [])
            candidates = [located]
        elif extra_flags:
            for cand in candidates:
                first = (
                    cand.flags[:1]
                    if cand.positional and cand.flags and not cand.flags[0].startswith("-")
                    else []
                )
                cand.flags = [*first, *extra_flags, *cand.flags[len(first) :]]
    if located is None:
        words = " ".join(argv)
        # evidence of vLLM: one of vLLM's (or KServe's) images, or a KServe runtime; a name
        # that merely contains "vllm" (vllm-sizer itself) is none
        vllm_like = (
            images.is_vllm_image(image)
            or images.is_hf_server_image(image)
            or images.vendor_image(image) is not None
            or view.runtime is not None
        )
        if (
            vllm_like
            and argv
            and _starts_no_server(argv, env, unknown, maybe_env, files=mounted)
            and not budget.since(mark)
        ):
            # a Ray worker, a multi-node worker, a pod that only sleeps; never a script that
            # was cut (what it runs past the cut is unknown)
            view.joins_ray = _joins_ray(argv, env, unknown, maybe_env, files=mounted)
            return None
        if vllm_like:
            diags.append(
                Diagnostic(
                    "warning",
                    "no vLLM command found (vllm serve, the api_server "
                    "module, or KServe's huggingfaceserver): cannot size",
                    raw=words[:200] or None,
                )
            )
            return _bare(info, view, diags)
        if argv and not budget.since(mark):
            # an image that does not say vLLM (rayproject/ray-llm) may still join a vLLM
            # engine's Ray cluster as a worker node: the object's leader decides
            view.joins_ray = _starts_no_server(
                argv, env, unknown, maybe_env, files=mounted
            ) and _joins_ray(argv, env, unknown, maybe_env, files=mounted)
        return None
    if len(candidates) > 1:
        diags.append(
            Diagnostic(
                "info",
                f"{len(candidates)} vLLM invocations in one container (a script's "
                "branches): each is read, and the one with the largest estimate is sized",
            )
        )
    primary = _read_invocation(info, view, c, image, env, list(diags), candidates[0], unknown)
    primary.alternatives = [
        _read_invocation(info, view, c, image, env, list(diags), alt, unknown)
        for alt in candidates[1:]
    ]
    return primary


def _read_invocation(
    info: _ObjectInfo,
    view: ContainerView,
    c: dict[str, Any],
    image: str | None,
    env: dict[str, str],
    diags: list[Diagnostic],
    located: _Located,
    unknown: set[str],
) -> Workload:
    """One vLLM invocation of a container → a Workload (settings, model, diagnostics)."""
    for fail in located.fails:
        diags.append(
            Diagnostic(
                "error",
                f"the shell exits at {fail}, a division by zero, before vLLM runs (bash: "
                "'division by 0', status 1; sh / dash: 'division by zero', status 2): the "
                "container stops and vLLM never starts",
                exits=True,
            )
        )
    failed = {f.partition(" (in an earlier")[0] for f in located.fails}
    for lit in dict.fromkeys(located.unresolved):
        if lit in failed:
            continue  # said above: the shell fails on it, it has no value
        diags.append(
            Diagnostic(
                "warning",
                f"shell expansion {lit} has no known value (valueFrom, "
                "envFrom, the image or a command): left literal",
                flag=lit,
            )
        )

    for tok in located.flags:
        if tok.startswith("-") and re.search(r"\s", tok.partition("=")[0].strip()):
            diags.append(
                Diagnostic(
                    "warning",
                    "one argument holds a flag and its value separated by a space: "
                    "argparse does not split it and reads it as one argument (write them as two items, "
                    "or use =)",
                    raw=tok[:120],
                )
            )
    version = images.image_version(image)
    loader = info.config_loader()
    files = _mounted_files(view, info.context.config_maps).with_files(located.files)
    if files:
        loader = _script_files_loader(files, loader, diags)
    hf_args = None
    # whose options the command line's parser adds to vLLM's (None: vLLM's own parser)
    extension = "Dynamo's" if c.get("_dynamo") else images.extends_vllm_parser(image)
    if located.kind == "hf":
        parsed, hf_args = parse_hf_args(located.flags, version, loader)
    else:
        floor = (
            vllm_flags.latest_version() if version is None and images.is_newest_tag(image) else None
        )
        parsed = parse_vllm_args(
            located.flags,
            version=version,
            config_loader=loader,
            positional_model=located.positional,
            # Dynamo's worker adds its own flags (--is-prefill-worker, --dyn-tool-call-parser,
            # --connector, ...; ai-dynamo/dynamo components/src/dynamo/vllm/backend_args.py and
            # dynamo.common's runtime group, which change between its releases) to vLLM's
            # parser: a flag vLLM lacks is one of them or Dynamo's error, not vLLM's
            strict=not extension,
            version_floor=floor,
        )
        if not located.positional:  # the api_server module takes no positional model
            # ... and runs exactly one API server in its own process, whatever
            # --api-server-count / --headless say (its __main__ calls run_server:
            # 0.19.0:vllm/entrypoints/openai/api_server.py:698-710)
            asked = parsed.values.get("api_server_count")
            if asked not in (None, 1) or parsed.values.get("headless"):
                diags.append(
                    Diagnostic(
                        "info",
                        "the api_server module runs one API server: --api-server-count and "
                        "--headless apply to `vllm serve` only",
                    )
                )
            parsed.values["api_server_count"] = 1
            parsed.values.pop("headless", None)
            for d in list(parsed.diagnostics):
                if d.message.startswith(UNEXPECTED_POSITIONAL):
                    parsed.diagnostics.remove(d)
                    parsed.diagnostics.append(
                        Diagnostic(
                            "warning",
                            "positional argument: the api_server module ignores it or "
                            "fails (pass the model with --model)",
                            raw=d.raw,
                        )
                    )
        if parsed.unknown_flags:
            diags.append(
                Diagnostic(
                    "info",
                    (
                        f"flags that are not vLLM's ({extension} own, or unknown to both), "
                        "not read: "
                        if extension
                        else "flags without a known memory effect, not read: "
                    )
                    + " ".join(dict.fromkeys(parsed.unknown_flags)),
                )
            )
    if parsed.config_file is None and info.vllm_config is not None:
        diags.append(
            Diagnostic(
                "info",
                f"{ANNOTATION_VLLM_CONFIG} is set but the command has no "
                "two-token --config FILE: ignored",
            )
        )

    eff_env = {**env, **located.env}

    resources = _dict(c.get("resources"))
    limit, request, patch_blocked = _memory_bounds(resources, view.patch_blocked, diags)
    pod_limit = _dict(_dict(view.pod_spec.get("resources")).get("limits")).get("memory")
    if pod_limit is not None:
        diags.append(
            Diagnostic(
                "info",
                "a pod-level memory limit also applies (shared by all "
                "containers); only the container's limit is sized",
                "spec.resources.limits.memory",
                str(pod_limit),
            )
        )

    arg_device = parsed.values.pop("device", None)
    dev = _view_device(info, view, c, image, eff_env, resources, arg_device)
    diags += dev.diagnostics
    env_values, env_diags = env_settings(eff_env, dev.device, version)
    diags += env_diags
    env_values.pop("device", None)

    preload = eff_env.get("LD_PRELOAD")
    if preload is not None:
        allocator = "tcmalloc" if "tcmalloc" in preload else "unknown"
    else:
        allocator = "tcmalloc" if images.preloads_tcmalloc(image) else "unknown"

    # ------------------------------------------------------------------ model
    skip_reason = None
    storage = view.storage_uri
    model = parsed.model
    if hf_args is not None:
        if (hf_args.backend or "auto").lower() == "huggingface":
            skip_reason = "KServe Hugging Face server with --backend=huggingface: not vLLM"
        elif (hf_args.backend or "auto").lower() != "vllm":
            diags.append(
                Diagnostic(
                    "info",
                    "KServe's Hugging Face server uses vLLM only where "
                    "vLLM imports and supports the architecture (else the "
                    "Transformers backend, not sized by this estimate)",
                )
            )
        # huggingfaceserver: --model_id wins; otherwise --model_dir (default /mnt/models,
        # where KServe downloads the storageUri)
        model = hf_args.model_id or hf_args.model_dir or MODEL_DIR
    lookup_keys: list[str] = []
    if (
        model
        and model.startswith("/")
        and ("//" in model or any(seg in (".", "..") for seg in model.split("/")))
    ):
        # `..` and `.` name the directory the path denotes: /mnt/models/../etc is not KServe's
        # download, /models/Org/Name/.. is not Org/Name
        norm = posixpath.normpath(model)
        diags.append(Diagnostic("info", f"model path {model[:200]} read as {norm[:200]}"))
        model = norm
    if (model and storage and (model == MODEL_DIR or model.startswith(MODEL_DIR + "/"))) or (
        model is None and storage and hf_args is not None
    ):
        model = _storage_model(storage)
    unseen = model is None and view.unseen_model is not None
    if unseen:
        # the platform gives vLLM a model this object does not show: unknown, and said so
        model = str(view.unseen_model)
    elif model is None:
        model = _default_model(version)
        diags.append(
            Diagnostic(
                "warning", f"no model on the command line: vLLM serves its default model {model}"
            )
        )
    if model == MODEL_DIR:
        diags.append(
            Diagnostic(
                "warning", f"model {MODEL_DIR} with no storageUri: the model behind it is unknown"
            )
        )
    if model.startswith("/"):
        downloaded = _downloaded_id(view, model)
        if downloaded is not None:
            diags.append(
                Diagnostic(
                    "info",
                    f"model path {model} read as {downloaded[0]}: {downloaded[1]} downloads it "
                    "into that directory",
                )
            )
            model = downloaded[0]
        elif (cached := hub_cache_id(model)) is not None:
            diags.append(
                Diagnostic(
                    "info",
                    f"model path {model} read as {cached}: a Hugging Face cache directory "
                    "(models--ORG--NAME) holds that repository",
                )
            )
            model = cached
    lookup_keys.append(model)
    parsed.model = model

    # ------------------------------------------------------------------ KServe HF rules
    if hf_args is not None:
        dtype = (hf_args.dtype or "auto").lower()
        if dtype == "auto":
            if dev.device in ("cuda", "rocm"):
                parsed.values["dtype"] = "float16"
                diags.append(
                    Diagnostic(
                        "info",
                        "KServe's Hugging Face server turns --dtype auto into float16 on GPU",
                        "--dtype",
                        hf_args.dtype or "auto",
                    )
                )
            elif dev.device == "cpu":
                parsed.values["dtype"] = "float32"
                diags.append(
                    Diagnostic(
                        "info",
                        "KServe's Hugging Face server turns --dtype auto "
                        "into float32 on CPU (twice the weights of bfloat16; "
                        "--dtype bfloat16 halves them)",
                        "--dtype",
                        hf_args.dtype or "auto",
                    )
                )
        if dev.device in ("cuda", "rocm") and dev.gpu_count:
            set_tp = parsed.values.get("tensor_parallel_size")
            if set_tp is not None and set_tp != dev.gpu_count:
                diags.append(
                    Diagnostic(
                        "warning",
                        f"KServe's Hugging Face server sets tensor "
                        f"parallel to the GPU count ({dev.gpu_count})",
                        "--tensor-parallel-size",
                        str(set_tp),
                    )
                )
            parsed.values["tensor_parallel_size"] = dev.gpu_count

    if parsed.lora_modules and not parsed.values.get("enable_lora"):
        diags.append(
            Diagnostic(
                "warning",
                "--lora-modules without --enable-lora: vLLM refuses to start",
                "--lora-modules",
                " ".join(parsed.lora_modules)[:200],
            )
        )

    shm = _dev_shm(view, diags)
    facts: dict[str, Any] = dict(
        device=dev.device,
        vllm_version=str(version) if version else None,
        gpu_memory_bytes=dev.gpu_memory_bytes,
        gpu_product=dev.gpu_product,
        memory_limit_bytes=limit,
        allocator=allocator,
        dev_shm_memory=shm[0],
        dev_shm_bytes=shm[1],
        **env_values,
    )
    if view.multinode_nodes or view.node_role:
        facts |= {"node_role": view.node_role or "leader", "nodes": view.multinode_nodes}
        facts["local_ranks"] = _node_ranks(view, dev.gpu_count)
    settings, sdiags = parsed.to_settings(**facts)
    diags += sdiags

    source: ModelConfigSource
    if unseen and info.model_config is not None:
        config, source, model_note = info.model_config, "annotation", None
    elif unseen:
        config, source, model_note = None, "none", None
        diags.append(
            Diagnostic(
                "error",
                f"cannot size: no config.json known for the model of {model}, which is not in "
                f"view here (the platform passes it to vLLM). {_how_to_supply(model, info)}",
            )
        )
    else:
        config, source, cdiags, model_note = _resolve_config(
            info, lookup_keys, _served_names(located.flags)
        )
        diags += cdiags

    return Workload(
        kind=info.kind,
        api_version=info.api_version,
        namespace=info.namespace,
        name=info.name,
        container=view.name,
        container_path=view.container_path,
        settings=settings,
        model=model,
        model_config=config,
        model_config_source=source,
        image=image,
        limit_bytes=limit,
        request_bytes=request,
        resources_path=view.resources_path,
        env=dict(env),
        annotations=dict(info.annotations),
        diagnostics=[dataclasses.replace(d, container=view.name) for d in info.diagnostics + diags],
        skip_reason=info.skip_reason or skip_reason or view.skip_reason,
        effective_env=eff_env,
        gpu_count=dev.gpu_count,
        device=dev.device,
        vllm_version=version,
        lora_modules=list(parsed.lora_modules),
        argv=list(located.flags),
        runtime=view.runtime,
        model_note=model_note,
        patch_blocked=patch_blocked,
        env_unknown=sorted(unknown - set(eff_env)),
        env_from=_env_from(c, info.context.config_maps)[1],  # the sources not known here
        **_view_fields(view),
    )


_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _downloaded_id(view: ContainerView, path: str) -> tuple[str, str] | None:
    """(org/name, which container) when a container of the pod (an init container, or this
    container's own script) names a model repo or a storage URI ending in org/name whose name
    is the model path's last part: `huggingface-cli download org/name --local-dir /models/name`,
    `aibrix_download --model-uri tos://bucket/org/name/ --local-dir /models/`. One distinct id
    only (two orgs of the same name: nothing is assumed); a path longer than a path can be names
    no download."""
    target = posixpath.normpath(path) if path.startswith("/") else path.rstrip("/")
    leaf = target.rsplit("/", 1)[-1].lower()
    if not leaf or leaf in (".", "..") or len(target) > PATH_MAX:
        return None
    by_dir: dict[str, tuple[str, str]] = {}  # a download whose output directory is the path
    by_name: dict[str, tuple[str, str]] = {}  # a repo whose name is the path's last part
    containers = [_dict(c) for c in _list(view.pod_spec.get("initContainers"))]
    containers.append(view.container)
    for c in containers:
        words = _words(c.get("command")) + _words(c.get("args"))
        words += [str(_dict(e).get("value")) for e in _list(c.get("env")) if _dict(e).get("value")]
        tokens = " ".join(words).split()
        who = "init container" if c is not view.container else "the container's command"
        who = f"{who} {c.get('name') or '?'}"
        # AIBrix's downloader writes into <local-dir>/<model name> (--model-name, or the env
        # DOWNLOADER_MODEL_NAME: vllm-project/aibrix python/aibrix/aibrix/downloader)
        env_name = next(
            (
                str(_dict(e).get("value"))
                for e in _list(c.get("env"))
                if _dict(e).get("name") == "DOWNLOADER_MODEL_NAME" and _dict(e).get("value")
            ),
            None,
        )
        for command in _download_commands(tokens):
            ids = [i for i in (_repo_id_in(w) for w in command) if i]
            names = {env_name} if env_name else set()
            names.update(_flag_values(command, {"--model-name", "--model_name"}))
            outs = {_out_dir(o) for o in _flag_values(command, _OUTPUT_DIR_FLAGS)}
            if _writes_to(target, outs, names) and len({i.lower() for i in ids}) == 1:
                by_dir.setdefault(ids[0].lower(), (ids[0], who))
            for cand in ids:
                if cand.rsplit("/", 1)[-1].lower() == leaf:
                    by_name.setdefault(cand.lower(), (cand, who))
    for found in (by_dir, by_name):
        if len(found) == 1:
            return next(iter(found.values()))
    return None


def _out_dir(word: str) -> str:
    word = word.strip("'\"")
    return posixpath.normpath(word) if word.startswith("/") else word.rstrip("/")


def _writes_to(target: str, outs: set[str], names: set[str]) -> bool:
    """Whether a download into one of `outs` (itself, or <out>/<model name>) writes `target`:
    a lookup per `/` of the target, not every directory paired with every name (5000 of each
    built 25 million strings: 30 s and 1.6 GB before)."""
    if target in outs:
        return True
    if not names or not outs:
        return False
    i = target.find("/")
    while i >= 0:
        if target[:i] in outs and target[i + 1 :] in names:
            return True
        i = target.find("/", i + 1)
    return False


# Flags that name where a download tool writes the model: huggingface-cli / hf download
# --local-dir, kthena's downloader --output-dir, s5cmd / aws-style --destination, -o.
_OUTPUT_DIR_FLAGS = {
    "--local-dir",
    "--local_dir",
    "--output-dir",
    "--output_dir",
    "--output",
    "--destination",
    "--dest",
    "--target-dir",
    "-o",
}
_SEPARATORS = {";", "&&", "||", "|", "&"}


def _flag_values(command: list[str], flags: set[str]) -> list[str]:
    """Values of `--flag value` / `--flag=value` in one command's words."""
    out = []
    for k, word in enumerate(command):
        key, eq, value = word.partition("=")
        if key in flags:
            out.append(value if eq else command[k + 1] if k + 1 < len(command) else "")
    return out


def _download_commands(tokens: list[str]) -> list[list[str]]:
    """The words of a container split at shell command separators (an approximation of its
    commands, enough to pair a repo id with the directory the same command writes to)."""
    out: list[list[str]] = [[]]
    for tok in tokens:
        end = tok.endswith(";") and tok != ";"
        tok = tok.rstrip(";") if end else tok
        if tok in _SEPARATORS:
            out.append([])
            continue
        out[-1].append(tok)
        if end:
            out.append([])
    return [c for c in out if c]


def _repo_id_in(word: str) -> str | None:
    """org/name named by a word: a repo id, or a storage URI ending in org/name."""
    word = word.strip("'\"").rstrip("/")
    if "://" in word:
        parts = [p for p in word.split("://", 1)[1].split("/") if p]
        if len(parts) >= 3 or (word.startswith("hf") and len(parts) == 2):
            return "/".join(parts[-2:])
        return None
    if _REPO_ID.match(word) and not word.startswith("."):
        return word
    return None


def _eval_words(value: str) -> list[str]:
    """The words of VLLM_ADDITIONAL_ARGS as KServe's LLMInferenceService template runs them:
    `eval "exec vllm serve ... ${VLLM_ADDITIONAL_ARGS} $@"` (KServe's Go package `identity`,
    TestExtractRuntimeConfigFactorsFromShellContainer, which models that container), so the
    shell's quotes apply: KServe's P/D sample writes
    `--kv_transfer_config '{"kv_connector":"NixlConnector",...}'` (docs/samples/llmisvc/
    prefill-decode). Unbalanced quotes: plain whitespace splitting."""
    import shlex

    try:
        return shlex.split(value)
    except ValueError:
        return value.split()


def _served_names(flags: list[str]) -> list[str]:
    """--served-model-name values (nargs="+"): aliases that may name the real model."""
    out: list[str] = []
    for i, tok in enumerate(flags):
        key, eq, value = tok.partition("=")
        if key.replace("_", "-") != "--served-model-name":
            continue
        if eq:
            out.append(value)
            continue
        for nxt in flags[i + 1 :]:
            if nxt.startswith("-"):
                break
            out.append(nxt)
    return [v for v in out if v][:8]


def _script_files_loader(
    files: _Files,
    fallback: Callable[[str], dict[str, Any] | None] | None,
    diags: list[Diagnostic],
) -> Callable[[str], dict[str, Any] | None]:
    """--config FILE written by the container's own script (`cat > FILE <<EOF`) first."""

    def load(path: str) -> dict[str, Any] | None:
        if path in files:
            try:
                loaded = limits.load_yaml(files[path])
            except Exception as exc:  # noqa: BLE001 - yaml raises many types
                diags.append(
                    Diagnostic(
                        "error",
                        f"the script writes this --config file, but it "
                        f"is not read ({(str(exc).splitlines() or ['?'])[0]})",
                        "--config",
                        path,
                    )
                )
                return None
            if isinstance(loaded, dict):
                diags.append(
                    Diagnostic(
                        "info",
                        "--config file contents read from the script that writes it",
                        "--config",
                        path,
                    )
                )
                return loaded
        return fallback(path) if fallback else None

    return load


def _resolve_config(
    info: _ObjectInfo, keys: list[str], served_names: list[str] | None = None
) -> tuple[dict[str, Any] | None, ModelConfigSource, list[Diagnostic], str | None]:
    """(config, source, diagnostics, note) for the model the container serves: the object's
    annotation, then the catalog by exact id or path, then the caller's resolver (cluster
    ConfigMaps, the Hub), then the catalog's name rules (estimator.names), then the
    --served-model-name aliases by the same rules. `note` says which name rule was used."""
    diags: list[Diagnostic] = []
    if info.model_config is not None:
        return info.model_config, "annotation", diags, None
    for key in keys:
        cfg = info.model_configs.get(catalog.normalise_model_id(key))
        if cfg is not None:
            return cfg, "annotation", diags, None
    resolutions = [resolve_model(key) for key in keys]
    for res in resolutions:
        if res.config is not None and res.rule in ("exact", "path"):
            if res.note:
                diags.append(Diagnostic("info", res.note, raw=res.query))
            return res.config, "catalog", diags, res.note
    resolver = info.context.model_resolver
    if resolver is not None:
        for key in keys:
            try:
                cfg = resolver(key)
            except Exception as exc:  # noqa: BLE001 - a caller's resolver must not break us
                diags.append(
                    Diagnostic(
                        "warning", f"model resolver failed for {key!r}: {type(exc).__name__}: {exc}"
                    )
                )
                continue
            if isinstance(cfg, dict) and cfg:
                return cfg, "resolver", diags, None
    by_alias = [resolve_model(n) for n in (served_names or []) if n not in keys]
    for res, via in [(r, None) for r in resolutions] + [
        (r, "--served-model-name") for r in by_alias
    ]:
        if res.config is not None:
            note = res.note if via is None else f"{res.note}, the name given by {via}"
            diags.append(
                Diagnostic(
                    "warning",
                    f"{note}; if that is wrong, supply the config with the "
                    f"{ANNOTATION_MODEL_CONFIG} annotation",
                    raw=res.query,
                )
            )
            return res.config, "catalog", diags, note
    model = keys[0] if keys else "(none)"
    refusal = next((r.refusal for r in resolutions if r.refusal), None)
    diags.append(
        Diagnostic(
            "error",
            f"cannot size: no config.json known for model {model!r} ("
            + (
                refusal
                if refusal
                else "not in the built-in catalog and no "
                "name rule matches"
                + (", not found by the resolver" if resolver is not None else "")
            )
            + "). "
            + _how_to_supply(model, info),
            raw=model,
        )
    )
    return None, "none", diags, None


def _how_to_supply(model: str, info: _ObjectInfo) -> str:
    """The way of supplying a config that fits this object and this kind of model name."""
    where = f"{info.kind} {info.namespace + '/' if info.namespace else ''}{info.name}"
    annotation = (
        f"set the {ANNOTATION_MODEL_CONFIG} annotation on {where} to the model's config.json"
    )
    if _PLACEHOLDER.search(model) or re.search(r"\$\{?[A-Za-z_]", model):
        return (
            f"{model!r} is a placeholder or a variable the manifest leaves for you to fill in "
            "(a tutorial's template): put the model there, or "
            f"{annotation}"
        )
    if model.startswith(("/", ".")) or (
        "://" in model and not model.lower().startswith(("hf://", "huggingface://"))
    ):
        return (
            f"The model is read from {model!r}, which vllm-sizer cannot open: {annotation} "
            "(the file vLLM reads there at start)"
        )
    hub_id = catalog.normalise_model_id(model)
    if hub_id.count("/") == 1:
        org, name = model.split("://", 1)[-1].split("@", 1)[0].strip("/").split("/", 1)
        return (
            f"Supply it: {annotation}, or put it in a ConfigMap labelled "
            f"{MODEL_CONFIGS_LABEL}=true under the key '{org}--{name}', or enable the "
            "Hub lookup (hub.enabled)"
        )
    return f"Supply it: {annotation}"


__all__ = ["ReadContext", "Workload", "read_workloads"]
