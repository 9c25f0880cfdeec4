"""Containers on vLLM images that visibly start no vLLM server get no Workload (no warning on
every apply, never patched); a container whose command vllm-sizer cannot see into keeps the
"cannot size" warning. Ray Serve engines are named after the worker container that runs them."""

import yaml

from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads import read_workloads


def pod(command: list[str], args: list[str] | None = None, image: str = "vllm/vllm-openai:v0.11.0"):
    c = {"name": "c", "image": image, "command": command}
    if args is not None:
        c["args"] = args
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [c]}}


def test_a_vllm_image_that_only_sleeps_is_not_a_server():
    assert read_workloads(pod(["sh", "-c"], ["sleep 6000"])) == []
    assert read_workloads(pod(["sleep", "infinity"])) == []


def test_a_script_file_may_start_vllm_out_of_sight_and_keeps_the_warning():
    (w,) = read_workloads(pod(["bash", "/opt/start.sh"]))
    assert w.settings is None
    assert any("no vLLM command found" in d.message for d in w.diagnostics)
    (w,) = read_workloads(pod(["sh", "-c", "sleep 5; python3 /app/serve.py"]))
    assert w.settings is None


def test_a_download_then_a_server_is_still_read():
    (w,) = read_workloads(pod(["sh", "-c",
                               "huggingface-cli download Qwen/Qwen3-8B && vllm serve Qwen/Qwen3-8B"]))
    assert w.model == "Qwen/Qwen3-8B"


def test_multi_node_worker_script_is_a_ray_worker_and_the_leader_is_read():
    lws = yaml.safe_load("""
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: vllm}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
        - name: vllm-leader
          image: vllm/vllm-openai:v0.11.0
          command: ["sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE); python3 -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B -tp 8 -pp 2"]
    workerTemplate:
      spec:
        containers:
        - name: vllm-worker
          image: vllm/vllm-openai:v0.11.0
          command: ["sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker --ray_address=$(LWS_LEADER_ADDRESS)"]
""")
    leader, worker = read_workloads(lws)
    assert leader.container == "vllm-leader" and leader.settings.pipeline_parallel_size == 2
    # the worker joins the leader's Ray cluster and runs its GPUs' ranks (issue 15)
    assert worker.container == "vllm-worker" and worker.settings.node_role == "worker"
    # the same script's leader mode with nothing after it could serve: not dropped silently
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["command"] = [
        "sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader"]
    assert [w.container for w in read_workloads(lws)] == ["vllm-leader", "vllm-worker"]


def ray_cluster(worker: dict) -> dict:
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"},
            "spec": {"headGroupSpec": {"template": {"spec": {"containers": [
                {"name": "head", "image": "rayproject/ray:2.9.0"}]}}},
                     "workerGroupSpecs": [{"groupName": "g", "template": {"spec": {
                         "containers": [worker]}}}]}}


def test_kuberay_generated_start_command_variable_is_a_ray_worker():
    """KubeRay appends KUBERAY_GEN_RAY_START_CMD (the ray start it generated) to the env;
    a worker that runs it is a Ray worker, not a vLLM server."""
    obj = ray_cluster({"name": "ray-worker", "image": "vllm/vllm-openai:v0.11.0",
                       "command": ["/bin/bash", "-lc", "--"],
                       "args": ["ulimit -n 65536; echo head; $KUBERAY_GEN_RAY_START_CMD;"]})
    assert read_workloads(obj) == []
    assert review_object(obj).patch == []


RAY_APP = """
apiVersion: ray.io/v1
kind: RayService
metadata: {name: llama}
spec:
  serveConfigV2: |
    applications:
    - name: llm
      import_path: serve_chat_completion:model
      deployments:
      - name: VLLMDeployment
      runtime_env:
        pip: ["vllm==0.6.3"]
        env_vars:
          MODEL_ID: "meta-llama/Llama-3.1-8B-Instruct"
          TENSOR_PARALLELISM: "2"
          MAX_MODEL_LEN: "8192"
  rayClusterConfig:
    headGroupSpec:
      template:
        spec:
          containers:
          - {name: ray-head, image: "rayproject/ray-ml:2.9.0", resources: {limits: {memory: 8Gi}}}
    workerGroupSpecs:
    - groupName: gpu
      template:
        spec:
          containers:
          - name: llm
            image: rayproject/ray-ml:2.9.0
            resources: {limits: {memory: 40Gi, nvidia.com/gpu: "2"}}
"""


