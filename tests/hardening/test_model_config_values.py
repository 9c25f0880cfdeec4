"""Hostile numbers in a model's config.json, by every way one arrives (the model-config
annotation, a model-configs ConfigMap beside the workload in `check`, `estimate
--model-config FILE`; the Hub fetch and the webhook's ConfigMap cache hand the same dict to the
same reader): each count or dimension field holding what no config holds is refused by name,
never truncated (1.5 → 1), never read as 1 (`true`), never replaced by a default (0, []),
never an overflow deep in a term."""

from __future__ import annotations

import copy
import json
import random

import pytest

from vllm_sizer.cli.main import main
from vllm_sizer.estimator import ModelGeometry
from vllm_sizer.estimator.catalog import catalog_ids, model_config
from vllm_sizer.estimator.errors import InvalidConfigField
from vllm_sizer.estimator.geometry import CONFIG_INT_FIELDS, POSITIVE_CONFIG_FIELDS
from vllm_sizer.policy.review import review_object

from .corpus_mutants import nodes, put
from .hostile_objects import deployment

BAD_ANYWHERE = [1.5, 0.5, True, False, "4096", "x", [[1]], {}, {"a": 1}, float("nan"),
                float("inf"), float("-inf"), -1, -4096, 10**400, 1e308, 2**63]
BAD_WHEN_POSITIVE = [0, -0.0, 0.0]


def _fields(cfg):
    return [(p, v) for p, v in nodes(cfg)
            if p and p[0] != "source" and p[-1] in CONFIG_INT_FIELDS and v is not None]


def _sample():
    rng = random.Random(7)
    ids = sorted(catalog_ids())
    out = []
    for mid in rng.sample(ids, 40):
        cfg = model_config(mid)
        for p, _v in _fields(cfg):
            out.append((mid, p))
    return rng.sample(out, 60)


@pytest.mark.parametrize(("mid", "path"), _sample())
def test_every_count_field_refuses_what_no_config_holds(mid, path):
    field = path[-1]
    values = BAD_ANYWHERE + (BAD_WHEN_POSITIVE if field in POSITIVE_CONFIG_FIELDS else [])
    for bad in values:
        cfg = copy.deepcopy(model_config(mid))  # the catalog's own dict is shared
        put(cfg, path, bad)
        with pytest.raises(InvalidConfigField) as err:
            ModelGeometry.from_hf_config(cfg)
        assert f"'{field}'" in str(err.value)


def test_the_catalog_passes_the_check():
    for mid in catalog_ids():
        ModelGeometry.from_hf_config(model_config(mid))


QWEN3 = "Qwen/Qwen3-0.6B"
IMG = "vllm/vllm-openai-cpu:v0.11.0"


@pytest.mark.parametrize("text", [
    '"hidden_size": NaN', '"hidden_size": Infinity', '"hidden_size": 1024.5',
    '"hidden_size": true', '"hidden_size": [1024]', '"num_key_value_heads": 0',
    '"intermediate_size": []', '"max_position_embeddings": 1e400',
    '"vocab_size": 99999999999999999999999999999',
])
def test_the_annotation_and_a_configmap_say_which_field(text, tmp_path, capsys):
    base = json.dumps(model_config(QWEN3))
    key = text.split(":")[0]
    cfg_text = base.replace(f"{key}: ", f"{key}: XX", 1)
    cfg_text = cfg_text.replace(cfg_text[cfg_text.index(f"{key}: XX"):].split(",")[0],
                                text, 1)
    field = key.strip('"')
    obj = deployment({"image": IMG, "args": ["--model", "acme/private"],
                      "resources": {"limits": {"memory": "8Gi"}}}, ns="llm")
    obj["metadata"]["annotations"] = {"vllm-sizer.io/model-config": cfg_text}
    d = review_object(obj)
    assert d.verdict == "unknown", d.verdict
    assert any(f"'{field}'" in w for w in d.warnings), d.warnings
    assert not [op for op in d.patch if "/resources" in op["path"]]
    # the same config in a model-configs ConfigMap beside the workload, through `check`
    del obj["metadata"]["annotations"]
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "configs", "namespace": "llm",
                       "labels": {"vllm-sizer.io/model-configs": "true"}},
          "data": {"acme--private": cfg_text}}
    f = tmp_path / "in.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [cm, obj]}))
    rc = main(["check", str(f)])
    out = capsys.readouterr().out
    assert rc == 0 and f"'{field}'" in out, out
    # estimate --model-config FILE: exit 2 with the field named
    cfg_file = tmp_path / "config.json"
    cfg_file.write_text(cfg_text)
    rc = main(["estimate", "--model-config", str(cfg_file), "--", "vllm", "serve",
               "acme/private"])
    err = capsys.readouterr().err
    assert rc == 2 and f"'{field}'" in err, err
