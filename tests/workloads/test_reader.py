"""The reader on real-looking manifests, one per shape."""

import json

import pytest
import yaml

from vllm_sizer.workloads.model import ReadContext
from vllm_sizer.workloads.reader import read_workloads


def read(text, context=None):
    return read_workloads(yaml.safe_load(text), context)


def one(text, context=None):
    ws = read(text, context)
    assert len(ws) == 1, ws
    return ws[0]


def messages(w, severity=None):
    return [str(d) for d in w.diagnostics if severity is None or d.severity == severity]


CPU_LORA = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: qwen3-lora
  namespace: llm
  annotations: {team: nlp}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: qwen3}}
    spec:
      containers:
      - name: metrics
        image: prom/node-exporter:v1.8.0
      - name: vllm
        image: public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.11.0
        command: ["vllm", "serve", "Qwen/Qwen3-0.6B"]
        args:
        - --max-num-batched-tokens=4k
        - --max_num_seqs
        - "32"
        - --enable-lora
        - --max-lora-rank
        - "64"
        - --lora-modules
        - sql=/adapters/sql
        - chat=/adapters/chat
        - --no-enable-prefix-caching
        env:
        - {name: VLLM_CPU_KVCACHE_SPACE, value: "8"}
        resources:
          requests: {memory: 12Gi, cpu: "4"}
          limits: {memory: 16Gi}
        volumeMounts: [{name: shm, mountPath: /dev/shm}]
      volumes:
      - name: shm
        emptyDir: {medium: Memory, sizeLimit: 2Gi}
"""


def test_cpu_deployment_with_lora():
    w = one(CPU_LORA)
    assert (w.kind, w.api_version, w.namespace, w.name, w.container) == \
        ("Deployment", "apps/v1", "llm", "qwen3-lora", "vllm")
    assert w.container_path == "/spec/template/spec/containers/1"
    assert w.resources_path == "/spec/template/spec/containers/1/resources"
    s = w.settings
    assert s.model == w.model == "Qwen/Qwen3-0.6B"
    assert s.device == w.device == "cpu"
    assert s.max_num_batched_tokens == 4000 and s.max_num_seqs == 32
    assert s.enable_lora and s.max_lora_rank == 64
    assert w.lora_modules == ["sql=/adapters/sql", "chat=/adapters/chat"]
    assert s.cpu_kvcache_space_gib == 8
    assert s.allocator == "tcmalloc"  # vLLM's CPU image preloads tcmalloc
    assert s.vllm_version == "0.11.0" and w.vllm_version.source == "image tag"
    assert s.dev_shm_bytes == 2 * 2**30 and s.dev_shm_memory
    assert w.limit_bytes == s.memory_limit_bytes == 16 * 2**30
    assert w.request_bytes == 12 * 2**30
    assert w.model_config_source == "catalog" and w.model_config["hidden_size"] == 1024
    assert w.annotations == {"team": "nlp"}
    assert w.env == {"VLLM_CPU_KVCACHE_SPACE": "8"}
    assert w.skip_reason is None
    assert not messages(w, "error")
    assert all(d.container == "vllm" for d in w.diagnostics)


GPU = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: llama, namespace: prod}
spec:
  template:
    spec:
      runtimeClassName: nvidia
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: nvidia.com/gpu.memory, operator: In, values: ["81559"]}
      containers:
      - name: server
        image: vllm/vllm-openai:v0.10.1.1
        command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]
        args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "-tp", "2",
               "--gpu-memory-utilization", "0.85", "--max-model-len", "32K"]
        resources:
          limits: {nvidia.com/gpu: "2", memory: 64Gi}
"""


def test_gpu_deployment_api_server_module():
    w = one(GPU)
    s = w.settings
    assert s.device == "cuda" and w.gpu_count == 2
    assert s.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert s.tensor_parallel_size == 2 and s.gpu_memory_utilization == 0.85
    assert s.max_model_len == 32768
    assert s.gpu_product == "NVIDIA-H100-80GB-HBM3" and s.gpu_memory_bytes == 81559 * 2**20
    assert s.vllm_version == "0.10.1"
    assert s.allocator == "unknown"  # glibc is never assumed


