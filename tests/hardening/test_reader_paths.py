"""Hostile input on the reader paths for mounted scripts, platforms, downloads and model paths:
each class of input gets a diagnostic, never a crash, a hang, an unbounded cost, a silently
wrong number or another namespace's data."""

from __future__ import annotations

import copy

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.hardening.hostile_objects import (
    IMG,
    deployment,
    internal_errors,
    mounted,
    peak_of,
)
from tests.hostile_strategies import HOSTILE
from vllm_sizer.policy.cluster import ClusterContext
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads import ReadContext, read_workloads

GiB = 2**30


# ---------------------------------------------------------------- wrong-typed fields
WRONG = [None, [], {}, 0, -1, 10**12, "two", True, [None], {"a": None}, [["x"]], 1.5e308]


@pytest.mark.parametrize("bad", WRONG)
@pytest.mark.parametrize("where", ["mount", "volume", "shm-mount", "shm-volume"])
def test_wrong_typed_mount_and_volume_names_are_no_crash(bad, where):
    c = {"image": IMG, "command": ["bash", "/s/start.sh"],
         "volumeMounts": [{"name": "s", "mountPath": "/s"}, {"name": "shm", "mountPath": "/dev/shm"}]}
    pod = {"volumes": [{"name": "s", "configMap": {"name": "start"}},
                       {"name": "shm", "emptyDir": {"medium": "Memory"}}]}
    target = {"mount": c["volumeMounts"][0], "shm-mount": c["volumeMounts"][1],
              "volume": pod["volumes"][0], "shm-volume": pod["volumes"][1]}[where]
    target["name"] = bad
    ctx = ReadContext(config_maps={"start": {"start.sh": "exec vllm serve Qwen/Qwen3-8B\n"}})
    ws = read_workloads(deployment(c, pod), ctx)
    assert ws and not internal_errors(ws)

def _platform_seeds():
    return list(yaml.safe_load_all("""
apiVersion: inference.llmaz.io/v1alpha1
kind: Playground
metadata: {name: p}
spec:
  modelClaim: {modelName: qwen3-8b}
  modelClaims: {models: [{name: qwen3-8b, role: draft}]}
  backendRuntimeConfig: {args: [--max-model-len, "8192"], envs: [{name: A, value: "1"}],
                         version: v0.8.0, resources: {limits: {memory: 24Gi}}}
---
apiVersion: workload.serving.volcano.sh/v1alpha1
kind: ModelBooster
metadata: {name: b}
spec:
  backend:
    type: vLLM
    modelURI: hf://Qwen/Qwen3-8B
    env: [{name: X, value: "1"}]
    workers: [{type: server, image: "vllm/vllm-openai:v0.11.0", config: {max-model-len: 4096},
               resources: {limits: {memory: 32Gi, nvidia.com/gpu: "1"}}}]
---
apiVersion: kaito.sh/v1beta1
kind: Workspace
metadata: {name: w}
resource: {instanceType: Standard_NC24ads_A100_v4}
inference: {preset: {name: phi-4}, config: kcfg}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: i}
spec:
  predictor:
    model: {modelFormat: {name: huggingface}, storageUri: "hf://Qwen/Qwen3-8B",
            resources: {limits: {memory: 40Gi}}}
    workerSpec: {pipelineParallelSize: 2, tensorParallelSize: 4}
---
apiVersion: ray.io/v1
kind: RayService
metadata: {name: r}
spec:
  serveConfigV2: |
    applications:
    - name: llm
      import_path: serve:model
      runtime_env: {pip: ["vllm"], env_vars: {MODEL_ID: Qwen/Qwen3-8B, TENSOR_PARALLELISM: "2"}}
  rayClusterConfig:
    workerGroupSpecs:
    - template: {spec: {containers: [{name: llm, image: "rayproject/ray:2.9.0",
                                      resources: {limits: {memory: 40Gi, nvidia.com/gpu: "2"}}}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      initContainers: [{name: dl, command: [sh, -c, "hf download Qwen/Qwen3-8B --local-dir /m/q"]}]
      containers:
      - name: v
        image: vllm/vllm-openai:v0.11.0
        command: [bash, /s/start.sh, /m/q]
        volumeMounts: [{name: s, mountPath: /s}]
        resources: {limits: {memory: 8Gi}, claims: [{name: gpu}]}
      resourceClaims: [{name: gpu, resourceClaimTemplateName: nvidia-gpu}]
      volumes: [{name: s, configMap: {name: start, items: [{key: start.sh, path: start.sh}]}}]
"""))


