"""Values vLLM stops on: its parser's type and choices per version (data/vllm_flags.json records
each version's conversion, read from its parser), its start-up configuration checks, a shell that
fails before vLLM runs, VLLM_CPU_KVCACHE_SPACE that is not an integer, KServe templates its
controller cannot render. Said as vLLM (or the shell, or KServe) says it, never sized with a
default as if the pod ran; values vLLM takes but no deployment uses stay a separate message."""

from __future__ import annotations

import argparse
import json

import pytest
import yaml

from vllm_sizer.cli.main import main as cli_main
from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings
from vllm_sizer.workloads import vllm_flags as vf
from vllm_sizer.workloads.model import ReadContext
from vllm_sizer.workloads.reader import read_workloads


def pod(image, *argv, command=None, env=None, gpu=True):
    c = {"name": "vllm", "image": image,
         "command": command or ["vllm", "serve", "Qwen/Qwen3-0.6B", *argv],
         "resources": {"limits": {"memory": "4Gi", **({"nvidia.com/gpu": 1} if gpu else {})}}}
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
            "spec": {"containers": [c]}}


def stops(w):
    return [str(d) for d in w.diagnostics if d.exits]


V33, V11, V085 = "vllm/vllm-openai:v0.33.0", "vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.8.5"


# ---------------------------------------------------------------- the recorded conversions
def test_every_version_records_how_its_parser_converts_the_memory_flags():
    for v in vf.known_versions():
        t = vf.table_for(v)
        for flag in ("--max-model-len", "--max-num-batched-tokens", "--max-num-seqs",
                     "--tensor-parallel-size", "--gpu-memory-utilization"):
            assert flag in t.types, (v, flag)
    # human-readable token counts from the config-dataclass parser, t/T later, auto from 0.14
    assert vf.table_for("0.8.5").types["--max-num-batched-tokens"].convert == "int"
    assert vf.table_for("0.11.0").types["--max-num-batched-tokens"].convert == "hint"
    assert vf.table_for("0.33.0").types["--max-num-batched-tokens"].convert == "hint-t"
    assert vf.table_for("0.33.0").types["--max-model-len"].convert == "hint-t-auto"
    assert vf.table_for("0.33.0").types["--kv-cache-memory-bytes"].optional
    assert not vf.table_for("0.33.0").types["--max-num-batched-tokens"].optional
    assert vf.table_for("0.33.0").types["--max-lora-rank"].choices == (1, 8, 16, 32, 64, 128,
                                                                       256, 320, 512)


@pytest.mark.parametrize("convert,raw", [("int", v) for v in ("abc", "", "1e3", "1.5", " 7 ",
                                                               "1_000", "-2", "٣", "0x10")]
                         + [("float", v) for v in ("abc", "", "1e3", "nan", "-inf", " 0.5 ")])
def test_int_and_float_are_cpythons_own(convert, raw):
    p = argparse.ArgumentParser(exit_on_error=False)
    p.add_argument("--x", type={"int": int, "float": float}[convert])
    try:
        want = ("ok", repr(p.parse_args(["--x=" + raw]).x))
    except argparse.ArgumentError as exc:
        want = ("rejected", str(exc).removeprefix("argument --x: "))
    try:
        got = ("ok", repr(vf.convert_value(vf.ValueType(convert), raw)))
    except vf.Rejected as exc:
        got = ("rejected", str(exc))
    assert got == want


