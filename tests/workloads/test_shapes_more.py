"""More command shapes seen in real manifests."""

import yaml

from vllm_sizer.workloads.model import ReadContext
from vllm_sizer.workloads.reader import read_workloads


def one(text, context=None):
    ws = read_workloads(yaml.safe_load(text), context)
    assert len(ws) == 1, ws
    return ws[0]


def messages(w, severity=None):
    return [str(d) for d in w.diagnostics if severity is None or d.severity == severity]


def pod(container, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
            "spec": {"containers": [{"name": "vllm", **container}], **spec}}


def test_exec_dollar_at_wrapper():
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0",
                            "command": ["/bin/sh", "-c", 'echo hi; exec "$@"', "--"],
                            "args": ["vllm", "serve", "Qwen/Qwen3-8B", "--max-num-seqs", "3"]}))[0]
    assert w.model == "Qwen/Qwen3-8B" and w.settings.max_num_seqs == 3


def test_nested_shell_and_env_wrapper():
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0",
                            "command": ["tini", "--", "bash", "-c",
                                        "sh -c 'env VLLM_CPU_KVCACHE_SPACE=3 vllm serve Qwen/Qwen3-4B --device cpu'"]}))[0]
    assert w.model == "Qwen/Qwen3-4B" and w.device == "cpu"
    assert w.settings.cpu_kvcache_space_gib == 3


def test_two_invocations_warn():
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0", "command": ["bash", "-c",
                            "vllm serve Qwen/Qwen3-4B --port 8000 &\nvllm serve Qwen/Qwen3-8B --port 8001"]}))[0]
    assert w.model == "Qwen/Qwen3-4B"
    assert [a.model for a in w.alternatives] == ["Qwen/Qwen3-8B"]  # both are read
    assert any("2 vLLM invocations" in m for m in messages(w, "info"))


def test_ray_head_leader_with_vllm_serve_is_sized():
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0", "command": ["bash", "-c",
                            "ray start --head --port=6379 && vllm serve Qwen/Qwen3-32B -tp 4 -pp 2"]}))[0]
    assert w.skip_reason is None and w.settings.pipeline_parallel_size == 2


def test_unknown_image_only_args_is_not_vllm():
    assert read_workloads(pod({"image": "python:3.12", "args": ["--model", "x"]})) == []
    # an image that names vLLM but is not one of vLLM's: its ENTRYPOINT is unknown; the name
    # alone is no evidence (vllm-sizer's own image names vLLM and takes its own arguments)...
    assert read_workloads(pod({"image": "ghcr.io/acme/vllm-patched:2024-10",
                               "args": ["run", "--mode", "warn"]})) == []
    # ...but given nothing except a vLLM server's model and flags it is sized, said as assumed
    (w,) = read_workloads(pod({"image": "ghcr.io/acme/vllm-patched:2024-10",
                               "args": ["--model", "Qwen/Qwen3-8B"]}))
    assert w.model == "Qwen/Qwen3-8B"
    assert any("assumed" in m for m in messages(w, "warning"))


def test_positional_to_api_server_entrypoint_warns():
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.8.5", "args": ["Qwen/Qwen3-8B"]}))[0]
    assert any("api_server module ignores it" in m for m in messages(w, "warning"))


def test_kubelet_env_chain_and_dollar_dollar_in_script():
    w = read_workloads(pod({
        "image": "vllm/vllm-openai:v0.11.0",
        "command": ["sh", "-c", "vllm serve $(ORG)/$(NAME) --max-num-seqs $$SEQS"],
        "env": [{"name": "ORG", "value": "Qwen"}, {"name": "NAME", "value": "Qwen3-$(SIZE)"},
                {"name": "SIZE", "value": "8B"}, {"name": "SEQS", "value": "5"}]}))[0]
    # $(SIZE) is defined after NAME: the kubelet leaves it literal inside NAME
    assert w.model == "Qwen/Qwen3-$(SIZE)"
    assert w.settings.max_num_seqs == 5  # $$SEQS → $SEQS for the shell