SEEDS = _platform_seeds()
SEED_CONTEXT = dict(
    config_maps={"start": {"start.sh": 'exec vllm serve "$1" --max-model-len 4096\n'},
                 "kcfg": {"inference_config.yaml": "vllm:\n  max-model-len: 4096\n"}},
    objects={("OpenModel", "qwen3-8b"): {"kind": "OpenModel", "metadata": {"name": "qwen3-8b"},
                                         "spec": {"source": {"modelHub": {"modelID": "Qwen/Qwen3-8B"}}}}})


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*path, i))


GARBAGE = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**13), 10**13) | st.text(max_size=12)
    | st.sampled_from(["two", "1e999", "-1", "\x00\x1b[31m", "../../etc", "<model-path>"]),
    lambda c: st.lists(c, min_size=1, max_size=3) | st.dictionaries(st.text(max_size=6), c, min_size=1, max_size=3),
    max_leaves=8)


@HOSTILE
@given(st.sampled_from(range(len(SEEDS))), st.integers(0, 10**6), GARBAGE)
def test_any_field_of_a_platform_object_may_be_garbage(which, pick, garbage):
    obj = copy.deepcopy(SEEDS[which])
    paths = [p for p in _paths(obj) if p]
    path = paths[pick % len(paths)]
    node = obj
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = garbage
    ctx = ReadContext(**copy.deepcopy(SEED_CONTEXT))
    ws = read_workloads(obj, ctx)
    assert not internal_errors(ws), (path, garbage)
    d = review_object(obj, ctx)
    assert not any("internal error" in w for w in d.warnings), (path, garbage)

# ---------------------------------------------------------------- mounted scripts and files
def test_mounted_files_are_looked_up_never_multiplied_out():
    """1500 mounts of one 1500-key map: 2.25 million files if materialised (3000 x 3000 took
    197 s and 1.7 GB); a lookup per path named by a script costs nothing."""
    keys = {f"k{i}": "x" for i in range(1500)}
    keys["run.sh"] = "exec vllm serve Qwen/Qwen3-8B --max-model-len 4096\n"
    mounts = [{"name": "s", "mountPath": f"/p{i}"} for i in range(1500)]
    obj, ctx = mounted(["bash", "/p777/run.sh"], keys, mounts)
    (w,) = peak_of(read_workloads, obj, ctx)
    assert w.model == "Qwen/Qwen3-8B" and w.settings.max_model_len == 4096
    projected = [{"name": "s", "projected": {"sources": [{"configMap": {"name": "scripts"}}] * 2000}}]
    obj, ctx = mounted(["bash", "/p9/run.sh"], keys, mounts, projected)
    (w,) = peak_of(read_workloads, obj, ctx)
    assert w.settings.max_model_len == 4096


@pytest.mark.parametrize("files,entry", [
    ({"a.sh": "bash /s/b.sh\n", "b.sh": "bash /s/a.sh\n"}, "/s/a.sh"),
    ({"a.sh": "source /s/a.sh\n. /s/a.sh\nbash /s/a.sh \"$@\" \"$@\"\n"}, "/s/a.sh"),
    ({"a.sh": "bash /s/b.sh\n" * 50, "b.sh": "bash /s/c.sh\n" * 50, "c.sh": "bash /s/a.sh\n" * 50},
     "/s/a.sh"),
    ({"a.sh": "cp /s/a.sh /t/b.sh\nbash /t/b.sh\n"}, "/s/a.sh"),
])
def test_scripts_that_run_each_other_are_bounded_and_never_read_as_no_server(files, entry):
    obj, ctx = mounted(["bash", entry], files)
    ws = peak_of(read_workloads, obj, ctx)
    # a cycle runs no vLLM that vllm-sizer can see, but what it runs past the cut is unknown:
    # the container stays, unsized, and is never patched
    assert len(ws) == 1 and ws[0].settings is None
    assert review_object(obj, ctx).patch == []


