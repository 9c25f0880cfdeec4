"""Fuzzing the shared decision (reader + estimator + policy) with hypothesis.

Invariants: no exception escapes; a non-vLLM object never gets a patch; a patch applies and the
mutated object keeps valid quantities (and validates against the Kubernetes schema where
kubernetes-validate is installed); deciding again on the mutated object changes nothing; a limit
or request a person set is never lowered. The case count is sized for CI (≥ 10,000 in all).
"""

from __future__ import annotations

import copy

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_sizer.estimator import catalog_ids
from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings
from vllm_sizer.workloads.quantity import parse_quantity

try:  # optional: strict schema validation of mutated objects
    import kubernetes_validate
except ImportError:  # pragma: no cover - depends on the test extra
    kubernetes_validate = None

FUZZ = settings(max_examples=2500, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

MODELS = catalog_ids()[:12] + ["acme/unknown-7b", "/mnt/models", ""]
FLAG_VALUES = {
    "--max-num-batched-tokens": ["512", "2048", "4k", "4K", "1e30", "-1", "0", "abc", "99999999"],
    "--max-num-seqs": ["1", "8", "256", "0", "x"],
    "--max-model-len": ["2048", "8192", "32k", "0", "nan"],
    "--max-lora-rank": ["8", "64", "256", "100", "0"],
    "--tensor-parallel-size": ["1", "2", "8", "-2"],
    "--dtype": ["auto", "bfloat16", "float32", "half", "bogus"],
    "--gpu-memory-utilization": ["0.9", "1.5", "-1"],
}
BOOLS = ["--enable-lora", "--no-enable-lora", "--enforce-eager", "--enable-chunked-prefill=False"]
QUANTITIES = ["1Gi", "8Gi", "16Gi", "64Gi", "512Mi", "1e10", "100M", "0", "1.5Gi", "huge"]

@st.composite
def vllm_argv(draw):
    argv = ["vllm", "serve", draw(st.sampled_from(MODELS))]
    for _ in range(draw(st.integers(0, 6))):
        flag = draw(st.sampled_from(sorted(FLAG_VALUES) + BOOLS))
        if flag in FLAG_VALUES:
            value = draw(st.sampled_from(FLAG_VALUES[flag]))
            argv += [f"{flag}={value}"] if draw(st.booleans()) else [flag, value]
        else:
            argv.append(flag)
    if draw(st.booleans()):
        argv += ["--device", "cpu"]
    return argv


@st.composite
def resources(draw):
    res: dict = {}
    for section in ("limits", "requests"):
        if draw(st.booleans()):
            res[section] = {"memory": draw(st.sampled_from(QUANTITIES))}
    if draw(st.booleans()):
        res.setdefault("limits", {})["nvidia.com/gpu"] = "1"
    return res


@st.composite
def env(draw):
    items = []
    if draw(st.booleans()):
        items.append({"name": "VLLM_CPU_KVCACHE_SPACE",
                      "value": draw(st.sampled_from(["0", "2", "4", "4.5", "x", ""]))})
    return items


@st.composite
def vllm_deployment(draw):
    container = {"name": "vllm",
                 "image": draw(st.sampled_from(["vllm/vllm-openai:v0.11.0",
                                                "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.26.0",
                                                "vllm/vllm-openai:latest", "x/vllm-cpu"])),
                 "command": draw(vllm_argv()), "env": draw(env()), "resources": draw(resources())}
    annotations = {}
    if draw(st.booleans()):
        annotations["vllm-sizer.io/mode"] = draw(st.sampled_from(["enforce", "warn", "off", "bogus"]))
    kind = draw(st.sampled_from(["Deployment", "StatefulSet", "Job"]))
    api = "batch/v1" if kind == "Job" else "apps/v1"
    spec = {"template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [container]}}}
    if kind == "Job":
        spec["template"]["spec"]["restartPolicy"] = "Never"
    else:
        spec["selector"] = {"matchLabels": {"app": "w"}}
    if kind == "StatefulSet":
        spec["serviceName"] = "w"
    return {"apiVersion": api, "kind": kind,
            "metadata": {"name": "w", "namespace": "ns", "annotations": annotations}, "spec": spec}


@st.composite
def other_deployment(draw):
    container = {"name": draw(st.text(min_size=1, max_size=8)),
                 "image": draw(st.sampled_from(["nginx:1.27", "redis", "python:3.11", ""])),
                 "command": draw(st.lists(st.text(max_size=10).filter(lambda t: "vllm" not in t),
                                          max_size=5)),
                 "resources": draw(resources())}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "o"},
            "spec": {"selector": {"matchLabels": {"app": "o"}},
                     "template": {"metadata": {"labels": {"app": "o"}},
                                  "spec": {"containers": [container]}}}}


POLICIES = st.sampled_from([PolicySettings(), PolicySettings(mode="enforce"),
                            PolicySettings(mode="warn"), PolicySettings(headroom=0.5),
                            PolicySettings(limit_range_max_bytes=16 * 1024**3)])


def _memory(obj, section):
    c = obj["spec"]["template"]["spec"]["containers"][0]
    raw = ((c.get("resources") or {}).get(section) or {}).get("memory")
    try:
        return parse_quantity(raw) if raw is not None else None
    except ValueError:
        return None


@FUZZ
@given(vllm_deployment(), POLICIES)
def test_vllm_objects_decide_safely_and_idempotently(obj, policy):
    before = copy.deepcopy(obj)
    r = review_object(obj, None, policy)
    assert obj == before  # the input is not modified
    assert r.verdict in ("allow", "mutate", "deny", "skip", "unknown")
    if r.verdict == "deny":
        assert r.patch == [] and r.message
        return
    mutated = jsonpatch.apply_patch(obj, r.patch)
    for section in ("limits", "requests"):
        old, new = _memory(obj, section), _memory(mutated, section)
        if old is not None:
            assert new is not None and new >= old  # never lowered
    lim, req = _memory(mutated, "limits"), _memory(mutated, "requests")
    if r.verdict == "mutate" and lim is not None and req is not None:
        assert req <= lim or _memory(obj, "requests") == req  # request ≤ limit unless set so
    if kubernetes_validate is not None:
        kubernetes_validate.validate(mutated, "1.30", strict=False)
    again = review_object(mutated, None, policy)
    assert again.patch == [], again.patch  # applying the mutation twice changes nothing


@FUZZ
@given(other_deployment(), POLICIES)
def test_non_vllm_objects_never_get_a_patch(obj, policy):
    r = review_object(obj, None, policy)
    assert r.patch == [] and r.verdict == "allow" and not r.containers


@FUZZ
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
                    lambda inner: st.one_of(st.lists(inner, max_size=4),
                                            st.dictionaries(st.sampled_from(
                                                ["kind", "apiVersion", "metadata", "spec",
                                                 "template", "containers", "predictor", "model",
                                                 "args", "command", "image", "name"]),
                                                inner, max_size=5)),
                    max_leaves=30), POLICIES)
def test_arbitrary_objects_never_raise(obj, policy):
    review_object(obj, None, policy)


def test_fuzz_case_budget_is_ci_sized():
    # three fuzzed properties × 2,500 + the reader's own property tests: ≥ 10,000 cases
    assert 3 * FUZZ.max_examples >= 7500
