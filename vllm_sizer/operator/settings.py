"""Operator settings, read once at start-up from environment variables (the Helm chart sets
them from values / a ConfigMap). Every name here is part of the chart's contract."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from ..policy.settings import PolicySettings
from ..workloads import kinds as _kinds
from ..workloads.quantity import parse_quantity

# ---- names shared by the server, the controller, the chart and manifests/ -----------------
WEBHOOK_PORT = 9443
METRICS_PORT = 8080
HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"
# Admission routes: the webhook configurations' service paths must name these exactly.
MUTATE_PATH = "/mutate"
VALIDATE_PATH = "/validate"
MUTATING_CONFIG_NAME = "vllm-sizer-mutating"
VALIDATING_CONFIG_NAME = "vllm-sizer-validating"
CERT_SECRET_NAME = "vllm-sizer-webhook-tls"

# Workload kinds the webhooks serve and `check` sizes: (group, version, plural, kind), from the
# one kinds table (vllm_sizer/workloads/kinds.py); the controller watches WATCHED_RESOURCES
# (the same minus Pod and ReplicaSet, which come in bulk and are sized at pod creation).
SERVED_RESOURCES: tuple[tuple[str, str, str, str], ...] = _kinds.served_resources()
WATCHED_RESOURCES: tuple[tuple[str, str, str, str], ...] = _kinds.watched_resources()

Env = Mapping[str, str]


# The decision's settings an install configures; the LimitRange ceiling is found per namespace.
POLICY_FIELDS = tuple(f for f in PolicySettings.model_fields if f != "limit_range_max_bytes")


class OperatorSettings(BaseModel):
    """VLLM_SIZER_* environment variables → typed settings. The decision's own settings (mode,
    headroom, rounding, pinned KV cache, largest node, fail-closed) are a PolicySettings,
    `decision`; they may also be given flat (`OperatorSettings(mode="warn")`), as from_env does."""

    decision: PolicySettings = Field(default_factory=PolicySettings)
    namespaces: list[str] = Field(default_factory=list)  # empty: all (minus the excluded)
    excluded_namespaces: list[str] = Field(default_factory=lambda: ["kube-system"])
    operator_namespace: str = "vllm-sizer"
    # Where model-config ConfigMaps are listed (None: every namespace). A review reads those of
    # the object's own namespace, then those of the trusted namespace, never another's.
    model_configs_namespace: str | None = None
    # The namespace whose model configs apply to every namespace (None: model_configs_namespace
    # when set, else the operator's own namespace).
    model_configs_trusted_namespace: str | None = None
    model_configs_ttl_seconds: float = 30
    hub_fetch: bool = False
    hub_endpoint: str = "https://huggingface.co"
    hub_token_file: str | None = None
    hub_timeout_seconds: float = 2.0
    lookup_timeout_seconds: float = 1.5  # any outbound call made on the admission path
    cert_dir: str = "/tmp/vllm-sizer-certs"
    cert_mode: Literal["self-signed", "cert-manager", "secret"] = "self-signed"
    webhook_host: str = "0.0.0.0"
    webhook_port: int = WEBHOOK_PORT
    metrics_port: int = METRICS_PORT
    max_request_bytes: int = 8 * 1024**2  # an UPDATE review carries the object twice
    service_name: str = "vllm-sizer-webhook"
    # URL mode: the webhook configurations call this base URL (https://HOST:PORT) instead of the
    # Service, and the self-signed serving certificate covers HOST too (an IP SAN for an IP).
    webhook_url: str | None = None
    patch_existing: bool = False  # controller role: mutate pre-existing objects (restarts them)

    @model_validator(mode="before")
    @classmethod
    def _flat_policy_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not any(k in data for k in POLICY_FIELDS):
            return data
        decision = data.get("decision") or PolicySettings()
        if isinstance(decision, dict):
            decision = PolicySettings(**decision)
        flat = {k: data[k] for k in POLICY_FIELDS if k in data}
        rest = {k: v for k, v in data.items() if k not in flat}
        return {**rest, "decision": PolicySettings(**{**decision.model_dump(), **flat})}

    @classmethod
    def from_env(cls, env: Env | None = None) -> OperatorSettings:
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            v = env.get("VLLM_SIZER_" + name)
            return v if v not in (None, "") else None

        def flag(name: str) -> bool | None:
            v = get(name)
            return None if v is None else v.strip().lower() in ("1", "true", "yes", "on")

        def listing(name: str) -> list[str] | None:
            v = get(name)
            return None if v is None else [s.strip() for s in v.split(",") if s.strip()]

        def quantity(name: str) -> int | None:
            v = get(name)
            return None if v is None else parse_quantity(v)

        data: dict[str, Any] = {
            "mode": get("MODE"),
            "headroom": get("HEADROOM"),
            "rounding_bytes": quantity("ROUNDING"),
            "pin_cpu_kv_gib": get("PIN_CPU_KV_GIB"),
            "largest_node_memory_bytes": quantity("LARGEST_NODE_MEMORY"),
            "fail_closed": flag("FAIL_CLOSED"),
            "namespaces": listing("NAMESPACES"),
            "excluded_namespaces": listing("EXCLUDED_NAMESPACES"),
            "operator_namespace": get("OPERATOR_NAMESPACE") or env.get("POD_NAMESPACE"),
            "model_configs_namespace": get("MODEL_CONFIGS_NAMESPACE"),
            "model_configs_trusted_namespace": get("MODEL_CONFIGS_TRUSTED_NAMESPACE"),
            "model_configs_ttl_seconds": get("MODEL_CONFIGS_TTL_SECONDS"),
            "hub_fetch": flag("HUB_FETCH"),
            "hub_endpoint": env.get("HF_ENDPOINT") or None,
            "hub_token_file": get("HUB_TOKEN_FILE"),
            "hub_timeout_seconds": get("HUB_TIMEOUT_SECONDS"),
            "lookup_timeout_seconds": get("LOOKUP_TIMEOUT_SECONDS"),
            "cert_dir": get("CERT_DIR"),
            "cert_mode": get("CERT_MODE"),
            "webhook_host": get("WEBHOOK_HOST"),
            "webhook_port": get("WEBHOOK_PORT"),
            "webhook_url": get("WEBHOOK_URL"),
            "metrics_port": get("METRICS_PORT"),
            "max_request_bytes": quantity("MAX_REQUEST_SIZE"),
            "service_name": get("SERVICE_NAME"),
            "patch_existing": flag("PATCH_EXISTING"),
        }
        return cls(**{k: v for k, v in data.items() if v is not None})

    def policy(self, limit_range_max_bytes: int | None = None) -> PolicySettings:
        """The decision's settings for a namespace whose LimitRange max is this."""
        return self.decision.model_copy(update={"limit_range_max_bytes": limit_range_max_bytes})

    @property
    def trusted_namespace(self) -> str:
        return (
            self.model_configs_trusted_namespace
            or self.model_configs_namespace
            or self.operator_namespace
        )

    def serves_namespace(self, namespace: str | None) -> bool:
        if namespace in self.excluded_namespaces or namespace == self.operator_namespace:
            return False
        return not self.namespaces or namespace in self.namespaces
