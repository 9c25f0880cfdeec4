"""Reader classes found by growing the published-manifests corpus (tests/data/published/):
each test is the smallest shape of a class, with the corpus file that showed it."""

from __future__ import annotations

from vllm_sizer.workloads.reader import read_workloads


def _deployment(container: dict, name: str = "vllm-openai") -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


# ---- args only, with the author's fill-ins left in -----------------------------------------
# community/felipemoz-vllm-on-azure-deployment.yaml: image ${VLLM_IMAGE}, args --model
# ${VLLM_MODEL} --tensor-parallel-size ${VLLM_GPU_COUNT} ...: the placeholders are values
# the deploy script fills in, not errors of the command line.


def test_args_only_with_placeholder_values_is_read_as_vllm():
    c = {
        "name": "vllm",
        "image": "${VLLM_IMAGE}",
        "args": ["--model", "${VLLM_MODEL}", "--tensor-parallel-size", "${VLLM_GPU_COUNT}",
                 "--max-model-len", "${VLLM_MAX_MODEL_LEN}", "--enable-chunked-prefill",
                 "--gpu-memory-utilization", "0.95", "--dtype", "auto"],
        "resources": {"limits": {"memory": "800Gi", "nvidia.com/gpu": "${VLLM_GPU_COUNT}"}},
    }
    (w,) = read_workloads(_deployment(c, "vllm"))
    assert w.settings is not None
    assert w.settings.gpu_memory_utilization == 0.95
    assert w.settings.enable_chunked_prefill is True
    assert w.settings.tensor_parallel_size == 1  # unknown: vLLM's default, said
    assert w.limit_bytes == 800 * 2**30
    assert any("VLLM_GPU_COUNT" in str(d) for d in w.diagnostics)
    # nvidia.com/gpu with a placeholder count still asks for NVIDIA GPUs; how many is unknown
    assert w.device == "cuda"
    assert w.gpu_count is None


# ai-on-gke/model-eval-deployment-a100.yaml: image V_IMAGE_URL (a sed placeholder for
# vllm/vllm-openai), args --model=$(MODEL) --tensor-parallel-size=2, in a Deployment named
# vllm-openai-a100.


def test_placeholder_image_in_a_vllm_named_workload_with_vllm_args():
    c = {
        "name": "inference-server",
        "image": "V_IMAGE_URL",
        "args": ["--model=$(MODEL)", "--tensor-parallel-size=2"],
        "env": [{"name": "MODEL", "value": "V_MODEL_PATH"}],
        "resources": {"limits": {"memory": "25Gi", "nvidia.com/gpu": "2"}},
    }
    (w,) = read_workloads(_deployment(c, "vllm-openai-a100"))
    assert w.settings is not None
    assert w.settings.tensor_parallel_size == 2
    assert w.limit_bytes == 25 * 2**30
    assert any("placeholder" in d.message for d in w.diagnostics)


def test_placeholder_image_without_a_vllm_name_or_with_other_flags_is_not_read():
    # nothing says vLLM: a placeholder image with a --model flag may be any server
    c = {"name": "server", "image": "<CONTAINER_IMAGE>", "args": ["--model", "x/y", "--port", "8000"]}
    assert read_workloads(_deployment(c, "chat")) == []
    # the name says vLLM, but a router's flags are not vLLM's
    c = {"name": "vllm-router", "image": "$ROUTER_IMAGE",
         "args": ["--model", "x/y", "--routing-logic", "roundrobin"]}
    assert read_workloads(_deployment(c, "vllm-stack")) == []
    # a router container named like the stack, whose args would parse
    c = {"name": "vllm-router", "image": "${IMAGE}", "args": ["--model", "x/y"]}
    assert read_workloads(_deployment(c, "vllm-stack")) == []


