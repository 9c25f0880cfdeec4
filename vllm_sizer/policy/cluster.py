"""What the cluster tells a review, namespace by namespace: one context for the webhook, the
controller and `vllm-sizer check`.

- KServe runtimes as KServe resolves them: a ServingRuntime is found only in the
  InferenceService's own namespace, by (namespace, name); a ClusterServingRuntime by name
  (kserve/kserve pkg/controller/v1beta1/inferenceservice/utils: GetServingRuntime reads the
  namespaced object first, then the cluster-scoped one). Another namespace's runtime is never
  used.
- Model-config ConfigMaps (labelled vllm-sizer.io/model-configs=true): the object's own namespace
  first, then one trusted namespace (the operator's unless configured). A ConfigMap in any other
  namespace never changes another tenant's estimate; within one namespace, maps are read in
  name order and the first to define a model wins (`kubectl get` order, stable).
- LimitRange ceilings per namespace.

Model ids and ConfigMap keys go through one normalisation (`model_key`), so `check` and the
webhook match `hf://Org/Name@main`, `Org/Name`, `Org--Name` and `/models/Org/Name` alike.
Pure: the operator feeds it from its listings, `check` from its input documents.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..estimator import catalog
from ..workloads.api_names import MODEL_CONFIGS_LABEL
from ..workloads.device import CLAIM_KINDS
from ..workloads.model import ReadContext
from .limit_ranges import container_memory_max

log = logging.getLogger("vllm_sizer.cluster")

# Cluster-scoped objects a platform's resource names (llmaz Playground → OpenModel)
REFERENCED_KINDS = ("OpenModel",)
# Namespaced objects a resource names, looked up in its own namespace first and then in its
# platform's system namespace, as the platform does: KServe's LLMInferenceServiceConfig
# (kserve/kserve@aaac4e2 pkg/controller/v1alpha2/llmisvc/config_merge.go:823-840, `kserve`)
# DRA ResourceClaimTemplates / ResourceClaims a pod's resourceClaims name (their device class
# says which accelerator): the pod's own namespace only (None: no system namespace)
NAMESPACED_REFERENCED_KINDS: dict[str, str | None] = {
    "LLMInferenceServiceConfig": "kserve",
    **dict.fromkeys(CLAIM_KINDS),
}
# ConfigMap keys must match [-._a-zA-Z0-9]+, so "Org/Name" cannot be a key: write it as
# "Org--Name" (the first "--" stands for the "/"). Both spellings are accepted.
KEY_SLASH = "--"
Config = dict[str, Any]


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _meta(obj: Any) -> dict[str, Any]:
    return _dict(_dict(obj).get("metadata"))


def _ns(obj: Any) -> str:
    return _namespace(_meta(obj).get("namespace"))


def model_key(text: str) -> str:
    """The one normalisation of model ids and ConfigMap keys: 'hf://Org/Name@main',
    'Org/Name', 'Org--Name', 'ORG/name/' → 'org/name'; a local path stays a path
    ('/models/org/name', matched on its last two parts by `model_keys`)."""
    key = str(text).strip()
    if "/" not in key and KEY_SLASH in key:
        key = key.replace(KEY_SLASH, "/", 1)
    return catalog.normalise_model_id(key)


def model_keys(model: str) -> list[str]:
    """Lookup keys for a model as the reader passes it: the normalised id, then the last two
    parts of a longer path ('/models/Org/Name' → 'org/name')."""
    key = model_key(model)
    out = [key]
    parts = [p for p in key.split("/") if p]
    if len(parts) > 2:
        out.append("/".join(parts[-2:]))
    return list(dict.fromkeys(out))


# backwards-compatible name
configmap_key_to_model = model_key


def configs_of_configmap(cm: Any) -> dict[str, Config]:
    """{normalised model id: config.json} of one labelled ConfigMap; other maps give {}."""
    meta = _meta(cm)
    labels = _dict(meta.get("labels"))
    if str(labels.get(MODEL_CONFIGS_LABEL, "")).lower() != "true":
        return {}
    out: dict[str, Config] = {}
    for key, value in _dict(_dict(cm).get("data")).items():
        try:
            cfg = json.loads(value)
        except (TypeError, ValueError, RecursionError) as exc:
            log.warning(
                "ConfigMap %s/%s key %r is not JSON (%s): ignored",
                meta.get("namespace"),
                meta.get("name"),
                key,
                exc,
            )
            continue
        if not isinstance(cfg, dict) or not cfg:
            log.warning(
                "ConfigMap %s/%s key %r is not a config.json object: ignored",
                meta.get("namespace"),
                meta.get("name"),
                key,
            )
            continue
        out.setdefault(model_key(str(key)), cfg)
    return out


def model_configs_by_namespace(items: Iterable[Any]) -> dict[str, dict[str, Config]]:
    """{namespace: {model id: config}}; within a namespace the first map by name wins."""
    out: dict[str, dict[str, Config]] = {}
    maps = [i for i in items if isinstance(i, dict)]
    maps.sort(key=lambda cm: (_ns(cm), str(_meta(cm).get("name") or "")))
    for cm in maps:
        configs = configs_of_configmap(cm)
        if configs:
            target = out.setdefault(_ns(cm), {})
            for key, cfg in configs.items():
                target.setdefault(key, cfg)
    return out


def runtimes_by_namespace(items: Iterable[Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """ServingRuntimes: {namespace: {name: object}}."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for rt in items:
        name = _meta(rt).get("name")
        if isinstance(name, str) and name:
            out.setdefault(_ns(rt), {})[name] = rt
    return out