@pytest.mark.parametrize("script,how", [
    ("true\n" * 3000 + "vllm serve Qwen/Qwen3-8B\n", "mounted"),
    ("# " + "x" * 300_000 + "\nvllm serve Qwen/Qwen3-8B\n", "mounted"),
    ("# " + "x" * 300_000 + "\nvllm serve Qwen/Qwen3-8B\n", "inline"),
    ("{ " * 5000 + "vllm serve Qwen/Qwen3-8B; " + "} " * 5000, "inline"),
    ("if true; then " * 1500 + "vllm serve Qwen/Qwen3-8B; " + "fi; " * 1500, "inline"),
    ("cp /s/run.sh /t/0\n" + "".join(f"cp /t/{i} /t/{i + 1}\n" for i in range(1500))
     + "bash /t/1500\n", "inline"),
])
def test_a_script_cut_by_a_bound_is_said_and_never_taken_for_no_server(script, how):
    """A cut script (commands, words, characters) ran past the cut what vllm-sizer cannot see:
    before, `_starts_no_server` read the cut (empty) script as starting nothing and the vLLM
    container vanished without a word."""
    if how == "mounted":
        obj, ctx = mounted(["bash", "/s/run.sh"], {"run.sh": script})
    else:
        obj, ctx = mounted(["sh", "-c", script], {"run.sh": "vllm serve Qwen/Qwen3-8B\n"})
    (w,) = peak_of(read_workloads, obj, ctx)
    assert w.settings is None and any("not sized" in d.message for d in w.diagnostics)
    d = review_object(obj, ctx)
    assert d.patch == [] and d.verdict == "unknown"


def test_a_container_after_one_that_spent_the_budget_is_cut_too():
    obj = deployment({"image": IMG, "command": ["sh", "-c", "true\n" * 2000 + "vllm serve Qwen/Qwen3-8B"]})
    obj["spec"]["template"]["spec"]["containers"].append(
        {"name": "w", "image": IMG,
         "command": ["sh", "-c", "true\nvllm serve Qwen/Qwen3-8B --max-model-len 1024"]})
    ws = read_workloads(obj)
    assert [w.container for w in ws] == ["v", "w"]
    assert all(w.settings is None for w in ws)
    assert any("commands" in d.message and "not sized" in d.message for d in ws[1].diagnostics)

# ---------------------------------------------------------------- downloads into model paths
def test_download_directories_and_names_are_never_paired_out():
    """3000 --local-dir and 3000 --model-name words: 9 million strings before (5000 each took
    30 s and 1.6 GB); the path is split instead."""
    cmd = ["dl"] + [w for i in range(3000) for w in ("--local-dir", f"/m{i}")]
    cmd += [w for i in range(3000) for w in ("--model-name", f"n{i}")] + ["Qwen/Qwen3-8B"]
    obj = deployment({"image": IMG, "command": ["vllm", "serve", "/m17/n2999"]},
                     {"initContainers": [{"name": "dl", "image": "x", "command": cmd}]})
    (w,) = peak_of(read_workloads, obj)
    assert w.model == "Qwen/Qwen3-8B"


# ---------------------------------------------------------------- model paths
@pytest.mark.parametrize("path", [
    "/models/Qwen/Qwen3-8B/..",
    "/cache/models--Qwen--Qwen3-8B/../../x/y",
    "/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/..",
    "/models/../../etc",
])
def test_dot_segments_name_the_directory_they_denote(path):
    (w,) = read_workloads(deployment({"image": IMG, "command": ["vllm", "serve", path]}))
    assert w.model != "Qwen/Qwen3-8B" and w.model_config is None


def test_dot_segments_never_leave_kserve_s_model_directory_for_its_storage():
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "q", "namespace": "a"},
            "spec": {"predictor": {"model": {
                "modelFormat": {"name": "vLLM"}, "storageUri": "hf://Qwen/Qwen3-8B",
                "args": ["--model=/mnt/models/../../other/model"],
                "resources": {"limits": {"memory": "40Gi"}}}}}}
    (w,) = read_workloads(isvc)
    assert w.model == "/other/model"

