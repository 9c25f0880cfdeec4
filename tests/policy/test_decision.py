"""The decision on hand-built workloads (the reader is tested in tests/workloads)."""

import copy

import jsonpatch
import pytest

from vllm_sizer.estimator import EngineSettings
from vllm_sizer.estimator.units import GiB, MiB
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads.api_names import DECISION_ANNOTATION, ESTIMATE_ANNOTATION
from vllm_sizer.policy.settings import PolicySettings, parse_headroom
from vllm_sizer.workloads.model import Workload
from tests.conftest import QWEN3_0_6B

BASE = "/spec/template/spec/containers/0"


def deployment(limit=None, request=None, annotations=None, env=None):
    res = {}
    if limit:
        res.setdefault("limits", {})["memory"] = limit
    if request:
        res.setdefault("requests", {})["memory"] = request
    c = {"name": "vllm", "image": "vllm-cpu:v0.11.0", "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"]}
    if res:
        c["resources"] = res
    if env is not None:
        c["env"] = env
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "q", "namespace": "llm", "annotations": annotations or {}},
            "spec": {"template": {"spec": {"containers": [c]}}}}


def stub_reader(settings, limit_bytes=None, request_bytes=None, env=None):
    def read(obj, ctx):
        c = obj["spec"]["template"]["spec"]["containers"][0]
        res = c.get("resources", {})
        from vllm_sizer.estimator.units import GiB as G

        def q(v):
            return None if v is None else int(v[:-2]) * (G if v.endswith("Gi") else MiB)
        return [Workload(kind=obj["kind"], api_version=obj["apiVersion"], namespace="llm", name="q",
                         container="vllm", container_path=BASE, settings=settings,
                         model="Qwen/Qwen3-0.6B", model_config=QWEN3_0_6B,
                         model_config_source="catalog", image=c["image"],
                         limit_bytes=q(res.get("limits", {}).get("memory")),
                         request_bytes=q(res.get("requests", {}).get("memory")),
                         resources_path=BASE + "/resources",
                         env={e["name"]: e["value"] for e in c.get("env", [])},
                         annotations=obj["metadata"].get("annotations", {}))]
    return read


LORA = EngineSettings(model="Qwen/Qwen3-0.6B", device="cpu", vllm_version="0.11.0",
                      enable_lora=True, max_lora_rank=256, max_num_batched_tokens=2394,
                      max_num_seqs=1, max_model_len=4096, cpu_kvcache_space_gib=4)


def review(obj, settings=LORA, **policy):
    return review_object(obj, None, PolicySettings(**policy), read=stub_reader(settings))


