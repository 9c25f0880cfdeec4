"""The built-in model catalog: config.json copies of the models vLLM serves, one data file each
(catalog/<org>__<name>.json, each with the public source it was copied from).

A generated index (data/catalog_index.json: ids, aliases, file names, a geometry signature) is
read on the first lookup; an entry's file is read only when that model is asked for, so the
import stays lean and a lookup costs one dict access after the first. Regenerate the index and
docs/models.md with `python scripts/build_catalog.py` after adding a file (CI checks both).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from .errors import UnknownModel

INDEX_FILE = "catalog_index.json"
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://")
_HF_URL = "https://huggingface.co/"


@lru_cache(maxsize=1)
def _index() -> dict[str, Any]:
    """{'entries': [...], 'keys': {lowercase id or alias: id}} from the generated index."""
    raw = resources.files(__package__).joinpath("data", INDEX_FILE).read_text()
    data: dict[str, Any] = json.loads(raw)
    keys: dict[str, str] = {}
    for e in data["entries"]:
        keys[e["id"].lower()] = e["id"]
    for e in data["entries"]:
        for alias in e.get("aliases", []):
            keys.setdefault(alias.lower(), e["id"])
    data["keys"] = keys
    data["by_id"] = {e["id"]: e for e in data["entries"]}
    return data


_ENTRIES: dict[str, dict[str, Any]] = {}  # id → entry, read on demand and kept for the process


def entry(model_id: str) -> dict[str, Any]:
    """The catalog entry of an exact catalog id (as the index spells it)."""
    got = _ENTRIES.get(model_id)
    if got is None:
        meta = _index()["by_id"][model_id]
        text = resources.files(__package__).joinpath("catalog", meta["file"]).read_text()
        got = _ENTRIES[model_id] = json.loads(text)
    return got


def index_row(model_id: str) -> dict[str, Any]:
    """The index row of an exact catalog id."""
    row: dict[str, Any] = _index()["by_id"][model_id]
    return row


def index_entries() -> list[dict[str, Any]]:
    """The index rows (id, file, aliases, model_type, signature), without reading entries."""
    return list(_index()["entries"])


def normalise_model_id(model: str) -> str:
    """'hf://Org/Name', 'Org/Name@rev', 'https://huggingface.co/Org/Name', '/models/Org/Name/'
    → 'org/name' (lowercase, no scheme, no revision, no trailing slash) for catalog lookup."""
    m = model.strip()
    if m.lower().startswith(_HF_URL):
        m = m[len(_HF_URL) :]
    m = _SCHEME.sub("", m.lower(), count=1)
    m = m.split("@", 1)[0].rstrip("/")
    if "/tree/" in m:  # https://huggingface.co/Org/Name/tree/main
        m = m.split("/tree/", 1)[0]
    return m


def exact_id(model: str) -> str | None:
    """The catalog id a spelling names exactly (case, scheme and revision aside), or None."""
    keys: dict[str, str] = _index()["keys"]
    return keys.get(normalise_model_id(model))


def lookup(model: str) -> dict[str, Any] | None:
    """The catalog entry for a model id (case-insensitive; hf:// and @revision tolerated; a
    local path ending in org/name), or None. Name rules beyond that: estimator.names."""
    key = normalise_model_id(model)
    keys = _index()["keys"]
    found = keys.get(key)
    if found is None:
        parts = [p for p in key.split("/") if p]
        if len(parts) > 2:  # a local path ending in org/name
            found = keys.get("/".join(parts[-2:]))
    return entry(found) if found is not None else None


def model_config(model: str) -> dict[str, Any]:
    found = lookup(model)
    if found is None:
        raise UnknownModel(model)
    config: dict[str, Any] = found["config"]
    return config


_GEOMETRIES: dict[int, Any] = {}


def cached_geometry(config: dict[str, Any]) -> Any:
    """ModelGeometry of a catalog config, read once per process. Only for dicts that live as
    long as the process (catalog entries and the name resolver's derived configs), so their
    identity is a safe key."""
    from .geometry import ModelGeometry

    key = id(config)
    geo = _GEOMETRIES.get(key)
    if geo is None:
        geo = _GEOMETRIES[key] = ModelGeometry.from_hf_config(config)
    return geo


def catalog_ids() -> list[str]:
    return sorted(e["id"] for e in _index()["entries"])


# Config fields that decide the shapes (weights, KV, LoRA): two entries with equal signatures
# share a geometry, whatever their names. Used by the index and by name resolution.
SIGNATURE_KEYS = (
    "model_type",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "num_local_experts",
    "num_experts",
    "n_routed_experts",
    "moe_intermediate_size",
    "kv_lora_rank",
    "tie_word_embeddings",
)


# Other spellings of a signature key, the ones ModelGeometry.from_hf_config reads for the same
# field, so the signature holds a config's shapes whatever it calls them: GPT-2 / GPT-J /
# GPTBigCode n_embd, n_layer, n_head, n_inner; BLOOM n_embed; MPT d_model, n_layers, n_heads;
# Falcon n_head_kv; ChatGLM num_layers, padded_vocab_size (THUDM/glm-4-9b lists num_layers only,
# glm-4-9b-chat both, and the two must share a signature).
SIGNATURE_ALIASES = {
    "hidden_size": ("d_model", "n_embd", "n_embed"),
    "intermediate_size": ("ffn_dim", "n_inner", "ffn_hidden_size", "ff_intermediate_size"),
    "num_hidden_layers": ("n_layer", "num_layers", "n_layers"),
    "num_attention_heads": ("n_head", "num_heads", "n_heads"),
    "num_key_value_heads": ("num_kv_heads", "n_head_kv"),
    "vocab_size": ("padded_vocab_size",),
}


def geometry_signature(config: dict[str, Any]) -> list[Any]:
    """The SIGNATURE_KEYS of the config ModelGeometry reads (geometry.text_model_config: the
    text_config with its class defaults, the model type's defaults), under any spelling."""
    from .geometry import text_model_config

    c = text_model_config(config)

    def value(k: str) -> Any:
        v = c.get(k)
        for alias in SIGNATURE_ALIASES.get(k, ()):
            if v is None:
                v = c.get(alias)
        return v

    return [value(k) for k in SIGNATURE_KEYS]