def test_custom_ray_serve_vllm_app_is_read_from_its_env_vars_and_said_so():
    obj = yaml.safe_load(RAY_APP)
    (w,) = read_workloads(obj)
    assert w.container == "llm" and w.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert w.settings.tensor_parallel_size == 2 and w.settings.max_model_len == 8192
    assert w.patchable is False and w.pods_sized_at_creation is False
    assert any("env_vars read by name" in d.message for d in w.diagnostics)
    r = review_object(obj)
    assert r.patch == []
    assert any("nothing sizes its pods" in x for x in r.warnings)


def test_a_ray_app_with_no_sign_of_vllm_is_not_read():
    obj = yaml.safe_load(RAY_APP.replace('pip: ["vllm==0.6.3"]', 'pip: ["torch"]')
                         .replace("VLLMDeployment", "Translator"))
    assert read_workloads(obj) == []


def test_serve_llm_engine_named_after_the_worker_container_and_two_engines_apart():
    obj = yaml.safe_load(RAY_APP)
    obj["spec"]["serveConfigV2"] = """
applications:
- name: app
  import_path: ray.serve.llm:build_openai_app
  args:
    llm_configs:
    - model_loading_config: {model_id: a, model_source: Qwen/Qwen3-8B}
      engine_kwargs: {max_model_len: 4096}
"""
    (w,) = read_workloads(obj)
    assert w.container == "llm" and w.model == "Qwen/Qwen3-8B" and w.settings.max_model_len == 4096
    obj["spec"]["serveConfigV2"] += """    - model_loading_config: {model_id: b, model_source: Qwen/Qwen3-0.6B}
"""
    assert sorted(w.container for w in read_workloads(obj)) == ["llm/a", "llm/b"]


def test_a_serving_runtime_inside_an_openshift_template_is_no_server():
    template = {"apiVersion": "template.openshift.io/v1", "kind": "Template",
                "metadata": {"name": "t"},
                "objects": [{"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
                             "metadata": {"name": "vllm"},
                             "spec": {"containers": [{
                                 "name": "kserve-container", "image": "vllm/vllm-openai:v0.9.0",
                                 "command": ["python", "-m", "vllm.entrypoints.openai.api_server"],
                                 "args": ["--model=/mnt/models"]}]}}]}
    assert read_workloads(template) == []
    # a Deployment in the same template is still read (by structure, report only)
    template["objects"].append({"apiVersion": "apps/v1", "kind": "Deployment",
                                "metadata": {"name": "d"}, "spec": {"template": {"spec": {
                                    "containers": [{"name": "v", "image": "vllm/vllm-openai:v0.9.0",
                                                    "command": ["vllm", "serve", "Qwen/Qwen3-8B"]}]}}}})
    (w,) = read_workloads(template)
    assert w.model == "Qwen/Qwen3-8B" and w.patchable is False


def _pod_with_init(init_cmd: list[str], model_path: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"initContainers": [{"name": "dl", "image": "runtime:1", "command": init_cmd}],
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                     "command": ["vllm", "serve", model_path]}]}}


def test_a_local_model_path_takes_the_id_an_init_container_downloads_into_it():
    (w,) = read_workloads(_pod_with_init(
        ["aibrix_download", "--model-uri", "tos://bucket/models/Qwen/Qwen3-8B/", "--local-dir",
         "/models/"], "/models/Qwen3-8B"))
    assert w.model == "Qwen/Qwen3-8B" and w.model_config is not None
    assert any("init container dl downloads it" in d.message for d in w.diagnostics)
    (w,) = read_workloads(_pod_with_init(
        ["sh", "-c", "huggingface-cli download Qwen/Qwen3-8B --local-dir /data/qwen3-8b"],
        "/data/qwen3-8b/"))
    assert w.model == "Qwen/Qwen3-8B"