# ---- `--max-model-len auto` / -1 --------------------------------------------------------------
# vLLM 0.14+ takes `auto` or -1 (argparse_utils human_readable_int_or_auto; ModelConfig
# max_model_len ge=-1): the length derived from the model's config, then fitted to memory.
# Published as vLLM's own tip for long-context models; before 0.14 it is a startup error.


def test_max_model_len_auto_is_the_derived_length_from_0_14():
    from vllm_sizer.workloads.vllm_args import parse_vllm_args
    from vllm_sizer.estimator.versions import VllmVersion

    for spelling in (["--max-model-len", "auto"], ["--max-model-len=auto"],
                     ["--max-model-len", "-1"], ["--max_model_len", "AUTO"]):
        p = parse_vllm_args(["Qwen/Qwen3-0.6B", *spelling], version=VllmVersion.parse("0.15.0"),
                            strict=True)
        assert "max_model_len" not in p.values
        assert not [d for d in p.diagnostics if d.severity == "error"], spelling
        assert any("fits" in d.message for d in p.diagnostics)
    old = parse_vllm_args(["Qwen/Qwen3-0.6B", "--max-model-len", "auto"],
                          version=VllmVersion.parse("0.11.0"), strict=True)
    assert [d for d in old.diagnostics if d.severity == "error"]


def test_args_only_custom_vllm_image_with_max_model_len_auto_is_found():
    c = {"name": "vllm", "image": "myorg/vllm-custom:1.0",
         "args": ["--model", "Qwen/Qwen3-0.6B", "--max-model-len", "auto"]}
    (w,) = read_workloads(_deployment(c))
    assert w.settings is not None and w.settings.max_model_len is None


def test_max_model_len_auto_in_a_config_file():
    from vllm_sizer.workloads.vllm_args import parse_vllm_args

    p = parse_vllm_args(["Qwen/Qwen3-0.6B", "--config", "/c.yaml"],
                        config_loader=lambda _: {"max-model-len": "auto", "max-num-seqs": 8})
    assert "max_model_len" not in p.values and p.values["max_num_seqs"] == 8
    assert not [d for d in p.diagnostics if d.severity == "error"]


# ---- `python -c CODE` in vLLM's image that visibly starts no engine -----------------------------
# community/tgmorton-job-cache-warmup-llama-70b.yaml: a Job in vllm/vllm-openai whose command is
# `python3 -c "from huggingface_hub import snapshot_download ..."`: the code is in the manifest,
# imports no vLLM and starts no process that could, so the container is no server (no Workload,
# no `cannot size` warning on every apply).

_DOWNLOAD = """from huggingface_hub import snapshot_download
import os
snapshot_download(repo_id="meta-llama/Llama-3.1-70B-Instruct", cache_dir="/models/.cache")
os.system("du -sh /models/.cache 2>/dev/null || echo 'Cache populated'")
"""


def _job(command: list[str]) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "warmup"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "fetcher", "image": "vllm/vllm-openai:latest", "command": command}]}}}}


def test_python_c_code_that_starts_no_engine_is_no_server():
    assert read_workloads(_job(["python3", "-c", _DOWNLOAD])) == []
    assert read_workloads(_job(["sh", "-c", f"python -c '{_DOWNLOAD.splitlines()[0]}'"])) == []


def test_python_c_code_that_may_start_vllm_keeps_its_warning():
    for code in (
        "from vllm import LLM\nLLM('Qwen/Qwen3-0.6B')",  # the engine itself
        "import vllm.entrypoints.cli.main as m; m.main()",
        "import subprocess; subprocess.run(['bash', '/start.sh'])",  # a script out of sight
        "import os; os.system(os.environ['CMD'])",  # a command that is not visible
        "exec(open('/app/serve.py').read())",
        "this is not python(",  # unparsable: unknown
    ):
        ws = read_workloads(_job(["python3", "-c", code]))
        assert len(ws) == 1 and ws[0].settings is None, code


