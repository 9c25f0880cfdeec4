"""Factory tests: need numpy only (safetensors/torch used when present)."""
import json
import os

import pytest

np = pytest.importorskip("numpy")

from calibration import factory as F

TINY = F.Geometry("Qwen3ForCausalLM", hidden_size=64, intermediate_size=96,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=32, vocab_size=300, tie_word_embeddings=True, name="tiny-qwen3")
TINY_LLAMA = F.Geometry("LlamaForCausalLM", hidden_size=48, intermediate_size=80,
                        num_hidden_layers=3, num_attention_heads=6, num_key_value_heads=2,
                        head_dim=8, vocab_size=200, tie_word_embeddings=False,
                        name="tiny-llama")


def test_presets_match_published_configs():
    q = F.get_preset("qwen3-0.6b")
    assert (q.hidden_size, q.intermediate_size, q.num_hidden_layers) == (1024, 3072, 28)
    assert (q.num_attention_heads, q.num_key_value_heads, q.head_dim) == (16, 8, 128)
    assert q.vocab_size == 151936 and q.tie_word_embeddings
    assert q.lora_width == 3072
    assert F.get_preset("qwen3-1.7b").lora_width == 6144
    assert F.get_preset("qwen3-0.6b", layers=7).num_hidden_layers == 7
    with pytest.raises(KeyError):
        F.get_preset("nope")


def test_bf16_roundtrip():
    x = np.array([1.0, -2.5, 0.0, 3.140625, 1e-3], dtype=np.float32)
    b = F.float32_to_bf16_bits(x)
    assert b.dtype == np.uint16
    assert F.float32_to_bf16_bits(np.array([1.0], np.float32))[0] == 0x3F80
    y = F.bf16_bits_to_float32(b)
    assert np.allclose(x, y, rtol=1e-2)


@pytest.mark.parametrize("geom", [TINY, TINY_LLAMA], ids=lambda g: g.name)
def test_make_model_writes_loadable_checkpoint(tmp_path, geom):
    out = str(tmp_path / geom.name)
    F.make_model(out, geom, seed=3)
    cfg = json.load(open(os.path.join(out, "config.json")))
    assert cfg["architectures"] == [geom.architecture]
    assert cfg["model_type"] == geom.model_type
    for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "head_dim", "vocab_size", "tie_word_embeddings"):
        assert cfg[k] == getattr(geom, k), k
    assert cfg["torch_dtype"] == "bfloat16"

    path = os.path.join(out, "model.safetensors")
    header = F.read_safetensors_header(path)
    names = [k for k in header if k != "__metadata__"]
    assert all(header[k]["dtype"] == "BF16" for k in names)
    shapes = {k: tuple(header[k]["shape"]) for k in names}
    assert shapes == F.model_tensor_shapes(geom)

    h, i, v = geom.hidden_size, geom.intermediate_size, geom.vocab_size
    q, kv = geom.num_attention_heads * geom.head_dim, geom.num_key_value_heads * geom.head_dim
    assert shapes["model.embed_tokens.weight"] == (v, h)
    assert shapes["model.layers.0.self_attn.q_proj.weight"] == (q, h)
    assert shapes["model.layers.0.self_attn.k_proj.weight"] == (kv, h)
    assert shapes["model.layers.0.self_attn.v_proj.weight"] == (kv, h)
    assert shapes["model.layers.0.self_attn.o_proj.weight"] == (h, q)
    assert shapes["model.layers.1.mlp.gate_proj.weight"] == (i, h)
    assert shapes["model.layers.1.mlp.up_proj.weight"] == (i, h)
    assert shapes["model.layers.1.mlp.down_proj.weight"] == (h, i)
    assert f"model.layers.{geom.num_hidden_layers - 1}.input_layernorm.weight" in shapes
    assert f"model.layers.{geom.num_hidden_layers}.input_layernorm.weight" not in shapes
    # tied embeddings: no lm_head tensor; untied: lm_head present
    assert ("lm_head.weight" in shapes) == (not geom.tie_word_embeddings)
    if not geom.tie_word_embeddings:
        assert shapes["lm_head.weight"] == (v, h)
    # qk-norm only for Qwen3
    assert ("model.layers.0.self_attn.q_norm.weight" in shapes) == (geom.model_type == "qwen3")

    # data: offsets contiguous, file size matches, values sane
    data_end = max(header[k]["data_offsets"][1] for k in names)
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
    assert os.path.getsize(path) == 8 + n + data_end
    tensors = F.load_safetensors(path)
    emb = tensors["model.embed_tokens.weight"]
    assert emb.shape == (v, h) and 0.01 < float(emb.std()) < 0.03
    assert np.all(tensors["model.norm.weight"] == 1.0)

    # tokenizer covers the whole vocabulary
    tj = json.load(open(os.path.join(out, "tokenizer.json")))
    vocab = tj["model"]["vocab"]
    assert len(vocab) == v and max(vocab.values()) == v - 1
    assert os.path.exists(os.path.join(out, "tokenizer_config.json"))


