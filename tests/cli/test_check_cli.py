import json
from pathlib import Path

import yaml

from vllm_sizer.cli.main import main
from vllm_sizer.workloads.quantity import parse_quantity

EXAMPLES = Path(__file__).parents[2] / "examples"


def run(capsys, *args):
    rc = main(["check", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def rows(capsys, *paths, **opts):
    args = [str(p) for p in paths] + ["-o", "json"]
    for k, v in opts.items():
        args += [f"--{k}", v]
    rc, out, _ = run(capsys, *args)
    return rc, json.loads(out)


def test_examples_json_contract_and_exit_code(capsys):
    rc, data = rows(capsys, EXAMPLES)
    assert rc == 1  # the enforce and LimitRange examples are denied
    verdicts = {(r["name"], r["container"]): r["verdict"] for r in data}
    assert verdicts[("qwen3-lora-cpu", "vllm")] == "mutate"
    assert verdicts[("qwen3-lora-cpu-strict", "vllm")] == "deny"
    assert verdicts[("qwen3-big-batch", "vllm")] == "deny"
    assert ("web", "nginx") not in verdicts  # non-vLLM objects have no rows
    for r in data:
        assert set(r) >= {"kind", "namespace", "name", "container", "verdict", "message", "warnings",
                          "engine", "estimate", "limit_bytes_before", "limit_bytes_after", "diagnostics"}
        assert r["verdict"] in ("allow", "mutate", "deny", "skip", "unknown")
        assert set(r["engine"]) >= {"model", "device", "max_num_batched_tokens", "max_num_seqs",
                                    "max_model_len", "enable_lora", "max_lora_rank", "max_loras",
                                    "tensor_parallel_size", "dtype"}
    lora = next(r for r in data if r["name"] == "qwen3-lora-cpu")
    assert lora["engine"]["device"] == "cpu" and lora["engine"]["max_num_batched_tokens"] == 2394
    assert lora["limit_bytes_before"] == 8 * 1024**3 and lora["limit_bytes_after"] > 24 * 1024**3
    assert isinstance(lora["estimate"]["total_memory_bytes"], int)


def test_context_documents_are_used(capsys):
    _, data = rows(capsys, EXAMPLES / "10-configmap-model-config.yaml")
    row = next(r for r in data if r["name"] == "acme-support")
    assert row["verdict"] in ("allow", "mutate") and row["estimate"] is not None
    _, data = rows(capsys, EXAMPLES / "12-limitrange-too-small.yaml")
    assert data[0]["verdict"] == "deny" and "LimitRange" in data[0]["message"]


def test_mode_and_headroom_options(capsys):
    rc, data = rows(capsys, EXAMPLES / "01-cpu-lora-deployment.yaml", mode="warn")
    assert rc == 0 and data[0]["verdict"] == "allow" and data[0]["warnings"]
    _, low = rows(capsys, EXAMPLES / "01-cpu-lora-deployment.yaml", headroom="0%")
    _, high = rows(capsys, EXAMPLES / "01-cpu-lora-deployment.yaml", headroom="50%")
    assert high[0]["limit_bytes_after"] > low[0]["limit_bytes_after"]


def test_yaml_output_is_the_mutated_manifest_and_is_stable(capsys, tmp_path):
    rc, out, _ = run(capsys, str(EXAMPLES / "01-cpu-lora-deployment.yaml"), "-o", "yaml")
    assert rc == 0
    docs = list(yaml.safe_load_all(out))
    c = docs[0]["spec"]["template"]["spec"]["containers"][0]
    assert parse_quantity(c["resources"]["limits"]["memory"]) > 24 * 1024**3
    assert docs[0]["metadata"]["annotations"]["vllm-sizer.io/estimate"].endswith("Gi")
    again = tmp_path / "mutated.yaml"
    again.write_text(out)
    rc, out2, _ = run(capsys, str(again), "-o", "yaml")
    assert rc == 0 and list(yaml.safe_load_all(out2)) == docs  # idempotent


def test_list_kind_and_stdin(capsys, monkeypatch):
    import io
    doc = yaml.safe_load((EXAMPLES / "01-cpu-lora-deployment.yaml").read_text())
    monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                                  "items": [doc]})))
    rc, out, _ = run(capsys, "-", "-o", "json")
    assert rc == 0 and json.loads(out)[0]["name"] == "qwen3-lora-cpu"


def test_unreadable_input_exits_2_with_file_and_reason(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Deployment\n  metadata: [\n")
    rc, _, err = run(capsys, str(bad))
    assert rc == 2 and "bad.yaml" in err
    rc, _, err = run(capsys, str(tmp_path / "missing.yaml"))
    assert rc == 2 and "missing.yaml" in err


def test_text_output_shows_kubectl_style_denial(capsys):
    rc, out, _ = run(capsys, str(EXAMPLES / "02-cpu-lora-undersized-enforce.yaml"))
    assert rc == 1
    assert "Error from server (Forbidden)" in out and "set resources.limits.memory to at least" in out
