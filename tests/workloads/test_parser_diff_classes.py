"""Disagreement classes found by scripts/diff_vllm_parser.py (the project's reading of `vllm
serve` argv against each version's real parser, built from its wheel): each case is a literal
argv + version + what vLLM's parser does, with the vLLM source that decides it. No wheel needed."""

from __future__ import annotations

import pytest

from vllm_sizer.estimator.versions import VllmVersion
from vllm_sizer.workloads.vllm_args import parse_vllm_args


def read(argv, version, config=None):
    return parse_vllm_args(
        argv,
        version=VllmVersion.parse(version),
        config_loader=(lambda p: config) if config is not None else None,
        positional_model=True,
        strict=True,
    )


def stops(p):
    return [str(d) for d in p.diagnostics if d.severity == "error" and "will not start" in str(d)]


# (argv, version, vLLM exits?, the model vLLM serves when it does not, provenance)
CASES = [
    # --model is moved to the positional slot from 0.11.1: a positional model is then an extra
    # word (0.11.1:vllm/utils/argparse_utils.py:196-227, 0.33.0:argparse_utils.py:324-356)
    (["org/model", "--model", "other/model"], "0.11.1", False, "other/model", "model moved"),
    (["org/model", "--model=other/model"], "0.33.0", False, "other/model", "model moved"),
    (["-tp", "2", "--model", "other/model"], "0.11.1", False, "other/model", "model moved"),
    (["--model", "other/model", "--max-num-seqs", "8"], "0.33.0", False, "other/model", "moved"),
    # 0.8.5-0.11.0: the two-token --model raises (0.11.0:vllm/utils/__init__.py:1856-1864);
    # said as an error but not as an exit (vendor builds of 0.10 such as AIBrix's run it:
    # tests/workloads/test_platforms.py::test_stormservice_roles_are_pod_templates)
    # `=` form passes in 0.8.5-0.11.0; the positional wins (0.11.0:cli/serve.py:47-48)
    (["org/model", "--model=other/model"], "0.11.0", False, "org/model", "model_tag wins"),
    # --served-model-name with no model first: ValueError from 0.17
    # (0.17.0:vllm/utils/argparse_utils.py:220-233)
    (["--served-model-name", "a"], "0.20.0", True, None, "served name needs model"),
    (["--served-model-name", "a"], "0.14.0", False, None, "before 0.17"),
    (["--served_model_name=a", "org/model"], "0.20.0", True, None, "served name needs model"),
    # an attached value is one value whatever the nargs: the next word is the model
    # (CPython argparse consume_optional: explicit_arg matched against 'A')
    (["--served-model-name=a", "org/model"], "0.14.0", False, "org/model", "explicit arg"),
    # --config FILE with no model first nor in the file (0.8.5:vllm/utils.py:1435-1442,
    # 0.33.0:vllm/utils/argparse_utils.py:574-583)
    (["--config", "c.yaml"], "0.26.0", True, None, "config needs model"),
    (["--config", "c.yaml"], "0.8.5", True, None, "config needs model"),
    (["org/model", "--config", "c.yaml"], "0.33.0", False, "org/model", "model first"),
    # --config last, or twice (0.8.5:vllm/utils.py:1417-1423)
    (["org/model", "--config"], "0.33.0", True, None, "no config file"),
    (["org/model", "--config", "c.yaml", "--config", "c.yaml"], "0.14.0", True, None, "two"),
    # model_tag is required up to 0.8.0 (0.6.6:vllm/scripts.py:158); optional from 0.8.5
    ([], "0.6.6", True, None, "model_tag required"),
    (["--max-num-seqs", "8"], "0.6.6", True, None, "model_tag required"),
    (["--max-num-seqs", "8"], "0.8.5", False, None, "model_tag optional"),
    # kv_connector without kv_role (0.6.6:vllm/config.py:2579-2581,
    # 0.33.0:vllm/config/kv_transfer.py:120-124)
    (["org/model", "--kv-transfer-config", '{"kv_connector":"X"}'], "0.11.0", True, None, "role"),
    (["org/model", "--kv-transfer-config.kv_connector", "X"], "0.33.0", True, None, "role"),
    (
        ["org/model", "--kv-transfer-config", '{"kv_connector":"X","kv_role":"kv_both"}'],
        "0.33.0",
        False,
        "org/model",
        "role given",
    ),
]


@pytest.mark.parametrize("argv,version,exits,model,why", CASES)
def test_real_parser_verdict(argv, version, exits, model, why):
    p = read(argv, version, config={"max_num_seqs": 7})
    assert bool(stops(p)) == exits, (why, [str(d) for d in p.diagnostics])
    if not exits and model is not None:
        assert p.model == model, why


def test_config_with_a_model_in_it_needs_none_first():
    p = read(["--config", "c.yaml"], "0.33.0", config={"model": "org/model"})
    assert not stops(p)
    assert p.model == "org/model"


def test_served_model_name_attached_keeps_next_word_positional_and_values_read():
    p = read(["--served-model-name=a", "org/model", "--max-num-seqs", "8"], "0.14.0")
    assert p.model == "org/model"
    assert p.values["max_num_seqs"] == 8


def test_config_without_model_is_sized_when_a_model_flag_names_it():
    # 0.8.5-0.11.0: `vllm serve --model X --config c.yaml` raises too (the flag form is no model
    # "first"), said as vLLM's error; the model is known, so it is sized as `vllm serve --model
    # X`'s own start-up error is (the corpus fuzzer's metamorphic config-file check: aibrix's
    # quickstart-model with --max-model-len moved into a config file)
    p = read(["--host", "0.0.0.0", "--model", "org/model", "--config", "c.yaml"], "0.11.0",
             config={"max_model_len": 12288})
    said = [d for d in p.diagnostics if "--config" == d.flag and d.severity == "error"]
    assert said and not any(d.exits for d in said)
    assert p.values.get("max_model_len") == 12288
    p = read(["--config", "c.yaml"], "0.26.0", config={"max_num_seqs": 7})
    assert any(d.exits for d in p.diagnostics if d.flag == "--config")
