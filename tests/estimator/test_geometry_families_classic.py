"""Geometry of classic families (GPT-2, ...) read from catalog configs: each test checks a
count or shape that a reading without the family's layout gets wrong."""

from vllm_sizer.estimator import ModelGeometry, lookup_model


def _geo(model_id: str) -> ModelGeometry:
    return ModelGeometry.from_hf_config(lookup_model(model_id)["config"])


def test_gpt2_counts_its_learned_position_table():
    # GPT2Model.wpe holds n_positions (1024) rows of n_embd; with the tied wte, Conv1D biases and
    # LayerNorm biases the count equals the exact checkpoint count keras-hub publishes
    # (gpt2_base_en 124439808, gpt2_medium_en 354823168).
    g = _geo("gpt2")
    assert g.learned_positions == 1024
    assert g.parameter_count() == 124439808
    assert _geo("openai-community/gpt2-medium").parameter_count() == 354823168


def test_bert_encoder_counts_biases_position_token_type_tables_and_pooler():
    # all-MiniLM-L6-v2 (BertModel, h 384, 6 layers, inter 1536): embeddings 30522+512+2 rows and a
    # LayerNorm, per layer 4 biased h*h projections, two biased MLP linears and two LayerNorms,
    # plus the pooler: 22,713,216 parameters (the sum of the checkpoint's tensors).
    g = _geo("sentence-transformers/all-MiniLM-L6-v2")
    assert not g.gated_mlp and g.qkv_bias and g.o_bias and g.mlp_bias and g.layernorm_bias
    assert g.learned_positions == 512 and g.token_type_rows == 2 and g.pooler
    assert g.parameter_count() == 22713216
    # BERT-base geometry (snowflake-arctic-embed-m): 109,482,240 with the pooler
    assert _geo("Snowflake/snowflake-arctic-embed-m").parameter_count() == 109482240
    # XLM-R sequence classifier (bge-reranker-v2-m3): 8194 position rows, one token type, no pooler
    r = _geo("BAAI/bge-reranker-v2-m3")
    assert r.learned_positions == 8194 and r.token_type_rows == 1 and not r.pooler
