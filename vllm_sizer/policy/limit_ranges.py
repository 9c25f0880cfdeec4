"""LimitRange objects → the largest memory limit a container may have, per namespace.
Pure: `check` feeds it documents from its input, the webhook role objects listed from the API."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..workloads.quantity import parse_quantity


def container_memory_max(limit_ranges: Iterable[Any]) -> dict[str, int]:
    """{namespace: the smallest `max.memory` of a `type: Container` limit} — the ceiling
    LimitRanger enforces per container (a Pod-type max bounds the sum of containers, which a
    per-container decision cannot check). Unreadable entries are skipped."""
    out: dict[str, int] = {}
    for lr in limit_ranges:
        if not isinstance(lr, dict):
            continue
        ns = (
            (lr.get("metadata") or {}).get("namespace")
            if isinstance(lr.get("metadata"), dict)
            else None
        )
        spec = lr.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        for item in spec.get("limits") or []:
            if not isinstance(item, dict) or item.get("type", "Container") != "Container":
                continue
            raw = (
                (item.get("max") or {}).get("memory") if isinstance(item.get("max"), dict) else None
            )
            if raw is None or not ns:
                continue
            try:
                value = parse_quantity(raw)
            except ValueError:
                continue
            out[ns] = min(value, out.get(ns, value))
    return out
