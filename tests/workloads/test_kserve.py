"""KServe InferenceService (runtime merge, stock runtimes, HF server rules) and LLMInferenceService."""

import yaml

from vllm_sizer.workloads.model import ReadContext
from vllm_sizer.workloads.reader import read_workloads


def one(text, context=None):
    ws = read_workloads(yaml.safe_load(text), context)
    assert len(ws) == 1, ws
    return ws[0]


def messages(w, severity=None):
    return [str(d) for d in w.diagnostics if severity is None or d.severity == severity]


HF_GPU = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: qwen3, namespace: models}
spec:
  predictor:
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}
    model:
      modelFormat: {name: huggingface}
      storageUri: hf://Qwen/Qwen3-8B
      args:
      - --max-model-len=8192
      - --max_num_batched_tokens=2048
      - --max-num-seqz
      - "64"
      - --gpu-memory-util=0.8
      - --max_length=4096
      - --tensor-parallel-size=1
      resources:
        limits: {cpu: "6", nvidia.com/gpu: "2"}
        requests: {cpu: "6"}
"""


def test_hf_runtime_stock_defaults_on_gpu():
    w = one(HF_GPU)
    assert w.container_path == "/spec/predictor/model"
    assert w.resources_path == "/spec/predictor/model/resources"
    assert w.runtime == "kserve-huggingfaceserver"
    s = w.settings
    assert s.model == w.model == "Qwen/Qwen3-8B" and w.model_config_source == "catalog"
    assert s.device == "cuda" and w.gpu_count == 2
    assert s.tensor_parallel_size == 2  # the HF server sets TP to the GPU count
    assert s.dtype == "float16"  # --dtype auto → float16 on GPU
    assert s.max_model_len == 4096  # --max_length (KServe's flag, dest max_model_len) came last
    assert s.max_num_batched_tokens is None and s.max_num_seqs is None
    assert s.gpu_product == "NVIDIA-L4"
    # runtime limits.memory 2Gi survives the key-by-key merge (the isvc sets only cpu)
    assert w.limit_bytes == 2 * 2**30 and w.request_bytes == 2 * 2**30
    warns = messages(w, "warning")
    assert any(m.startswith("--max_num_batched_tokens='2048'") and "silently ignored" in m
               and "write --max-num-batched-tokens" in m for m in warns)
    assert any(m.startswith("--max-num-seqz:") and "parse_known_args" in m
               and "did you mean --max-num-seqs" in m for m in warns)
    assert s.gpu_memory_utilization == 0.8  # a unique abbreviation is accepted by argparse
    assert any("tensor parallel to the GPU count" in m for m in warns)
    assert "--model_dir=/mnt/models" in w.argv


def test_hf_runtime_model_id_on_cpu_float32():
    w = one("""
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: small}
spec:
  predictor:
    model:
      modelFormat: {name: huggingface}
      image: kserve/huggingfaceserver:v0.15.2-cpu
      args: [--model_id=Qwen/Qwen3-0.6B, --backend=vllm, --max-num-seqs, "8"]
      resources:
        limits: {cpu: "8", memory: 24Gi}
""")
    s = w.settings
    assert s.model == "Qwen/Qwen3-0.6B" and s.device == "cpu"
    assert s.dtype == "float32" and s.max_num_seqs == 8
    assert w.limit_bytes == 24 * 2**30
    assert w.request_bytes == 2 * 2**30  # runtime's request survives
    assert any("float32 on CPU" in m for m in messages(w, "info"))


def test_hf_backend_huggingface_is_not_vllm():
    """--backend=huggingface runs Transformers: no Workload (never a warning on it)."""
    assert not read_workloads(yaml.safe_load("""
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: bert}
spec:
  predictor:
    model:
      modelFormat: {name: huggingface}
      args: [--model_id=google-bert/bert-base-uncased, --backend=huggingface]
"""))


RUNTIME = """
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: vllm-cpu-runtime}
spec:
  supportedModelFormats:
  - {name: vLLM, autoSelect: true, priority: 2}
  containers:
  - name: kserve-container
    image: public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.2
    command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    args: ["--port=8080", "--served-model-name={{.Name}}", "--model=/mnt/models",
           "--max-num-batched-tokens=8192", "--max-num-seqs=64"]
    env: [{name: VLLM_CPU_KVCACHE_SPACE, value: "4"}]
    resources:
      requests: {cpu: "4", memory: 8Gi}
      limits: {memory: 32Gi}
