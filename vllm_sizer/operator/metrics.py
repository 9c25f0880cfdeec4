"""Prometheus metrics of the operator (both roles), on prometheus-client's default registry.

The webhook role serves them on `METRICS_PORT` / `METRICS_PATH` (plain HTTP, see
`vllm_sizer.operator.webhook.server`); `render()` is what that route returns.

- `vllm_sizer_admission_reviews_total{route,verdict,kind}`: every AdmissionReview answered.
  route: `mutate` | `validate`; verdict: the decision's (`allow`, `mutate`, `deny`, `skip`,
  `unknown`), or `ignored` (subresource, operation other than CREATE/UPDATE, namespace not
  served), `error` (an internal error: admitted, or denied with code 500 when fail-closed) or
  `malformed` (HTTP 400: not an AdmissionReview v1; kind `other`);
  kind: the request's kind when it is a served kind, `other` otherwise (bounded cardinality).
- `vllm_sizer_admission_review_seconds{route}`: time from the body read to the answer built.
- `vllm_sizer_estimate_failures_total{reason}`: vLLM containers that could not be sized, counted
  on the validating route only (it sees every object once, after all mutations; the mutating
  route may be reinvoked). reason: `unknown-model`, `unreadable-command-line`,
  `estimator-error`, `lookup-timeout`, `lookup-error`.
- `vllm_sizer_internal_errors_total{route}`: exceptions caught on the admission path.
- `vllm_sizer_vllm_reviews_total{namespace,verdict}`: vLLM objects reviewed on the validating
  route (allow, mutate, deny, unknown), by namespace: the dashboard's per-namespace view.
- `vllm_sizer_oomkills_total{namespace,kind}`: OOMKilled vLLM containers seen by the controller.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Histogram, generate_latest

ROUTES = ("mutate", "validate")

ADMISSION_REVIEWS = Counter(
    "vllm_sizer_admission_reviews_total",
    "AdmissionReviews answered, by route, verdict and kind.",
    ("route", "verdict", "kind"),
)
ADMISSION_REVIEW_SECONDS = Histogram(
    "vllm_sizer_admission_review_seconds",
    "Time to answer one AdmissionReview (body read to response built).",
    ("route",),
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
)
ESTIMATE_FAILURES = Counter(
    "vllm_sizer_estimate_failures_total",
    "vLLM containers whose memory could not be estimated, by reason.",
    ("reason",),
)
INTERNAL_ERRORS = Counter(
    "vllm_sizer_internal_errors_total",
    "Exceptions caught on the admission path, by route.",
    ("route",),
)
VLLM_REVIEWS = Counter(
    "vllm_sizer_vllm_reviews_total",
    "Reviews of vLLM objects (a verdict other than ignored/skip) on the validating route, by "
    "namespace and verdict (only namespaces that run vLLM appear: bounded cardinality).",
    ("namespace", "verdict"),
)
OOMKILLS = Counter(
    "vllm_sizer_oomkills_total",
    "OOMKilled vLLM containers of sized workloads, by namespace and owning kind.",
    ("namespace", "kind"),
)

# Children resolved once: `.labels()` costs a dict lookup and a lock per call.
REVIEW_SECONDS_BY_ROUTE = {r: ADMISSION_REVIEW_SECONDS.labels(route=r) for r in ROUTES}
INTERNAL_ERRORS_BY_ROUTE = {r: INTERNAL_ERRORS.labels(route=r) for r in ROUTES}
for _route in ROUTES:  # make the series exist at 0 from the start
    INTERNAL_ERRORS_BY_ROUTE[_route]
_review_children: dict[tuple[str, str, str], Counter] = {}


def count_review(route: str, verdict: str, kind: str) -> None:
    key = (route, verdict, kind)
    child = _review_children.get(key)
    if child is None:
        child = _review_children[key] = ADMISSION_REVIEWS.labels(
            route=route, verdict=verdict, kind=kind
        )
    child.inc()


def count_vllm_review(namespace: str, verdict: str) -> None:
    VLLM_REVIEWS.labels(namespace=namespace or "", verdict=verdict).inc()


def count_estimate_failure(reason: str) -> None:
    ESTIMATE_FAILURES.labels(reason=reason).inc()


def count_oomkill(namespace: str, kind: str) -> None:
    OOMKILLS.labels(namespace=namespace, kind=kind).inc()


def render() -> tuple[bytes, str]:
    """The exposition text of the default registry and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
