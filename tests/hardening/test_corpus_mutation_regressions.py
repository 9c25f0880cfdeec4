"""One test per failure class the corpus mutation fuzzer (corpus_mutants.py,
scripts/fuzz_corpus.py) found, each minimised from a mutant of a published manifest."""

from __future__ import annotations

import contextlib
import io

import pytest
import yaml

from vllm_sizer.cli.main import main
from vllm_sizer.policy.review import review_object

from .hostile_objects import IMG, deployment


def run_check(tmp_path, docs, output="text"):
    f = tmp_path / "in.yaml"
    f.write_text(yaml.safe_dump_all(docs, allow_unicode=True), encoding="utf-8")
    out_b, err_b = io.BytesIO(), io.BytesIO()
    # a real terminal's streams: UTF-8, strict (a lone surrogate cannot be written)
    out = io.TextIOWrapper(out_b, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(err_b, encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["check", "-o", output, str(f)])
    return rc, out_b.getvalue().decode(), err_b.getvalue().decode()


def vllm(**meta):
    obj = deployment({"image": IMG, "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
                      "resources": {"limits": {"memory": "64Gi"}}})
    obj["metadata"].update(meta)
    return obj


# ---- class: the object's identity (kind, namespace, name) of another type than a string, or
# with control characters, reached `check`'s text output as is (a float namespace crashed it:
# "unsupported operand type(s) for +: 'float' and 'str'"; a BOM in the kind was printed raw)


@pytest.mark.parametrize("output", ["text", "json", "yaml"])
@pytest.mark.parametrize("meta", [{"namespace": 1e308}, {"namespace": ["a"]}, {"name": 5},
                                  {"name": {"a": 1}}, {"namespace": "a\x1b[31m"},
                                  {"name": "x\u202e"}])
def test_check_renders_any_identity(tmp_path, meta, output):
    rc, out, err = run_check(tmp_path, [vllm(**meta)], output)
    assert rc in (0, 1) and "internal error" not in err, err
    assert all(line.isprintable() for line in (out + err).splitlines()), out + err


def test_check_escapes_a_kind_with_a_control_character(tmp_path):
    obj = {"apiVersion": "kubeai.org/v1", "kind": "M\ufeffodel", "metadata": {"name": "m"}}
    rc, out, err = run_check(tmp_path, [obj])
    assert rc == 0 and all(line.isprintable() for line in out.splitlines()), out


def test_the_decision_names_only_string_identities():
    d = review_object(vllm(namespace=1e308, name=["x"] * 3))
    assert d.namespace is None and d.name == "" and d.containers


# ---- class: a mapping key written twice with two values in `check`'s input. PyYAML keeps the
# last value without a word, so `check` sized a limit whose other value the file also gave,
# unsaid; kubectl apply reads the last too, but server-side apply refuses the file ("mapping
# key "memory" already defined at line N"): which value the cluster gets depends on how the
# file is applied. Now said, with both lines, and read as kubectl apply reads it (published
# manifests do this: seans3's blue/green Deployments write `env:` twice)

DUPLICATED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: dup
  namespace: a
spec:
  selector: {}
  template:
    metadata: {}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        command: [vllm, serve, Qwen/Qwen3-0.6B]
        resources:
          limits:
            memory: 64Gi
            memory: 1Gi
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: the-good-one, namespace: a}
spec:
  template:
    spec:
      containers: [{name: vllm, image: vllm/vllm-openai:v0.11.0,
                    command: [vllm, serve, Qwen/Qwen3-0.6B]}]