# ---------------------------------------------------------------- the parser exits
@pytest.mark.parametrize("image,argv,said", [
    (V33, ["--max-num-batched-tokens="],
     "argument --max-num-batched-tokens: invalid human_readable_int value: ''"),
    (V33, ["--max-num-batched-tokens", "1e17"],
     "argument --max-num-batched-tokens: invalid human_readable_int value: '1e17'"),
    (V33, ["--max-num-batched-tokens", "abc"],
     "argument --max-num-batched-tokens: invalid human_readable_int value: 'abc'"),
    (V085, ["--max-num-batched-tokens", "4k"],
     "argument --max-num-batched-tokens: invalid int value: '4k'"),
    (V11, ["--max-num-batched-tokens", "1t"],
     "argument --max-num-batched-tokens: invalid human_readable_int value: '1t'"),
    (V33, ["--max-num-seqs", "1.5"], "argument --max-num-seqs: invalid int value: '1.5'"),
    (V33, ["--gpu-memory-utilization", "90%"],
     "argument --gpu-memory-utilization: invalid float value: '90%'"),
    (V33, ["--max-model-len", "8K.5"],
     "argument --max-model-len: invalid human_readable_int_or_auto value: '8K.5'"),
    (V33, ["--max-num-batched-tokens", "1.5K"],
     "argument --max-num-batched-tokens: Decimals are not allowed with binary suffixes like K."),
    (V33, ["--port", "http"], "argument --port: invalid int value: 'http'"),
    (V33, ["--dtype", "fp16"], "argument --dtype: invalid choice: 'fp16'"),
    (V33, ["--enable-lora", "--max-lora-rank", "24"],
     "argument --max-lora-rank: invalid choice: 24"),
])
def test_values_vllms_parser_rejects_stop_the_pod_and_are_not_sized(image, argv, said):
    w = read_workloads(pod(image, *argv))[0]
    assert any(said in s and "status 2" in s for s in stops(w)), w.diagnostics
    assert not any("default used" in str(d) for d in w.diagnostics)
    d = review_object(pod(image, *argv), None, PolicySettings(mode="mutate"))
    (c,) = d.containers
    assert (c.verdict, c.reason, c.report) == ("unknown", "will-not-start", None)
    assert said in c.message and d.patch == [] and d.verdict != "deny"


def test_values_vllm_takes_are_read_as_it_reads_them():
    for image, argv, key, want in [
        (V33, ["--max-num-batched-tokens", "1_000"], "max_num_batched_tokens", 1000),
        (V33, ["--max-num-batched-tokens", "8K"], "max_num_batched_tokens", 8192),
        (V11, ["--max-num-batched-tokens", "1.5k"], "max_num_batched_tokens", 1500),
        (V33, ["--kv-cache-memory-bytes="], "kv_cache_memory_bytes", None),  # optional: None
        (V11, ["--enable-lora", "--max-lora-rank", "24"], "max_lora_rank", 24),  # no choices
    ]:
        w = read_workloads(pod(image, *argv))[0]
        assert not stops(w), (argv, w.diagnostics)
        assert getattr(w.settings, key) == want, argv


def test_unknown_version_where_versions_differ_is_a_warning_naming_them():
    w = read_workloads(pod("example.com/vllm:custom", "--max-num-batched-tokens", "1t"))[0]
    assert not stops(w)
    (warn,) = [str(d) for d in w.diagnostics if "reject it" in str(d)]
    assert "0.6.0-0.12.0 reject it" in warn and "0.13.0-0.33.0 take it" in warn
    assert "invalid int value: '1t'" in warn
    w = read_workloads(pod("example.com/vllm:custom", "--max-num-batched-tokens", "abc"))[0]
    assert any("every vLLM version it can be rejects it" in s for s in stops(w))


def test_a_config_file_value_the_parser_rejects_stops_the_pod_too():
    obj = pod(V33, "--config", "/etc/vllm/c.yaml")
    obj["metadata"]["annotations"] = {"vllm-sizer.io/vllm-config": "max-num-seqs: lots\n"}
    w = read_workloads(obj)[0]
    assert any("(in --config)" in s and "invalid int value: 'lots'" in s for s in stops(w))


# ---------------------------------------------------------------- start-up configuration checks
@pytest.mark.parametrize("image,argv,where", [
    (V33, ["-tp", "0"], "0.33.0:vllm/config/parallel.py:142"),
    (V33, ["--max-num-seqs", "0"], "0.33.0:vllm/config/scheduler.py:62"),
    (V33, ["--gpu-memory-utilization", "1.5"], "0.33.0:vllm/config/cache.py:215"),
    (V085, ["--gpu-memory-utilization", "1.5"], "0.6.0:vllm/config.py:639"),
    (V33, ["--gpu-memory-utilization", "0"], "0.33.0:vllm/config/cache.py:215"),
    (V11, ["--enable-lora", "--max-loras", "0"], "0.6.0:vllm/config.py:1521"),
    (V33, ["--cpu-offload-gb", "-1"], "0.33.0:vllm/config/offload.py:23"),
])
def test_values_vllms_configuration_check_rejects_at_start_up_stop_the_pod(image, argv, where):
    w = read_workloads(pod(image, *argv))[0]
    (s,) = stops(w)
    assert where in s and "at start-up" in s


