"""Expected figures for the bundled examples, computed by the same pipeline the product runs,
so tests that check a mutation or a message do not pin numbers the calibration may move."""

from __future__ import annotations

from pathlib import Path

import yaml

from vllm_sizer.estimator.units import to_quantity
from vllm_sizer.policy.messages import gi
from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example_decision(name: str, **policy):
    docs = [d for d in yaml.safe_load_all((EXAMPLES / f"{name}.yaml").read_text()) if d]
    workload = next(d for d in docs if d["kind"] not in ("LimitRange", "ConfigMap"))
    return review_object(workload, None, PolicySettings(**policy)).containers[0]


def needed(name: str) -> int:
    """The memory limit mutate mode sets for the example's first vLLM container."""
    return example_decision(name).needed_bytes


NEED_01 = needed("01-cpu-lora-deployment")
NEED_01_GI = gi(NEED_01)  # e.g. "26.5Gi"
NEED_01_QUANTITY = to_quantity(NEED_01)  # e.g. "27136Mi"
FIT_02 = example_decision("02-cpu-lora-undersized-enforce", mode="enforce").fitting_tokens
