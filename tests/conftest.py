import pytest

QWEN3_0_6B = dict(
    architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_size=1024,
    num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
    intermediate_size=3072, vocab_size=151936, max_position_embeddings=40960,
    torch_dtype="bfloat16", tie_word_embeddings=True,
)


@pytest.fixture
def qwen3_config():
    return dict(QWEN3_0_6B)