def test_gpu_labels_from_required_affinity_with_several_values():
    w = read_workloads(pod(
        {"image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve", "Qwen/Qwen3-8B"],
         "resources": {"limits": {"nvidia.com/gpu": 1}}},
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                       "values": ["NVIDIA-A10G", "NVIDIA-L4"]},
                                      {"key": "nvidia.com/gpu.memory", "operator": "In",
                                       "values": ["23028", "24576"]}]}]}}}))[0]
    assert w.settings.gpu_product is None
    assert w.settings.gpu_memory_bytes == 23028 * 2**20
    assert any("several GPU products" in m for m in messages(w, "info"))


def test_cpu_image_with_gpu_request_warns():
    w = read_workloads(pod({"image": "vllm/vllm-openai-cpu:v0.12.0",
                            "command": ["vllm", "serve", "Qwen/Qwen3-8B"],
                            "resources": {"limits": {"nvidia.com/gpu": 1}}}))[0]
    assert w.device == "cpu"
    assert any("accelerator is unused" in m for m in messages(w, "warning"))


def test_ld_preload_overrides_image():
    w = read_workloads(pod({"image": "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.11.0",
                            "command": ["vllm", "serve", "Qwen/Qwen3-8B"],
                            "env": [{"name": "LD_PRELOAD", "value": ""}]}))[0]
    assert w.settings.allocator == "unknown"


KSERVE_OLD_VLLM_RUNTIME = """
apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata: {name: kserve-vllmserver}
spec:
  supportedModelFormats: [{name: vllm, autoSelect: true, priority: 1}]
  containers:
  - name: kserve-container
    image: kserve/vllmserver:v0.16.0
    command:
    - bash
    - -c
    - |
      export MODEL=${MODEL_DIR}
      if [[ -z ${MODEL_DIR} ]] && [[ ! -z ${MODEL_ID} ]]
      then
        export MODEL=${MODEL_ID}
      fi

      vllm serve ${MODEL} --host 0.0.0.0 --port 8000 $@
    - bash
    env: [{name: MODEL_DIR, value: /mnt/models}]
    resources:
      requests: {cpu: "1", memory: 2Gi}
      limits: {cpu: "1", memory: 2Gi}
"""


def test_runtime_with_bash_script_and_dollar_at():
    rt = yaml.safe_load(KSERVE_OLD_VLLM_RUNTIME)
    w = one("""
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: q}
spec:
  predictor:
    model:
      modelFormat: {name: vllm}
      storageUri: hf://Qwen/Qwen3-8B
      args: [--max-num-seqs, "12", --enable-lora]
      resources: {limits: {nvidia.com/gpu: 1, memory: 40Gi}}
""", ReadContext(cluster_serving_runtimes={"kserve-vllmserver": rt}))
    assert w.runtime == "kserve-vllmserver"
    assert w.model == "Qwen/Qwen3-8B"  # ${MODEL} → /mnt/models → storageUri
    assert w.settings.max_num_seqs == 12 and w.settings.enable_lora
    assert w.limit_bytes == 40 * 2**30 and w.request_bytes == 2 * 2**30


def test_llmisvc_prefill_and_additional_args_and_command_override():
    ws = read_workloads(yaml.safe_load("""
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: pd}
spec:
  model: {uri: "hf://Qwen/Qwen3-8B"}
  template:
    containers:
    - name: main
      image: ghcr.io/llm-d/llm-d:v0.3.0
      command: ["vllm", "serve", "/mnt/models", "--max-num-seqs", "$(SEQS)"]
      env: [{name: SEQS, value: "7"}]
  prefill:
    parallelism: {tensor: 4}
    template:
      containers:
      - name: sidecar
        image: busybox
      - name: main
        env: [{name: VLLM_ADDITIONAL_ARGS, value: "--max-num-batched-tokens 16384"}]
        resources: {limits: {amd.com/gpu: 4}}
"""))
    decode, prefill = ws
    assert decode.container_path == "/spec/template/containers/0"
    assert decode.settings.max_num_seqs == 7 and decode.model == "Qwen/Qwen3-8B"
    assert prefill.container_path == "/spec/prefill/template/containers/1"
    assert prefill.settings.tensor_parallel_size == 4
    assert prefill.settings.max_num_batched_tokens == 16384 and prefill.device == "rocm"