# ---- clients and download scripts run in vLLM's image --------------------------------------------
# vLLM's image also runs its own load generator (`vllm bench serve`, benchmarks/benchmark_serving.py)
# and its chat client against a server elsewhere: these start no engine. A Python script mounted
# from a ConfigMap of the same manifest is read like `python -c`.


def test_vllm_client_subcommands_are_no_server():
    for cmd in (["vllm", "bench", "serve", "--model", "Qwen/Qwen3-0.6B", "--base-url", "http://x"],
                ["vllm", "chat", "--url", "http://x/v1"],
                ["sh", "-c", "vllm bench serve --backend vllm --model Qwen/Qwen3-0.6B --num-prompts 10"],
                ["python3", "/vllm-workspace/benchmarks/benchmark_serving.py", "--model", "x/y"]):
        assert read_workloads(_job(cmd)) == [], cmd
    # `vllm bench throughput` runs an engine in the pod: not called a client
    (w,) = read_workloads(_job(["vllm", "bench", "throughput", "--model", "Qwen/Qwen3-0.6B"]))
    assert w.settings is None


def test_python_script_from_a_mounted_config_map_is_read_for_an_engine():
    from vllm_sizer.cli.check import build_context

    def with_script(code: str) -> list:
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dl"},
              "data": {"download.py": code}}
        job = _job(["python3", "/scripts/download.py"])
        spec = job["spec"]["template"]["spec"]
        spec["containers"][0]["volumeMounts"] = [{"name": "s", "mountPath": "/scripts"}]
        spec["volumes"] = [{"name": "s", "configMap": {"name": "dl"}}]
        return read_workloads(job, build_context([cm]).read_context(None))

    assert with_script(_DOWNLOAD) == []
    (w,) = with_script("from vllm import LLM\nLLM(model='Qwen/Qwen3-0.6B')\n")
    assert w.model == "Qwen/Qwen3-0.6B" or w.settings is None


# ---- KAITO adapters ---------------------------------------------------------------------------
# kaito/workspace-phi-3-with-adapters.yaml: inference.adapters makes KAITO add --enable-lora to
# the vLLM command line (kaito-project/kaito@056b8280: pkg/model/interface.go:448-450, with
# AdaptersEnabled = len(inference.adapters) > 0 in pkg/workspace/inference/preset_inferences.go:611)
# and its wrapper loads every adapter under /mnt/adapter as --lora-modules.


def test_kaito_workspace_adapters_enable_lora():
    ws = {"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace", "metadata": {"name": "w"},
          "resource": {"instanceType": "Standard_NC24ads_A100_v4"},
          "inference": {"preset": {"name": "phi-3-mini-128k-instruct"},
                        "adapters": [{"source": {"name": "a", "image": "r/a:1"}, "strength": "1.0"}]}}
    (w,) = read_workloads(ws)
    assert w.settings is not None and w.settings.enable_lora is True
    ws["inference"].pop("adapters")
    (w,) = read_workloads(ws)
    assert w.settings.enable_lora is False
    inference_set = {"apiVersion": "kaito.sh/v1beta1", "kind": "InferenceSet",
                     "metadata": {"name": "s"},
                     "spec": {"template": {"inference": {
                         "preset": {"name": "phi-4-mini-instruct"},
                         "adapters": [{"source": {"name": "a", "image": "r/a:1"}}]}}}}
    (w,) = read_workloads(inference_set)
    assert w.settings.enable_lora is True


# ---- a tag that is no vLLM release ------------------------------------------------------------
# llm-on-openshift/vllm-deployment-ubi9-0-0-2.yaml: quay.io/rh-aiservices-bu/vllm-openai-ubi9:0.0.2
# is that project's own first build; vLLM's first release is v0.1.0 (June 2023), so a 0.0.x tag
# names no vLLM version (read as unknown, not as a "vLLM 0.0.2" below every known option list).


