"""The built-in model catalog: config.json fields of popular models, one data file each
(catalog/<org>__<name>.json, each with the public source it was copied from)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from .errors import UnknownModel


@lru_cache(maxsize=1)
def _entries() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    folder = resources.files(__package__).joinpath("catalog")
    for item in folder.iterdir():
        if not item.name.endswith(".json"):
            continue
        entry = json.loads(item.read_text())
        out[entry["id"].lower()] = entry
        for alias in entry.get("aliases", []):
            out.setdefault(alias.lower(), entry)
    return out


def normalise_model_id(model: str) -> str:
    """'hf://Org/Name', 'Org/Name@rev', '/models/Org/Name' → 'org/name' for catalog lookup."""
    m = model.strip().lower()
    for prefix in ("hf://", "huggingface://", "https://huggingface.co/"):
        if m.startswith(prefix):
            m = m[len(prefix):]
    m = m.split("@", 1)[0].rstrip("/")
    return m


def lookup(model: str) -> dict[str, Any] | None:
    """The catalog entry for a model id (case-insensitive), or None."""
    entries = _entries()
    key = normalise_model_id(model)
    if key in entries:
        return entries[key]
    parts = key.split("/")
    if len(parts) > 2:  # a local path ending in org/name
        return entries.get("/".join(parts[-2:]))
    return None


def model_config(model: str) -> dict[str, Any]:
    entry = lookup(model)
    if entry is None:
        raise UnknownModel(model)
    return entry["config"]


_GEOMETRIES: dict[int, Any] = {}


def cached_geometry(config: dict[str, Any]) -> Any:
    """ModelGeometry of a catalog config, read once per process. Only for the catalog's own
    dicts (they live as long as the process, so their identity is a safe key)."""
    from .geometry import ModelGeometry

    key = id(config)
    geo = _GEOMETRIES.get(key)
    if geo is None:
        geo = _GEOMETRIES[key] = ModelGeometry.from_hf_config(config)
    return geo


def catalog_ids() -> list[str]:
    return sorted({e["id"] for e in _entries().values()})