def test_echo_of_a_vllm_command_is_not_an_invocation():
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0", "command": ["bash", "-c",
                            "echo starting vllm serve now; uv pip install x; vllm serve Qwen/Qwen3-4B"]}))[0]
    assert w.model == "Qwen/Qwen3-4B"
    assert not any("invocations" in m for m in messages(w))


def test_deeply_nested_defaults_do_not_break():
    script = "vllm serve " + "${A:-" * 50 + "Qwen/Qwen3-4B" + "}" * 50
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0", "command": ["sh", "-c", script]}))
    assert len(w) == 1


def test_env_from_makes_unknown_variables_a_diagnostic():
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0",
                            "command": ["sh", "-c", "vllm serve $MODEL --max-num-seqs $(SEQS)"],
                            "envFrom": [{"configMapRef": {"name": "vllm-env"}}]}))[0]
    assert w.model == "$MODEL" and w.model_config_source == "none"
    msgs = messages(w)
    assert any("configMapRef vllm-env" in m for m in msgs)
    assert any("$(SEQS) may come from envFrom" in m for m in msgs)
    assert any("$MODEL has no known value" in m for m in msgs)
    assert any("--max-num-seqs='$(SEQS)'" in m for m in messages(w, "error"))


def test_version_dependent_flag_rules():
    def diags(image, *argv):
        w = read_workloads(pod({"image": image, "command": ["vllm", "serve", *argv]}))[0]
        return w, messages(w, "error")
    w, errs = diags("vllm/vllm-openai:v0.6.6", "Qwen/Qwen3-0.6B", "--enable-chunked-prefill=false")
    assert not errs and w.settings.enable_chunked_prefill is False  # accepted before 0.8.5
    w, errs = diags("vllm/vllm-openai:v0.10.2", "Qwen/Qwen3-0.6B", "--enable-chunked-prefill=false")
    assert any("takes no value" in m and "will not start" in m for m in errs)
    _, errs = diags("vllm/vllm-openai:v0.10.2", "--model", "Qwen/Qwen3-0.6B")
    assert any("startup error" in m for m in errs)
    _, errs = diags("vllm/vllm-openai:v0.10.2", "--model=Qwen/Qwen3-0.6B")
    assert not errs  # only the exact two-token form fails
    _, errs = diags("vllm/vllm-openai:v0.12.0", "--model", "Qwen/Qwen3-0.6B")
    assert not errs


def test_local_directory_named_like_a_catalog_model():
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0",
                            "command": ["vllm", "serve", "/models/Qwen3-8B"]}))[0]
    assert w.model_config_source == "catalog"
    assert any("Qwen/Qwen3-8B assumed from the name '/models/Qwen3-8B'" in m
               and "last part" in m for m in messages(w, "warning"))
    assert w.model_note and "Qwen/Qwen3-8B" in w.model_note
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0",
                            "command": ["vllm", "serve", "/models/my-finetune"]}))[0]
    assert w.model_config_source == "none"
    # the error says which way of supplying the config fits a local path
    assert any("cannot open" in m and "vllm-sizer.io/model-config annotation on Pod" in m
               for m in messages(w, "error"))


def test_flag_and_value_in_one_item_is_flagged():
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0",
                            "command": ["vllm", "serve", "Qwen/Qwen3-4B", "--max-num-seqs 8"]}))[0]
    assert w.settings.max_num_seqs is None
    assert any("separated by a space" in m for m in messages(w, "warning"))



