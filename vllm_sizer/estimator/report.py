"""MemoryReport: the estimate, term by term, with how each term enters the total."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from .settings import ResolvedSettings
from .units import GiB

Enters = Literal["sum", "max-of-transients", "device", "not-counted"]


class Term(BaseModel):
    name: str
    bytes: int
    enters: Enters  # sum: added to the host total; max-of-transients: the largest of those counts
    source: str  # formula, measurement or default it comes from


class MemoryReport(BaseModel):
    model: str | None
    parameters: int
    weights_bytes: int
    kv_cache_bytes: int
    activation_bytes: int
    lora_adapter_bytes: int
    lora_prefill_scratch_bytes: int
    lora_logits_scratch_bytes: int
    runtime_overhead_bytes: int
    other_host_bytes: int
    total_memory_bytes: int  # HOST memory: what the pod's memory limit must cover
    device_memory_bytes: int | None  # per GPU, None on the CPU backend
    device_fits: bool | None  # False: surely does not fit; None: unknown GPU or uncertain
    device_max_model_len: int | None = None  # largest max_model_len the upper estimate fits
    device_max_num_seqs: int | None = None  # largest max_num_seqs the upper estimate fits
    lora_scratch_case: str | None
    kv_cache_auto_sized: bool
    terms: list[Term]
    notes: list[str]
    resolved: ResolvedSettings
    estimator_version: str

    @property
    def total_gib(self) -> float:
        return self.total_memory_bytes / GiB

    def largest_terms(self, n: int = 3) -> list[Term]:
        """The largest terms that count toward the host total."""
        counted = [
            t for t in self.terms if t.enters in ("sum", "max-of-transients") and t.bytes > 0
        ]
        return sorted(counted, key=lambda t: t.bytes, reverse=True)[:n]