def test_the_directory_a_download_writes_pairs_the_id_with_the_path():
    # --local-dir names the directory: the repo id of the same command is the model there,
    # whatever the directory is called (kthena's downloader: --source hf://.. --output-dir)
    (w,) = read_workloads(_pod_with_init(
        ["huggingface-cli", "download", "Qwen/Qwen3-8B", "--local-dir", "/models/other"],
        "/models/other"))
    assert w.model == "Qwen/Qwen3-8B"
    (w,) = read_workloads(_pod_with_init(
        ["downloader", "--source", "hf://Qwen/Qwen3-0.6B", "--output-dir", "/tmp/cache/Qwen3"],
        "/tmp/cache/Qwen3"))
    assert w.model == "Qwen/Qwen3-0.6B"


def test_no_id_is_taken_from_a_download_elsewhere_or_two_orgs():
    (w,) = read_workloads(_pod_with_init(
        ["huggingface-cli", "download", "Qwen/Qwen3-8B", "--local-dir", "/models/elsewhere"],
        "/models/other"))
    assert w.model == "/models/other"
    (w,) = read_workloads(_pod_with_init(
        ["sh", "-c", "hf download a/m --local-dir /m/m || hf download b/m --local-dir /m/m"], "/m/m"))
    assert w.model == "/m/m"


def _mounted(command: list[str], mount: dict, volume: dict) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {
                "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                "command": command, "volumeMounts": [mount]}],
                "volumes": [volume]}}}}


SCRIPT = "#!/bin/bash\nset -e\nMODEL=Qwen/Qwen3-8B\nexec vllm serve $MODEL --max-model-len 8192 \"$@\"\n"


def test_a_script_mounted_from_a_configmap_is_read_when_the_configmap_is_known():
    from vllm_sizer.workloads import ReadContext

    obj = _mounted(["bash", "/scripts/start.sh", "--max-num-seqs", "8"],
                   {"name": "s", "mountPath": "/scripts"},
                   {"name": "s", "configMap": {"name": "start"}})
    ctx = ReadContext(config_maps={"start": {"start.sh": SCRIPT}})
    (w,) = read_workloads(obj, ctx)
    assert w.model == "Qwen/Qwen3-8B" and w.settings.max_model_len == 8192
    assert w.settings.max_num_seqs == 8  # "$@" of the script
    (w,) = read_workloads(obj)  # the ConfigMap unknown (the webhook): warned, not guessed
    assert w.settings is None


def test_copied_and_subpath_mounted_scripts_and_a_mounted_vllm_config():
    from vllm_sizer.workloads import ReadContext

    obj = _mounted(["/bin/sh", "-c", "cp /e/run.sh /tmp/run.sh && chmod +x /tmp/run.sh && /tmp/run.sh"],
                   {"name": "s", "mountPath": "/e/run.sh", "subPath": "run.sh"},
                   {"name": "s", "configMap": {"name": "start"}})
    (w,) = read_workloads(obj, ReadContext(config_maps={"start": {"run.sh": SCRIPT}}))
    assert w.model == "Qwen/Qwen3-8B"
    obj = _mounted(["vllm", "serve", "Qwen/Qwen3-8B", "--config", "/cfg/v.yaml"],
                   {"name": "c", "mountPath": "/cfg"},
                   {"name": "c", "configMap": {"name": "vcfg", "items": [{"key": "k", "path": "v.yaml"}]}})
    (w,) = read_workloads(obj, ReadContext(config_maps={"vcfg": {"k": "max-num-seqs: 3\n"}}))
    assert w.settings.max_num_seqs == 3


def test_a_placeholder_left_in_a_script_is_said():
    (w,) = read_workloads(pod(["sh", "-c"], [
        "vllm serve --model <model-path> --served-model-name <model-name> --max-model-len 4096"]))
    assert any("placeholder <model-name>, <model-path>" in d.message for d in w.diagnostics)


def test_a_placeholder_in_a_script_is_the_word_the_author_meant_not_two_redirections():
    """sh reads `<model-path> --served-model-name` as `< model-path` and `> --served-model-name`:
    the flag after each placeholder is lost and the next flag's value became the model (AIBrix's
    Neuron sample read its --kv-transfer-config JSON as the model). A placeholder is one word."""
    (w,) = read_workloads(pod(["sh", "-c"], [
        "vllm serve \\\n  --model <model-path> \\\n  --served-model-name <model-name> \\\n"
        "  --kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'"
        " --max-model-len=<max-len> --max-num-seqs 8"]))
    assert w.model == "<model-path>"
    assert w.settings.kv_connector == "NixlConnector"
    assert w.settings.max_num_seqs == 8
    (w,) = read_workloads(pod(["sh", "-c"], ["vllm serve Qwen/Qwen3-8B < /dev/null > /tmp/log"]))
    assert w.model == "Qwen/Qwen3-8B"  # real redirections are still redirections


