"""The controller role: Kopf watchers that size pre-existing objects (sizing.py), the OOM
evidence pod watch (oom.py), and their Kopf registration (handlers.py).

Public API:
- `Sizer(api, settings, lookup)`: `wants(body)`, `await size(body) -> SizeResult`;
- `OomWatcher(api, settings, verdicts=PodVerdicts(api, settings))`: `await handle_pod(pod)`,
  `await start()` / `await stop()`; PodVerdicts tells the top-level owner of a pod sized at
  creation (PodsSized) or denied (PodsDenied, from FailedCreate Events);
- `register(registry, sizer, oom)`: the Kopf handlers; `configure_kopf(settings)`;
- `sized_label_patch(obj)`: JSON Patch ops adding `vllm-sizer.io/sized: "true"` to the pod
  template(s), for the webhook to append when it changes a template anyway;
- `KubeApi(api_client_factory)`, `default_api_client_factory()`, `api_client_for(url)`.
"""

from ...workloads.api_names import KOPF_PREFIX, LAST_EVENT_ANNOTATION
from .handlers import HANDLER_ID, configure_kopf, register
from .kube import ApiError, KubeApi, api_client_for, default_api_client_factory, resource_path
from .oom import OomRecord, OomWatcher
from .pods import PodVerdicts
from .sizing import (
    OUTPUT_ANNOTATIONS,
    Sizer,
    SizeResult,
    classify,
    event_body,
    sized_label_patch,
)

__all__ = [
    "HANDLER_ID",
    "KOPF_PREFIX",
    "LAST_EVENT_ANNOTATION",
    "OUTPUT_ANNOTATIONS",
    "ApiError",
    "KubeApi",
    "OomRecord",
    "OomWatcher",
    "PodVerdicts",
    "SizeResult",
    "Sizer",
    "api_client_for",
    "classify",
    "configure_kopf",
    "default_api_client_factory",
    "event_body",
    "register",
    "resource_path",
    "sized_label_patch",
]
