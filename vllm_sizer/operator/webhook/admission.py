"""AdmissionReview v1 in, AdmissionReview v1 out: the admission logic of the webhook role,
independent of the HTTP server (server.py is a thin aiohttp shell around `Admission.handle`).

What kube-apiserver gets back (a non-200 answer, or none within timeoutSeconds, is a *webhook
failure*, and the webhook's failurePolicy decides: Ignore admits the object untouched, Fail
rejects it):

| input | HTTP | answer |
|---|---|---|
| body that is not JSON, not an object, apiVersion other than admission.k8s.io/v1, kind other than AdmissionReview, no `request`, no `request.uid` | 400, text/plain diagnostic | webhook failure |
| body larger than max_request_bytes (8 MiB) | 413 (server.py) | webhook failure |
| subresource (scale, status), operation other than CREATE/UPDATE, a Pod UPDATE (pods are sized on CREATE only), namespace not served, object missing or not an object | 200 | allowed, untouched |
| not a vLLM workload (the common case) | 200 | allowed, untouched (fast path: no copy, no patch) |
| vLLM workload, mutating route | 200 | verdict mutate: JSONPatch + the mutation warnings; allow (or unknown for one container while another was sized) with new annotations: the annotation patch, no warnings; deny: allowed, no patch, no warnings (the validating route denies, after every mutation, other webhooks' included); no patch otherwise |
| vLLM workload, validating route | 200 | deny: allowed false, code 403, the decision's message (+ warnings); anything else: allowed + warnings |
| model-config lookup slower than lookup_timeout_seconds, or failing | 200 | decided without that config (cannot size: allowed) + a warning; fail_closed: allowed false, code 500 |
| any exception while deciding | 200 | allowed + a warning, counted in vllm_sizer_internal_errors_total; fail_closed: allowed false, code 500 |

dryRun requests get the same answer: admission has no side effects at all (sideEffects: None).
UPDATE is decided on `object` (the new state); `oldObject` is not read.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ...policy.messages import printable
from ...policy.review import ObjectDecision, review_object
from ...policy.settings import PolicySettings
from ...workloads.api_names import ANNOTATION_MODE
from ...workloads.model import ReadContext, Workload
from .. import metrics
from ..model_configs import ModelConfigLookup, namespaced
from ..settings import SERVED_RESOURCES, OperatorSettings

_orjson: ModuleType | None
try:  # ~5x faster than the stdlib on 3-5 KB reviews
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    _orjson = None

log = logging.getLogger("vllm_sizer.webhook")

API_VERSION = "admission.k8s.io/v1"
MUTATE = "mutate"
VALIDATE = "validate"
SERVED_KINDS = frozenset(k for *_rest, k in SERVED_RESOURCES)
MAX_WARNINGS = 40
MAX_WARNING_CHARS = 512
LimitRangeMax = Callable[[str], "int | None"]
Reader = Callable[..., list[Workload]]


class BadReview(ValueError):
    """The body is not an AdmissionReview v1 this webhook can answer (→ HTTP 400)."""


# ---- JSON ---------------------------------------------------------------------------------------


def loads(body: bytes | str) -> Any:
    """orjson when it can (it refuses integers beyond 64 bits: then the stdlib)."""
    if _orjson is not None:
        try:
            return _orjson.loads(body)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(body)


def dumps(obj: Any) -> bytes:
    if _orjson is not None:
        return _orjson.dumps(obj)
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


# ---- request --------------------------------------------------------------------------------


@dataclass(slots=True)
class AdmissionRequest:
    uid: str
    kind: str  # request.kind.kind
    group: str
    operation: str
    sub_resource: str | None
    namespace: str | None
    name: str | None
    object: Any
    old_object: Any
    dry_run: bool


def parse_review(body: bytes | str | dict[str, Any]) -> AdmissionRequest:
    """An AdmissionReview (raw body or parsed) → its request. Raises BadReview with a
    diagnostic meant for a person reading the API server's log."""
    if isinstance(body, dict):
        review = body
    else:
        try:
            review = loads(body)
        except (ValueError, RecursionError, UnicodeDecodeError) as exc:
            raise BadReview(f"malformed JSON: {str(exc)[:200]}") from None
    if not isinstance(review, dict):
        raise BadReview(f"an AdmissionReview is a JSON object, not {type(review).__name__}")
    api = review.get("apiVersion")
    if api != API_VERSION:
        raise BadReview(
            f"apiVersion must be {API_VERSION} (admissionReviewVersions: [v1]), got {api!r}"
        )
    if review.get("kind") != "AdmissionReview":
        raise BadReview(f"kind must be AdmissionReview, got {review.get('kind')!r}")
    req = review.get("request")
    if not isinstance(req, dict):
        raise BadReview("the AdmissionReview has no request object")
    uid = req.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("request.uid is missing: the answer must echo it")
    kind = req.get("kind")
    kind = kind if isinstance(kind, dict) else {}
    sub = req.get("subResource")
    ns = req.get("namespace")
    name = req.get("name")
    op = req.get("operation")
    return AdmissionRequest(
        uid=uid,
        kind=str(kind.get("kind") or ""),
        group=str(kind.get("group") or ""),
        operation=op if isinstance(op, str) else "",
        sub_resource=sub if isinstance(sub, str) and sub else None,
        namespace=ns if isinstance(ns, str) and ns else None,
        name=name if isinstance(name, str) else None,
        object=req.get("object"),
        old_object=req.get("oldObject"),
        dry_run=req.get("dryRun") is True,
    )


