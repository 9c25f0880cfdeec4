"""The controller learns models: with the Hub lookup enabled, the config.json of a model it could
not size is fetched by the controller (never on the admission path), checked, and stored in the
model-config ConfigMap `vllm-sizer-learned-models` in the operator's namespace, which every
webhook replica already reads (keys `org--name`). The next apply of that model is sized.

Outcomes are said plainly: a gated or private repository (HTTP 401/403) names the token Secret,
a missing one (404) is remembered by the fetcher's negative cache, a timeout is retried later.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Literal

from ...estimator import EstimatorError, ModelGeometry
from ...policy.cluster import KEY_SLASH
from ...workloads.api_names import ANNOTATION_MODEL_CONFIG, MODEL_CONFIGS_LABEL
from ..model_configs import HubConfigFetcher
from .kube import ApiError, KubeApi, resource_path

log = logging.getLogger("vllm_sizer.controller")

LEARNED_CONFIGMAP = "vllm-sizer-learned-models"
# A ConfigMap holds at most 1 MiB; stop adding before the API server refuses the update.
MAX_CONFIGMAP_BYTES = 900 * 1024

Outcome = Literal[
    "stored",
    "known",
    "not-a-hub-id",
    "gated",
    "not-found",
    "unavailable",
    "unreadable",
    "full",
    "error",
]


@dataclass(frozen=True)
class Learned:
    model: str
    outcome: Outcome
    detail: str = ""
    key: str | None = None  # the ConfigMap key the config was stored under

    @property
    def stored(self) -> bool:
        return self.outcome in ("stored", "known")


def configmap_key(repo: str) -> str:
    """'Org/Name' → 'Org--Name' (ConfigMap keys cannot hold '/')."""
    return repo.replace("/", KEY_SLASH, 1)


class ModelLearner:
    def __init__(
        self, api: KubeApi, hub: HubConfigFetcher, namespace: str, name: str = LEARNED_CONFIGMAP
    ):
        self.api, self.hub, self.namespace, self.name = api, hub, namespace, name
        self.stored = 0  # configs written (tests, logs)

    async def learn(self, model: str) -> Learned:
        """Fetch and store the config.json of `model`. Never raises."""
        ids = self.hub.split(model)
        if ids is None:
            return Learned(
                model,
                "not-a-hub-id",
                "not a Hugging Face id (org/name): the Hub "
                f"cannot be asked; supply the config with the {ANNOTATION_MODEL_CONFIG} "
                "annotation",
            )
        repo, _rev = ids
        key = configmap_key(repo)
        try:
            cfg = await self.hub.fetch(model)
        except Exception as exc:  # noqa: BLE001 - a lookup must never break the controller
            return Learned(model, "error", f"Hub fetch failed: {exc}")
        if cfg is None:
            status = self.hub.status_of(model)
            if status in (401, 403):
                return Learned(
                    model,
                    "gated",
                    f"{repo} is gated or private on the Hub (HTTP "
                    f"{status}): give the controller a token (chart value "
                    "hub.tokenSecret) or supply the config by annotation or ConfigMap",
                )
            if status == 404:
                return Learned(
                    model, "not-found", f"the Hub has no config.json for {repo} (HTTP 404)"
                )
            return Learned(
                model, "unavailable", f"the Hub did not answer for {repo} ({status}); retried later"
            )
        try:
            ModelGeometry.from_hf_config(cfg)
        except (EstimatorError, ValueError, TypeError) as exc:
            return Learned(
                model, "unreadable", f"the Hub's config.json for {repo} cannot be sized: {exc}"
            )
        return await self._store(model, key, cfg)

    async def _store(self, model: str, key: str, cfg: dict[str, Any]) -> Learned:
        path = resource_path("v1", "configmaps", self.namespace, self.name)
        value = json.dumps(cfg, separators=(",", ":"), sort_keys=True)
        try:
            try:
                current = await self.api.get(path)
            except ApiError as exc:
                if exc.status != 404:
                    raise
                current = None
            if current is None:
                await self.api.post(
                    resource_path("v1", "configmaps", self.namespace),
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {
                            "name": self.name,
                            "namespace": self.namespace,
                            "labels": {
                                MODEL_CONFIGS_LABEL: "true",
                                "app.kubernetes.io/managed-by": "vllm-sizer",
                            },
                        },
                        "data": {key: value},
                    },
                )
            else:
                data = current.get("data") or {}
                if data.get(key) == value:
                    return Learned(model, "known", "already stored", key)
                size = sum(len(k) + len(v) for k, v in data.items()) + len(key) + len(value)
                if size > MAX_CONFIGMAP_BYTES:
                    return Learned(
                        model,
                        "full",
                        f"ConfigMap {self.namespace}/{self.name} is "
                        "full (1 MiB): supply further configs by annotation or "
                        "another labelled ConfigMap",
                        key,
                    )
                await self.api.patch(path, {"data": {key: value}})
        except Exception as exc:  # noqa: BLE001 - RBAC, conflicts, timeouts: reported, retried
            return Learned(
                model,
                "error",
                f"storing the config in {self.namespace}/{self.name} failed: {exc}",
                key,
            )
        self.stored += 1
        log.info(
            "learned the config of %s from the Hub into %s/%s (key %s)",
            model,
            self.namespace,
            self.name,
            key,
        )
        return Learned(model, "stored", f"stored in ConfigMap {self.namespace}/{self.name}", key)