"""


@pytest.mark.parametrize("output", ["text", "json", "yaml"])
def test_check_says_a_key_written_twice_with_two_values(tmp_path, output):
    f = tmp_path / "dup.yaml"
    f.write_text(DUPLICATED)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["check", "-o", output, str(f)])
    assert rc == 0, (out.getvalue(), err.getvalue())
    assert ('document 1: line 18: mapping key "memory" already defined at line 17 with another '
            "value: the last is read, as kubectl apply does") in err.getvalue()
    assert "the-good-one" in out.getvalue() and "dup" in out.getvalue().replace("the-good", "")
    if output == "text":
        assert "1.0Gi" in out.getvalue()  # the last value, as kubectl apply sends it


def test_merge_keys_and_embedded_configs_are_not_duplicates():
    from vllm_sizer.workloads import limits

    said: list[str] = []
    text = "a: &x {m: 1}\nb:\n  <<: *x\n  m: 2\n"
    assert list(limits.load_all_yaml(text, repeated_keys=said)) == [
        {"a": {"m": 1}, "b": {"m": 2}}]
    # the same value twice (a published Helm render's labels) changes nothing: not said
    same = "labels:\n  model: x\n  app: y\n  model: x\nl: [1, {a: 2}]\nl: [1, {a: 2}]\n"
    assert list(limits.load_all_yaml(same, repeated_keys=said)) == [
        {"labels": {"model": "x", "app": "y"}, "l": [1, {"a": 2}]}]
    assert said == []
    assert list(limits.load_all_yaml("l: [1, {a: 2}]\nl: [1, {a: 3}]\n",
                                     repeated_keys=said)) == [{"l": [1, {"a": 3}]}]
    assert len(said) == 1 and 'mapping key "l" already defined at line 1' in said[0]
    # vLLM reads its --config with PyYAML (the last value wins): the reader keeps that
    assert limits.load_yaml("max-model-len: 1\nmax-model-len: 2\n") == {"max-model-len": 2}


# ---- class: the text of an internal error carried the object's characters into the Warning
# (an exception's message quotes the value it failed on): the API server drops a Warning with
# a control character, so the one line saying the object was admitted unchecked was lost


def test_an_internal_error_is_said_in_a_printable_warning():
    import asyncio
    import json

    from vllm_sizer.operator.settings import OperatorSettings
    from vllm_sizer.operator.webhook.admission import MUTATE, VALIDATE, Admission

    def broken(obj, context=None):
        raise ValueError("container \x1b[31mvllm\u202e\n")

    obj = vllm()
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "u", "kind": {"group": "apps", "kind": "Deployment"},
                                   "operation": "CREATE", "namespace": "a", "object": obj}})
    for fail_closed in (False, True):
        adm = Admission(OperatorSettings(fail_closed=fail_closed), read=broken)
        for route in (MUTATE, VALIDATE):
            status, out, _ = asyncio.run(adm.handle(route, body.encode()))
            resp = json.loads(out)["response"]
            texts = resp.get("warnings", []) + [resp.get("status", {}).get("message", "")]
            assert any("internal error" in t for t in texts), resp
            assert all(t.isprintable() for t in texts), texts


# ---- class: a memory quantity written past what Kubernetes represents (2^63-1 bytes). A
# request of 9223372036854775807 made the raised limit that value rounded up to Mi, 2^63
# ('8589934592Gi': found on a Dynamo service); an absurd engine (a 10^12-token LoRA prefill)
# made a limit of ~17 EB. Either is out of range: the second review reads it as no quantity.

MAX = 2**63 - 1


def _lora(args, res=None):
    c = {"image": "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.11.0",
         "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", "--enable-lora", *args]}
    if res is not None:
        c["resources"] = res
    return deployment(c)


@pytest.mark.parametrize("res", [
    {"requests": {"memory": str(MAX)}},
    {"requests": {"memory": str(MAX)}, "limits": {"memory": "0Gi"}},
    {"requests": {"memory": str(MAX - 5)}, "limits": {"memory": "1Gi"}},
    {"requests": {"memory": "8589934591Gi"}},
])
def test_a_raised_limit_never_passes_the_largest_quantity(res):
    import jsonpatch

    from vllm_sizer.workloads.quantity import parse_quantity

    obj = _lora([], res)
    d = review_object(obj)
    assert d.verdict == "mutate" and d.patch
    written = [op["value"] for op in d.patch if op["path"].endswith("/memory")]
    assert written and all(parse_quantity(v) <= MAX for v in written), written
    out = jsonpatch.apply_patch(obj, d.patch)
    c = out["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert parse_quantity(c["limits"]["memory"]) >= parse_quantity(c["requests"]["memory"])
    again = review_object(out)
    assert not [op for op in again.patch if "/resources" in op["path"]], again.patch


@pytest.mark.parametrize("mode", ["mutate", "enforce", "warn"])
def test_an_estimate_past_the_largest_quantity_is_never_written(mode):
    from vllm_sizer.policy.settings import PolicySettings

    obj = _lora(["--max-lora-rank=512", "--max-num-batched-tokens=1000000000000"])
    d = review_object(obj, None, PolicySettings(mode=mode))
    assert d.containers[0].report.total_memory_bytes > MAX
    assert not [op for op in d.patch if "/resources" in op["path"]], d.patch
    if mode == "warn":
        assert d.verdict == "allow" and d.warnings
    else:
        assert d.verdict == "deny" and "could never run" in d.message, d.message
        assert "largest memory quantity Kubernetes represents" in d.message


# ---- class: a patch that replaces what the object holds on the way to the value it writes.
# Writing `…/containers/0/resources/limits/memory` under a `template` that is a list (or a
# `resources` that is a string) replaced that value with `{}`: the user's containers and limits
# were dropped, and a custom resource the API server would have refused (its schema) came out
# valid, sized from nothing (found on KServe's LLMInferenceService PD example: 16Gi → gone)

LLMISVC = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "LLMInferenceService",
           "metadata": {"name": "q", "namespace": "llm"},
           "spec": {"model": {"uri": "hf://facebook/opt-125m", "name": "facebook/opt-125m"},
                    "template": {"containers": [{
                        "name": "main", "image": "docker.io/vllm/vllm-openai-cpu:v0.23.0",
                        "resources": {"limits": {"memory": "16Gi"}}}]}}}


def _hostile_shapes():
    import copy

    def at(path, value):
        obj = copy.deepcopy(LLMISVC)
        node = obj
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value(node[path[-1]])
        return obj

    t = ("spec", "template")
    c = (*t, "containers")
    return {
        "template-list": at(t, lambda v: [v]),
        "template-string": at(t, lambda v: "main"),
        "containers-dict": at(c, lambda v: {"0": v[0]}),
        "container-string": at((*c, 0), lambda v: "main"),
        "resources-string": at((*c, 0, "resources"), lambda v: "16Gi"),
        "limits-list": at((*c, 0, "resources", "limits"), lambda v: [v]),
        "env-dict": at((*c, 0), lambda v: {**v, "env": {"VLLM_CPU_KVCACHE_SPACE": "1"},
                                            "resources": {}}),
    }


@pytest.mark.parametrize("name", sorted(_hostile_shapes()))
@pytest.mark.parametrize("mode", ["mutate", "enforce"])
def test_a_patch_never_replaces_a_value_on_its_way(name, mode):
    import jsonpatch

    from vllm_sizer.policy.settings import PolicySettings

    obj = _hostile_shapes()[name]
    d = review_object(obj, None, PolicySettings(mode=mode))
    out = jsonpatch.apply_patch(obj, d.patch)
    # everything the object held is still there: the patch only adds
    for op in d.patch:
        if op["path"].startswith("/spec"):
            assert op["op"] == "add", op
            parent, _, key = op["path"].rpartition("/")
            held = obj
            for k in parent.split("/")[1:]:
                if isinstance(held, list):
                    held = held[int(k)] if int(k) < len(held) else None
                else:
                    held = held.get(k) if isinstance(held, dict) else None
            # an object the original holds on the way gets a new key, never a new value
            assert not (isinstance(held, dict) and key in held), op
            assert held is None or isinstance(held, list | dict), op
    if name == "container-string":
        # a string among the containers: `main` is added beside it, nothing is replaced
        assert out["spec"]["template"]["containers"][0] == "main"
        return
    assert out["spec"]["template"] == obj["spec"]["template"]
    assert d.verdict in ("unknown", "deny"), (d.verdict, d.patch)
    assert any("not an object" in w or "not a list" in w for w in d.warnings + [d.message])


# ---- class: time quadratic in the warnings. An object's warnings were deduplicated against a
# list: 128 containers whose `$(VAR)` chains ran past the expansion budget gave ~10,000
# distinct diagnostics and 3 s of list scans in one review (the webhook's budget is 1 s of a
# 5 s timeout); at the reader's bounds (128 containers x 512 env entries) it is minutes


def test_warnings_are_deduplicated_in_linear_time():
    import copy
    import time

    from vllm_sizer.workloads.reader import read_workloads
    from vllm_sizer.workloads.vllm_args import Diagnostic

    obj = vllm()
    base = read_workloads(obj)[0]
    workloads = []
    for i in range(128):
        w = copy.copy(base)
        w.container = f"c{i}"
        w.diagnostics = [Diagnostic("error", f"$(E{j}) past the budget: not expanded")
                         for j in range(400)]
        workloads.append(w)
    t0 = time.perf_counter()
    d = review_object(obj, read=lambda _o, _c: workloads)
    took = time.perf_counter() - t0
    assert len(d.warnings) >= 128 * 400  # all distinct (each names its container): all kept
    assert took < 10, took  # a list scan: ~1.3e9 comparisons, minutes


# ---- class: a negative estimate. A model config (the model-config annotation, a model-configs
# ConfigMap) with a negative size field (max_position_embeddings, moe_intermediate_size,
# a first_k_dense_replace past the layers, ...) gave negative terms and a negative total: a 16Gi limit "covered" -9 TB
# and was allowed, a silently wrong number (found by mutating catalog configs)


@pytest.mark.parametrize("model, field, value", [
    ("Qwen/Qwen3-0.6B", "max_position_embeddings", -40960),
    ("Qwen/Qwen3-30B-A3B", "moe_intermediate_size", -768),
    ("zai-org/GLM-5.3", "first_k_dense_replace", 2**31),  # more dense layers than layers
])
def test_a_config_that_gives_a_negative_size_is_not_sized(model, field, value):
    import json

    from vllm_sizer.estimator import EngineSettings, ModelGeometry, build_report
    from vllm_sizer.estimator.catalog import model_config
    from vllm_sizer.estimator.errors import EstimatorError
    from vllm_sizer.policy.settings import PolicySettings

    cfg = {**model_config(model), field: value}
    with pytest.raises(EstimatorError, match="negative"):
        build_report(ModelGeometry.from_hf_config(cfg), EngineSettings(model=model, device="cpu"))
    obj = deployment({"image": "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.11.0",
                      "command": ["vllm", "serve", "acme/private"],
                      "resources": {"limits": {"memory": "16Gi"}}})
    obj["metadata"]["annotations"] = {"vllm-sizer.io/model-config": json.dumps(cfg)}
    for mode in ("mutate", "enforce"):
        d = review_object(obj, None, PolicySettings(mode=mode))
        c = d.containers[0]
        assert c.report is None and c.verdict == "unknown", (c.verdict, c.message)
        assert any("negative" in w for w in d.warnings), d.warnings
        assert not [op for op in d.patch if "/resources" in op["path"]]


# ---- class: JSON nested past Python's recursion limit in a flag value. `--kv-transfer-config`
# (and the other JSON flags, dotted keys, a --config's values) given "[" * 5000: json.loads
# raised RecursionError, which the reader reported as an internal error instead of vLLM's
# own verdict (not a JSON object: vLLM exits); an argument that is itself a deeply nested
# list (a webhook body nests up to ~1,000 levels) failed the same way when written back out


@pytest.mark.parametrize("args", [
    ["--kv-transfer-config", "[" * 5000],
    ["--kv-transfer-config", '{"a": ' * 3000 + "1" + "}" * 3000],
    ["--kv-transfer-config.kv_connector_extra_config", "[" * 5000],
    ["--kv-transfer-config", '{"kv_connector": "OffloadingConnector", "x": ' + "[" * 5000 + "}"],
])
def test_deeply_nested_json_in_a_flag_is_vllms_error_not_ours(args):
    obj = deployment({"image": "vllm/vllm-openai:v0.21.0",
                      "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", *args]})
    d = review_object(obj)
    texts = d.warnings + [d.message] + [str(x) for c in d.containers
                                        for x in c.workload.diagnostics]
    assert d.containers and not any("internal error" in t for t in texts), texts


def test_a_deeply_nested_argument_is_no_internal_error():
    deep: object = "x"
    for _ in range(960):
        deep = [deep]
    obj = deployment({"image": "vllm/vllm-openai:v0.11.0",
                      "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"], "args": [deep]})
    d = review_object(obj)
    texts = d.warnings + [str(x) for c in d.containers for x in c.workload.diagnostics]
    assert not any("internal error" in t for t in texts), texts


# ---- class: a patch that makes the object invalid through its annotations. The API server
# refuses an object whose annotations exceed 256 KiB in all (keys and values); a large
# object's kubectl last-applied-configuration comes near it, and vllm-sizer's estimate,
# breakdown and notes pushed it over: the apply failed because of the webhook


def _annotation_bytes(ann):
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in ann.items())


@pytest.mark.parametrize("pad", [250_000, 261_000, 262_000, 262_090])
def test_annotations_written_stay_within_the_api_servers_limit(pad):
    import jsonpatch

    obj = _lora(["--max-lora-rank=64"])
    obj["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration":
                                      "x" * pad}
    d = review_object(obj)
    out = jsonpatch.apply_patch(obj, d.patch)
    assert _annotation_bytes(out["metadata"]["annotations"]) <= 256 * 1024
    # the limits are still raised; what does not fit of the description is left out
    assert d.verdict == "mutate" and any("/resources" in op["path"] for op in d.patch)
    if pad == 250_000:
        assert "vllm-sizer.io/notes" in out["metadata"]["annotations"]
    again = review_object(out)
    assert not [op for op in again.patch if "/resources" in op["path"]]


# ---- class: a skipped workload whose pods were sized anyway. Created with
# vllm-sizer.io/skip (or mode off), a workload's templates get vllm-sizer.io/sized=skip so
# the pod webhook leaves its pods alone; but only when the review patched nothing else, so
# one that also carried an annotation of ours (a manifest exported from the cluster, the
# output of `check -o yaml`) had that annotation corrected and no label: its pods were
# sized at creation (found by the fuzzer's pod-from-template check on llm-d)


@pytest.mark.parametrize("ann", [
    {"vllm-sizer.io/skip": "true", "vllm-sizer.io/estimate": "9.0Gi"},
    {"vllm-sizer.io/mode": "off", "vllm-sizer.io/decision": "mutate: limits.memory 1Gi → 9Gi",
     "vllm-sizer.io/breakdown": "{}"},
])
def test_a_skipped_workloads_pods_are_skipped_whatever_else_is_corrected(ann):
    import jsonpatch

    from .corpus_mutants import pod_from

    obj = vllm()
    obj["metadata"]["annotations"] = dict(ann)
    d = review_object(obj, label_pods=True)
    out = jsonpatch.apply_patch(obj, d.patch)
    labels = out["spec"]["template"]["metadata"]["labels"]
    assert labels.get("vllm-sizer.io/sized") == "skip", d.patch
    pod = pod_from(out, "/spec/template")
    p = review_object(pod, label_pods=True)
    assert p.verdict == "skip" and not p.patch, (p.verdict, p.patch)


# ---- class: two readings of vllm-sizer.io/skip. The reader took "true", "yes", "1" (any case,
# spaces around) as skip; the decision's mode override only "true": a workload created with
# skip "yes" was not sized, yet got no skip label, so its pods were sized at creation


@pytest.mark.parametrize("value", ["yes", "1", " true ", "YES"])
def test_every_spelling_of_skip_skips_the_pods_too(value):
    import jsonpatch

    from .corpus_mutants import pod_from

    obj = vllm()
    obj["metadata"]["annotations"] = {"vllm-sizer.io/skip": value}
    d = review_object(obj, label_pods=True)
    assert d.verdict == "skip"
    out = jsonpatch.apply_patch(obj, d.patch)
    assert out["spec"]["template"]["metadata"]["labels"].get("vllm-sizer.io/sized") == "skip"
    p = review_object(pod_from(out, "/spec/template"), label_pods=True)
    assert p.verdict == "skip" and not p.patch


# ---- class: one command line read two ways. vLLM's api_server.py run as a script file (the
# installed module's file, or the copy opea/vllm-rocm keeps at /workspace/api_server.py) was
# read as vLLM's server only as the container's own command: the same command in a
# `sh -c` script was not found (OPEA's ChatQnA ROCm sized 6.5Gi directly, "cannot size"
# through sh -c: found by the metamorphic check on the merged corpus)


@pytest.mark.parametrize("image, script", [
    ("opea/vllm-rocm:latest", "/workspace/api_server.py"),
    ("vllm/vllm-openai:v0.11.0",
     "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py"),
])
def test_an_api_server_script_is_read_the_same_inside_a_shell(image, script):
    argv = ["python3", script, "--model", "Qwen/Qwen3-0.6B", "--max-model-len", "4096"]
    direct = review_object(deployment({"image": image, "command": argv}))
    shell = review_object(deployment({"image": image,
                                      "command": ["sh", "-c", "exec " + " ".join(argv)]}))
    sizes = [[(c.verdict, c.report.total_memory_bytes if c.report else None)
              for c in d.containers] for d in (direct, shell)]
    assert sizes[0][0][1] is not None and sizes[0] == sizes[1], (sizes, shell.warnings)
