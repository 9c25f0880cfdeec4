"""Policy settings: how the decision treats an estimate (mode, headroom, rounding, limits)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, field_validator

from ..estimator.constants import PINNED_CPU_KV_GIB_DEFAULT
from ..estimator.units import MiB
from ..workloads.quantity import parse_quantity

Mode = Literal["mutate", "enforce", "warn", "off"]
MODES: tuple[Mode, ...] = ("mutate", "enforce", "warn", "off")


def parse_mode(value: object) -> Mode | None:
    """ "Warn " → "warn"; None for anything that is not a mode."""
    text = str(value).strip().lower()
    return next((m for m in MODES if m == text), None)


def parse_headroom(value: str | float) -> float:
    """0.1, "0.1" or "10%" → 0.1. Raises ValueError on anything else or outside [0, 10]."""
    if isinstance(value, (int, float)):
        h = float(value)
    else:
        text = str(value).strip()
        h = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    if not math.isfinite(h) or not 0 <= h <= 10:
        raise ValueError(f"headroom {value!r} must be between 0 and 10 (or 0% and 1000%)")
    return h


class PolicySettings(BaseModel):
    mode: Mode = "mutate"
    headroom: float = 0.10
    rounding_bytes: int = 256 * MiB
    # VLLM_CPU_KVCACHE_SPACE written where vLLM would size the KV cache from the pod limit.
    pin_cpu_kv_gib: float = PINNED_CPU_KV_GIB_DEFAULT.value
    # Caller-supplied ceilings: a LimitRange max for the namespace, the largest node's memory.
    limit_range_max_bytes: int | None = None
    largest_node_memory_bytes: int | None = None
    fail_closed: bool = False

    @field_validator("headroom", mode="before")
    @classmethod
    def _headroom(cls, v: str | float) -> float:
        return parse_headroom(v)

    # Text as an environment variable or a values file gives it: "1Gi" (a Kubernetes quantity)
    # for the byte sizes, " true " for the flag (pydantic reads true/false, 1/0, yes/no, on/off).
    @field_validator("rounding_bytes", "largest_node_memory_bytes", mode="before")
    @classmethod
    def _quantity(cls, v: object) -> object:
        return parse_quantity(v) if isinstance(v, str) else v

    @field_validator("fail_closed", mode="before")
    @classmethod
    def _flag(cls, v: object) -> object:
        return v.strip() if isinstance(v, str) else v

    @field_validator("pin_cpu_kv_gib")
    @classmethod
    def _pin(cls, v: float) -> float:
        # written as VLLM_CPU_KVCACHE_SPACE, which vLLM reads with int() (0.33.0:vllm/envs.py:
        # 896-900): a fraction would stop every pod it is written into; 0 means "unset" there
        if not (v >= 1 and v == int(v)):
            raise ValueError(
                "pin_cpu_kv_gib must be a whole number of GiB, at least 1 (vLLM reads "
                "VLLM_CPU_KVCACHE_SPACE with int())"
            )
        return v

    @field_validator("rounding_bytes")
    @classmethod
    def _rounding(cls, v: int) -> int:
        if v < 1:
            raise ValueError("rounding must be at least 1 byte")
        return v

    def needed_limit(self, estimate_bytes: int, headroom: float | None = None) -> int:
        """estimate × (1 + headroom), rounded up to the rounding step."""
        h = self.headroom if headroom is None else headroom
        raw = math.ceil(estimate_bytes * (1 + h))
        return -(-raw // self.rounding_bytes) * self.rounding_bytes
