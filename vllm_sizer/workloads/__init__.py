"""Read vLLM workloads out of Kubernetes objects: one typed Workload per vLLM container.

Public API: `read_workloads(obj, context)` (reader.py), `Workload` / `ReadContext` (model.py),
`parse_quantity` / `format_quantity` (quantity.py), and the vLLM flag parser (vllm_args.py).
"""

from typing import Any

from .model import ReadContext, Workload
from .quantity import format_quantity, parse_quantity


def __getattr__(name: str) -> Any:
    # the reader needs PyYAML (the `cli` extra); the flag parser and the models do not, so
    # `vllm-sizer estimate` runs on the base install
    if name == "read_workloads":
        from .reader import read_workloads

        return read_workloads
    raise AttributeError(name)


__all__ = ["ReadContext", "Workload", "format_quantity", "parse_quantity", "read_workloads"]