def test_a_tag_below_vllms_first_release_is_no_vllm_version():
    from vllm_sizer.workloads import images

    assert images.image_version("quay.io/rh-aiservices-bu/vllm-openai-ubi9:0.0.2") is None
    assert str(images.image_version("quay.io/rh-aiservices-bu/vllm-openai-ubi9:0.4.2")) == "0.4.2"
    c = {"name": "server", "image": "quay.io/rh-aiservices-bu/vllm-openai-ubi9:0.0.2",
         "args": ["--model", "mistralai/Mistral-7B-Instruct-v0.2", "--dtype", "float16"]}
    (w,) = read_workloads(_deployment(c, "vllm"))
    assert w.settings.vllm_version is None
    assert not any("0.0.2's option list" in d.message for d in w.diagnostics)


# ---- vLLM's batch runner -------------------------------------------------------------------------
# `python -m vllm.entrypoints.openai.run_batch -i IN -o OUT --model X ...` (and `vllm run-batch`)
# runs the same engine as the server over a file of requests (a Job): its parser is
# AsyncEngineArgs plus -i/--input-file, -o/--output-file, --output-tmp-dir, --response-role,
# --max-log-len, --enable-metrics, --url, --port, --enable-prompt-tokens-details
# (opendatahub-io/vllm@7f15f787:vllm/entrypoints/openai/run_batch.py:35-100).


def test_run_batch_is_an_engine_with_its_own_flags_set_aside():
    for command in (
        ["python3", "-m", "vllm.entrypoints.openai.run_batch", "-i", "/data/in.jsonl",
         "-o", "/data/out.jsonl", "--model", "Qwen/Qwen3-0.6B", "--max-model-len", "4096",
         "--enable-metrics", "--url", "0.0.0.0", "--port", "9000"],
        ["vllm", "run-batch", "--input-file", "/data/in.jsonl", "--output-file=/data/out.jsonl",
         "--model", "Qwen/Qwen3-0.6B", "--max-model-len", "4096"],
        ["sh", "-c", "vllm run-batch -i in.jsonl -o out.jsonl --model Qwen/Qwen3-0.6B "
                     "--max-model-len 4096"],
    ):
        (w,) = read_workloads(_job(command))
        assert w.settings is not None, command
        assert w.model == "Qwen/Qwen3-0.6B" and w.settings.max_model_len == 4096, command
        assert not [d for d in w.diagnostics if d.severity == "error"], command


# ---- a RayJob whose entrypoint is the vLLM server command line ------------------------------
# aibrix/distributed-rayjob.yaml: spec.entrypoint `vllm serve facebook/opt-13b
# --tensor-parallel-size 2 --distributed-executor-backend ray`, a head and a worker group with
# one GPU each and no command: Ray's job supervisor runs the entrypoint on the head, the engine's
# second rank on the worker.

RAY_JOB_CLI = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "metadata": {"name": "vllm-server"},
    "spec": {
        "entrypoint": "vllm serve facebook/opt-13b --tensor-parallel-size 2 "
        "--distributed-executor-backend ray",
        "rayClusterSpec": {
            "headGroupSpec": {"template": {"spec": {"containers": [
                {"name": "ray-head", "image": "aibrix/vllm-openai:v0.5.2-distributed",
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}},
            "workerGroupSpecs": [{"replicas": 1, "template": {"spec": {"containers": [
                {"name": "ray-worker", "image": "aibrix/vllm-openai:v0.5.2-distributed",
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}],
        },
    },
}


def test_rayjob_cli_entrypoint_is_the_heads_server():
    by = {w.container: w for w in read_workloads(RAY_JOB_CLI)}
    head, worker = by["ray-head"], by["ray-worker"]
    assert head.model == "facebook/opt-13b" and head.settings.tensor_parallel_size == 2
    assert head.device == "cuda" and head.settings.node_role == "leader"
    assert worker.model == "facebook/opt-13b" and worker.settings.node_role == "worker"
    # a script entrypoint is not a command line to read on the head (read_ray_job's business)
    import copy

    job = copy.deepcopy(RAY_JOB_CLI)
    job["spec"]["entrypoint"] = "python /scripts/run.py --model facebook/opt-13b"
    assert not any(w.model == "facebook/opt-13b" for w in read_workloads(job))
    job["spec"]["entrypoint"] = {"not": "a string"}
    read_workloads(job)  # never raises


# ---- the accelerator of a DRA claim whose names say no vendor --------------------------------
# dynamo/vllm-disagg-xpu-dra.yaml: resourceClaims [{name: gpu, resourceClaimTemplateName:
# gpu-template}], the ResourceClaimTemplate (same file) asks for deviceClassName gpu.intel.com,
# and the worker sets VLLM_TARGET_DEVICE=xpu; the image (Dynamo's vllm-runtime) is a CUDA
# build, so the claim was read as an NVIDIA GPU.

CLAIM_TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "gpu-template"},
    "spec": {"spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.intel.com", "count": 1}}]}}},
}


