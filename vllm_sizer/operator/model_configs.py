"""Model configs from the cluster: ConfigMaps labelled vllm-sizer.io/model-configs=true (keys are
model ids, values config.json), cached with a short TTL so every webhook replica can use them,
and an optional Hugging Face Hub fetch of config.json (off by default).

Contract used by the admission path (webhook) and the controller:
- `get(model)`  : synchronous, memory only (never blocks the event loop);
- `await load(model)`: refreshes the ConfigMap cache if older than the TTL, then (if enabled)
  fetches from the Hub; every outbound call bounded by settings timeouts; returns None on miss,
  timeout or error (the caller treats None as "cannot size", fail-open).
"""

from __future__ import annotations

from typing import Any, Protocol


class ModelConfigLookup(Protocol):
    def get(self, model: str) -> dict[str, Any] | None: ...

    async def load(self, model: str) -> dict[str, Any] | None: ...


class NoLookup:
    """The lookup used when the cluster offers none (tests, `check`)."""

    def get(self, model: str) -> dict[str, Any] | None:
        return None

    async def load(self, model: str) -> dict[str, Any] | None:
        return None
