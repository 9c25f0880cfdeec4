"""Unbounded expansion: every expansion the reader performs is bounded (limits.py), so a review
of a hostile object stays under a fixed time and memory budget, names what was cut, and never
patches from a cut command line. Budgets are generous for CI's 2 shared cores; the inputs below
took from 13 s / 1.5 GB up to an OOM kill before the bounds."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from vllm_sizer.cli.main import main
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads.reader import read_workloads

WALL_S = 15.0  # generous: CI shares 2 cores; the memory bound is the tight one
PEAK_MIB = 64
MAX_VALUE_CHARS = 64 * 1024  # limits.MAX_VALUE_CHARS (literal: these tests also run on a tree
MAX_ARGS = 4096  # limits.MAX_ARGS                    without limits.py, where they must fail)


def deployment(container, annotations=None):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x", "namespace": "a", "annotations": annotations or {}},
            "spec": {"template": {"spec": {"containers": [container]}}}}


def measured(fn, *args):
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        out = fn(*args)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    wall = time.perf_counter() - t0
    assert wall < WALL_S, f"took {wall:.1f}s"
    assert peak < PEAK_MIB * 2**20, f"peak {peak / 2**20:.0f} MiB"
    return out


def shell_doubling(lines):
    script = "X=a\n" + 'X="$X$X"\n' * lines + "vllm serve Qwen/Qwen3-0.6B --max-model-len $X"
    return deployment({"name": "v", "image": "vllm/vllm-openai:v0.10.0",
                       "command": ["sh", "-c", script]})


def kube_doubling(entries):
    env = [{"name": "E0", "value": "a"}] + [
        {"name": f"E{i}", "value": f"$(E{i - 1})$(E{i - 1})"} for i in range(1, entries)]
    return deployment({"name": "v", "image": "vllm/vllm-openai:v0.10.0", "env": env,
                       "command": ["vllm", "serve", "Qwen/Qwen3-0.6B",
                                   f"--max-model-len=$(E{entries - 1})"]})


def yaml_bomb(levels, key="max-model-len"):
    text = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    prev = "a"
    for i in range(1, levels):
        name = chr(97 + i)
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = name
    return text + f"{key}: *{prev}\n"


def cut_messages(decision):
    return [w for w in decision.warnings if "not sized" in w]


@pytest.mark.parametrize("lines", [28, 40, 200])
def test_shell_variable_doubling_is_bounded(lines):
    decision = measured(review_object, shell_doubling(lines))
    assert decision.patch == [] and decision.verdict == "unknown"
    assert any("shell variable X" in w and str(MAX_VALUE_CHARS) in w
               for w in cut_messages(decision)), decision.warnings


@pytest.mark.parametrize("entries", [30, 60])
def test_kubelet_expansion_doubling_is_bounded(entries):
    decision = measured(review_object, kube_doubling(entries))
    assert decision.patch == [] and decision.verdict == "unknown"
    assert any("$(E" in w and "left literal" in w for w in cut_messages(decision))


def test_many_small_expansions_hit_the_object_budget():
    big = "y" * 60_000
    script = f"Y={big}\n" + "".join(f'A{i}="$Y"\n' for i in range(40)) + \
        "vllm serve Qwen/Qwen3-0.6B"
    decision = measured(review_object, deployment(
        {"name": "v", "image": "vllm/vllm-openai:v0.10.0", "command": ["sh", "-c", script]}))
    assert decision.patch == []
    assert any("in all" in w for w in cut_messages(decision)), decision.warnings


def test_command_and_argument_counts_are_bounded():
    script = "true\n" * 5000 + "vllm serve Qwen/Qwen3-0.6B"
    decision = measured(review_object, deployment(
        {"name": "v", "image": "vllm/vllm-openai:v0.10.0", "command": ["sh", "-c", script]}))
    assert decision.patch == [] or decision.verdict != "mutate"
    many = ["vllm", "serve", "Qwen/Qwen3-0.6B"] + ["--enforce-eager"] * (MAX_ARGS + 10)
    ws = measured(read_workloads, deployment({"name": "v", "image": "vllm/vllm-openai:v0.10.0",
                                              "command": many}))
    assert ws and ws[0].settings is None
    assert any(str(MAX_ARGS) in d.message for d in ws[0].diagnostics)


@pytest.mark.parametrize("key", ["max-model-len", "lora-modules", "unknown-key"])
def test_yaml_alias_bomb_in_the_vllm_config_annotation(key):
    obj = deployment({"name": "v", "image": "vllm/vllm-openai:v0.10.0",
                      "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", "--config", "/c.yaml"]},
                     {"vllm-sizer.io/vllm-config": yaml_bomb(9, key)})
    decision = measured(review_object, obj)
    assert any("vllm-sizer.io/vllm-config" in w and "aliases" in w for w in decision.warnings)


def test_yaml_bomb_written_by_the_script():
    script = "cat > /c.yaml <<'EOF'\n" + yaml_bomb(8) + "EOF\nvllm serve Qwen/Qwen3-0.6B --config /c.yaml"
    decision = measured(review_object, deployment(
        {"name": "v", "image": "vllm/vllm-openai:v0.10.0", "command": ["sh", "-c", script]}))
    assert any("--config" in w and "aliases" in w for w in decision.warnings), decision.warnings


def test_yaml_bomb_and_deep_nesting_in_check_input(tmp_path, capsys):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("kind: Deployment\napiVersion: apps/v1\nmetadata: {name: b}\n" +
                    "spec:\n  x:\n" + "".join("    " + line + "\n"
                                               for line in yaml_bomb(9).splitlines()))
    assert len(bomb.read_bytes()) < 1000
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 3000 + "]" * 3000 + "\n")
    good = tmp_path / "good.yaml"
    good.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    code = measured(main, ["check", str(bomb), str(deep), str(good)])
    out, err = capsys.readouterr()
    assert code == 2
    assert "bomb.yaml" in err and "aliases" in err
    assert "deep.yaml" in err
    assert "ConfigMap c" in out  # the readable file is still checked


def test_safe_loader_measures_expansion_not_just_aliases():
    from vllm_sizer.workloads import limits

    few_aliases = yaml_bomb(7)  # 7 aliases of 9 items each: 9**7 nodes once expanded
    with pytest.raises(limits.LimitExceeded, match="nodes"):
        limits.load_yaml(few_aliases, max_aliases=1000)
    with pytest.raises(limits.LimitExceeded, match="recursive"):
        limits.load_yaml("&a [*a]")
    assert limits.load_yaml("a: &x {b: 1}\nc: *x\n") == {"a": {"b": 1}, "c": {"b": 1}}
