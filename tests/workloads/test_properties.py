"""Property tests: arbitrary command lines and arbitrary objects never raise out of the reader."""

import copy
import os

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_sizer.workloads.model import ReadContext
from vllm_sizer.workloads.quantity import parse_quantity
from vllm_sizer.workloads.reader import read_workloads
from vllm_sizer.workloads.shell import find_shell, run_script
from vllm_sizer.workloads.vllm_args import FLAGS, find_invocation, parse_vllm_args

FLAG_NAMES = sorted(FLAGS)
token = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["vllm", "serve", "-m", "vllm.entrypoints.openai.api_server", "--", "-",
                     "--config", "-tp", "-O3", "-O", "4k", "4K", "abc", "=", "--no-", "sh", "-c",
                     "huggingfaceserver", "$(X)", "$$(X)", "${X:-1}", "$@", "'", '"', "\\",
                     "&&", ";", "\n", "#", "`", "$(", "{", "}", "<<EOF", "<<-'X'", "EOF",
                     ">", ">>", "2>&1", "cat", "echo", "--config", "/c.yaml"]),
    st.builds(lambda f, eq, v: f"--{f}{'=' if eq else ''}{v if eq else ''}",
              st.sampled_from(FLAG_NAMES), st.booleans(), st.text(max_size=6)),
    st.builds(lambda f: "--no-" + f, st.sampled_from(FLAG_NAMES)),
)
argv_st = st.lists(token, max_size=25)
# VLLM_SIZER_HYPOTHESIS_EXAMPLES=5000 for a longer search
def no_internal_errors(workloads):
    """The reader catches everything; a caught exception is still a bug to find here."""
    for w in workloads:
        for d in w.diagnostics:
            assert "internal error" not in d.message, d.message
    return workloads


SETTINGS = settings(max_examples=int(os.environ.get("VLLM_SIZER_HYPOTHESIS_EXAMPLES", "300")),
                    deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(argv_st, st.booleans(), st.sampled_from([None, "0.6.6", "0.10.2", "0.11.0", "0.33.0"]))
def test_parse_vllm_args_never_raises(argv, positional, version):
    from vllm_sizer.estimator.versions import VllmVersion
    v = VllmVersion.parse(version) if version else None
    parsed = parse_vllm_args(argv, version=v, positional_model=positional,
                             config_loader=lambda p: {"max-num-seqs": p, "enable-lora": "x"})
    parsed.to_settings(device="cpu")
    find_invocation(argv)


@SETTINGS
@given(st.text(max_size=300), st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=10),
                                              max_size=4),
       st.lists(st.text(max_size=5), max_size=3))
def test_shell_never_raises(script, env, positional):
    run_script(script, env, unknown={"U"}, positional=positional or None)
    find_shell(["sh", "-c", script])


def _pod(argv_command, argv_args, env, image):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": image, "command": argv_command,
                                     "args": argv_args, "env": env,
                                     "resources": {"limits": {"memory": "1Gi"}}}]}}


env_st = st.lists(st.fixed_dictionaries(
    {"name": st.sampled_from(["X", "MODEL", "VLLM_CPU_KVCACHE_SPACE", "LD_PRELOAD",
                              "VLLM_TARGET_DEVICE", "VLLM_ADDITIONAL_ARGS"]),
     "value": st.one_of(st.text(max_size=10), st.integers(), st.none())}), max_size=4)
image_st = st.sampled_from(["vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:latest",
                            "vllm/vllm-openai:v0.6.6", "x/vllm-cpu:0.10", "busybox", "",
                            "kserve/huggingfaceserver:v0.15.0", "a@sha256:00", ":::"])


@SETTINGS
@given(st.one_of(st.none(), argv_st), argv_st, env_st, image_st)
def test_reader_never_raises_on_command_lines(command, args, env, image):
    obj = _pod(command, args, env, image)
    before = copy.deepcopy(obj)
    for w in no_internal_errors(read_workloads(obj)):
        assert w.container == "c"
        assert w.container_path == "/spec/containers/0"
    assert obj == before  # the reader does not modify its input


@SETTINGS
@given(st.sampled_from(["vllm serve m", "sh -c", "bash -ec"]),
       st.one_of(st.text(max_size=200),
                 st.lists(st.sampled_from(["cat > /c.yaml <<EOF", "max-num-seqs: 4", "EOF",
                                           "a: [", "vllm serve m --config /c.yaml",
                                           "echo 'x: 1' >> /c.yaml", "exec \"$@\"", "if true",
                                           "then export X=$Y", "fi", "${A:-${B}}"]),
                          max_size=10).map("\n".join)),
       env_st)