def test_safetensors_library_reads_file(tmp_path):
    pytest.importorskip("safetensors")
    out = str(tmp_path / "m")
    F.make_model(out, TINY)
    from safetensors import safe_open
    try:
        with safe_open(os.path.join(out, "model.safetensors"), framework="numpy") as f:
            keys = set(f.keys())
    except Exception as e:  # noqa: BLE001 - numpy framework cannot materialize bf16; keys are enough
        pytest.skip(f"safetensors numpy reader: {e}")
    assert keys == set(F.model_tensor_shapes(TINY))


def test_model_is_cached(tmp_path):
    out = str(tmp_path / "m")
    F.make_model(out, TINY)
    p = os.path.join(out, "model.safetensors")
    mtime = os.path.getmtime(p)
    F.make_model(out, TINY)
    assert os.path.getmtime(p) == mtime


@pytest.mark.parametrize("rank", [8, 16])
def test_make_adapter_peft_layout(tmp_path, rank):
    out = str(tmp_path / "lora")
    F.make_adapter(out, TINY, rank)
    cfg = json.load(open(os.path.join(out, "adapter_config.json")))
    assert cfg["peft_type"] == "LORA" and cfg["r"] == rank
    assert set(cfg["target_modules"]) == set(F.DEFAULT_TARGET_MODULES)
    header = F.read_safetensors_header(os.path.join(out, "adapter_model.safetensors"))
    shapes = {k: tuple(v["shape"]) for k, v in header.items() if k != "__metadata__"}
    h, i = TINY.hidden_size, TINY.intermediate_size
    q, kv = TINY.q_width, TINY.kv_width
    p = "base_model.model.model.layers.1."
    expect = {
        "self_attn.q_proj": (h, q), "self_attn.k_proj": (h, kv), "self_attn.v_proj": (h, kv),
        "self_attn.o_proj": (q, h), "mlp.gate_proj": (h, i), "mlp.up_proj": (h, i),
        "mlp.down_proj": (i, h),
    }
    for mod, (in_f, out_f) in expect.items():
        assert shapes[p + mod + ".lora_A.weight"] == (rank, in_f)
        assert shapes[p + mod + ".lora_B.weight"] == (out_f, rank)
    assert len(shapes) == 2 * 7 * TINY.num_hidden_layers


def test_adapter_target_subset_and_unknown(tmp_path):
    shapes = F.adapter_tensor_shapes(TINY, 4, ["q_proj", "v_proj"])
    assert len(shapes) == 2 * 2 * TINY.num_hidden_layers
    with pytest.raises(ValueError):
        F.adapter_tensor_shapes(TINY, 4, ["lm_head_x"])


def test_write_safetensors_rejects_wrong_order(tmp_path):
    shapes = {"a": (2,), "b": (3,)}
    bad = iter([("b", np.zeros(3, np.uint16)), ("a", np.zeros(2, np.uint16))])
    with pytest.raises(ValueError):
        F.write_safetensors(str(tmp_path / "x.safetensors"), shapes, bad)


def test_torch_loads_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    from safetensors.torch import load_file
    out = str(tmp_path / "m")
    F.make_model(out, TINY_LLAMA)
    d = load_file(os.path.join(out, "model.safetensors"))
    assert d["lm_head.weight"].dtype == torch.bfloat16
    assert tuple(d["lm_head.weight"].shape) == (TINY_LLAMA.vocab_size, TINY_LLAMA.hidden_size)
