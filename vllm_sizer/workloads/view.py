"""One container as the reader sees it, after any KServe runtime merge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .model import RayPlacement
from .vllm_args import Severity


@dataclass
class ContainerView:
    name: str
    container: dict[str, Any]  # the (merged) container spec
    pod_spec: dict[str, Any]  # nodeSelector, affinity, volumes, runtimeClassName, ...
    container_path: str
    resources_path: str
    # KServe: model location (storageUri) and the runtime used
    storage_uri: str | None = None
    runtime: str | None = None
    # LLMInferenceService: vLLM flags KServe adds (lora, parallelism) and the model URI
    extra_flags: list[str] = field(default_factory=list)
    model_uri: str | None = None
    llmisvc: bool = False
    notes: list[tuple[Severity, str]] = field(default_factory=list)  # (severity, message)
    # the platform creates no running container from this (KServe cannot render the
    # runtime's template): said as an error on which the pod will not start (never sized)
    stops: str | None = None
    skip_reason: str | None = None
    injected_env: tuple[str, ...] = ()  # set by a controller at runtime (values unknown)
    # set by a controller with values known from the object (LWS_GROUP_SIZE: the LWS size)
    injected_values: dict[str, str] = field(default_factory=dict)
    # False: the object cannot carry this container's memory limit (the platform builds the
    # pod, or the kind is read by structure only): estimated and reported, never patched
    patchable: bool = True
    # False: no pod-level review sizes its pods either (a Ray worker's pod runs `ray start`,
    # the engine arrives later through Ray): the estimate is advice only
    pods_sized_at_creation: bool = True
    labels_path: str | None = None  # JSON pointer of the pods' label map in the object
    limit_path: str | None = None  # memory limit / request pointers when not under resources
    request_path: str | None = None
    env_path: str | None = None  # the container's env list, when not container_path + /env
    dra_classes: tuple[str, ...] = ()
    # (device, why) when the platform, not the pod spec, says where it runs (KAITO presets)
    device_hint: tuple[str, str] | None = None  # DRA device classes the platform adds to the pod
    bare: bool = False  # no container to read: a Workload that only carries notes/skip_reason
    # the platform passes vLLM a model from an object out of view ("OpenModel X"): the model is
    # unknown, never vLLM's default model (the command line has no model of its own)
    unseen_model: str | None = None
    patch_blocked: str | None = None  # the effective memory limit is not known (Workload)
    # set by the reader: the container starts no server but joins a Ray cluster (`ray start
    # --address`, multi-node-serving.sh worker): a multi-node engine's worker node
    joins_ray: bool = False
    # the head of a multi-node engine over this many pods (KServe's multinode predictor, as
    # its controller lays the Ray cluster out): read with role "leader" (its own GPUs' ranks
    # and the Ray head), or `node_role` when given
    multinode_nodes: int | None = None
    # "replica": a Ray worker group's container that runs an engine Ray places there (Ray
    # Serve LLM, a RayJob's vLLM actors): its own GPUs' ranks, the engine's front processes
    # and Ray's node processes (EngineSettings.node_role)
    node_role: str | None = None
    # a container that joins the Ray cluster of the object's engine head as a worker node
    # (KServe's predictor worker): linked to the head's Workload by the reader
    ray_worker_of_head: bool = False
    # the accelerators Ray declares on this pod (`ray start --num-gpus`, KubeRay's rayStartParams
    # or group resources over the container's limit: platforms.annotate_ray_nodes); None: not
    # a KubeRay group's Ray container
    ray_accelerators: int | None = None
    # a Ray Serve engine's replica placement (Workload.ray_placement)
    ray_placement: RayPlacement | None = None