# ---- response -------------------------------------------------------------------------------


def encode_patch(ops: list[dict[str, Any]]) -> str:
    return base64.b64encode(dumps(ops)).decode("ascii")


def _clean_warnings(warnings: Iterable[str] | None) -> list[str]:
    if not warnings:
        return []
    out = list(dict.fromkeys(str(w)[:MAX_WARNING_CHARS] for w in warnings if w))
    if len(out) > MAX_WARNINGS:
        out = [*out[: MAX_WARNINGS - 1], f"... and {len(out) - MAX_WARNINGS + 1} more warnings"]
    return out


def review_response(
    uid: str,
    allowed: bool = True,
    *,
    patch: list[dict[str, Any]] | None = None,
    code: int | None = None,
    message: str | None = None,
    warnings: Iterable[str] | None = None,
) -> dict[str, Any]:
    """The AdmissionReview v1 answer. `patch` (RFC 6902 ops) only when allowed and non-empty."""
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if allowed and patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = encode_patch(patch)
    if not allowed or message:
        status: dict[str, Any] = {}
        if code is not None:
            status["code"] = code
            # kubectl prints "Error from server (Forbidden)" only when the reason is set
            reason = _STATUS_REASONS.get(code)
            if reason:
                status["reason"] = reason
        if message:
            status["message"] = message
        if status:
            response["status"] = status
    w = _clean_warnings(warnings)
    if w:
        response["warnings"] = w
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def allow(uid: str, warnings: Iterable[str] | None = None) -> dict[str, Any]:
    return review_response(uid, True, warnings=warnings)


_STATUS_REASONS = {400: "BadRequest", 403: "Forbidden", 500: "InternalError"}


def deny(
    uid: str, message: str, code: int = 403, warnings: Iterable[str] | None = None
) -> dict[str, Any]:
    return review_response(uid, False, code=code, message=message, warnings=warnings)


def patch_response(
    uid: str, ops: list[dict[str, Any]], warnings: Iterable[str] | None = None
) -> dict[str, Any]:
    return review_response(uid, True, patch=ops, warnings=warnings)


def answer_for(
    route: str, uid: str, decision: ObjectDecision, extra_warnings: Iterable[str] = ()
) -> dict[str, Any]:
    """A decision → the route's answer (pure; see the module table)."""
    extra = list(extra_warnings)
    if route == MUTATE:
        if decision.verdict != "deny" and decision.patch:
            warnings = decision.warnings + extra if decision.verdict == "mutate" else extra
            return patch_response(uid, decision.patch, warnings)
        return allow(uid)
    if decision.verdict == "deny":
        return deny(uid, decision.message or "vllm-sizer: denied", 403, decision.warnings + extra)
    return allow(uid, _validating_warnings(decision) + extra)