"""

ISVC_VLLM = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: qwen-vllm}
spec:
  predictor:
    model:
      modelFormat: {name: vLLM}
      %s
      storageUri: hf://Qwen/Qwen3-4B
      args: ["--max-num-batched-tokens=2048"]
      env: [{name: VLLM_CPU_KVCACHE_SPACE, value: "6"}]
      resources:
        requests: {memory: 12Gi}
"""


def test_vllm_runtime_from_context_merges_args_env_resources():
    rt = yaml.safe_load(RUNTIME)
    for runtime_line, ctx in [
        ("runtime: vllm-cpu-runtime", ReadContext(serving_runtimes={"vllm-cpu-runtime": rt})),
        ("", ReadContext(cluster_serving_runtimes={"vllm-cpu-runtime": rt})),  # auto-selected
    ]:
        w = one(ISVC_VLLM % runtime_line, ctx)
        s = w.settings
        assert w.runtime == "vllm-cpu-runtime"
        assert s.device == "cpu" and s.vllm_version == "0.10.2"
        assert s.max_num_batched_tokens == 2048  # isvc args come last and win
        assert s.max_num_seqs == 64
        assert s.cpu_kvcache_space_gib == 6  # env merged by name, isvc wins
        assert w.model == "Qwen/Qwen3-4B"  # /mnt/models ← storageUri
        assert w.limit_bytes == 32 * 2**30 and w.request_bytes == 12 * 2**30
        assert s.allocator == "tcmalloc"


def test_vllm_stock_runtime_without_context():
    w = one(ISVC_VLLM % "")
    assert w.runtime == "kserve-vllmserver"
    assert w.model == "Qwen/Qwen3-4B" and w.settings.max_num_batched_tokens == 2048
    assert w.limit_bytes == 2 * 2**30  # KServe default
    assert w.request_bytes == 12 * 2**30


def test_runtime_named_but_missing_is_a_warning():
    w = one(ISVC_VLLM % "runtime: private-runtime")
    assert any("private-runtime" in m for m in messages(w, "warning"))
    assert w.settings is not None


def test_predictor_containers_form():
    w = one("""
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: custom}
spec:
  predictor:
    containers:
    - name: kserve-container
      image: vllm/vllm-openai:v0.11.0
      command: ["vllm", "serve", "Qwen/Qwen3-8B", "--max-num-seqs", "32"]
      resources:
        limits: {nvidia.com/gpu: "1"}
""")
    assert w.container_path == "/spec/predictor/containers/0"
    assert w.resources_path == "/spec/predictor/containers/0/resources"
    assert w.settings.max_num_seqs == 32 and w.device == "cuda"
    assert w.limit_bytes == 2 * 2**30  # KServe default filled
    assert any("2Gi" in m for m in messages(w, "info"))


def test_predictor_containers_with_hf_server_image_only_args():
    w = one("""
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: hfc}
spec:
  predictor:
    containers:
    - name: kserve-container
      image: kserve/huggingfaceserver:v0.15.0
      args: [--model_name=hfc, --model_id=Qwen/Qwen3-1.7B, --max-model-len, "4096"]
      resources: {limits: {memory: 16Gi}}
""")
    assert w.model == "Qwen/Qwen3-1.7B" and w.settings.max_model_len == 4096


LLMISVC = """
apiVersion: serving.kserve.io/%s
kind: LLMInferenceService
metadata: {name: qwen-llm, namespace: ai}
spec:
  model:
    uri: hf://Qwen/Qwen3-8B
    name: Qwen/Qwen3-8B
    lora:
      adapters:
      - {name: sql, uri: hf://org/sql-lora}
      maxRank: 64
      maxAdapters: 2
      maxCpuAdapters: 4
  replicas: 1
  parallelism: {tensor: 2}
  template:
    containers:
    - name: main
      image: vllm/vllm-openai:v0.11.0
      env:
      - {name: VLLM_ADDITIONAL_ARGS, value: "--max-num-batched-tokens 4096 --max-num-seqs 16"}
      args: ["--max-num-seqs", "24"]
      resources:
        limits: {nvidia.com/gpu: "2", memory: 48Gi}
"""


