"""One container as the reader sees it, after any KServe runtime merge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    notes: list[tuple[str, str]] = field(default_factory=list)  # (severity, message)
    skip_reason: str | None = None
    injected_env: tuple[str, ...] = ()  # set by a controller at runtime (values unknown)
    patch_blocked: str | None = None  # the effective memory limit is not known (Workload)
