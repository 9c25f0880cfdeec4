"""`vllm-sizer audit [-n NS | -A] [--context C] [--kubeconfig F] [-o text|json|yaml|markdown]`:
read-only. Lists every vLLM workload in the cluster with its estimate, its limit, the verdict
`check` would give, how its model was resolved, and its pods' OOMKills and restarts, sorted by
risk. Needs only get/list (RBAC_RULES below; the chart and manifests/audit-rbac.yaml grant
exactly these). Exit 0: nothing at risk; 1: something is undersized, denied or was OOMKilled;
2: the cluster could not be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import yaml

from ..policy.messages import gi
from ..policy.pods import pod_container
from ..policy.review import ObjectDecision, review_object
from ..policy.settings import PolicySettings
from ..workloads import kinds
from ..workloads.api_names import LAST_OOM_ANNOTATION, MODEL_CONFIGS_LABEL
from .check import build_context

# (apiVersion, plural, kind) of the workload kinds read: every kind of the one kinds table
# (workloads/kinds.py), in its order, with Pod last: a pod is reported on its own only when no
# listed workload owns it.
WORKLOAD_RESOURCES: tuple[tuple[str, str, str], ...] = tuple(
    sorted(((k.api_version, k.plural, k.kind) for k in kinds.KINDS), key=lambda r: r[2] == "Pod")
)
# What the reader needs besides the workloads (as `check` finds them in its input).
CONTEXT_RESOURCES: tuple[tuple[str, str, str, str | None], ...] = (
    ("v1", "limitranges", "LimitRange", None),
    ("v1", "configmaps", "ConfigMap", f"{MODEL_CONFIGS_LABEL}=true"),
    ("serving.kserve.io/v1alpha1", "servingruntimes", "ServingRuntime", None),
    ("serving.kserve.io/v1alpha1", "clusterservingruntimes", "ClusterServingRuntime", None),
)
CLUSTER_SCOPED = {"clusterservingruntimes"}


def _rbac_rules() -> list[dict[str, Any]]:
    groups: dict[str, set[str]] = {}
    pairs = [
        *((a, p) for a, p, _k in WORKLOAD_RESOURCES),
        *((a, p) for a, p, _k, _s in CONTEXT_RESOURCES),
    ]
    for api, plural in pairs:
        group = api.split("/", 1)[0] if "/" in api else ""
        groups.setdefault(group, set()).add(plural)
    return [
        {"apiGroups": [g], "resources": sorted(r), "verbs": ["get", "list"]}
        for g, r in sorted(groups.items())
    ]


RBAC_RULES = _rbac_rules()  # the read-only ClusterRole audit needs (tests hold the chart to it)
_RISK = {
    "oomkilled": 5,
    "denied": 4,
    "undersized": 3,
    "no-limit": 3,
    "cannot-size": 2,
    "ok": 1,
    "skipped": 0,
}


@dataclass
class OomRecord:
    pod: str
    container: str
    time: str | None
    limit: str | None
    restarts: int


@dataclass
class AuditRow:
    risk: str
    kind: str
    namespace: str | None
    name: str
    container: str
    model: str | None
    estimate_bytes: int | None
    limit_bytes: int | None
    verdict: str
    needed_limit_bytes: int | None
    notes: list[str] = field(default_factory=list)
    restarts: int = 0
    oomkills: list[OomRecord] = field(default_factory=list)


Lister = Callable[[str, str, str | None, str | None], list[dict[str, Any]]]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit",
        help="read-only: every vLLM workload in a cluster, by risk",
        description="List the vLLM workloads of a cluster with their estimate, "
        "limit, verdict and OOMKills (get/list only; changes nothing).",
    )
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", help="only this namespace")
    scope.add_argument(
        "-A", "--all-namespaces", action="store_true", help="every namespace (the default)"
    )
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: KUBECONFIG or ~/.kube/config)")
    p.add_argument("-o", "--output", choices=["text", "json", "yaml", "markdown"], default="text")
    p.add_argument("--request-timeout", type=float, default=20.0, metavar="SECONDS")
    p.add_argument(
        "--trusted-namespace",
        default="vllm-sizer",
        metavar="NS",
        help="model-config ConfigMaps here apply to every namespace (as the webhook's "
        "modelConfigs.namespace); '' for none",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        lister = kube_lister(args.kubeconfig, args.context, args.request_timeout)
        rows, problems = audit(lister, args.namespace, args.trusted_namespace or None)
    except AuditError as exc:
        print(f"vllm-sizer audit: {exc}", file=sys.stderr)
        return 2
    for p in problems:
        print(f"vllm-sizer audit: {p}", file=sys.stderr)
    render = {"json": render_json, "yaml": render_yaml, "markdown": render_markdown}.get(
        args.output, render_text
    )
    print(render(rows))
    return 1 if any(_RISK[r.risk] >= _RISK["undersized"] for r in rows) else 0


class AuditError(Exception):
    pass


def kube_lister(kubeconfig: str | None, context: str | None, timeout: float) -> Lister:
    """list(api_version, plural, namespace, label_selector) → items, through the kubeconfig."""
    from ..operator.controller.kube import (
        ApiError,
        KubeApi,
        default_api_client_factory,
        resource_path,
    )

    try:
        api = KubeApi(default_api_client_factory(kubeconfig, context), timeout=timeout)
        api.client  # noqa: B018 - load the configuration now, to fail with a clear message
    except Exception as exc:  # noqa: BLE001 - kubernetes raises many types
        raise AuditError(f"cannot load the kubeconfig: {exc}") from None

    def lister(
        api_version: str, plural: str, namespace: str | None, selector: str | None
    ) -> list[dict[str, Any]]:
        ns = None if plural in CLUSTER_SCOPED else namespace
        items: list[dict[str, Any]] = []
        cont: str | None = None
        while True:
            try:
                page = api.request_sync(
                    "GET",
                    resource_path(api_version, plural, ns),
                    query={"labelSelector": selector, "limit": 500, "continue": cont},
                )
            except ApiError as exc:
                if exc.status == 404:  # the kind is not installed (no KServe, no LWS)
                    return []
                raise
            kind = plural[:-1]
            for item in page.get("items") or []:
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", _KIND_OF.get(plural, kind))
                items.append(item)
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                return items

    return lister


_KIND_OF = {plural: kind for _a, plural, kind in WORKLOAD_RESOURCES} | {
    plural: kind for _a, plural, kind, _s in CONTEXT_RESOURCES
}


def audit(
    lister: Lister, namespace: str | None, trusted_namespace: str | None = "vllm-sizer"
) -> tuple[list[AuditRow], list[str]]:
    """Rows sorted by risk, and problems met while listing (a kind that was forbidden)."""
    problems: list[str] = []

    def safe_list(api: str, plural: str, selector: str | None = None) -> list[dict[str, Any]]:
        try:
            return lister(api, plural, namespace, selector)
        except Exception as exc:  # noqa: BLE001 - one unreadable kind must not stop the audit
            status = getattr(exc, "status", None)
            if status in (401, 403):
                problems.append(
                    f"{plural}: not readable with these credentials (HTTP {status}); "
                    "grant the vllm-sizer-audit ClusterRole"
                )
                return []
            if plural == "pods" or plural == "deployments":
                raise AuditError(f"listing {plural} failed: {exc}") from None
            problems.append(f"{plural}: listing failed: {exc}")
            return []

    context_docs: list[dict[str, Any]] = []
    for api, plural, _kind, selector in CONTEXT_RESOURCES:
        context_docs.extend(safe_list(api, plural, selector))
    cluster = build_context(context_docs, trusted_namespace)
    from ..operator.controller.kube import object_problem

    listed: dict[str, list[dict[str, Any]]] = {}
    for api, plural, kind in WORKLOAD_RESOURCES:
        listed[kind] = []
        for obj in safe_list(api, plural):
            problem = object_problem(obj)
            if problem is None:
                listed[kind].append(obj)
            else:  # the API server sends no such object
                problems.append(f"a {kind} not read: {problem}")
    pods = listed.get("Pod", [])
    owners = _owner_index(listed)
    rows: list[AuditRow] = []
    for kind, objs in listed.items():
        for obj in objs:
            if kind == "Pod" and _top_owner(obj, owners) is not None:
                continue  # its owner's row covers it
            if kind == "ReplicaSet" and _controller_ref(obj) is not None:
                continue  # a Deployment's ReplicaSet: the Deployment's row
            ns = (obj.get("metadata") or {}).get("namespace")
            policy = PolicySettings(
                mode="mutate", limit_range_max_bytes=cluster.limit_range_max(ns)
            )
            decision = review_object(obj, cluster.read_context(ns), policy)
            rows.extend(_rows(obj, decision, _pods_of(obj, pods, owners)))
    rows.sort(key=lambda r: (-_RISK[r.risk], r.namespace or "", r.kind, r.name, r.container))
    return rows, problems


def _controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def _ns_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _owner_index(
    listed: dict[str, list[dict[str, Any]]],
) -> dict[tuple[str, str], dict[str, Any]]:
    """(namespace, uid) → object, for every listed workload (pods excluded)."""
    return {
        (_ns_of(o), str(o["metadata"]["uid"])): o
        for kind, objs in listed.items()
        if kind != "Pod"
        for o in objs
        if (o.get("metadata") or {}).get("uid")
    }


def _top_owner(
    obj: dict[str, Any], owners: dict[tuple[str, str], dict[str, Any]]
) -> dict[str, Any] | None:
    """The outermost listed workload that controls `obj` (Pod → ReplicaSet → Deployment), in
    `obj`'s own namespace: an owner is always in its dependent's namespace, and a reference
    holding the uid of another namespace's object (the API server does not check it) must
    not hand a tenant's pods, and their OOMKills, to another tenant's row."""
    top = None
    cur = obj
    ns = _ns_of(obj)
    for _ in range(5):
        ref = _controller_ref(cur)
        key = (ns, str(ref.get("uid"))) if ref is not None else None
        if key is None or key not in owners:
            break
        cur = top = owners[key]
    return top


def _pods_of(
    obj: dict[str, Any],
    pods: list[dict[str, Any]],
    owners: dict[tuple[str, str], dict[str, Any]],
) -> list[dict[str, Any]]:
    if obj.get("kind") == "Pod":
        return [obj]
    return [p for p in pods if _top_owner(p, owners) is obj]


def _oom_history(pods: list[dict[str, Any]], container: str) -> tuple[list[OomRecord], int]:
    records, restarts = [], 0
    for pod in pods:
        spec_limits = {
            c.get("name"): ((c.get("resources") or {}).get("limits") or {}).get("memory")
            for c in (pod.get("spec") or {}).get("containers") or []
        }
        for st in (pod.get("status") or {}).get("containerStatuses") or []:
            if st.get("name") != container:
                continue
            restarts += int(st.get("restartCount") or 0)
            for state in (st.get("lastState") or {}, st.get("state") or {}):
                term = state.get("terminated") or {}
                if term.get("reason") == "OOMKilled":
                    records.append(
                        OomRecord(
                            pod=pod["metadata"]["name"],
                            container=container,
                            time=term.get("finishedAt"),
                            limit=spec_limits.get(container),
                            restarts=int(st.get("restartCount") or 0),
                        )
                    )
    return records, restarts


def _rows(
    obj: dict[str, Any], decision: ObjectDecision, pods: list[dict[str, Any]]
) -> list[AuditRow]:
    out = []
    for d in decision.containers:
        w = d.workload
        ooms, restarts = _oom_history(pods, pod_container(w.container))
        last_oom = (w.annotations or {}).get(LAST_OOM_ANNOTATION)
        notes = [n for n in ([w.model_note] if w.model_note else [])]
        notes += [str(x) for x in w.diagnostics if x.severity == "error"][:3]
        if last_oom and not ooms:
            notes.append(f"controller recorded an OOMKill: {last_oom}")
        estimate = d.report.total_memory_bytes if d.report else None
        if w.skip_reason:
            risk = "skipped"
        elif ooms or last_oom:
            risk = "oomkilled"
        elif d.verdict == "deny":
            risk = "denied"
        elif estimate is None:
            risk = "cannot-size"
        elif d.limit_before is None:
            risk = "no-limit"
        elif d.limit_before < estimate:
            risk = "undersized"
        else:
            risk = "ok"
        if d.verdict == "deny" and d.message:
            notes.append(d.message)
        out.append(
            AuditRow(
                risk=risk,
                kind=decision.kind,
                namespace=decision.namespace,
                name=decision.name,
                container=w.container,
                model=w.model,
                estimate_bytes=estimate,
                limit_bytes=d.limit_before,
                verdict=d.verdict,
                needed_limit_bytes=d.limit_after if d.limit_after != d.limit_before else None,
                notes=notes,
                restarts=restarts,
                oomkills=ooms,
            )
        )
    return out


def _q(n: int | None) -> str:
    return gi(n) if n is not None else "-"


def render_text(rows: list[AuditRow]) -> str:
    if not rows:
        return "no vLLM workloads found"
    head = (
        f"{'RISK':<12}{'WORKLOAD':<44}{'CONTAINER':<14}{'ESTIMATE':>9}{'LIMIT':>9}"
        f"{'NEEDS':>9}{'OOMKILLS':>9}{'RESTARTS':>9}  MODEL"
    )
    lines = [head]
    for r in rows:
        ident = f"{r.kind}/{r.namespace + '/' if r.namespace else ''}{r.name}"
        lines.append(
            f"{r.risk:<12}{ident[:43]:<44}{r.container[:13]:<14}{_q(r.estimate_bytes):>9}"
            f"{_q(r.limit_bytes):>9}{_q(r.needed_limit_bytes):>9}{len(r.oomkills):>9}"
            f"{r.restarts:>9}  {r.model or '?'}"
        )
        for o in r.oomkills[:3]:
            lines.append(
                f"{'':<12}  OOMKilled {o.time or '?'} pod {o.pod} (limit then "
                f"{o.limit or 'none'}, restarts {o.restarts})"
            )
        for n in r.notes[:3]:
            lines.append(f"{'':<12}  {n[:300]}")
    return "\n".join(lines)


def _dicts(rows: list[AuditRow]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]


def render_json(rows: list[AuditRow]) -> str:
    return json.dumps(_dicts(rows), indent=2)


def render_yaml(rows: list[AuditRow]) -> str:
    return yaml.safe_dump(_dicts(rows), sort_keys=False).rstrip()


def render_markdown(rows: list[AuditRow]) -> str:
    lines = [
        "| risk | workload | container | model | estimate | limit | needs | OOMKills | restarts |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ident = f"{r.kind} {r.namespace + '/' if r.namespace else ''}{r.name}"
        last = f" (last {r.oomkills[-1].time})" if r.oomkills else ""
        lines.append(
            f"| {r.risk} | {ident} | {r.container} | {r.model or '?'} | "
            f"{_q(r.estimate_bytes)} | {_q(r.limit_bytes)} | {_q(r.needed_limit_bytes)} | "
            f"{len(r.oomkills)}{last} | {r.restarts} |"
        )
    return "\n".join(lines)


__all__ = ["RBAC_RULES", "AuditRow", "audit", "register", "run"]