def test_llm_inference_service_v1alpha1_and_v1alpha2():
    for version in ("v1alpha1", "v1alpha2"):
        w = one(LLMISVC % version)
        assert w.container_path == "/spec/template/containers/0"
        assert w.resources_path == "/spec/template/containers/0/resources"
        s = w.settings
        assert w.model == "Qwen/Qwen3-8B" and w.model_config_source == "catalog"
        assert s.enable_lora and s.max_lora_rank == 64 and s.max_loras == 2 and s.max_cpu_loras == 4
        assert w.lora_modules == ["sql=hf://org/sql-lora"]
        assert s.tensor_parallel_size == 2
        assert s.max_num_batched_tokens == 4096
        assert s.max_num_seqs == 24  # args after VLLM_ADDITIONAL_ARGS
        assert s.device == "cuda" and w.limit_bytes == 48 * 2**30


def test_llm_inference_service_without_main_container():
    w = one("""
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata: {name: bare}
spec:
  model: {uri: hf://Qwen/Qwen3-0.6B}
""")
    assert w.model == "Qwen/Qwen3-0.6B"
    assert any("LLMInferenceServiceConfig" in m for m in messages(w, "info"))


def test_kserve_made_deployment_is_skipped():
    w = one("""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: qwen3-predictor
  ownerReferences:
  - {apiVersion: serving.kserve.io/v1beta1, kind: InferenceService, name: qwen3, uid: x, controller: true}
spec:
  template:
    spec:
      containers:
      - name: kserve-container
        image: kserve/huggingfaceserver:v0.15.0
        args: [--model_name=qwen3, --model_id=Qwen/Qwen3-8B]
""")
    assert "InferenceService/qwen3" in w.skip_reason


def test_llmisvc_user_lora_modules_replace_spec_lora():
    w = one("""
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: own-lora}
spec:
  model:
    uri: hf://Qwen/Qwen3-8B
    lora: {adapters: [{name: a, uri: hf://org/a}], maxRank: 64}
  template:
    containers:
    - name: main
      env:
      - {name: VLLM_ADDITIONAL_ARGS, value: "--enable-lora --lora-modules b=/b --max-lora-rank 8"}
""")
    assert w.lora_modules == ["b=/b"] and w.settings.max_lora_rank == 8
    assert any("does not add spec.model.lora" in m for m in messages(w, "info"))


MULTINODE = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: llama3}
spec:
  predictor:
    model:
      modelFormat: {name: huggingface}
      storageUri: hf://meta-llama/Llama-3.1-8B-Instruct
    workerSpec:
      pipelineParallelSize: 2
      tensorParallelSize: 4
"""


def test_multinode_predictor_takes_its_parallel_sizes_from_the_worker_spec():
    """KServe sets TENSOR_PARALLEL_SIZE / PIPELINE_PARALLEL_SIZE from workerSpec; the stock
    multi-node runtime passes them to the server (kserve-huggingfaceserver-multinode.yaml)."""
    w, worker = read_workloads(yaml.safe_load(MULTINODE))
    assert worker.settings.node_role == "worker"
    assert w.runtime == "kserve-huggingfaceserver-multinode"
    # no GPU requested: KServe gives each of its tp·pp = 8 pods one GPU, and the Hugging Face
    # server then sets tensor parallel to the pod's GPU count (huggingfaceserver/vllm/
    # vllm_model.py:106-107@aaac4e2), which is said
    assert w.settings.pipeline_parallel_size == 2 and w.settings.tensor_parallel_size == 1
    assert any("GPU count (1)" in d.message for d in w.diagnostics)
    assert w.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert any("multi-node predictor" in d.message for d in w.diagnostics)


def test_multinode_predictor_skips_runtimes_without_a_worker_spec_and_defaults_to_one():
    obj = yaml.safe_load(MULTINODE)
    del obj["spec"]["predictor"]["workerSpec"]["pipelineParallelSize"]
    single = yaml.safe_load(RUNTIME.replace("vLLM", "huggingface"))  # autoSelect, no workerSpec
    ctx = ReadContext(serving_runtimes={"single": single})
    w, _worker = read_workloads(obj, ctx)  # TP 4 on 1-GPU nodes: still 4 nodes
    assert w.runtime == "kserve-huggingfaceserver-multinode"  # the single-node runtime is not taken
    assert w.settings.pipeline_parallel_size == 1 and w.settings.tensor_parallel_size == 1


def test_llmisvc_worker_pods_run_the_engine_too_and_the_unknown_model_is_said_once():
    obj = yaml.safe_load("""
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: dp}
spec:
  model: {uri: "hf://Qwen/Qwen3-8B", name: Qwen/Qwen3-8B}
  parallelism: {data: 16, dataLocal: 8, tensor: 1}
  template:
    containers:
    - name: main
      resources: {limits: {memory: 512Gi, nvidia.com/gpu: "8"}}
  worker:
    containers:
    - name: main
      resources: {limits: {memory: 256Gi, nvidia.com/gpu: "8"}}
