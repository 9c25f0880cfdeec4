"""The MutatingWebhookConfiguration and ValidatingWebhookConfiguration, in one place.

The Helm chart and manifests/ mirror exactly these objects (tests/helm/test_webhook_parity.py
holds them equal); `vllm-sizer run --dev` registers them with a `url` clientConfig.

Choices:
- one webhook per configuration, rules for every served kind of the kinds table
  (vllm_sizer/workloads/kinds.py), CREATE and UPDATE (Pod: CREATE), scope Namespaced. Subresources (`deployments/scale`, `/status`) are not in the rules, so the
  API server never sends them (the server ignores them anyway);
- `namespaceSelector`: `kubernetes.io/metadata.name NotIn` kube-system, the operator's own
  namespace and the excluded ones (and `In` the served ones when the settings restrict them);
- `timeoutSeconds: 5`, `sideEffects: None` (admission writes nothing), `matchPolicy:
  Equivalent`, `admissionReviewVersions: ["v1"]`, failurePolicy from the caller (default Ignore:
  a webhook that is down blocks nothing), `reinvocationPolicy: IfNeeded` on the mutating one
  (the validating kind has no such field);
- `matchConditions` (CEL, admissionregistration.k8s.io/v1, Kubernetes ≥ 1.28 beta / 1.30 GA;
  older API servers drop the field and send everything, which the server handles) so that the
  common case, an object that is obviously not vLLM, is never sent at all. See MATCH_CONDITIONS.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any, Literal, TypedDict, Unpack

from ...workloads import kinds as _kinds
from ...workloads.api_names import MUTATING_WEBHOOK_NAME, SIZED_LABEL, VALIDATING_WEBHOOK_NAME
from ..settings import (
    MUTATE_PATH,
    MUTATING_CONFIG_NAME,
    VALIDATE_PATH,
    VALIDATING_CONFIG_NAME,
    OperatorSettings,
)

FailurePolicy = Literal["Ignore", "Fail"]
SERVICE_PORT = 443
TIMEOUT_SECONDS = 5
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# ---- matchConditions -----------------------------------------------------------------------
# Every condition must be true for the request to be sent. A runtime error in an expression
# makes the API server apply failurePolicy, so every field access is guarded with has():
# `has(a.b)` needs `a` to exist, hence the chains. `object` is untyped (dyn) here.
#
# 1. "vllm-workload": the kind is always sent (kinds.py `always_send`: KServe
#    InferenceService and LLMInferenceService, whose predictor may name a Hugging Face model with
#    no "vllm" string anywhere, and the platforms' CRDs, whose pod templates sit deeper than a
#    bounded CEL expression reaches or whose command their operator builds), or some container
#    of a pod spec, at any of the served kinds' `pod_specs`, has "vllm" (or "huggingfaceserver",
#    KServe's server, which runs vLLM) in its image, command or args (images
#    `vllm/vllm-openai`, `vllm-cpu-release-repo`, `kserve/huggingfaceserver`, commands
#    `vllm serve`, `python3 -m vllm.entrypoints...`, `sh -c "... vllm serve ..."`), or in a
#    literal env value (a command given as `$(LAUNCHER)` with LAUNCHER=vllm; the kubelet expands
#    it, and so does the reader). Image names are lowercase by the registry grammar.
#    A vLLM container whose image and command say nothing about vLLM (a private image whose
#    ENTRYPOINT runs vllm, given only args) is not sent: the reader could not tell either.
# 2. "not-sized-elsewhere": a Pod is sent unless it carries the vllm-sizer.io/sized label AND
#    its controller is a kind that creates pods from a template vllm-sizer sizes (kinds.py
#    `pod_owner`: ReplicaSet, StatefulSet, Job, DaemonSet, ReplicationController, RayCluster);
#    any other object made by a controller (a KServe-made Deployment, an LWS-made StatefulSet)
#    is skipped by the reader (its owner is sized, or its pods when they are created), so it is
#    not sent.
VLLM_KINDS = tuple(k.kind for k in _kinds.served() if k.always_send)
POD_SPEC_PATHS = tuple(dict.fromkeys(p for k in _kinds.served() for p in k.pod_specs))
# RE2, searched anywhere in the string (CEL `matches` is not anchored).
VLLM_MARKERS = "vllm|huggingfaceserver"
_CONTAINER_MENTIONS_VLLM = (
    f"(has(c.image) && string(c.image).matches('{VLLM_MARKERS}'))"
    f" || (has(c.command) && c.command.exists(s, string(s).matches('{VLLM_MARKERS}')))"
    f" || (has(c.args) && c.args.exists(s, string(s).matches('{VLLM_MARKERS}')))"
    f" || (has(c.env) && c.env.exists(e, has(e.value) && string(e.value).matches('{VLLM_MARKERS}')))"
)


def _guarded(path: str) -> str:
    """`has()` for every step of a dotted path below `object`: has(object.a) && has(object.a.b)..."""
    parts = path.split(".")
    return " && ".join(f"has({'.'.join(parts[:i])})" for i in range(2, len(parts) + 1))


def _containers_clause(pod_spec: str) -> str:
    return (
        f"({_guarded(pod_spec + '.containers')}"
        f" && {pod_spec}.containers.exists(c, {_CONTAINER_MENTIONS_VLLM}))"
    )


def vllm_workload_expression() -> str:
    kinds = ", ".join(f"'{k}'" for k in VLLM_KINDS)
    clauses = [f"request.kind.kind in [{kinds}]"] + [_containers_clause(p) for p in POD_SPEC_PATHS]
    return "\n|| ".join(clauses)


_OWNED = (
    "has(object.metadata) && has(object.metadata.ownerReferences)"
    " && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller == true"
)


def _owner_is(group: str) -> str:
    if group:
        return f"has(r.apiVersion) && r.apiVersion.startsWith('{group}/')"
    return "has(r.apiVersion) && !r.apiVersion.contains('/')"


def not_sized_elsewhere_expression() -> str:
    owners = " || ".join(
        f"(r.kind == '{kind}' && {_owner_is(group)})" for group, kind in _kinds.pod_owner_kinds()
    )
    label = (
        f"has(object.metadata) && has(object.metadata.labels)"
        f" && '{SIZED_LABEL}' in object.metadata.labels"
        f" && object.metadata.labels['{SIZED_LABEL}'] != ''"
    )
    pod_from_sized_template = f"{label} && {_OWNED} && ({owners}))"
    return (
        f"request.kind.kind == 'Pod' && request.kind.group == ''"
        f"\n? !({pod_from_sized_template})"
        f"\n: !({_OWNED}))"
    )


def match_conditions() -> list[dict[str, str]]:
    return [
        {"name": "vllm-workload", "expression": vllm_workload_expression()},
        {"name": "not-sized-elsewhere", "expression": not_sized_elsewhere_expression()},
    ]


# ---- pieces ----------------------------------------------------------------------------------


def rules() -> list[dict[str, Any]]:
    """One rule per served kind (kinds.py), with its operations (Pod: CREATE only)."""
    return [
        {
            "apiGroups": [k.group],
            "apiVersions": [k.version],
            "resources": [k.plural],
            "operations": list(k.operations),
            "scope": "Namespaced",
        }
        for k in _kinds.served()
    ]


def namespace_selector(settings: OperatorSettings) -> dict[str, Any]:
    excluded = list(
        dict.fromkeys(["kube-system", settings.operator_namespace, *settings.excluded_namespaces])
    )
    exprs: list[dict[str, Any]] = [
        {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": excluded}
    ]
    if settings.namespaces:
        exprs.append(
            {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(settings.namespaces)}
        )
    return {"matchExpressions": exprs}


def _ca_bundle_b64(ca_bundle: bytes | str | None) -> str | None:
    if ca_bundle is None:
        return None
    data = ca_bundle.encode() if isinstance(ca_bundle, str) else ca_bundle
    return base64.b64encode(data).decode("ascii")


def client_config(
    settings: OperatorSettings,
    path: str,
    *,
    url: str | None = None,
    ca_bundle: bytes | str | None = None,
) -> dict[str, Any]:
    """`service` clientConfig (in-cluster) or, with `url` ("https://HOST:PORT", dev mode),
    `url` + path. `ca_bundle` is the CA's PEM (encoded here)."""
    if url is not None:
        cfg: dict[str, Any] = {"url": url.rstrip("/") + path}
    else:
        cfg = {
            "service": {
                "namespace": settings.operator_namespace,
                "name": settings.service_name,
                "path": path,
                "port": SERVICE_PORT,
            }
        }
    b64 = _ca_bundle_b64(ca_bundle)
    if b64:
        cfg["caBundle"] = b64
    return cfg