def test_a_start_up_rule_is_not_claimed_for_versions_read_before_it():
    w = read_workloads(pod(V11, "-tp", "0"))[0]  # ge=1 from 0.23.0; not checked for 0.11
    assert not stops(w)
    (e,) = [str(d) for d in w.diagnostics if d.flag == "-tp"]
    assert "out of range" in e and "vLLM's default" not in e


def test_counts_past_the_bound_are_not_claimed_to_be_vllms_default():
    w = read_workloads(pod(V33, "-tp", "100000"))[0]
    assert not stops(w)
    (e,) = [str(d) for d in w.diagnostics if d.flag == "-tp"]
    assert "out of range (above 1024)" in e and "vLLM's parser takes it" in e
    assert "default used" not in e


# ---------------------------------------------------------------- the shell fails first
@pytest.mark.parametrize("script", [
    "vllm serve Qwen/Qwen3-0.6B --max-num-seqs $((4/0))",
    "N=0; exec vllm serve Qwen/Qwen3-0.6B --max-num-seqs $(( 8 % N ))",
    "X=$((1/0)); vllm serve Qwen/Qwen3-0.6B",
])
def test_a_division_by_zero_in_the_script_exits_the_shell_before_vllm(script):
    w = read_workloads(pod(V33, command=["/bin/sh", "-c", script]))[0]
    (s,) = stops(w)
    assert "division by 0" in s and "vLLM never starts" in s
    assert not any("no known value" in str(d) for d in w.diagnostics)


def test_a_division_by_zero_on_a_branch_that_may_not_run_stops_nothing_after_it():
    w = read_workloads(pod(V33, command=["/bin/sh", "-c",
                                         "[ -n \"$X\" ] && Y=$((1/0)); vllm serve Qwen/Qwen3-0.6B"]))[0]
    assert not stops(w)


# ---------------------------------------------------------------- VLLM_CPU_KVCACHE_SPACE
def test_kv_cache_space_that_is_not_an_integer_stops_vllm_where_it_is_read():
    cpu = read_workloads(pod("vllm/vllm-openai-cpu:v0.10.2", gpu=False,
                             env={"VLLM_CPU_KVCACHE_SPACE": "4.5"}))[0]
    assert any("invalid literal for int() with base 10: '4.5'" in s for s in stops(cpu))
    gpu_old = read_workloads(pod(V085, env={"VLLM_CPU_KVCACHE_SPACE": "4.5"}))[0]
    assert not stops(gpu_old)  # the CUDA backend of 0.8.5 never reads it
    gpu_new = read_workloads(pod(V33, env={"VLLM_CPU_KVCACHE_SPACE": "4.5"}))[0]
    assert stops(gpu_new)  # 0.11.1+ evaluates every variable at start-up


def test_the_pinned_kv_cache_space_is_a_whole_number_vllm_can_read():
    with pytest.raises(ValueError, match="whole number"):
        PolicySettings(pin_cpu_kv_gib=2.5)
    assert PolicySettings(pin_cpu_kv_gib=8).pin_cpu_kv_gib == 8


# ---------------------------------------------------------------- KServe templates
RUNTIME = """
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: rt}
spec:
  supportedModelFormats: [{name: vLLM, autoSelect: true}]
  containers:
  - name: kserve-container
    image: vllm/vllm-openai:v0.33.0
    command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    args: ["--port=8080", "--model=/mnt/models", "%s"]
    resources: {limits: {memory: 32Gi, nvidia.com/gpu: "1"}}
"""
ISVC = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: qwen, namespace: ns, labels: {team: a}}
spec:
  predictor:
    model: {modelFormat: {name: vLLM}, runtime: rt, storageUri: "hf://Qwen/Qwen3-0.6B"}