""")
    leader, worker = read_workloads(obj)
    assert leader.container_path == "/spec/template/containers/0"
    assert worker.container_path == "/spec/worker/containers/0"
    assert worker.settings.data_parallel_size == 16 and worker.model == "Qwen/Qwen3-8B"
    assert worker.limit_bytes == 256 * 2**30
    from vllm_sizer.policy.review import review_object
    obj["spec"]["model"] = {"uri": "hf://acme/unknown-13b", "name": "acme/unknown-13b"}
    r = review_object(obj)
    unknown = [x for x in r.warnings if "no config.json known" in x]
    assert len(unknown) == 1 and "acme--unknown-13b" in unknown[0]  # the way to supply it
    assert not any("add its config.json as the" in x for x in r.warnings)  # not said twice


def test_llmisvc_data_parallel_workers_take_kserves_data_parallel_flags():
    """With worker pods and spec.parallelism.data/dataLocal KServe picks its
    config-llm-worker-data-parallel template: API servers on the leader (8 unless
    VLLM_API_SERVER_COUNT says), headless engines on the workers."""
    obj = yaml.safe_load("""
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: dp}
spec:
  model: {uri: "hf://Qwen/Qwen3-8B", name: Qwen/Qwen3-8B}
  parallelism: {data: 16, dataLocal: 8, tensor: 1}
  template: {containers: [{name: main}]}
  worker: {containers: [{name: main}]}
""")
    leader, worker = read_workloads(obj)
    assert leader.settings.data_parallel_size_local == 8 and leader.settings.api_server_count == 8
    assert worker.settings.data_parallel_size_local == 8 and worker.settings.headless is True
    obj["spec"]["template"]["containers"][0]["env"] = [{"name": "VLLM_API_SERVER_COUNT", "value": "1"}]
    assert read_workloads(obj)[0].settings.api_server_count == 1


def test_llmisvc_container_with_its_own_non_vllm_command_is_not_a_server():
    obj = yaml.safe_load("""
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: sim}
spec:
  model: {uri: "hf://facebook/opt-125m", name: facebook/opt-125m}
  template:
    containers:
    - name: main
      image: ghcr.io/llm-d/llm-d-inference-sim:v0.10.0
      command: ["/app/llm-d-inference-sim"]
      args: [--port, "8000", --model, facebook/opt-125m]
""")
    assert read_workloads(obj) == []


def test_llmisvc_base_refs_compose_the_spec_as_kserve_does():
    """baseRefs: LLMInferenceServiceConfigs of the service's namespace, else KServe's system
    namespace, merged in order, the service's own spec on top; a config is no server itself."""
    from vllm_sizer.policy.cluster import ClusterContext

    docs = list(yaml.safe_load_all("""
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceServiceConfig
metadata: {name: model-qwen, namespace: kserve}
spec:
  model: {uri: "hf://Qwen/Qwen3-8B", name: Qwen/Qwen3-8B}
---
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceServiceConfig
metadata: {name: one-gpu, namespace: team}
spec:
  template:
    containers:
    - name: main
      image: vllm/vllm-openai:v0.11.0
      command: [vllm, serve, /mnt/models]
      resources: {limits: {nvidia.com/gpu: "1", memory: 32Gi}}
---
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata: {name: svc, namespace: team}
spec:
  baseRefs: [{name: model-qwen}, {name: one-gpu}]
  template:
    containers:
    - name: main
      resources: {limits: {memory: 48Gi}}
"""))
    ctx = ClusterContext.from_objects(docs).read_context("team")
    (w,) = read_workloads(docs[2], ctx)
    assert w.model == "Qwen/Qwen3-8B" and w.device == "cuda"
    assert w.limit_bytes == 48 * 2**30  # the service's own value over the config's
    assert read_workloads(docs[1]) == []  # the config itself serves nothing
    # another tenant's namespace is never read
    other = ClusterContext.from_objects(docs).read_context("elsewhere")
    (w,) = read_workloads({**docs[2], "metadata": {"name": "svc", "namespace": "elsewhere"}}, other)
    assert w.device != "cuda"
    assert any("one-gpu: LLMInferenceServiceConfig not visible" in d.message for d in w.diagnostics)