def test_config_file_written_by_the_script_heredoc():
    script = "\n".join([
        "set -e",
        "mkdir -p /etc/vllm",
        "cat > /etc/vllm/config.yaml <<EOF",
        "max-num-batched-tokens: ${TOKENS}",
        "max_num_seqs: 6",
        "enable-lora: true",
        "EOF",
        "cat <<'EOF' > /etc/vllm/notes.txt",
        "vllm serve not/this-one",
        "EOF",
        'echo "max-model-len: 4096" >> /etc/vllm/config.yaml',
        "exec vllm serve Qwen/Qwen3-4B --config /etc/vllm/config.yaml --max-num-seqs 12",
    ])
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0", "command": ["bash", "-c", script],
                            "env": [{"name": "TOKENS", "value": "1024"}]}))[0]
    s = w.settings
    assert w.model == "Qwen/Qwen3-4B"  # the here-document's text is no command
    assert s.max_num_batched_tokens == 1024 and s.enable_lora and s.max_model_len == 4096
    assert s.max_num_seqs == 12  # the command line beats the config file
    assert any("read from the script" in m for m in messages(w, "info"))
    assert not any("contents unknown" in m for m in messages(w))


def test_env_from_a_config_map_in_the_context_gives_its_values():
    """A chart render ships the ConfigMap with the Deployment (OPEA's vllm chart): its keys are
    the container's variables (with envFrom's prefix), env wins over them, and only the sources
    that are not in the context stay unknown."""
    from vllm_sizer.workloads import ReadContext

    c = {"image": "vllm/vllm-openai:v0.11.0",
         "command": ["sh", "-c", "vllm serve $MODEL --max-num-seqs $(SEQS)"],
         "envFrom": [{"configMapRef": {"name": "vllm-config"}},
                     {"configMapRef": {"name": "extra"}, "prefix": "X_"},
                     {"secretRef": {"name": "hf"}}],
         "env": [{"name": "SEQS", "value": "4"}]}
    ctx = ReadContext(config_maps={"vllm-config": {"MODEL": "Qwen/Qwen3-8B", "SEQS": "9",
                                                   "VLLM_CPU_KVCACHE_SPACE": "6"},
                                   "extra": {"A": "1", "bad key": "x"}})
    (w,) = read_workloads(pod(c), ctx)
    assert w.model == "Qwen/Qwen3-8B"
    assert w.settings.max_num_seqs == 4  # env wins over envFrom
    assert w.effective_env["VLLM_CPU_KVCACHE_SPACE"] == "6" and w.effective_env["X_A"] == "1"
    assert "X_bad key" not in w.effective_env
    assert w.env_from == ["secretRef hf"]  # the one source whose values are unknown
    (w,) = read_workloads(pod({**c, "envFrom": c["envFrom"][:1]}), ctx)
    assert w.env_from == [] and not any("envFrom" in m for m in messages(w))


def test_conditional_assignment_of_an_unknown_value_to_an_empty_name_is_unknown():
    # OpenDataHub's vllm-multinode-runtime worker: NODE_RANK="" then set in a retry loop from a
    # command substitution; --node-rank=${NODE_RANK} is known only at run time, never ''
    script = ('NODE_RANK=""\nfor i in $(seq 15); do\n  NODE_RANK=$(getent hosts x | head -1)\n'
              '  [ -n "$NODE_RANK" ] && break\ndone\n'
              'exec vllm serve Qwen/Qwen3-8B --nnodes 2 --headless --node-rank=${NODE_RANK}')
    w = one(yaml.safe_dump(pod({"image": "vllm/vllm-openai:v0.12.0",
                                "command": ["bash", "-c", script]})))
    assert w.settings is not None and w.model == "Qwen/Qwen3-8B"
    assert not [m for m in messages(w, "error") if "node-rank" in m], messages(w)
    assert any("node-rank" in m and "known only when the container runs" in m
               for m in messages(w)), messages(w)
    # a known non-empty default the branch may override is kept (test_runtime_with_bash_script...)
    script = 'M=/a/Qwen/Qwen3-4B\nif [ -z "$X" ]; then M=$(cat /f); fi\nvllm serve $M'
    w = one(yaml.safe_dump(pod({"image": "vllm/vllm-openai:v0.11.0",
                                "command": ["bash", "-c", script]})))
    assert w.model.endswith("Qwen/Qwen3-4B")