def _webhook(
    settings: OperatorSettings,
    name: str,
    path: str,
    *,
    url: str | None = None,
    ca_bundle: bytes | str | None = None,
    failure_policy: FailurePolicy = "Ignore",
    object_selector: dict[str, Any] | None = None,
    with_match_conditions: bool = True,
    timeout_seconds: int = TIMEOUT_SECONDS,
) -> dict[str, Any]:
    if failure_policy not in ("Ignore", "Fail"):
        raise ValueError(f"failurePolicy must be Ignore or Fail, not {failure_policy!r}")
    if not 1 <= timeout_seconds <= 30:
        raise ValueError("timeoutSeconds must be between 1 and 30")
    hook: dict[str, Any] = {
        "name": name,
        "clientConfig": client_config(settings, path, url=url, ca_bundle=ca_bundle),
        "rules": rules(),
        "namespaceSelector": namespace_selector(settings),
        "objectSelector": object_selector if object_selector is not None else {},
        "failurePolicy": failure_policy,
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": timeout_seconds,
        "admissionReviewVersions": ["v1"],
    }
    if with_match_conditions:
        hook["matchConditions"] = match_conditions()
    return hook


def _metadata(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "labels": {
            "app.kubernetes.io/name": "vllm-sizer",
            "app.kubernetes.io/component": "webhook",
        },
    }


