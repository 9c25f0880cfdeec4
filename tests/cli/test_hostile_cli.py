"""Bad input never ends in a traceback: `estimate` and `check` answer with a diagnostic and
exit 2 (1 means "denied"), and one bad document or file does not stop `check` for the rest."""

from __future__ import annotations

import json

import pytest

from vllm_sizer.cli.main import main
from vllm_sizer.policy.review import review_object

HUGE = "9" * 310


def run(capsys, *args):
    rc = main(list(args))
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return rc, out.out, out.err


@pytest.mark.parametrize("flag", ["--max-num-batched-tokens", "--max-model-len",
                                  "--max-num-seqs", "--max-lora-rank", "--max-loras"])
def test_absurd_integers_are_diagnostics_not_crashes(capsys, flag):
    rc, out, err = run(capsys, "estimate", "-o", "json", "--", "vllm", "serve",
                       "Qwen/Qwen3-0.6B", "--enable-lora", flag, HUGE)
    assert rc == 0, err
    notes = json.loads(out)["notes"]
    assert any(n.startswith("error: " + flag) for n in notes), notes


def test_absurd_token_count_in_a_manifest_is_not_an_internal_error():
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"template": {"spec": {"containers": [{
               "name": "v", "image": "vllm/vllm-openai:v0.10.0",
               "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", "--max-num-batched-tokens", HUGE]}]}}}}
    decision = review_object(obj)
    assert decision.containers and not any("internal error" in w for w in decision.warnings)
    assert any("--max-num-batched-tokens" in w and "out of range" in w for w in decision.warnings)


def test_model_config_beyond_arithmetic_is_cannot_size():
    cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
           "num_hidden_layers": 10 ** 310, "num_attention_heads": 16, "num_key_value_heads": 8,
           "intermediate_size": 3072, "vocab_size": 151936}
    obj = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "x", "annotations": {"vllm-sizer.io/model-config": json.dumps(cfg)}},
           "spec": {"template": {"spec": {"containers": [{
               "name": "v", "image": "vllm/vllm-openai:v0.10.0",
               "command": ["vllm", "serve", "acme/m"]}]}}}}
    decision = review_object(obj)
    assert decision.patch == [] or decision.verdict != "mutate"
    assert decision.containers[0].verdict == "unknown"


@pytest.mark.parametrize("args", [
    ["estimate", "--gpu-memory", "nan", "--", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["estimate", "--gpu-memory", "1e308", "--", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["estimate", "--gpu-memory", "-1", "--", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["estimate", "--", 'vllm serve "unterminated'],
    ["estimate", "--model-config", "/", "--", "vllm", "serve", "x"],
])
def test_estimate_bad_input_exits_2_with_a_message(capsys, args):
    rc, _, err = run(capsys, *args)
    assert rc == 2 and err.startswith("vllm-sizer estimate:"), err


GOOD = """apiVersion: apps/v1
kind: Deployment
metadata: {name: good, namespace: a}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.0
        command: [vllm, serve, Qwen/Qwen3-0.6B]
        resources: {limits: {memory: 1Gi}}
"""


@pytest.mark.parametrize("bad", [
    "apiVersion: v1\nkind: ConfigMap\nmetadata: 5\ndata: 7\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: {vllm-sizer.io/model-configs: 'true'}}\ndata: [1, 2]\n",
    "apiVersion: serving.kserve.io/v1alpha1\nkind: ServingRuntime\nmetadata: [x]\nspec: 3\n",
    "apiVersion: v1\nkind: LimitRange\nmetadata: {namespace: a}\nspec: {limits: 5}\n",
    "apiVersion: v1\nkind: List\nitems: 5\n",
    "- just\n- a list\n",
    "42\n",
    "kind: [x]\n",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: [1]}\nspec: {template: 5}\n",
])
def test_one_bad_document_does_not_stop_check(capsys, tmp_path, bad):
    f = tmp_path / "mixed.yaml"
    f.write_text(bad + "---\n" + GOOD)
    rc, out, err = run(capsys, "check", "-o", "json", str(f))
    names = [row["name"] for row in json.loads(out)]
    assert "good" in names, (out, err)
    assert rc in (0, 2)
    if rc == 2:
        assert "mixed.yaml: document 1" in err, err


def test_unreadable_files_are_reported_and_the_rest_checked(capsys, tmp_path):
    (tmp_path / "a-binary.yaml").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "b-broken.yaml").write_text(GOOD + "---\nkind: Deployment\n  metadata: [\n")
    (tmp_path / "c-good.yaml").write_text(GOOD.replace("name: good", "name: also-good"))
    rc, out, err = run(capsys, "check", "-o", "json", str(tmp_path), str(tmp_path / "nope.yaml"))
    assert rc == 2
    names = [row["name"] for row in json.loads(out)]
    assert names == ["good", "also-good"]  # the broken file's first document is still read
    assert "a-binary.yaml" in err and "b-broken.yaml: document 2" in err and "nope.yaml" in err


def test_documents_after_a_broken_one_are_still_checked(capsys, tmp_path):
    """A Secret with an unfilled `{{HF_TOKEN}}` (as some published samples ship) is said with
    its position; the vLLM Deployment after it is still decided."""
    f = tmp_path / "sample.yaml"
    f.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n"
                 "  token: {{HF_TOKEN}}\n---\n" + GOOD)
    rc, out, err = run(capsys, "check", "-o", "json", str(f))
    assert rc == 2 and "sample.yaml: document 1" in err
    assert [row["name"] for row in json.loads(out)] == ["good"]
