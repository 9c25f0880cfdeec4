"""Read vLLM workloads out of Kubernetes objects: one typed Workload per vLLM container.

Public API: `read_workloads(obj, context)` (reader.py), `Workload` / `ReadContext` (model.py),
`parse_quantity` / `format_quantity` (quantity.py), and the vLLM flag parser (vllm_args.py).
"""

from .model import ReadContext, Workload
from .quantity import format_quantity, parse_quantity
from .reader import read_workloads

__all__ = ["ReadContext", "Workload", "format_quantity", "parse_quantity", "read_workloads"]