class HookOptions(TypedDict, total=False):
    """The keyword arguments both configurations take (see _webhook for their meaning)."""

    ca_bundle: bytes | str | None
    url: str | None
    failure_policy: FailurePolicy
    object_selector: dict[str, Any] | None
    with_match_conditions: bool
    timeout_seconds: int


def _configuration(kind: str, config_name: str, hook: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": _metadata(config_name),
        "webhooks": [hook],
    }


def mutating_configuration(
    settings: OperatorSettings, **options: Unpack[HookOptions]
) -> dict[str, Any]:
    hook = _webhook(settings, MUTATING_WEBHOOK_NAME, MUTATE_PATH, **options)
    # Called again when a later mutating webhook changed the object (idempotent decision).
    hook["reinvocationPolicy"] = "IfNeeded"
    return _configuration("MutatingWebhookConfiguration", MUTATING_CONFIG_NAME, hook)


def validating_configuration(
    settings: OperatorSettings, **options: Unpack[HookOptions]
) -> dict[str, Any]:
    hook = _webhook(settings, VALIDATING_WEBHOOK_NAME, VALIDATE_PATH, **options)
    return _configuration("ValidatingWebhookConfiguration", VALIDATING_CONFIG_NAME, hook)


def webhook_configurations(
    settings: OperatorSettings, **options: Unpack[HookOptions]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(mutating, validating), built with the same options."""
    return (
        mutating_configuration(settings, **options),
        validating_configuration(settings, **options),
    )


# ---- registering them (dev mode; in-cluster the Helm chart writes them) ------------------------

_VERBS = {
    "MutatingWebhookConfiguration": (
        "read_mutating_webhook_configuration",
        "create_mutating_webhook_configuration",
        "replace_mutating_webhook_configuration",
        "delete_mutating_webhook_configuration",
    ),
    "ValidatingWebhookConfiguration": (
        "read_validating_webhook_configuration",
        "create_validating_webhook_configuration",
        "replace_validating_webhook_configuration",
        "delete_validating_webhook_configuration",
    ),
}


def apply_configurations(
    admissionregistration_api: Any, configurations: Iterable[dict[str, Any]]
) -> None:
    """Create or replace each configuration through `kubernetes.client.AdmissionregistrationV1Api`
    (synchronous: run it in a thread from async code)."""
    from kubernetes.client.exceptions import ApiException

    for obj in configurations:
        read, create, replace, _delete = _VERBS[obj["kind"]]
        name = obj["metadata"]["name"]
        try:
            current = getattr(admissionregistration_api, read)(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            getattr(admissionregistration_api, create)(obj)
            continue
        body = {**obj, "metadata": dict(obj["metadata"])}
        rv = (
            (current.get("metadata") or {}).get("resourceVersion")
            if isinstance(current, dict)
            else getattr(getattr(current, "metadata", None), "resource_version", None)
        )
        if rv:
            body["metadata"]["resourceVersion"] = rv
        getattr(admissionregistration_api, replace)(name, body)


def delete_configurations(
    admissionregistration_api: Any,
    names: tuple[str, str] = (MUTATING_CONFIG_NAME, VALIDATING_CONFIG_NAME),
) -> None:
    """Delete both configurations (a missing one is fine): what `run --dev` does on exit,
    SIGINT and SIGTERM included (Kopf's managed mode only empties them)."""
    from kubernetes.client.exceptions import ApiException

    mutating, validating = names
    for kind, name in (
        ("MutatingWebhookConfiguration", mutating),
        ("ValidatingWebhookConfiguration", validating),
    ):
        try:
            getattr(admissionregistration_api, _VERBS[kind][3])(name)
        except ApiException as exc:
            if exc.status != 404:
                raise


def render_yaml(settings: OperatorSettings, **kwargs: Any) -> str:
    """Both configurations as a two-document YAML stream (what the Helm chart mirrors)."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        style = "|" if "\n" in value else None  # CEL expressions as literal blocks
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, _str)
    return yaml.dump_all(
        list(webhook_configurations(settings, **kwargs)),
        Dumper=_Dumper,
        sort_keys=False,
        width=1000,
    )