# ---------------------------------------------------------------- containers per object
def test_containers_per_object_are_bounded_and_the_cut_is_said():
    sidecars = [{"name": f"s{i}", "image": IMG, "restartPolicy": "Always",
                 "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"]} for i in range(1000)]
    ws = read_workloads(deployment({"image": IMG, "command": ["vllm", "serve", "Qwen/Qwen3-8B"]},
                                   {"initContainers": sidecars}))
    assert 0 < len(ws) <= 128 and all(w.settings is None for w in ws)
    assert all(any("containers in one object" in d.message for d in w.diagnostics) for w in ws)
    busy = [{"name": f"b{i}", "image": "busybox", "restartPolicy": "Always", "command": ["sleep", "1"]}
            for i in range(1000)]
    assert read_workloads(deployment({"image": "busybox", "command": ["sleep", "1"]},
                                     {"initContainers": busy})) == []
    late = busy + [{"name": "late", "image": IMG, "restartPolicy": "Always",
                    "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"]}]
    (w,) = read_workloads(deployment({"image": "busybox", "command": ["sleep", "1"]},
                                     {"initContainers": late}))
    assert w.container == "late" and w.settings is None

# ---------------------------------------------------------------- other namespaces
def test_an_open_model_is_cluster_scoped_whatever_namespace_it_says():
    """llmaz's OpenModel CRD is `scope: Cluster`: the API server drops a namespace written in
    its metadata, so every namespace's Playground sees it (check must not hide it)."""
    om = {"apiVersion": "llmaz.io/v1alpha1", "kind": "OpenModel",
          "metadata": {"name": "m", "namespace": "team-b"},
          "spec": {"source": {"modelHub": {"modelID": "Qwen/Qwen3-8B"}}}}
    pg = {"apiVersion": "inference.llmaz.io/v1alpha1", "kind": "Playground",
          "metadata": {"name": "p", "namespace": "team-a"},
          "spec": {"modelClaim": {"modelName": "m"}}}
    (w,) = read_workloads(pg, ClusterContext.from_objects([om]).read_context("team-a"))
    assert w.model == "Qwen/Qwen3-8B"


NOISE_NS = st.sampled_from(["team-b", "aaa", "zzz", "vllm-sizer", ""])


@HOSTILE
@given(st.lists(NOISE_NS, min_size=1, max_size=4), st.sampled_from(["script", "kaito"]))
def test_configmaps_of_other_namespaces_never_change_a_decision(others, what):
    ns = "team-a"
    evil_script = "exec vllm serve meta-llama/Llama-3.1-70B --max-model-len 131072\n"
    own_script = "exec vllm serve Qwen/Qwen3-0.6B --max-model-len 4096\n"

    def cms(namespace, script, gpu_util):
        return [{"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "start", "namespace": namespace},
                 "data": {"start.sh": script}},
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "kcfg", "namespace": namespace},
                 "data": {"inference_config.yaml": f"vllm:\n  gpu-memory-utilization: {gpu_util}\n"}}]

    if what == "script":
        obj, _ = mounted(["bash", "/s/start.sh"], {})
        obj["metadata"]["namespace"] = ns
        obj["spec"]["template"]["spec"]["volumes"] = [{"name": "s", "configMap": {"name": "start"}}]
    else:
        obj = {"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace",
               "metadata": {"name": "w", "namespace": ns},
               "inference": {"preset": {"name": "phi-4"}, "config": "kcfg"}}
    own = cms(ns, own_script, 0.5)
    noise = [o for other in others for o in cms(other, evil_script, 0.99)]

    def decide(docs):
        r = review_object(obj, ClusterContext.from_objects(docs, "vllm-sizer").read_context(ns))
        return (r.verdict, r.patch, [(c.workload.model, c.workload.settings and
                                      c.workload.settings.gpu_memory_utilization)
                                     for c in r.containers])

    assert decide(noise + own + noise) == decide(own)
    assert decide(noise)[2] != decide(own)[2] or what == "kaito"
