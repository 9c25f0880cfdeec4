"""Random-weight checkpoints and PEFT LoRA adapters with exact architectures.

Importable with only numpy (no torch, no safetensors needed for writing): the
safetensors files are written directly (8-byte little-endian header length, JSON
header, raw little-endian data), bf16 by rounding float32 to its top 16 bits.

    python -m calibration.factory model  OUT_DIR --preset qwen3-0.6b [--layers 7]
    python -m calibration.factory adapter OUT_DIR --preset qwen3-0.6b --rank 256
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "DEFAULT_TARGET_MODULES",
    "PRESETS",
    "Geometry",
    "adapter_tensor_shapes",
    "get_preset",
    "load_safetensors",
    "make_adapter",
    "make_model",
    "make_tokenizer",
    "model_tensor_shapes",
    "read_safetensors_header",
    "write_safetensors",
]

DEFAULT_TARGET_MODULES = (
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
)


@dataclass(frozen=True)
class Geometry:
    """Decoder geometry; field names follow Hugging Face config.json."""

    architecture: str  # "Qwen3ForCausalLM" or "LlamaForCausalLM"
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int = 40960
    rope_theta: float = 1000000.0
    rms_norm_eps: float = 1e-6
    name: str = ""

    @property
    def model_type(self) -> str:
        return {"Qwen3ForCausalLM": "qwen3", "LlamaForCausalLM": "llama"}[self.architecture]

    @property
    def q_width(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.num_key_value_heads * self.head_dim

    @property
    def lora_width(self) -> int:
        """max(hidden, heads*head_dim, intermediate): the W of 6*T*R*W."""
        return max(self.hidden_size, self.q_width, self.intermediate_size)

    def with_layers(self, layers: int | None) -> Geometry:
        if layers is None or layers == self.num_hidden_layers:
            return self
        return dataclasses.replace(
            self, num_hidden_layers=int(layers), name=f"{self.name}-L{layers}" if self.name else ""
        )

    def config_dict(self) -> dict:
        cfg = {
            "architectures": [self.architecture],
            "model_type": self.model_type,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab_size,
            "tie_word_embeddings": self.tie_word_embeddings,
            "max_position_embeddings": self.max_position_embeddings,
            "rope_theta": self.rope_theta,
            "rope_scaling": None,
            "rms_norm_eps": self.rms_norm_eps,
            "hidden_act": "silu",
            "attention_bias": False,
            "attention_dropout": 0.0,
            "initializer_range": 0.02,
            "torch_dtype": "bfloat16",
            "use_cache": True,
            "bos_token_id": self.vocab_size - 1,
            "eos_token_id": self.vocab_size - 1,
        }
        if self.model_type == "qwen3":
            cfg.update(
                {
                    "use_sliding_window": False,
                    "sliding_window": None,
                    "max_window_layers": self.num_hidden_layers,
                }
            )
        else:
            cfg.update({"mlp_bias": False, "pretraining_tp": 1})
        return cfg


PRESETS: dict[str, Geometry] = {
    # Qwen/Qwen3-0.6B config.json
    "qwen3-0.6b": Geometry(
        "Qwen3ForCausalLM", 1024, 3072, 28, 16, 8, 128, 151936, True, name="qwen3-0.6b"
    ),
    # Qwen/Qwen3-1.7B config.json
    "qwen3-1.7b": Geometry(
        "Qwen3ForCausalLM", 2048, 6144, 28, 16, 8, 128, 151936, True, name="qwen3-1.7b"
    ),
    # meta-llama/Llama-3.2-1B config.json (rope scaling omitted: no effect on memory)
    "llama-3.2-1b": Geometry(
        "LlamaForCausalLM",
        2048,
        8192,
        16,
        32,
        8,
        64,
        128256,
        True,
        max_position_embeddings=131072,
        rope_theta=500000.0,
        rms_norm_eps=1e-5,
        name="llama-3.2-1b",
    ),
}


def get_preset(name: str, layers: int | None = None) -> Geometry:
    try:
        g = PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}; known: {sorted(PRESETS)}") from None
    return g.with_layers(layers)


# --------------------------------------------------------------------------- shapes


def _layer_linear_shapes(g: Geometry) -> dict[str, tuple[int, int]]:
    """module name -> (out_features, in_features) for the LoRA-targetable linears."""
    h, i = g.hidden_size, g.intermediate_size
    return {
        "q_proj": (g.q_width, h),
        "k_proj": (g.kv_width, h),
        "v_proj": (g.kv_width, h),
        "o_proj": (h, g.q_width),
        "gate_proj": (i, h),
        "up_proj": (i, h),
        "down_proj": (h, i),
    }


_MODULE_PARENT = {
    "q_proj": "self_attn",
    "k_proj": "self_attn",
    "v_proj": "self_attn",
    "o_proj": "self_attn",
    "gate_proj": "mlp",
    "up_proj": "mlp",
    "down_proj": "mlp",
}


def model_tensor_shapes(g: Geometry) -> dict[str, tuple[int, ...]]:
    """Hugging Face parameter names -> shapes, in file order."""
    shapes: dict[str, tuple[int, ...]] = {
        "model.embed_tokens.weight": (g.vocab_size, g.hidden_size)
    }
    lin = _layer_linear_shapes(g)
    for L in range(g.num_hidden_layers):
        p = f"model.layers.{L}."
        shapes[p + "input_layernorm.weight"] = (g.hidden_size,)
        for mod in ("q_proj", "k_proj", "v_proj", "o_proj"):
            shapes[p + f"self_attn.{mod}.weight"] = lin[mod]
        if g.model_type == "qwen3":
            shapes[p + "self_attn.q_norm.weight"] = (g.head_dim,)
            shapes[p + "self_attn.k_norm.weight"] = (g.head_dim,)
        shapes[p + "post_attention_layernorm.weight"] = (g.hidden_size,)
        for mod in ("gate_proj", "up_proj", "down_proj"):
            shapes[p + f"mlp.{mod}.weight"] = lin[mod]
    shapes["model.norm.weight"] = (g.hidden_size,)
    if not g.tie_word_embeddings:
        shapes["lm_head.weight"] = (g.vocab_size, g.hidden_size)
    return shapes


def adapter_tensor_shapes(
    g: Geometry, rank: int, target_modules: Sequence[str] = DEFAULT_TARGET_MODULES
) -> dict[str, tuple[int, int]]:
    """PEFT names (base_model.model.<hf name>.lora_A/B.weight) -> shapes."""
    lin = _layer_linear_shapes(g)
    unknown = [m for m in target_modules if m not in lin]
    if unknown:
        raise ValueError(f"unsupported target modules {unknown}; known {sorted(lin)}")
    shapes: dict[str, tuple[int, int]] = {}
    for L in range(g.num_hidden_layers):
        for mod in target_modules:
            out_f, in_f = lin[mod]
            base = f"base_model.model.model.layers.{L}.{_MODULE_PARENT[mod]}.{mod}"
            shapes[base + ".lora_A.weight"] = (rank, in_f)
            shapes[base + ".lora_B.weight"] = (out_f, rank)
    return shapes


# --------------------------------------------------------------------------- safetensors

_DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "U16": 2, "I64": 8}


def float32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 array -> uint16 bf16 bit patterns (round to nearest even)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    rounding = ((u >> 16) & 1) + np.uint32(0x7FFF)
    return ((u + rounding) >> 16).astype(np.uint16)


def bf16_bits_to_float32(b: np.ndarray) -> np.ndarray:
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def write_safetensors(
    path: str,
    shapes: dict[str, tuple[int, ...]],
    producer: Iterable[tuple[str, np.ndarray]],
    dtype: str = "BF16",
    metadata: dict[str, str] | None = None,
) -> int:
    """Stream tensors into a safetensors file.

    `shapes` fixes the header (name order = file order); `producer` yields
    (name, array) in the same order, arrays already in the on-disk element type
    (uint16 bit patterns for BF16). Returns the file size in bytes.
    """
    esize = _DTYPE_BYTES[dtype]
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    off = 0
    for name, shp in shapes.items():
        n = int(np.prod(shp, dtype=np.int64)) * esize
        header[name] = {"dtype": dtype, "shape": list(shp), "data_offsets": [off, off + n]}
        off += n
    hjson = json.dumps(header, separators=(",", ":")).encode()
    hjson += b" " * ((8 - len(hjson) % 8) % 8)  # align data start to 8 bytes
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        expected = iter(shapes.items())
        for name, arr in producer:
            ename, eshape = next(expected)
            if name != ename or tuple(arr.shape) != tuple(eshape):
                raise ValueError(
                    f"tensor order/shape mismatch: got {name}{arr.shape}, expected {ename}{eshape}"
                )
            if arr.dtype.itemsize != esize:
                raise ValueError(f"{name}: element size {arr.dtype.itemsize} != {esize}")
            f.write(
                np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
            )
        leftover = next(expected, None)
        if leftover is not None:
            raise ValueError(f"producer stopped early; missing {leftover[0]}")
    os.replace(tmp, path)
    return os.path.getsize(path)


def read_safetensors_header(path: str) -> dict:
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n))


def load_safetensors(path: str) -> dict[str, np.ndarray]:
    """Minimal reader (for tests): BF16 -> float32, others as numpy dtypes."""
    header = read_safetensors_header(path)
    np_types = {
        "BF16": np.uint16,
        "F16": np.float16,
        "F32": np.float32,
        "U16": np.uint16,
        "I64": np.int64,
    }
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        base = 8 + n
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            a, b = info["data_offsets"]
            f.seek(base + a)
            raw = np.frombuffer(
                f.read(b - a), dtype=np.dtype(np_types[info["dtype"]]).newbyteorder("<")
            )
            raw = raw.reshape(info["shape"])
            out[name] = bf16_bits_to_float32(raw) if info["dtype"] == "BF16" else raw
        return out


# --------------------------------------------------------------------------- random data


def _random_bf16(
    rng: np.random.Generator, shape: tuple[int, ...], std: float, chunk: int = 1 << 24
) -> np.ndarray:
    """Normal(0, std) in bf16 bits, generated in chunks to bound float32 memory."""
    n = int(np.prod(shape, dtype=np.int64))
    out = np.empty(n, dtype=np.uint16)
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        x = rng.standard_normal(e - s, dtype=np.float32)
        x *= np.float32(std)
        out[s:e] = float32_to_bf16_bits(x)
    return out.reshape(shape)


_ONE_BF16 = np.uint16(0x3F80)


def _model_producer(
    g: Geometry, shapes: dict[str, tuple[int, ...]], seed: int, std: float
) -> Iterator[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    for name, shp in shapes.items():
        if name.endswith("norm.weight"):
            yield name, np.full(shp, _ONE_BF16, dtype=np.uint16)
        else:
            yield name, _random_bf16(rng, shp, std)


# --------------------------------------------------------------------------- tokenizer


def make_tokenizer(out_dir: str, vocab_size: int) -> None:
    """A WordLevel tokenizer built with the `tokenizers` library, covering every id
    < vocab_size (so any sampled id detokenizes): tokens "w<i>", whitespace split.
    The last id is <|endoftext|> (bos/eos/pad), the one before it <unk>.

    Falls back to writing tokenizer.json by hand when `tokenizers` is missing (the
    JSON is the same serialization)."""
    vocab = {f"w{i}": i for i in range(vocab_size - 2)}
    vocab["<unk>"] = vocab_size - 2
    vocab["<|endoftext|>"] = vocab_size - 1
    special = [("<unk>", vocab_size - 2), ("<|endoftext|>", vocab_size - 1)]
    try:
        from tokenizers import AddedToken, Tokenizer
        from tokenizers.decoders import WordPiece  # noqa: F401
        from tokenizers.models import WordLevel
        from tokenizers.pre_tokenizers import WhitespaceSplit

        tok = Tokenizer(WordLevel(vocab=vocab, unk_token="<unk>"))
        tok.pre_tokenizer = WhitespaceSplit()
        tok.add_special_tokens([AddedToken(s, special=True) for s, _ in special])
        tok.save(os.path.join(out_dir, "tokenizer.json"))
    except ImportError:
        tj = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [
                {
                    "id": i,
                    "content": s,
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": False,
                    "special": True,
                }
                for s, i in special
            ],
            "normalizer": None,
            "pre_tokenizer": {"type": "WhitespaceSplit"},
            "post_processor": None,
            "decoder": None,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
        }
        with open(os.path.join(out_dir, "tokenizer.json"), "w") as f:
            json.dump(tj, f)
    tcfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>",
        "pad_token": "<|endoftext|>",
        "unk_token": "<unk>",
        "model_max_length": 1 << 20,
        "clean_up_tokenization_spaces": False,
    }
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(tcfg, f, indent=1)
    with open(os.path.join(out_dir, "special_tokens_map.json"), "w") as f:
        json.dump(
            {
                "bos_token": "<|endoftext|>",
                "eos_token": "<|endoftext|>",
                "pad_token": "<|endoftext|>",
                "unk_token": "<unk>",
            },
            f,
            indent=1,
        )


# --------------------------------------------------------------------------- public makers


def _write_json(path: str, obj: dict) -> None:
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def make_model(
    out_dir: str, geometry: Geometry, seed: int = 0, std: float = 0.02, tokenizer: bool = True
) -> str:
    """Write config.json, model.safetensors (bf16), generation_config.json and a
    tokenizer into out_dir. Skips work when a finished model with the same config
    is already there (marker file .factory-done). Returns out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    cfg = geometry.config_dict()
    marker = os.path.join(out_dir, ".factory-done")
    stamp = json.dumps({"config": cfg, "seed": seed, "std": std}, sort_keys=True)
    if os.path.exists(marker) and Path(marker).read_text() == stamp:
        return out_dir
    shapes = model_tensor_shapes(geometry)
    write_safetensors(
        os.path.join(out_dir, "model.safetensors"),
        shapes,
        _model_producer(geometry, shapes, seed, std),
        metadata={"format": "pt"},
    )
    _write_json(os.path.join(out_dir, "config.json"), cfg)
    _write_json(
        os.path.join(out_dir, "generation_config.json"),
        {
            "bos_token_id": cfg["bos_token_id"],
            "eos_token_id": cfg["eos_token_id"],
            "do_sample": False,
        },
    )
    if tokenizer:
        make_tokenizer(out_dir, geometry.vocab_size)
    with open(marker, "w") as f:
        f.write(stamp)
    return out_dir