def test_reader_never_raises_on_scripts(prefix, script, env):
    obj = _pod(prefix.split() + [script], [], env, "vllm/vllm-openai:v0.11.0")
    no_internal_errors(read_workloads(obj))


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                      st.text(max_size=8))
json_st = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.sampled_from(["spec", "template", "containers", "command", "args", "env",
                                     "name", "value", "image", "resources", "limits", "memory",
                                     "metadata", "annotations", "predictor", "model", "runtime",
                                     "modelFormat", "storageUri", "leaderWorkerTemplate",
                                     "workerTemplate", "leaderTemplate", "lora", "adapters",
                                     "nodeSelector", "affinity", "volumes", "ownerReferences",
                                     "jobTemplate", "valueFrom", "envFrom", "initContainers",
                                     "x"]), inner, max_size=5)), max_leaves=40)

KINDS = [("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("v1", "Pod"), ("batch/v1", "Job"),
         ("batch/v1", "CronJob"), ("serving.kserve.io/v1beta1", "InferenceService"),
         ("serving.kserve.io/v1alpha1", "LLMInferenceService"),
         ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"), ("v1", "ConfigMap")]


@SETTINGS
@given(st.sampled_from(KINDS), json_st, json_st)
def test_reader_never_raises_on_arbitrary_objects(kind, spec, metadata):
    obj = {"apiVersion": kind[0], "kind": kind[1], "spec": spec, "metadata": metadata}
    ctx = ReadContext(serving_runtimes={"r": {"spec": spec}},
                      cluster_serving_runtimes={"c": spec if isinstance(spec, dict) else {}})
    no_internal_errors(read_workloads(obj, ctx))
    no_internal_errors(read_workloads(obj))


@SETTINGS
@given(json_st)
def test_reader_never_raises_on_arbitrary_top_level(obj):
    assert isinstance(no_internal_errors(read_workloads(obj)), list)


CONTAINER_TEMPLATE = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  annotations: {}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        command: ["vllm", "serve", "Qwen/Qwen3-0.6B"]
"""


@SETTINGS
@given(json_st, json_st, st.text(max_size=40), st.text(max_size=40))
def test_reader_never_raises_on_mutated_containers(resources, env, model_cfg, vllm_cfg):
    obj = yaml.safe_load(CONTAINER_TEMPLATE)
    c = obj["spec"]["template"]["spec"]["containers"][0]
    c["resources"] = resources
    c["env"] = env
    obj["metadata"]["annotations"] = {"vllm-sizer.io/model-config": model_cfg,
                                      "vllm-sizer.io/vllm-config": vllm_cfg}
    ws = no_internal_errors(read_workloads(obj))
    assert len(ws) == 1


@SETTINGS
@given(st.one_of(st.text(max_size=15), st.integers(), st.floats(), st.none(), st.booleans()))
def test_parse_quantity_raises_only_value_error(q):
    try:
        assert parse_quantity(q) >= 0
    except ValueError:
        pass


@SETTINGS
@given(st.sampled_from(KINDS), json_st, json_st)
def test_object_level_reading_raises_nothing_internally(kind, spec, metadata):
    """read_workloads returns [] if the object level raises; make sure it does not."""
    from vllm_sizer.workloads import reader
    obj = {"apiVersion": kind[0], "kind": kind[1], "spec": spec, "metadata": metadata}
    ctx = ReadContext(serving_runtimes={"r": {"spec": spec}})
    reader._views(obj, ctx)
    reader._ObjectInfo.of(obj, ctx)


# ---- hostile classes (generators shared with tests/hardening: tests/hostile_strategies.py)
from tests.hostile_strategies import (HOSTILE, command_chain, doubling_script,
                                      kube_env_chain)
from vllm_sizer.workloads import limits
from vllm_sizer.workloads.execution import executes_vllm
from vllm_sizer.workloads.expand import kube_expand


@HOSTILE
@given(doubling_script())
def test_run_script_output_is_bounded(script):
    with limits.budget() as budget:
        cmds = run_script(script, {})
    assert len(cmds) <= limits.MAX_COMMANDS
    for c in cmds:
        assert len(c.words) <= limits.MAX_ARGS + 1
        assert all(len(v) <= limits.MAX_VALUE_CHARS for v in c.env.values())
    assert budget.used <= limits.MAX_EXPANDED_CHARS


@HOSTILE
@given(kube_env_chain())
def test_kube_expand_output_is_bounded(chain):
    env_list, ref = chain
    env: dict[str, str] = {}
    with limits.budget():
        for e in env_list:
            cut: list[str] = []
            value, _ = kube_expand(e["value"], env.get, cut)
            assert len(value) <= limits.MAX_VALUE_CHARS + len(e["value"])
            if not cut:
                env[e["name"]] = value


@HOSTILE
@given(command_chain())
def test_executes_vllm_follows_the_argv0_chain(chain):
    argv, executed = chain
    assert executes_vllm(argv) == executed, argv
