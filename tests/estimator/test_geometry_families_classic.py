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
    # XLM-R sequence classifier (bge-reranker-v2-m3): 8194 position rows, one token type, and the
    # classification head's dense h*h layer in place of a pooler
    r = _geo("BAAI/bge-reranker-v2-m3")
    assert r.learned_positions == 8194 and r.token_type_rows == 1 and r.pooler


def test_sparse_llava_text_config_takes_llama_defaults_but_top_level_llama_does_not():
    # llava-1.5-7b-hf's text_config lists only non-default keys (no hidden_size, no layer count);
    # transformers fills them from LlamaConfig's defaults: a Llama-2-7B body with 32064 tokens.
    g = _geo("llava-hf/llava-1.5-7b-hf")
    assert (g.hidden_size, g.num_layers, g.num_attention_heads, g.intermediate_size) == \
        (4096, 32, 32, 11008)
    assert g.vocab_size == 32064 and not g.tie_word_embeddings and g.vision_parameters > 2.5e8
    # safetensors total of llava-1.5-7b-hf is 7.06B (CLIP ViT-L/14-336 tower included)
    assert abs(g.parameter_count() / 7.06e9 - 1) < 0.02
    import pytest
    from vllm_sizer.estimator.errors import MissingConfigField
    with pytest.raises(MissingConfigField):
        ModelGeometry.from_hf_config({"model_type": "llama", "vocab_size": 32000,
                                      "num_hidden_layers": 32, "num_attention_heads": 32})


def test_headless_decoder_embedding_model_has_no_lm_head():
    # e5-mistral-7b-instruct is a MistralModel (no lm_head) with tie_word_embeddings false: its
    # weights are Mistral-7B's minus the 32000 x 4096 output matrix (Hub: 7.11B).
    g = ModelGeometry.from_hf_config(lookup_model("intfloat/e5-mistral-7b-instruct")["config"])
    assert g.parameter_count() == 7_241_732_096 - 32000 * 4096


def test_mpt_reads_n_heads_and_max_seq_len():
    # MPT names its heads n_heads and its context max_seq_len (transformers MptConfig
    # attribute_map); bias-free non-gated MLP (expansion_ratio 4), tied embeddings.
    # mosaicml/mpt-7b model card: n_parameters 6.7B, n_heads 32, sequence length 2048.
    g = _geo("mosaicml/mpt-7b")
    assert g.num_attention_heads == 32 and g.head_dim == 128 and g.max_position_embeddings == 2048
    assert not g.gated_mlp and g.intermediate_size == 4 * 4096 and g.tie_word_embeddings
    assert abs(g.parameter_count() - 6.7e9) / 6.7e9 < 0.02


def test_bloom_counts_every_bias_and_the_embedding_layernorm():
    # BLOOM: width n_embed, biases on qkv/dense/MLP and LayerNorms, word_embeddings_layernorm,
    # tied lm_head. The count equals the hub's safetensors total for bigscience/bloomz-560m
    # (559214592) and keras-hub's bloomz_560m_multi preset params (the same number).
    g = _geo("bigscience/bloomz-560m")
    assert g.hidden_size == 1024 and g.qkv_bias and g.mlp_bias and g.layernorm_bias
    assert g.parameter_count() == 559214592


def test_gpt_neox_counts_its_linear_biases():
    # GPT-NeoX (Pythia) biases query_key_value, dense and both MLP projections; with them the
    # counts equal the Pythia model card's table (70M: 70,426,624 total, 18,915,328
    # non-embedding; 160M: 162,322,944 total).
    g = _geo("EleutherAI/pythia-70m")
    assert g.qkv_bias and g.mlp_bias
    assert g.parameter_count() - g.embedding_parameters() == 18915328
    assert _geo("EleutherAI/pythia-160m").parameter_count() == 162322944