def test_image_entrypoint_when_only_args_recent_and_old_tags():
    new = one("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:latest
    args: ["Qwen/Qwen3-8B", "--max-num-seqs", "16"]
    resources: {limits: {nvidia.com/gpu: 1}}
""")
    assert new.settings.model == "Qwen/Qwen3-8B" and new.settings.max_num_seqs == 16
    assert any("ENTRYPOINT (vllm serve" in m for m in messages(new, "info"))
    old = one("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: vllm
    image: docker.io/vllm/vllm-openai:v0.6.6
    args: ["--model", "Qwen/Qwen2.5-7B-Instruct", "--max-num-batched-tokens", "8192"]
""")
    assert old.settings.model == "Qwen/Qwen2.5-7B-Instruct"
    assert old.settings.max_num_batched_tokens == 8192
    assert any("vllm.entrypoints.openai.api_server" in m for m in messages(old, "info"))
    assert old.device == "unknown"
    assert any("device unknown" in m for m in messages(old, "info"))


def test_args_repeating_the_entrypoint_is_an_error():
    w = one("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.20.0
    args: ["vllm", "serve", "Qwen/Qwen3-8B"]
""")
    assert w.settings.model == "Qwen/Qwen3-8B"
    assert any("will not start" in m for m in messages(w, "error"))


def test_exec_form_flags_inside_command_and_var_expansion():
    w = one("""
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.12.0
        command: ["vllm", "serve", "$(MODEL)", "--max-num-batched-tokens", "$(TOKENS)"]
        args: ["--max-num-seqs", "$(SEQS)", "--served-model-name", "$$(NOT_EXPANDED)",
               "--max-model-len", "$(UNSET)"]
        env:
        - {name: MODEL, value: Qwen/Qwen3-4B}
        - {name: TOKENS, value: "2K"}
        - {name: SEQS, valueFrom: {configMapKeyRef: {name: cm, key: seqs}}}
        - {name: VLLM_CPU_KVCACHE_SPACE, valueFrom: {configMapKeyRef: {name: cm, key: kv}}}
""")
    s = w.settings
    assert s.model == "Qwen/Qwen3-4B" and s.max_num_batched_tokens == 2048
    assert s.max_num_seqs is None and s.max_model_len is None
    errs = messages(w, "error")
    assert any("--max-num-seqs='$(SEQS)'" in m for m in errs)
    assert any("--max-model-len='$(UNSET)'" in m for m in errs)
    warns = messages(w, "warning")
    assert any("$(SEQS) comes from valueFrom" in m for m in warns)
    assert any("$(UNSET) is not in the container's env" in m for m in warns)
    assert any("VLLM_CPU_KVCACHE_SPACE comes from valueFrom" in m for m in warns)
    assert not any("NOT_EXPANDED" in m for m in warns)


SHELL = r"""
apiVersion: batch/v1
kind: Job
metadata: {name: bench}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0-cpu
        command: ["/bin/bash", "-c"]
        args:
        - |
          set -e
          export VLLM_CPU_KVCACHE_SPACE=${KV:-4}
          pip list | grep vllm && echo ok
          exec vllm serve ${MODEL} \
            --max-num-batched-tokens ${TOKENS} \
            --max-num-seqs=8 $EXTRA ; echo done
        env:
        - {name: MODEL, value: Qwen/Qwen3-1.7B}
        - {name: TOKENS, value: "1024"}
        - {name: EXTRA, value: "--enable-lora --max-loras 2"}
        - {name: LD_PRELOAD, value: /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4}
"""


def test_shell_script_job():
    w = one(SHELL)
    s = w.settings
    assert s.model == "Qwen/Qwen3-1.7B" and s.device == "cpu"
    assert s.max_num_batched_tokens == 1024 and s.max_num_seqs == 8
    assert s.enable_lora and s.max_loras == 2
    assert s.cpu_kvcache_space_gib == 4  # exported by the script, ${KV:-4}
    assert w.effective_env["VLLM_CPU_KVCACHE_SPACE"] == "4"
    assert "VLLM_CPU_KVCACHE_SPACE" not in w.env
    assert s.allocator == "tcmalloc"
    assert w.argv[:2] == ["Qwen/Qwen3-1.7B", "--max-num-batched-tokens"]


def test_cronjob_and_sh_c_single_string_and_and_chain():
    w = one("""
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 1 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: vllm
            image: my.registry/llm/vllm-cpu:0.9.2
            command: ["sh", "-c", "cd /work && VLLM_CPU_KVCACHE_SPACE=2 python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-0.6B --device cpu"]
""")
    assert w.container_path == "/spec/jobTemplate/spec/template/spec/containers/0"
    assert w.settings.device == "cpu" and w.settings.cpu_kvcache_space_gib == 2
    assert w.settings.vllm_version == "0.9.2"


def test_model_config_annotation_and_unknown_model():
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
           "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
           "intermediate_size": 8192, "vocab_size": 128256, "max_position_embeddings": 8192}
    base = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: custom
  annotations: %s
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        command: ["vllm", "serve", "/models/acme/private-1b"]
"""
    w = one(base % json.dumps({"vllm-sizer.io/model-config": json.dumps(cfg)}))
    assert w.model_config == cfg and w.model_config_source == "annotation"
    w = one(base % "{}")
    assert w.model_config is None and w.model_config_source == "none"
    err = [m for m in messages(w, "error") if "cannot size" in m]
    assert err and "/models/acme/private-1b" in err[0] and "vllm-sizer.io/model-config" in err[0]
    w = one(base % json.dumps({"vllm-sizer.io/model-config": "{not json"}))
    assert w.model_config_source == "none"
    assert any("not valid JSON" in m for m in messages(w, "error"))
    # the caller's resolver is asked last
    seen = []

    def resolver(model):
        seen.append(model)
        return cfg

    w = one(base % "{}", ReadContext(model_resolver=resolver))
    assert w.model_config_source == "resolver" and seen == ["/models/acme/private-1b"]
    # a failing resolver is a diagnostic, not an exception
    w = one(base % "{}", ReadContext(model_resolver=lambda m: 1 / 0))
    assert w.model_config_source == "none"
    assert any("resolver failed" in m for m in messages(w, "warning"))


def test_catalog_lookup_is_case_insensitive_and_path_tolerant():
    w = one("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.11.0
    command: ["vllm", "serve", "/mnt/cache/qwen/QWEN3-8B"]
""")
    assert w.model_config_source == "catalog"


def test_vllm_config_annotation_feeds_config_file():
    w = one("""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cfg
  annotations:
    vllm-sizer.io/vllm-config: |
      max-num-batched-tokens: 512
      max_num_seqs: 4
      enable-lora: true
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        command: ["vllm", "serve", "Qwen/Qwen3-0.6B", "--config", "/etc/vllm/config.yaml",
                  "--max-num-seqs", "16"]
""")
    s = w.settings
    assert s.max_num_batched_tokens == 512 and s.enable_lora
    assert s.max_num_seqs == 16  # the command line beats the config file


def test_config_file_unknown_and_equals_form():
    w = one("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.11.0
    command: ["vllm", "serve", "Qwen/Qwen3-0.6B", "--config", "/c.yaml", "--config=/d.yaml"]
""")
    warns = messages(w, "warning")
    assert any("config file contents unknown" in m for m in warns)
    assert any("does not load --config=FILE" in m for m in warns)


def test_serve_dash_dash_model_is_a_startup_error_in_0_11():
    w = one("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.11.0
    command: ["vllm", "serve", "--model", "Qwen/Qwen3-0.6B"]
""")
    assert w.settings.model == "Qwen/Qwen3-0.6B"
    assert any("startup error" in m for m in messages(w, "error"))


def test_unreadable_values_name_container_flag_and_raw():
    w = one("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: engine
    image: vllm/vllm-openai:v0.11.0
    command: ["vllm", "serve", "Qwen/Qwen3-0.6B", "--max-num-batched-tokens", "abc",
              "--enable-lora=False", "--max-lora-rank"]
    resources: {limits: {memory: lots}}
""")
    d = next(d for d in w.diagnostics if d.flag == "--max-num-batched-tokens")
    assert (d.severity, d.raw, d.container) == ("error", "abc", "engine")
    assert w.settings.max_num_batched_tokens is None
    assert any(d.flag == "resources.limits.memory" and d.raw == "lots" for d in w.diagnostics)
    assert any(d.flag == "--enable-lora" for d in w.diagnostics)
    assert any(d.flag == "--max-lora-rank" and "no value" in d.message for d in w.diagnostics)
    assert w.limit_bytes is None


def test_default_model_when_none_given():
    w = one("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.11.0
    command: ["vllm", "serve", "--port", "8000"]
""")
    assert w.model == "Qwen/Qwen3-0.6B"
    assert any("default model" in m for m in messages(w, "warning"))


@pytest.mark.parametrize("resources,device,count", [
    ({"limits": {"nvidia.com/gpu": 4}}, "cuda", 4),
    ({"limits": {"nvidia.com/mig-1g.10gb": 1}}, "cuda", 1),
    ({"limits": {"amd.com/gpu": 2}}, "rocm", 2),
    ({"limits": {"habana.ai/gaudi": 8}}, "other", None),
    ({"limits": {"google.com/tpu": 4}}, "other", None),
    ({"limits": {"aws.amazon.com/neuroncore": 2}}, "other", None),
    ({"limits": {"cpu": 8, "memory": "8Gi"}}, "unknown", None),
])
def test_device_from_resources(resources, device, count):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                    "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
                                    "resources": resources}]}}
    w = read_workloads(pod)[0]
    assert w.device == w.settings.device == device
    assert w.gpu_count == count


def test_mig_profile_gives_gpu_memory_and_dra_claims_give_cuda():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                    "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
                                    "resources": {"limits": {"nvidia.com/mig-2g.20gb": 1}}}]}}
    assert read_workloads(pod)[0].settings.gpu_memory_bytes == 20 * 2**30
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    assert read_workloads(pod)[0].device == "cuda"


def test_cpu_evidence_from_env_and_args_wins_over_absence():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "vllm", "image": "myorg/vllm-custom:1.0",
                                    "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
                                    "env": [{"name": "VLLM_TARGET_DEVICE", "value": "cpu"}]}]}}
    w = read_workloads(pod)[0]
    assert w.device == "cpu"
    assert w.settings.allocator == "unknown"  # not an official CPU image
    assert w.settings.vllm_version is None  # 1.0 is not a vLLM version


def test_owned_objects_are_read_but_skipped():
    w = one("""
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: qwen-7d9f
  ownerReferences:
  - {apiVersion: apps/v1, kind: Deployment, name: qwen, uid: u1, controller: true}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        command: ["vllm", "serve", "Qwen/Qwen3-0.6B"]
""")
    assert w.skip_reason and "Deployment/qwen" in w.skip_reason
    assert w.settings is not None


def test_skip_annotation_recorded():
    w = one("""
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: d
  annotations: {vllm-sizer.io/skip: "true"}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        command: ["vllm", "serve", "Qwen/Qwen3-0.6B"]
""")
    assert w.skip_reason == "vllm-sizer.io/skip annotation"


@pytest.mark.parametrize("doc", [
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
     "spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}},
    {"apiVersion": "v1", "kind": "Service", "spec": {"template": "x"}},
    {"apiVersion": "example.com/v1", "kind": "Deployment", "spec": {}},
    {"kind": "Pod"}, {}, [], None, "text", 3,
])
def test_non_vllm_objects_give_nothing(doc):
    assert read_workloads(doc) == []


def test_vllm_image_with_unreadable_command_is_unknown():
    w = one("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.11.0
    command: ["/start.sh"]
""")
    assert w.settings is None
    assert any("no vLLM command found" in m for m in messages(w, "warning"))


def test_sidecar_init_container_and_multi_container():
    ws = read("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers:
  - name: fetch
    image: vllm/vllm-openai:v0.11.0
    command: ["huggingface-cli", "download", "Qwen/Qwen3-0.6B"]
  - name: side
    restartPolicy: Always
    image: vllm/vllm-openai:v0.11.0
    command: ["vllm", "serve", "Qwen/Qwen3-4B"]
  containers:
  - name: a
    image: vllm/vllm-openai:v0.11.0
    command: ["vllm", "serve", "Qwen/Qwen3-8B"]
""")
    assert [(w.container, w.container_path, w.model) for w in ws] == [
        ("a", "/spec/containers/0", "Qwen/Qwen3-8B"),
        ("side", "/spec/initContainers/1", "Qwen/Qwen3-4B")]


LWS = """
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: big}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
        - name: vllm-leader
          image: vllm/vllm-openai:v0.11.0
          command: ["sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE); vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8 --pipeline-parallel-size 2"]
          resources: {limits: {nvidia.com/gpu: "8", memory: 1124Gi}}
    workerTemplate:
      spec:
        containers:
        - name: vllm-worker
          image: vllm/vllm-openai:v0.11.0
          command: ["sh", "-c", "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"]
          resources: {limits: {nvidia.com/gpu: "8", memory: 1124Gi}}
"""


def test_leader_worker_set():
    # the worker only joins the leader's Ray cluster: it runs the engine's GPU workers for its
    # GPUs, sized with the leader's engine (tests/workloads/test_multinode.py)
    leader, worker = read(LWS)
    assert leader.settings.node_role == "leader" and worker.settings.node_role == "worker"
    assert leader.container_path == "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0"
    assert leader.settings.tensor_parallel_size == 8 and leader.settings.pipeline_parallel_size == 2
    assert leader.gpu_count == 8 and leader.model == "Qwen/Qwen3-32B"
    assert not any("not in the container's env" in str(d) for d in leader.diagnostics)


def test_bool_and_int_items_in_args_and_env():
    w = one("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.11.0
    command: [vllm, serve, Qwen/Qwen3-0.6B, --max-num-seqs, 12, --max-model-len, 4096]
    env: [{name: VLLM_CPU_KVCACHE_SPACE, value: 4}]
""")
    assert w.settings.max_num_seqs == 12 and w.settings.max_model_len == 4096


def test_device_flag_is_a_startup_error_in_versions_without_it():
    # vLLM's own option lists: --device exists until 0.9.x, is unknown in 0.10-0.23, a unique
    # prefix of --device-ids in 0.24-0.30 and ambiguous (--device-ids, --device-memory-...)
    # from 0.31
    from vllm_sizer.estimator.versions import VllmVersion
    from vllm_sizer.workloads.vllm_args import parse_vllm_args
    for version, error, device in (("0.9.2", False, "cpu"), ("0.11.0", True, "cpu"),
                                   ("0.26.0", False, None), ("0.33.0", True, "cpu")):
        parsed = parse_vllm_args(["m", "--device", "cpu"], version=VllmVersion.parse(version),
                                 strict=True)
        assert parsed.values.get("device") == device, version
        errs = [d.message for d in parsed.diagnostics if d.severity == "error"]
        assert any("will not start" in m for m in errs) is error, version
        if version == "0.26.0":
            assert any("--device-ids" in d.message for d in parsed.diagnostics
                       if d.severity == "warning")