"""


def isvc_workload(arg):
    ctx = ReadContext(serving_runtimes={"rt": yaml.safe_load(RUNTIME % arg)})
    return read_workloads(yaml.safe_load(ISVC), ctx)[0]


def test_kserve_renders_object_meta_fields_as_go_does():
    w = isvc_workload("--served-model-name={{ .Name }}-{{.Labels.team}}-{{.Labels.none}}")
    assert "--served-model-name=qwen-a-<no value>" in w.argv and not stops(w)


def test_a_field_objectmeta_lacks_is_kserves_template_error_and_no_pod():
    arg = "--served-model-name={{ .Spec.Model.Name }}"
    w = isvc_workload(arg)
    (s,) = stops(w)
    assert "can't evaluate field Spec in type v1.ObjectMeta" in s
    assert "failed to replace placeholders" in s
    d = review_object(yaml.safe_load(ISVC),
                      ReadContext(serving_runtimes={"rt": yaml.safe_load(RUNTIME % arg)}))
    assert [c.reason for c in d.containers] == ["will-not-start"] and d.patch == []


def test_llm_inference_service_templates_are_rendered_over_the_object():
    obj = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "LLMInferenceService",
           "metadata": {"name": "gpt", "namespace": "ns"},
           "spec": {"model": {"uri": "hf://Qwen/Qwen3-0.6B", "name": "Qwen/Qwen3-0.6B"},
                    "template": {"containers": [{
                        "name": "main", "image": V33,
                        "command": ["vllm", "serve", "/mnt/models", "--served-model-name",
                                    "{{ .Spec.Model.Name }}", "--port", "8000"],
                        "resources": {"limits": {"memory": "8Gi", "nvidia.com/gpu": "1"}}}]}}}
    w = read_workloads(obj)[0]
    assert "Qwen/Qwen3-0.6B" in w.argv and "{{ .Spec.Model.Name }}" not in w.argv
    del obj["spec"]["model"]["name"]  # KServe's defaulting: the object's name
    assert "gpt" in read_workloads(obj)[0].argv


# ---------------------------------------------------------------- one rule, every front end
def test_check_says_what_the_webhook_says(tmp_path, capsys):
    obj = pod(V33, "--max-num-batched-tokens", "1e17")
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(obj))
    cli_main(["check", str(path), "-o", "json"])
    (row,) = json.loads(capsys.readouterr().out)
    review = review_object(obj)
    assert row["verdict"] == "unknown" and row["message"] == review.containers[0].message
    assert "invalid human_readable_int value: '1e17'" in row["message"]


def test_an_earlier_occurrence_of_a_flag_is_superseded_by_the_last():
    # argparse keeps the last occurrence; vLLM's start-up check sees only that value (found by
    # the corpus fuzzer's metamorphic repeat: `--gpu-memory-utilization 3 ... 0.80`)
    from vllm_sizer.estimator.versions import VllmVersion
    from vllm_sizer.workloads.vllm_args import parse_vllm_args
    v = VllmVersion.parse("0.18.0")
    p = parse_vllm_args(["m", "--gpu-memory-utilization", "3", "--gpu-memory-utilization", "0.8"], v,
                        strict=True)
    assert p.values["gpu_memory_utilization"] == 0.8
    assert not [d for d in p.diagnostics if d.exits or d.severity == "error"], p.diagnostics
    # the other way round: the last value is refused, so no earlier value is sized in its place
    p = parse_vllm_args(["m", "--gpu-memory-utilization", "0.8", "--gpu-memory-utilization", "3"], v,
                        strict=True)
    assert "gpu_memory_utilization" not in p.values and any(d.exits for d in p.diagnostics)
    # an unknown last value: neither the earlier value nor its verdict stands
    p = parse_vllm_args(["m", "--max-num-seqs", "4", "--max-num-seqs", "${N}"], v, strict=True)
    assert "max_num_seqs" not in p.values