def cluster_runtimes_by_name(items: Iterable[Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for rt in items:
        name = _meta(rt).get("name")
        if isinstance(name, str) and name:
            out[name] = rt
    return out


def _namespace(namespace: Any) -> str:
    """A namespace as the context keys it: a string, "" for none (or for a value no object
    can hold as its namespace, which then sees no namespace's objects)."""
    return namespace if isinstance(namespace, str) else ""


@dataclass
class ClusterContext:
    """The namespace-aware view (see the module docstring). Namespaces are strings; an object
    without one (a `check` input applied to the current namespace) is namespace ""."""

    serving_runtimes: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    cluster_serving_runtimes: dict[str, dict[str, Any]] = field(default_factory=dict)
    model_configs: dict[str, dict[str, Config]] = field(default_factory=dict)
    limit_ranges: dict[str, int] = field(default_factory=dict)
    trusted_namespace: str | None = None
    # every ConfigMap's data by namespace and name (check's input; the webhook lists none)
    config_maps: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    # cluster-scoped objects platforms refer to by name (REFERENCED_KINDS), by (kind, name)
    objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # namespaced objects platforms refer to (NAMESPACED_REFERENCED_KINDS): namespace → objects
    namespaced_objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = field(
        default_factory=dict
    )

    # ---- building
    @classmethod
    def from_objects(
        cls, docs: Iterable[Any], trusted_namespace: str | None = None
    ) -> ClusterContext:
        """From Kubernetes objects (check's input): ServingRuntime, ClusterServingRuntime,
        labelled ConfigMaps, LimitRange. Malformed objects are skipped."""
        docs = [d for d in docs if isinstance(d, dict)]
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for d in docs:
            by_kind.setdefault(str(d.get("kind")), []).append(d)
        ctx = cls(trusted_namespace=trusted_namespace)
        ctx.serving_runtimes = runtimes_by_namespace(by_kind.get("ServingRuntime", []))
        ctx.cluster_serving_runtimes = cluster_runtimes_by_name(
            by_kind.get("ClusterServingRuntime", [])
        )
        ctx.model_configs = model_configs_by_namespace(by_kind.get("ConfigMap", []))
        ctx.limit_ranges = limit_range_maxima(by_kind.get("LimitRange", []))
        for kind in REFERENCED_KINDS:
            for o in by_kind.get(kind, []):
                name = _meta(o).get("name")
                if isinstance(name, str) and name:
                    ctx.objects[(kind, name)] = o
        for kind in NAMESPACED_REFERENCED_KINDS:
            for o in by_kind.get(kind, []):
                name = _meta(o).get("name")
                if isinstance(name, str) and name:
                    ctx.namespaced_objects.setdefault(_ns(o), {})[(kind, name)] = o
        for cm in by_kind.get("ConfigMap", []):
            name = _meta(cm).get("name")
            data = {str(k): v for k, v in _dict(cm.get("data")).items() if isinstance(v, str)}
            if isinstance(name, str) and name:  # the last of one name wins, as `kubectl apply`
                ctx.config_maps.setdefault(_ns(cm), {})[name] = data
        return ctx

    # ---- reading
    def model_config(self, namespace: str | None, model: str) -> Config | None:
        """The object's own namespace first, then the trusted namespace; never another."""
        if not isinstance(model, str) or not model.strip():
            return None
        for ns in dict.fromkeys(
            n for n in (_namespace(namespace), self.trusted_namespace) if n is not None
        ):
            configs = self.model_configs.get(ns)
            if not configs:
                continue
            for key in model_keys(model):
                cfg = configs.get(key)
                if cfg is not None:
                    return cfg
        return None

    def limit_range_max(self, namespace: str | None) -> int | None:
        return self.limit_ranges.get(_namespace(namespace))

    def read_context(
        self, namespace: str | None, resolver: Callable[[str], Config | None] | None = None
    ) -> ReadContext:
        """The reader's context for an object in `namespace`: only that namespace's
        ServingRuntimes, every ClusterServingRuntime, model configs as `model_config` says
        (then `resolver`, e.g. the Hub cache)."""
        ns = _namespace(namespace)

        def resolve(model: str) -> Config | None:
            cfg = self.model_config(ns, model)
            if cfg is None and resolver is not None:
                cfg = resolver(model)
            return cfg

        return ReadContext(
            serving_runtimes=dict(self.serving_runtimes.get(ns, {})),
            cluster_serving_runtimes=self.cluster_serving_runtimes,
            model_resolver=resolve,
            config_maps=self._config_maps_for(ns),
            objects=self._objects_for(ns),
        )

    @staticmethod
    def _same_namespace(ns: str) -> tuple[str, ...]:
        """`check` input: an object without a namespace is applied to the current one,
        `default` unless kubectl says otherwise, so "" and "default" name one namespace (a
        chart render puts its workloads in `default` and leaves its ConfigMaps without one)."""
        return ("", "default") if ns in ("", "default") else (ns,)

    def _config_maps_for(self, ns: str) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for where in reversed(self._same_namespace(ns)):  # the object's own spelling wins
            out.update(self.config_maps.get(where, {}))
        if ns in ("", "default"):
            out.update(self.config_maps.get(ns, {}))
        return out

    def _objects_for(self, ns: str) -> dict[tuple[str, str], dict[str, Any]]:
        """Cluster-scoped referenced objects, then each namespaced kind's objects of the
        platform's system namespace, then the object's own namespace's (which win)."""
        if not self.namespaced_objects:
            return self.objects
        out = dict(self.objects)
        for kind, system in NAMESPACED_REFERENCED_KINDS.items():
            for where in ((system,) if system else ()) + self._same_namespace(ns):
                for key, o in self.namespaced_objects.get(where, {}).items():
                    if key[0] == kind:
                        out[key] = o
        return out


def limit_range_maxima(items: Iterable[Any]) -> dict[str, int]:
    """container_memory_max, never raising on a malformed LimitRange."""
    good = []
    for lr in items:
        try:
            container_memory_max([lr])
        except Exception:  # noqa: BLE001 - a malformed LimitRange is skipped
            continue
        good.append(lr)
    return container_memory_max(good)