def test_shell_arithmetic_and_the_lws_group_size_are_computed():
    """`$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))`: the LWS controller sets LWS_GROUP_SIZE to the
    group size (and LWS_WORKER_INDEX to 0 on the leader); the shell computes the product."""
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "wide"},
           "spec": {"leaderWorkerTemplate": {"size": 2, "leaderTemplate": {"spec": {"containers": [{
               "name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
               "env": [{"name": "DP_SIZE_LOCAL", "value": "4"}],
               "command": ["/bin/bash", "-c",
                           "START_RANK=$(( ${LWS_WORKER_INDEX:-0} * DP_SIZE_LOCAL ))\n"
                           "vllm serve Qwen/Qwen3-8B --data-parallel-size "
                           "$((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) --data-parallel-start-rank "
                           "$START_RANK"]}]}}}}}
    (w,) = read_workloads(lws)
    assert w.settings.data_parallel_size == 8
    assert not any("not in the container's env" in d.message for d in w.diagnostics)


def test_eval_runs_its_words_and_command_substitution_is_the_shells():
    (w,) = read_workloads(pod(["/bin/bash", "-c"], [
        'STAMP=$(date +%s); eval "exec vllm serve Qwen/Qwen3-8B --max-model-len 4096"']))
    assert w.settings.max_model_len == 4096
    assert not any("$(date" in d.message and "env" in d.message for d in w.diagnostics)
    # a Ray worker started through eval is no server
    assert read_workloads(pod(["/bin/bash", "-c"], [
        'ulimit -n 65536 && eval "ray start --address=$RAY_ADDR" && tail -f /dev/null'])) == []


def test_bash_arrays_build_the_command_line():
    """production-stack's Ray entrypoint: ARGS=( vllm serve ... ); ARGS+=( ... ); exec "${ARGS[@]}"."""
    (w,) = read_workloads(pod(["/bin/bash", "-c"], [
        'ARGS=(\n  "vllm"\n  "serve"\n  "Qwen/Qwen3-8B"\n)\nARGS+=("--max-model-len" "4096")\n'
        'EXTRA=(--max-num-seqs 8)\necho "Executing: ${ARGS[@]}"\nexec "${ARGS[@]}" ${EXTRA[*]}']))
    assert w.model == "Qwen/Qwen3-8B"
    assert w.settings.max_model_len == 4096 and w.settings.max_num_seqs == 8


def test_a_chart_render_configmap_without_namespace_is_the_default_namespaces():
    """helm template puts the workload in `default` and leaves its ConfigMap without a namespace:
    for `check` both are the current namespace, so the mounted script is read."""
    from vllm_sizer.policy.cluster import ClusterContext

    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "start"},
          "data": {"start.sh": SCRIPT}}
    obj = _mounted(["bash", "/scripts/start.sh"], {"name": "s", "mountPath": "/scripts"},
                   {"name": "s", "configMap": {"name": "start"}})
    obj["metadata"]["namespace"] = "default"
    (w,) = read_workloads(obj, ClusterContext.from_objects([cm]).read_context("default"))
    assert w.model == "Qwen/Qwen3-8B"
    # another namespace never sees it
    (w,) = read_workloads(obj, ClusterContext.from_objects([cm]).read_context("team"))
    assert w.settings is None


def test_a_placeholder_or_unset_variable_model_is_said_to_be_filled_in():
    """`<your-model-path>` or an envsubst `$MODEL_ID` left in a tutorial is no model name to
    look up: the cannot-size message says to fill it in, not to supply its config.json."""
    for model in ("<your-model-path>", "$MODEL_ID", "s3://${BUCKET}/m"):
        (w,) = read_workloads(pod(["vllm", "serve", model]))
        (msg,) = [d.message for d in w.diagnostics if "cannot size" in d.message]
        assert "placeholder or a variable" in msg and "to fill in" in msg
    (w,) = read_workloads(pod(["vllm", "serve", "acme/unknown-model-7b"]))
    assert not any("placeholder" in d.message for d in w.diagnostics)