def _dra_pod(env: list | None = None) -> dict:
    c = {"name": "main", "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1",
         "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
         "resources": {"claims": [{"name": "gpu"}]}}
    if env:
        c["env"] = env
    d = _deployment(c, "xpu")
    d["spec"]["template"]["spec"]["resourceClaims"] = [
        {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
    return d


def test_dra_claim_device_class_from_the_claim_template():
    from vllm_sizer.policy.cluster import ClusterContext

    (w,) = read_workloads(_dra_pod())
    assert w.device == "cuda"  # nothing but the CUDA image says otherwise
    ctx = ClusterContext.from_objects([CLAIM_TEMPLATE, _dra_pod()]).read_context(None)
    (w,) = read_workloads(_dra_pod(), ctx)
    assert w.device == "other"
    assert any("gpu.intel.com" in d.message for d in w.diagnostics)
    # v1beta1 spells the class on the request itself
    beta = {**CLAIM_TEMPLATE, "apiVersion": "resource.k8s.io/v1beta1",
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "deviceClassName": "neuron.aws.com"}]}}}}
    ctx = ClusterContext.from_objects([beta]).read_context("default")
    (w,) = read_workloads(_dra_pod(), ctx)
    assert w.device == "other"
    # a template in another namespace is not the pod's
    other_ns = {**CLAIM_TEMPLATE, "metadata": {"name": "gpu-template", "namespace": "x"}}
    ctx = ClusterContext.from_objects([other_ns]).read_context(None)
    (w,) = read_workloads(_dra_pod(), ctx)
    assert w.device == "cuda"
    broken = {**CLAIM_TEMPLATE, "spec": {"spec": {"devices": {"requests": ["x", {"exactly": 3}]}}}}
    ctx = ClusterContext.from_objects([broken]).read_context(None)
    (w,) = read_workloads(_dra_pod(), ctx)
    assert w.device == "cuda"  # malformed: no class, no crash


