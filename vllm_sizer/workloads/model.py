"""The reader's output: one Workload per vLLM container, parsed once at the edge."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..estimator.settings import EngineSettings
from ..estimator.versions import VllmVersion
from .vllm_args import Diagnostic

ModelConfigSource = Literal["annotation", "catalog", "resolver", "none"]


@dataclass(frozen=True)
class RayPlacement:
    """What Ray Serve needs to place one engine's replicas on a Ray worker group's pods, as
    the RayService says it (platforms.read_ray_serve_llm); the pod total that follows from it
    is decided in policy/pods.py. Each replica is a placement group of one accelerator bundle
    per GPU worker (tp·pp, the replica actor merged into the first: ray-project/ray@898d8a70
    python/ray/llm/_internal/serve/core/server/llm_server.py get_deployment_options)."""

    engine: str  # the engine's name (model id or app name)
    container: str  # the worker group's Ray container the engine lands in
    replicas: int | None  # the most replicas the config lets run; None: not bounded by it
    replicas_source: str
    # accelerators per replica from the LLMConfig's placement_group_config (bundles' total),
    # or per GPU worker (bundle_per_worker, × tp·pp); None: one per worker (Ray's default)
    replica_accelerators: float | None = None
    worker_accelerators: float | None = None
    actor_accelerators: float = 0.0  # ray_actor_options num_gpus, merged into the first bundle
    max_per_node: int | None = None  # deployment_config max_replicas_per_node
    accelerator_type: str | None = None  # a node holds one type: engines of two never share one
    pod_accelerators: int | None = None  # what Ray declares on each pod of the group (reader)


@dataclass
class Workload:
    """One vLLM container of one object, with everything sizing needs."""

    kind: str
    api_version: str
    namespace: str | None
    name: str
    container: str
    # JSON pointer of the container inside the object (e.g. /spec/template/spec/containers/0),
    # or of the KServe model spec (/spec/predictor/model); patches are made against it.
    container_path: str
    settings: EngineSettings | None  # None when the command line could not be read at all
    model: str | None
    model_config: dict[str, Any] | None
    model_config_source: ModelConfigSource
    image: str | None
    # Effective memory limit / request as the pod will get them (KServe runtime merge applied).
    limit_bytes: int | None
    request_bytes: int | None
    # Where limits/requests would be written for this container (JSON pointer of `resources`).
    resources_path: str
    env: dict[str, str] = field(default_factory=dict)  # literal env values only
    annotations: dict[str, str] = field(default_factory=dict)  # the object's own
    diagnostics: list[Diagnostic] = field(default_factory=list)
    skip_reason: str | None = None  # owned by a controller, skip annotation, ...
    # Added by the reader (all optional):
    # the environment the vLLM process sees: literal env plus what a `sh -c` script exports
    effective_env: dict[str, str] = field(default_factory=dict)
    gpu_count: int | None = None  # accelerators requested (nvidia.com/gpu, MIG slices, amd.com/gpu)
    device: str = "unknown"  # cpu | cuda | rocm | other | unknown (also in settings.device)
    vllm_version: VllmVersion | None = None  # from the image tag (source "image tag"), else None
    lora_modules: list[str] = field(default_factory=list)  # --lora-modules items as written
    argv: list[str] = field(default_factory=list)  # the vLLM invocation's flags after expansion
    runtime: str | None = None  # KServe ServingRuntime used (name), for InferenceServices
    # how the model name was matched to a catalog geometry when not exactly (estimator.names)
    model_note: str | None = None
    # False: the object cannot carry the memory limit (KubeAI Model, a kind read by structure,
    # Ray Serve LLM engine arguments): estimated and reported, never patched or denied
    patchable: bool = True
    pods_sized_at_creation: bool = True  # False: nothing sizes its pods (Ray Serve engines)
    labels_path: str | None = None  # the pods' label map (JSON pointer), when the reader knows it
    limit_path: str | None = None  # default: resources_path + /limits/memory
    request_path: str | None = None  # default: resources_path + /requests/memory
    env_path: str | None = None  # default: container_path + /env

    @property
    def memory_limit_path(self) -> str:
        return self.limit_path or self.resources_path + "/limits/memory"

    @property
    def memory_request_path(self) -> str:
        return self.request_path or self.resources_path + "/requests/memory"

    @property
    def env_list_path(self) -> str:
        return self.env_path or self.container_path + "/env"

    # The container's other vLLM invocations (a script's if/else branches, ...), each read
    # like this one (same container, paths and limits): the estimate sizes the largest.
    alternatives: list[Workload] = field(default_factory=list)
    # Why no resources may be written for this container although it is read: its effective
    # memory limit is not known (a KServe runtime vllm-sizer cannot see, an unreadable quantity).
    patch_blocked: str | None = None
    env_unknown: list[str] = field(default_factory=list)  # env names set from valueFrom
    env_from: list[str] = field(default_factory=list)  # envFrom sources: may set any name
    # a Ray Serve engine on a Ray worker group: how its replicas are placed (policy/pods.py)
    ray_placement: RayPlacement | None = None


@dataclass
class ReadContext:
    """What the caller knows beyond the object: runtimes, ConfigMaps, model resolver."""

    serving_runtimes: dict[str, dict[str, Any]] = field(default_factory=dict)  # name → object
    cluster_serving_runtimes: dict[str, dict[str, Any]] = field(default_factory=dict)
    model_resolver: Callable[[str], dict[str, Any] | None] | None = None
    # ConfigMaps of the object's own namespace (name → data) the caller has: files a platform
    # mounts from them (KAITO's inference config). `check` gives those of its input.
    config_maps: dict[str, dict[str, str]] = field(default_factory=dict)
    # Objects a platform's custom resource refers to, by (kind, name): llmaz OpenModels
    # (cluster-scoped). `check` gives those of its input; the webhook lists none.
    objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