def make_adapter(
    out_dir: str,
    geometry: Geometry,
    rank: int,
    target_modules: Sequence[str] = DEFAULT_TARGET_MODULES,
    seed: int = 1,
    std: float = 0.02,
    lora_alpha: int | None = None,
    base_model: str = "",
) -> str:
    """Write a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors).

    lora_A ~ N(0, std), lora_B ~ N(0, std) (both random, unlike PEFT's zero-init B,
    so the adapter actually changes outputs)."""
    os.makedirs(out_dir, exist_ok=True)
    acfg = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_model,
        "r": int(rank),
        "lora_alpha": int(lora_alpha if lora_alpha is not None else rank),
        "lora_dropout": 0.0,
        "target_modules": list(target_modules),
        "bias": "none",
        "fan_in_fan_out": False,
        "modules_to_save": None,
        "use_rslora": False,
        "use_dora": False,
        "inference_mode": True,
        "layers_to_transform": None,
    }
    marker = os.path.join(out_dir, ".factory-done")
    stamp = json.dumps(
        {"config": acfg, "geometry": geometry.config_dict(), "seed": seed, "std": std},
        sort_keys=True,
    )
    if os.path.exists(marker) and Path(marker).read_text() == stamp:
        return out_dir
    shapes = adapter_tensor_shapes(geometry, rank, target_modules)
    rng = np.random.default_rng(seed)
    write_safetensors(
        os.path.join(out_dir, "adapter_model.safetensors"),
        shapes,
        ((n, _random_bf16(rng, s, std)) for n, s in shapes.items()),
        metadata={"format": "pt"},
    )
    _write_json(os.path.join(out_dir, "adapter_config.json"), acfg)
    with open(marker, "w") as f:
        f.write(stamp)
    return out_dir


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calibration.factory")
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("model")
    m.add_argument("out_dir")
    m.add_argument("--preset", default="qwen3-0.6b", choices=sorted(PRESETS))
    m.add_argument("--layers", type=int)
    m.add_argument("--seed", type=int, default=0)
    a = sub.add_parser("adapter")
    a.add_argument("out_dir")
    a.add_argument("--preset", default="qwen3-0.6b", choices=sorted(PRESETS))
    a.add_argument("--layers", type=int)
    a.add_argument("--rank", type=int, required=True)
    a.add_argument("--targets", default=",".join(DEFAULT_TARGET_MODULES))
    a.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    g = get_preset(args.preset, args.layers)
    if args.cmd == "model":
        print(make_model(args.out_dir, g, seed=args.seed))
    else:
        print(
            make_adapter(
                args.out_dir,
                g,
                args.rank,
                [t for t in args.targets.split(",") if t],
                seed=args.seed,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
