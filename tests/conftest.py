import os
from pathlib import Path

import pytest

QWEN3_0_6B = dict(
    architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_size=1024,
    num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
    intermediate_size=3072, vocab_size=151936, max_position_embeddings=40960,
    torch_dtype="bfloat16", tie_word_embeddings=True,
)

TESTS = Path(__file__).parent
# the tiers that run the operator against a cluster pass their environment on to it
_CLUSTER_TIERS = (TESTS / "e2e", TESTS / "node")


@pytest.fixture
def qwen3_config():
    return dict(QWEN3_0_6B)


@pytest.fixture(autouse=True)
def _no_operator_settings_from_the_shell(request, monkeypatch):
    """OperatorSettings() reads the VLLM_SIZER_* settings (and POD_NAMESPACE) from os.environ,
    as pydantic-settings does: a shell that exports one must not change what the tests build.
    HF_ENDPOINT is left alone (the Hub clients of other tests read it)."""
    if not any(n == "POD_NAMESPACE" or n.upper().startswith("VLLM_SIZER_") for n in os.environ):
        return
    if any(request.node.path.is_relative_to(tier) for tier in _CLUSTER_TIERS):
        return
    from vllm_sizer.operator.settings import OperatorSettings

    names = {n.upper() for n in OperatorSettings.env_names()} - {"HF_ENDPOINT"}
    for name in list(os.environ):
        if name.upper() in names:
            monkeypatch.delenv(name)