def test_mutate_raises_limit_and_request_to_estimate_plus_headroom_rounded():
    obj = deployment(limit="8Gi", request="8Gi")
    r = review(obj)
    assert r.verdict == "mutate"
    d = r.containers[0]
    expected = -(-int(d.report.total_memory_bytes * 1.1) // (256 * MiB)) * 256 * MiB
    assert d.limit_after == expected and d.request_after == expected
    out = jsonpatch.apply_patch(obj, r.patch)
    res = out["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert res["limits"]["memory"] == res["requests"]["memory"]
    assert out["metadata"]["annotations"][ESTIMATE_ANNOTATION].endswith("Gi")
    assert out["metadata"]["annotations"][DECISION_ANNOTATION].startswith("mutate: limits.memory 8.0Gi →")
    assert obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] == "8Gi"


def test_mutation_is_idempotent_and_keeps_the_decision_annotation():
    first = deployment(limit="8Gi")
    r1 = review(first)
    once = jsonpatch.apply_patch(first, r1.patch)
    r2 = review_object(once, None, PolicySettings(), read=stub_reader(LORA))
    assert r2.verdict == "allow"
    assert r2.patch == []  # nothing rewritten, decision annotation kept


def test_never_lowers_a_higher_limit():
    r = review(deployment(limit="64Gi", request="40Gi"))
    assert r.verdict == "allow" and r.containers[0].limit_after == 64 * GiB
    assert not any(op["path"].endswith("/memory") for op in r.patch)


def test_enforce_denies_undersized_with_actionable_message():
    r = review(deployment(limit="12Gi"), mode="enforce")
    assert r.verdict == "deny" and r.patch == []
    msg = r.message
    assert "memory limit 12.0Gi is below the estimated peak" in msg
    assert "lora prefill scratch" in msg
    assert "set resources.limits.memory to at least" in msg
    assert "--max-num-batched-tokens" in msg  # the largest T that fits 12Gi


def test_enforce_mutates_where_no_limit_is_set():
    r = review(deployment(), mode="enforce")
    assert r.verdict == "mutate" and r.containers[0].limit_after > 20 * GiB


def test_warn_admits_with_short_warning():
    r = review(deployment(limit="8Gi"), mode="warn")
    assert r.verdict == "allow"
    assert r.warnings and all(len(w) <= 120 for w in r.warnings)
    assert not any(w.lower().startswith("warning") for w in r.warnings)
    assert not any(op["path"].endswith("/memory") for op in r.patch)


def test_annotation_overrides_mode_headroom_and_skip():
    r = review(deployment(limit="8Gi", annotations={"vllm-sizer.io/mode": "enforce"}))
    assert r.verdict == "deny"
    r = review(deployment(annotations={"vllm-sizer.io/headroom": "50%"}))
    d = r.containers[0]
    assert d.limit_after >= d.report.total_memory_bytes * 1.5
    r = review(deployment(limit="8Gi", annotations={"vllm-sizer.io/skip": "true"}))
    assert r.verdict == "skip" and r.patch == []
    r = review(deployment(limit="8Gi", annotations={"vllm-sizer.io/mode": "bogus"}))
    assert r.verdict == "mutate" and any("bogus" in w for w in r.warnings)


def test_limitrange_or_node_ceiling_denies_even_in_mutate_mode():
    r = review(deployment(), limit_range_max_bytes=16 * GiB)
    assert r.verdict == "deny" and "LimitRange max 16.0Gi" in r.message
    r = review(deployment(), largest_node_memory_bytes=16 * GiB)
    assert r.verdict == "deny" and "largest node" in r.message


def test_kv_auto_sized_is_pinned_in_mutate_and_denied_in_enforce():
    auto = LORA.model_copy(update={"vllm_version": "0.26.0", "cpu_kvcache_space_gib": None})
    obj = deployment(limit="8Gi")
    r = review(obj, settings=auto)
    assert r.verdict == "mutate"
    out = jsonpatch.apply_patch(obj, r.patch)
    env = out["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "VLLM_CPU_KVCACHE_SPACE", "value": "4"} in env
    r = review(deployment(limit="64Gi"), settings=auto, mode="enforce")
    assert r.verdict == "deny" and "VLLM_CPU_KVCACHE_SPACE" in r.message


def test_cannot_size_is_unknown_and_admitted():
    def read(obj, ctx):
        w = stub_reader(LORA)(obj, ctx)[0]
        w.model_config, w.model = None, "acme/secret"
        return [w]
    r = review_object(deployment(), None, PolicySettings(), read=read)
    assert r.verdict == "unknown" and r.patch == []
    assert any("acme/secret" in w and "model-config" in w for w in r.warnings)


def test_not_a_vllm_object_is_allowed_untouched():
    r = review_object({"kind": "ConfigMap", "metadata": {"name": "x"}}, None, PolicySettings(),
                      read=lambda o, c: [])
    assert r.verdict == "allow" and r.patch == [] and not r.is_vllm
    assert review_object("garbage", None, PolicySettings(), read=lambda o, c: []).verdict == "allow"


@pytest.mark.parametrize("raw, value", [("0.1", 0.1), ("10%", 0.1), (0.25, 0.25), ("0", 0.0)])
def test_headroom_parsing(raw, value):
    assert parse_headroom(raw) == pytest.approx(value)


@pytest.mark.parametrize("raw", ["-1", "abc", "nan", "2000%"])
def test_headroom_rejects_nonsense(raw):
    with pytest.raises(ValueError):
        parse_headroom(raw)


def test_ceiling_hint_fits_after_headroom():
    from vllm_sizer.estimator import ModelGeometry, build_report
    r = review(deployment(), limit_range_max_bytes=16 * GiB)
    d = r.containers[0]
    assert d.fitting_tokens
    fixed = LORA.model_copy(update={"max_num_batched_tokens": d.fitting_tokens})
    total = build_report(ModelGeometry.from_hf_config(QWEN3_0_6B), fixed).total_memory_bytes
    assert PolicySettings().needed_limit(total) <= 16 * GiB
    assert f"--max-num-batched-tokens {d.fitting_tokens}" in r.message


def test_sized_label_on_create_or_mutation_only():
    label = "/spec/template/metadata/labels/vllm-sizer.io~1sized"
    fits = deployment(limit="64Gi")
    assert not any(op["path"] == label for op in review(fits).patch)  # running template: untouched
    created = review_object(fits, None, PolicySettings(), read=stub_reader(LORA), label_pods=True)
    assert any(op["path"] == label for op in created.patch)
    mutated = review(deployment(limit="8Gi"))
    out = jsonpatch.apply_patch(deployment(limit="8Gi"), mutated.patch)
    assert out["spec"]["template"]["metadata"]["labels"] == {"vllm-sizer.io/sized": "true"}
    again = review_object(out, None, PolicySettings(), read=stub_reader(LORA), label_pods=True)
    assert again.patch == []


# ---- the decision annotation describes the object as it is -----------------------------------

def _mutated(obj, **policy):
    r = review(obj, **policy)
    assert r.verdict == "mutate"
    return jsonpatch.apply_patch(obj, r.patch)


def _container(obj):
    return obj["spec"]["template"]["spec"]["containers"][0]


def test_decision_is_kept_while_the_object_carries_the_mutation():
    admitted = _mutated(deployment(limit="8Gi", request="8Gi"))
    again = review(admitted)  # a reinvocation, or an UPDATE that changes nothing we size
    assert again.verdict == "allow"
    assert DECISION_ANNOTATION not in again.annotations
    assert again.patch == []


def test_hand_lowered_limit_rewrites_the_decision():
    admitted = _mutated(deployment(limit="8Gi", request="8Gi"))
    old = admitted["metadata"]["annotations"][DECISION_ANNOTATION]
    lowered = copy.deepcopy(admitted)
    _container(lowered)["resources"] = {"limits": {"memory": "10Gi"}, "requests": {"memory": "10Gi"}}
    warned = review(lowered, mode="warn")
    out = jsonpatch.apply_patch(lowered, warned.patch)
    text = out["metadata"]["annotations"][DECISION_ANNOTATION]
    assert text != old and text.startswith("warn: undersized, needs ")
    # mutate mode raises it again and says so, from the lowered value
    raised = jsonpatch.apply_patch(lowered, review(lowered).patch)
    assert raised["metadata"]["annotations"][DECISION_ANNOTATION].startswith("mutate: limits.memory 10.0Gi → ")
    # a limit raised by hand above the estimate: the old mutation text no longer applies
    bigger = copy.deepcopy(admitted)
    _container(bigger)["resources"] = {"limits": {"memory": "64Gi"}, "requests": {"memory": "64Gi"}}
    out = jsonpatch.apply_patch(bigger, review(bigger).patch)
    assert out["metadata"]["annotations"][DECISION_ANNOTATION] == \
        f"allow: limits.memory 64.0Gi covers {out['metadata']['annotations'][ESTIMATE_ANNOTATION]}"


def test_mode_off_after_a_mutation_says_off_and_drops_the_estimate():
    admitted = _mutated(deployment(limit="8Gi", request="8Gi"))
    admitted["metadata"]["annotations"]["vllm-sizer.io/mode"] = "off"
    r = review(admitted)
    assert r.verdict == "skip"
    out = jsonpatch.apply_patch(admitted, r.patch)
    ann = out["metadata"]["annotations"]
    assert ann[DECISION_ANNOTATION] == "off: not sized (vllm-sizer mode is off)"
    for key in (ESTIMATE_ANNOTATION, "vllm-sizer.io/breakdown", "vllm-sizer.io/notes",
                "vllm-sizer.io/estimator-version"):
        assert key not in ann
    assert ann["vllm-sizer.io/mode"] == "off"
    assert _container(out)["resources"] == _container(admitted)["resources"]  # untouched
    assert review(out).patch == []  # and stable


def test_mode_off_never_touches_an_object_we_never_sized():
    obj = deployment(limit="8Gi", annotations={"vllm-sizer.io/mode": "off"})
    r = review(obj)
    assert r.patch == [] and r.annotations == {}


def test_a_config_map_in_the_same_render_is_read_not_called_unknown():
    """OPEA's chart renders the ConfigMap its vLLM container takes with envFrom: check reads
    it, so a CPU pod whose ConfigMap does not set VLLM_CPU_KVCACHE_SPACE gets it pinned instead
    of `may be set by envFrom`."""
    from vllm_sizer.cli.check import build_context

    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "vllm"},
           "spec": {"template": {"spec": {"containers": [{
               "name": "vllm", "image": "opea/vllm:latest",
               "envFrom": [{"configMapRef": {"name": "vllm-config"}}],
               "args": ["--model", "Qwen/Qwen3-0.6B", "--max-num-batched-tokens", "2048"]}]}}}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vllm-config"},
          "data": {"HF_HOME": "/tmp/.cache/huggingface"}}
    r = review_object(dep, build_context([cm, dep]).read_context(None), PolicySettings())
    (c,) = r.containers
    assert not any("may be set by envFrom" in x for x in c.warnings)
    assert any(op.get("path", "").endswith("/env/-") or "VLLM_CPU_KVCACHE_SPACE" in str(op)
               for op in r.patch)
    r = review_object(dep, build_context([dep]).read_context(None), PolicySettings())
    assert any("may be set by envFrom" in x for x in r.containers[0].warnings)