def _validating_warnings(decision: ObjectDecision) -> list[str]:
    """On the validating route a `mutate` verdict means the mutation did not happen (the mutating
    webhook was skipped or failed): say so instead of describing it as done."""
    if decision.verdict != "mutate":
        return decision.warnings
    out: list[str] = []
    for d in decision.containers:
        if d.verdict == "mutate" and d.warnings:
            out.append(f"not applied (the mutating webhook did not run): {d.warnings[0]}")
            out.extend(d.warnings[1:])
        else:
            out.extend(d.warnings)
    seen = set(w for d in decision.containers for w in d.warnings)
    out.extend(w for w in decision.warnings if w not in seen)  # object-level (override) warnings
    return out


# ---- the admission path -------------------------------------------------------------------------


@dataclass(slots=True)
class _LookupProblem:
    reason: str  # lookup-timeout | lookup-error
    models: list[str]
    message: str


class Admission:
    """Answers AdmissionReviews for both routes. Stateless per request; safe for concurrent use
    on one event loop. `lookup.get` is the reader's model resolver; models with no config get one
    `await lookup.load(model)` first (shared between concurrent reviews), each review waiting at
    most settings.lookup_timeout_seconds for it."""

    def __init__(
        self,
        settings: OperatorSettings,
        lookup: ModelConfigLookup | None = None,
        limit_range_max: LimitRangeMax | None = None,
        *,
        read: Reader | None = None,
        runtimes: Any = None,
    ):
        """`runtimes` (optional) has `serving_runtimes` ({namespace: {name: object}}) and
        `cluster_serving_runtimes` ({name: object}) kept current in place by a background listing
        (operator.cluster_listings.ClusterServingRuntimes). A review sees only its own
        namespace's runtimes and model configs (policy/cluster.py)."""
        self.settings = settings
        self.lookup = lookup
        self.limit_range_max = limit_range_max
        if read is None:
            from ...workloads.reader import read_workloads

            read = read_workloads
        self._read: Reader = read
        self._runtimes = runtimes
        self._get: Callable[[str, str | None], Any] | None = None
        self._load_one: Callable[[str, str | None], Any] | None = None
        if lookup is not None:
            self._get, self._load_one = namespaced(lookup)
        self._policies: dict[int | None, PolicySettings] = {}
        self._inflight: dict[str, tuple[asyncio.Future[Any], float]] = {}

    # -- HTTP-level entry point: never raises, never answers 500 --
    async def handle(self, route: str, body: bytes) -> tuple[int, bytes, str]:
        """(HTTP status, body, content type) for a raw request body."""
        try:
            req = parse_review(body)
        except Exception as exc:  # noqa: BLE001 - BadReview, or e.g. MemoryError on absurd bodies
            metrics.count_review(route, "malformed", "other")
            what = str(exc) if isinstance(exc, BadReview) else type(exc).__name__
            return 400, f"vllm-sizer: bad AdmissionReview: {what}\n".encode(), "text/plain"
        answer = await self.review(route, req)
        try:
            return 200, dumps(answer), "application/json"
        except Exception:  # an unserialisable patch value: admit untouched
            log.exception("could not serialise the answer to %s", req.uid)
            metrics.INTERNAL_ERRORS_BY_ROUTE[route].inc()
            return (
                200,
                dumps(self._internal_error(req.uid, "the answer could not be encoded")),
                "application/json",
            )

    async def review(self, route: str, req: AdmissionRequest) -> dict[str, Any]:
        """The answer for one parsed request (never raises)."""
        t0 = time.perf_counter()
        kind = req.kind if req.kind in SERVED_KINDS else "other"
        verdict = "ignored"
        try:
            if (
                req.sub_resource is not None
                or req.operation not in ("CREATE", "UPDATE")
                or not isinstance(req.object, dict)
            ) or not self.settings.serves_namespace(req.namespace or _meta_namespace(req.object)):
                answer = allow(req.uid)
            elif req.kind == "Pod" and req.group == "" and req.operation != "CREATE":
                # a pod's resources are immutable after creation (only a few fields change):
                # pods are sized on CREATE only, never patched on UPDATE
                answer = allow(req.uid)
            else:
                answer, verdict = await self._decide(route, req)
        except Exception as exc:  # nothing may escape: fail open (or closed)
            log.exception(
                "internal error on %s for %s %s/%s", route, req.kind, req.namespace, req.name
            )
            metrics.INTERNAL_ERRORS_BY_ROUTE[route].inc()
            verdict = "error"
            answer = self._internal_error(req.uid, f"{type(exc).__name__}: {str(exc)[:200]}")
        metrics.count_review(route, verdict, kind)
        metrics.REVIEW_SECONDS_BY_ROUTE[route].observe(time.perf_counter() - t0)
        return answer

    def _internal_error(self, uid: str, what: str) -> dict[str, Any]:
        # an exception's text quotes the object's values: escaped, or the API server drops
        # the Warning (a control character) and the unchecked admission goes unsaid
        what = printable(what)
        if self.settings.decision.fail_closed:
            return deny(uid, f"vllm-sizer: internal error ({what}); the policy is fail-closed", 500)
        return allow(uid, [f"vllm-sizer: internal error ({what}); admitted unchanged"])

    async def _decide(self, route: str, req: AdmissionRequest) -> tuple[dict[str, Any], str]:
        obj: dict[str, Any] = req.object
        ns = req.namespace or _meta_namespace(obj)
        context = self._context_for(ns)
        workloads = self._read(obj, context)
        if not workloads:  # not vLLM: the fast path
            return allow(req.uid), "allow"
        extra: list[str] = []
        problem: _LookupProblem | None = None
        missing = self._missing_models(obj, workloads)
        if missing and self.lookup is not None:
            loaded, problem = await self._load(missing, ns)
            if problem is not None:
                if self.settings.decision.fail_closed:
                    return deny(
                        req.uid, problem.message + "; the policy is fail-closed", 500
                    ), "error"
                extra.append(problem.message + ": admitted without it")
            if loaded:
                context = self._context_for(ns, loaded)
                workloads = self._read(obj, context)
        if ns is not None:
            for w in workloads:
                if w.namespace is None:  # CREATE without metadata.namespace: name it in messages
                    w.namespace = ns
        decision = review_object(
            obj,
            context,
            self._policy(ns),
            read=lambda _o, _c: workloads,
            label_pods=req.operation == "CREATE",
            operation=req.operation,
        )
        if route == VALIDATE:
            self._count_failures(decision, problem)
        if route == "validate" and decision.verdict != "skip":
            metrics.count_vllm_review(str(ns or ""), decision.verdict)
        return answer_for(route, req.uid, decision, extra), decision.verdict

    def _context_for(
        self, ns: str | None, loaded: dict[str, dict[str, Any]] | None = None
    ) -> ReadContext:
        """The reader's context for an object in `ns`: that namespace's ServingRuntimes, the
        ClusterServingRuntimes, model configs of `ns` then the trusted namespace."""
        serving: dict[str, Any] = {}
        cluster: dict[str, Any] = {}
        if self._runtimes is not None:
            serving = self._runtimes.serving_runtimes.get(ns or "", {})
            cluster = self._runtimes.cluster_serving_runtimes
        get = self._get

        def resolve(model: str) -> dict[str, Any] | None:
            if loaded and model in loaded:
                return loaded[model]
            return get(model, ns) if get is not None else None

        return ReadContext(
            serving_runtimes=serving,
            cluster_serving_runtimes=cluster,
            model_resolver=resolve if get is not None or loaded else None,
        )

    def _missing_models(self, obj: dict[str, Any], workloads: list[Workload]) -> list[str]:
        if self.settings.decision.mode == "off":
            return []
        meta = obj.get("metadata")
        ann = meta.get("annotations") if isinstance(meta, dict) else None
        if isinstance(ann, dict) and str(ann.get(ANNOTATION_MODE, "")).strip().lower() == "off":
            return []
        return list(
            dict.fromkeys(
                w.model
                for w in workloads
                if w.model_config is None
                and w.model
                and w.settings is not None
                and not w.skip_reason
            )
        )

    def _load_task(self, model: str, ns: str | None = None) -> asyncio.Future[Any]:
        """One in-flight `lookup.load` per model, shared by concurrent reviews (a burst of applies
        for one model makes one outbound call). A load still running after 4 × the timeout is
        cancelled and started afresh by the next review that needs it."""
        assert self.lookup is not None and self._load_one is not None
        now = time.monotonic()
        key = f"{ns or ''}\0{model}"
        entry = self._inflight.get(key)
        if entry is not None:
            task, started = entry
            if not task.done() and now - started <= 4 * self.settings.lookup_timeout_seconds:
                return task
            task.cancel()
        task = asyncio.ensure_future(self._load_one(model, ns))
        self._inflight[key] = (task, now)

        def forget(t: asyncio.Future[Any], m: str = key) -> None:
            if self._inflight.get(m, (None,))[0] is t:
                del self._inflight[m]
            if not t.cancelled():
                t.exception()  # retrieved: no "never retrieved" log for a waiter that gave up

        task.add_done_callback(forget)
        return task

    async def _load(
        self, models: list[str], ns: str | None = None
    ) -> tuple[dict[str, dict[str, Any]], _LookupProblem | None]:
        timeout = self.settings.lookup_timeout_seconds
        tasks = {self._load_task(m, ns): m for m in models}
        # asyncio.wait, not wait_for: a timeout leaves the shared load running for the others
        done, pending = await asyncio.wait(tasks, timeout=timeout)
        loaded: dict[str, dict[str, Any]] = {}
        failed: list[str] = []
        for t in done:
            if t.cancelled():
                failed.append(tasks[t])
                continue
            exc = t.exception()
            if exc is not None:
                log.warning("model config lookup for %s failed: %r", tasks[t], exc)
                failed.append(tasks[t])
                continue
            cfg = t.result()
            if isinstance(cfg, dict) and cfg:
                loaded[tasks[t]] = cfg
        late = [tasks[t] for t in pending]
        if late:
            return loaded, _LookupProblem(
                "lookup-timeout",
                late,
                f"vllm-sizer: model config lookup for {', '.join(late)} "
                f"took longer than {timeout:g}s",
            )
        if failed:
            return loaded, _LookupProblem(
                "lookup-error",
                failed,
                f"vllm-sizer: model config lookup for {', '.join(failed)} failed",
            )
        return loaded, None

    def _policy(self, namespace: str | None) -> PolicySettings:
        lr: int | None = None
        if self.limit_range_max is not None and namespace:
            try:
                value = self.limit_range_max(namespace)
                lr = int(value) if value else None
            except Exception:  # a caller's cache must not break admission
                log.exception("limit_range_max(%r) failed", namespace)
        policy = self._policies.get(lr)
        if policy is None:
            if len(self._policies) > 256:
                self._policies.clear()
            policy = self._policies[lr] = self.settings.policy(limit_range_max_bytes=lr)
        return policy

    @staticmethod
    def _count_failures(decision: ObjectDecision, problem: _LookupProblem | None) -> None:
        for d in decision.containers:
            if d.verdict != "unknown":
                continue
            w = d.workload
            if w.settings is None:
                reason = "unreadable-command-line"
            elif w.model_config is None:
                reason = (
                    problem.reason if problem and w.model in problem.models else "unknown-model"
                )
            else:
                reason = "estimator-error"
            metrics.count_estimate_failure(reason)


def _meta_namespace(obj: dict[str, Any]) -> str | None:
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return ns if isinstance(ns, str) else None