def test_vllm_target_device_names_the_accelerator_the_pod_leaves_open():
    (w,) = read_workloads(_dra_pod([{"name": "VLLM_TARGET_DEVICE", "value": "xpu"}]))
    assert w.device == "other"
    # an explicit request wins over the variable
    d = _deployment({"name": "m", "image": "vllm/vllm-openai:v0.11.0",
                     "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
                     "env": [{"name": "VLLM_TARGET_DEVICE", "value": "xpu"}],
                     "resources": {"limits": {"nvidia.com/gpu": "1"}}})
    (w,) = read_workloads(d)
    assert w.device == "cuda"
    # no accelerator asked at all: the variable says where it runs
    del d["spec"]["template"]["spec"]["containers"][0]["resources"]
    d["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "TPU"
    (w,) = read_workloads(d)
    assert w.device == "other"


# ---- kthena ModelServing: a role's entry pod and its worker pods are one engine --------------
# kthena/controller-expected-model-serving.yaml (what kthena's model-booster controller renders
# for a multi-node vLLM backend): entryTemplate runs multi-node-serving.sh leader && the
# api_server, workerTemplate only multi-node-serving.sh worker (joins the entry pod's Ray).

def _model_serving(worker_replicas=1) -> dict:
    entry_cmd = ("multi-node-serving.sh leader --ray_cluster_size=2 && python3 -m "
                 "vllm.entrypoints.openai.api_server --model deepseek-ai/DeepSeek-V3 "
                 "--tensor-parallel-size 16 --distributed_executor_backend ray")
    worker_cmd = "multi-node-serving.sh worker --ray_address=$(ENTRY_ADDRESS)"
    gpu = {"limits": {"nvidia.com/gpu": "8", "memory": "1000Gi"}}
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": "ds"},
        "spec": {"replicas": 1, "template": {"roles": [{
            "name": "leader", "replicas": 1, "workerReplicas": worker_replicas,
            "entryTemplate": {"spec": {"containers": [
                {"name": "engine", "image": "vllm/vllm-openai:v0.11.0",
                 "command": ["bash", "-c", entry_cmd], "resources": gpu}]}},
            "workerTemplate": {"spec": {"containers": [
                {"name": "worker", "image": "vllm/vllm-openai:v0.11.0",
                 "command": ["bash", "-c", worker_cmd], "resources": gpu}]}},
        }]}},
    }


def test_kthena_model_serving_worker_pods_are_the_entry_pods_engine():
    by = {w.container: w for w in read_workloads(_model_serving())}
    entry, worker = by["engine"], by["worker"]
    assert entry.model == worker.model == "deepseek-ai/DeepSeek-V3"
    assert entry.settings.node_role == "leader" and entry.settings.nodes == 2
    assert worker.settings.node_role == "worker" and worker.settings.tensor_parallel_size == 16
    assert worker.settings.local_ranks == 8
    by = {w.container: w for w in read_workloads(_model_serving("x"))}
    assert by["worker"].settings.node_role == "worker" and by["worker"].settings.nodes is None


# ---- env valueFrom.configMapKeyRef to a ConfigMap the file holds ------------------------------
# (found by probing the spellings the corpus's files use through envFrom: the same ConfigMap
# read key by key) `vllm serve $(MODEL)` with MODEL from configMapKeyRef.

def test_env_value_from_a_config_map_key_in_the_context():
    from vllm_sizer.workloads import ReadContext

    c = {"name": "v", "image": "vllm/vllm-openai:v0.11.0",
         "command": ["sh", "-c", "vllm serve $(MODEL) --max-model-len $MAX_LEN"],
         "env": [{"name": "MODEL", "valueFrom": {"configMapKeyRef": {"name": "m", "key": "model"}}},
                 {"name": "MAX_LEN", "valueFrom": {"configMapKeyRef": {"name": "m", "key": "len"}}}]}
    ctx = ReadContext(config_maps={"m": {"model": "Qwen/Qwen3-8B", "len": "4096"}})
    (w,) = read_workloads(_deployment(c), ctx)
    assert w.model == "Qwen/Qwen3-8B" and w.settings.max_model_len == 4096
    (w,) = read_workloads(_deployment(c))  # not in the context: unknown, said
    assert w.model != "Qwen/Qwen3-8B"
    assert any("valueFrom" in d.message for d in w.diagnostics)
    c["env"][0]["valueFrom"]["configMapKeyRef"] = {"name": ["x"], "key": 3}
    read_workloads(_deployment(c), ctx)  # malformed: no crash


# ---- a Python module that runs no engine, in a vLLM image ------------------------------------
# dynamo/vllm-gaie-xpu-agg.yaml: the worker pod's `sidecar-frontend` gives only args
# `-m dynamo.frontend --router-mode direct` with Dynamo's vllm-runtime image. Python's `-m MODULE`
# names the program (vLLM has no `-m` option), and Dynamo's frontend loads no model: no
# Workload, where an unreadable one warned `cannot size` on every apply.


def test_python_module_that_runs_no_engine_gives_no_workload():
    image = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag"
    for c in ({"name": "sidecar-frontend", "image": image,
               "args": ["-m", "dynamo.frontend", "--router-mode", "direct"]},
              {"name": "frontend", "image": image,
               "command": ["python3"], "args": ["-m", "dynamo.frontend", "--http-port", "8000"]},
              {"name": "frontend", "image": image,
               "command": ["sh", "-c", "exec python3 -m dynamo.frontend --http-port 8000"]}):
        assert read_workloads(_deployment(c, "frontend")) == [], c
    # an unknown module in the same image is not called a non-server: it may build an engine
    (w,) = read_workloads(_deployment(
        {"name": "app", "image": image, "args": ["-m", "my_app.server"]}, "app"))
    assert w.settings is None
    # and the worker beside it, `python3 -m dynamo.vllm`, is still read as vLLM
    (w,) = read_workloads(_deployment(
        {"name": "worker", "image": image, "command": ["python3", "-m", "dynamo.vllm"],
         "args": ["--model", "Qwen/Qwen3-0.6B"],
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}, "worker"))
    assert w.settings is not None and w.settings.model == "Qwen/Qwen3-0.6B"


# ---- a model the platform passes from an object out of view ----------------------------------
# llmaz/sample-playground-opt-125m.yaml: a Playground claims an OpenModel that another file
# holds. llmaz still runs `--model {{ .ModelPath }}` (the OpenModel's model), so the model is
# unknown here: never vLLM's default model (which sized the Playground as facebook/opt-125m and
# allowed it), and the way to supply it is said.


def test_playground_whose_open_model_is_out_of_view_has_an_unknown_model():
    from vllm_sizer.policy.review import review_object

    pg = {"apiVersion": "inference.llmaz.io/v1alpha1", "kind": "Playground",
          "metadata": {"name": "chat"},
          "spec": {"replicas": 1, "modelClaim": {"modelName": "llama3-70b"},
                   "backendRuntimeConfig": {"resources": {"limits": {"memory": "64Gi"}}}}}
    (w,) = read_workloads(pg)
    assert w.settings is not None
    assert w.model_config is None  # not vLLM's default model's config
    assert "facebook/opt-125m" not in (w.model or "") and "Qwen/Qwen3-0.6B" not in (w.model or "")
    assert "llama3-70b" in (w.model or "")
    errors = [d.message for d in w.diagnostics if d.severity == "error"]
    assert any("OpenModel llama3-70b" in m and "annotation" in m for m in errors), errors
    decision = review_object(pg)
    assert decision.verdict == "unknown", decision
    # with the OpenModel in view, its model is read as before
    om = {"apiVersion": "llmaz.io/v1alpha1", "kind": "OpenModel", "metadata": {"name": "llama3-70b"},
          "spec": {"source": {"modelHub": {"modelID": "meta-llama/Meta-Llama-3-70B-Instruct"}}}}
    from vllm_sizer.cli.check import build_context
    (w,) = read_workloads(pg, build_context([om]).read_context(None))
    assert w.model == "meta-llama/Meta-Llama-3-70B-Instruct"


def test_unseen_model_is_sized_from_the_model_config_annotation():
    import json

    from vllm_sizer.workloads.api_names import ANNOTATION_MODEL_CONFIG

    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
           "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
           "intermediate_size": 8192, "vocab_size": 128256, "max_position_embeddings": 131072,
           "torch_dtype": "bfloat16"}
    pg = {"apiVersion": "inference.llmaz.io/v1alpha1", "kind": "Playground",
          "metadata": {"name": "chat", "annotations": {ANNOTATION_MODEL_CONFIG: json.dumps(cfg)}},
          "spec": {"modelClaim": {"modelName": "llama3-1b"}}}
    (w,) = read_workloads(pg)
    assert w.model_config == cfg and w.model_config_source == "annotation"
    assert not [d for d in w.diagnostics if d.severity == "error"]
