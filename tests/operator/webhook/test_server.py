"""The webhook over real TLS on 127.0.0.1: AdmissionReview v1 bodies shaped like kube-apiserver's,
answers decoded and checked against the decision code, JSONPatches applied with jsonpatch."""

from __future__ import annotations

import asyncio
import copy
import json
import time

import aiohttp
import jsonpatch
import pytest

from vllm_sizer.estimator.units import GiB
from vllm_sizer.operator.settings import HEALTH_PATH, METRICS_PATH, MUTATE_PATH, VALIDATE_PATH, OperatorSettings
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads.api_names import DECISION_ANNOTATION, ESTIMATE_ANNOTATION
from vllm_sizer.workloads.model import ReadContext
from vllm_sizer.workloads.quantity import parse_quantity
from tests.conftest import QWEN3_0_6B

from .conftest import decode_patch, lora_deployment, nginx_deployment, review

pytestmark = pytest.mark.asyncio
C0 = "/spec/template/spec/containers/0"


def container(obj):
    return obj["spec"]["template"]["spec"]["containers"][0]


def limit_of(obj):
    return container(obj)["resources"]["limits"]["memory"]


async def test_create_cpu_lora_8gi_is_mutated_and_the_patch_applies(start_webhook):
    hook = await start_webhook()
    obj = lora_deployment("8Gi")
    resp = await hook.post(MUTATE_PATH, review(obj))
    assert resp["allowed"] is True
    ops = decode_patch(resp)
    assert ops, resp
    mutated = jsonpatch.apply_patch(obj, ops)
    expected = review_object(obj, ReadContext(), OperatorSettings().policy())
    assert expected.verdict == "mutate"
    assert mutated == expected.mutated(obj)
    new_limit = parse_quantity(limit_of(mutated))
    assert new_limit == expected.containers[0].limit_after
    assert new_limit > 8 * GiB
    assert parse_quantity(container(mutated)["resources"]["requests"]["memory"]) == new_limit
    assert container(mutated)["resources"]["limits"]["cpu"] == "8"  # untouched
    assert mutated["metadata"]["annotations"][ESTIMATE_ANNOTATION].endswith("Gi")
    assert mutated["metadata"]["annotations"][DECISION_ANNOTATION].startswith("mutate: limits.memory 8.0Gi →")
    assert resp["warnings"] == expected.warnings
    assert resp["warnings"][0].startswith("vllm: limit 8.0Gi →")
    assert "status" not in resp

    # the validating webhook sees the mutated object: allowed, nothing "not applied"
    v = await hook.post(VALIDATE_PATH, review(mutated))
    assert v["allowed"] is True and "patch" not in v
    assert not any("not applied" in w for w in v.get("warnings", []))

    # reinvocation on the mutated object: no further change
    again = await hook.post(MUTATE_PATH, review(mutated))
    assert again["allowed"] is True and "patch" not in again


async def test_update_with_old_object_is_decided_on_object(start_webhook):
    hook = await start_webhook()
    old = lora_deployment("32Gi")
    new = lora_deployment("8Gi")
    new["metadata"]["generation"] = 2
    resp = await hook.post(MUTATE_PATH, review(new, "UPDATE", old=old))
    mutated = jsonpatch.apply_patch(new, decode_patch(resp))
    assert parse_quantity(limit_of(mutated)) > 8 * GiB
    assert mutated == review_object(new, ReadContext(), OperatorSettings().policy()).mutated(new)

    # the other way round: the new object is fine, the old one was not → no resource change
    sized = copy.deepcopy(mutated)
    resp2 = await hook.post(MUTATE_PATH, review(sized, "UPDATE", old=new))
    assert resp2["allowed"] is True and "patch" not in resp2


async def test_dry_run_gets_the_same_answer(start_webhook):
    hook = await start_webhook()
    obj = lora_deployment("8Gi")
    wet = await hook.post(MUTATE_PATH, review(obj, uid="a"))
    dry = await hook.post(MUTATE_PATH, review(obj, dry_run=True, uid="a"))
    assert dry == wet
    enforce = lora_deployment("8Gi", annotations={"vllm-sizer.io/mode": "enforce"})
    wet_v = await hook.post(VALIDATE_PATH, review(enforce, uid="b"))
    dry_v = await hook.post(VALIDATE_PATH, review(enforce, dry_run=True, uid="b"))
    assert dry_v == wet_v and dry_v["allowed"] is False


async def test_scale_subresource_is_allowed_untouched(start_webhook):
    hook = await start_webhook()
    scale = {"kind": "Scale", "apiVersion": "autoscaling/v1",
             "metadata": {"name": "qwen3-lora-cpu", "namespace": "llm", "uid": "5f0c", "resourceVersion": "812"},
             "spec": {"replicas": 3}, "status": {"replicas": 1, "selector": "app=qwen3-lora-cpu"}}
    old = copy.deepcopy(scale)
    old["spec"]["replicas"] = 1
    for path in (MUTATE_PATH, VALIDATE_PATH):
        resp = await hook.post(path, review(scale, "UPDATE", old=old, sub_resource="scale",
                                            kind=("autoscaling", "v1", "Scale")))
        assert resp == {"uid": resp["uid"], "allowed": True}
    # even when the subresource request carries a vLLM-looking object
    resp = await hook.post(MUTATE_PATH, review(lora_deployment(), "UPDATE", old=lora_deployment(),
                                               sub_resource="status"))
    assert resp == {"uid": resp["uid"], "allowed": True}


async def test_non_vllm_deployment_is_allowed_without_patch(start_webhook):
    hook = await start_webhook()
    for path in (MUTATE_PATH, VALIDATE_PATH):
        resp = await hook.post(path, review(nginx_deployment()))
        assert resp == {"uid": resp["uid"], "allowed": True}


async def test_enforce_annotation_is_denied_403_with_the_exact_message(start_webhook):
    hook = await start_webhook()
    obj = lora_deployment("12Gi", name="qwen3-lora-cpu-strict", tokens=4273,
                          annotations={"vllm-sizer.io/mode": "enforce"})
    expected = review_object(obj, ReadContext(), OperatorSettings().policy())
    assert expected.verdict == "deny"
    v = await hook.post(VALIDATE_PATH, review(obj))
    assert v["allowed"] is False
    assert v["status"] == {"code": 403, "reason": "Forbidden", "message": expected.message}
    assert v["status"]["message"].startswith(
        "vllm-sizer: Deployment llm/qwen3-lora-cpu-strict container vllm: memory limit 12.0Gi is below")
    assert "patch" not in v
    # the mutating webhook lets it through untouched: the validating one denies, after every
    # mutation (other webhooks' included)
    m = await hook.post(MUTATE_PATH, review(obj))
    assert m == {"uid": m["uid"], "allowed": True}


async def test_namespace_without_metadata_namespace_is_named_in_the_message(start_webhook):
    hook = await start_webhook()
    obj = lora_deployment("12Gi", annotations={"vllm-sizer.io/mode": "enforce"})
    del obj["metadata"]["namespace"]  # kubectl apply -n llm
    v = await hook.post(VALIDATE_PATH, review(obj, namespace="llm"))
    assert v["allowed"] is False
    assert "Deployment llm/qwen3-lora-cpu container vllm" in v["status"]["message"]


async def test_warn_mode_admits_with_warnings(start_webhook):
    hook = await start_webhook(mode="warn")
    obj = lora_deployment("8Gi")
    m = await hook.post(MUTATE_PATH, review(obj))
    assert m["allowed"] is True
    if "patch" in m:  # annotations only, never resources
        out = jsonpatch.apply_patch(obj, decode_patch(m))
        assert limit_of(out) == "8Gi"
        assert out["metadata"]["annotations"][DECISION_ANNOTATION].startswith("warn: undersized")
    v = await hook.post(VALIDATE_PATH, review(obj))
    assert v["allowed"] is True and v["warnings"]


async def test_validating_route_says_when_the_mutation_did_not_happen(start_webhook):
    hook = await start_webhook()
    v = await hook.post(VALIDATE_PATH, review(lora_deployment("8Gi")))
    assert v["allowed"] is True
    assert v["warnings"][0].startswith("not applied (the mutating webhook did not run): vllm: limit 8.0Gi →")


async def test_limit_range_max_denies_even_in_mutate_mode(start_webhook):
    seen = []

    def lr(ns):
        seen.append(ns)
        return 16 * GiB if ns == "team-a" else None
    hook = await start_webhook(limit_range_max=lr)
    v = await hook.post(VALIDATE_PATH, review(lora_deployment("8Gi", namespace="team-a")))
    assert v["allowed"] is False and v["status"]["code"] == 403
    assert "16.0Gi" in v["status"]["message"]
    ok = await hook.post(VALIDATE_PATH, review(lora_deployment("8Gi", namespace="llm")))
    assert ok["allowed"] is True
    assert seen == ["team-a", "llm"]


async def test_namespaces_not_served_and_other_operations_are_untouched(start_webhook):
    hook = await start_webhook(namespaces=["llm"])
    for ns in ("kube-system", "vllm-sizer", "other"):
        resp = await hook.post(MUTATE_PATH, review(lora_deployment("8Gi", namespace=ns)))
        assert resp == {"uid": resp["uid"], "allowed": True}, ns
    resp = await hook.post(MUTATE_PATH, review(None, "DELETE", old=lora_deployment("8Gi")))
    assert resp == {"uid": resp["uid"], "allowed": True}
    resp = await hook.post(VALIDATE_PATH, review(lora_deployment("8Gi"), "CONNECT"))
    assert resp == {"uid": resp["uid"], "allowed": True}


# ---- malformed input: HTTP 400 (a webhook failure: failurePolicy decides) ----------------------

@pytest.mark.parametrize("body, why", [
    (b"{not json", "malformed JSON"),
    (b"", "malformed JSON"),
    (b"\xff\xfe\x00garbage", "malformed JSON"),
    (b"[1, 2, 3]", "JSON object"),
    (b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "x"}}',
     "apiVersion must be admission.k8s.io/v1"),
    (b'{"apiVersion": "admission.k8s.io/v1", "kind": "Pod", "request": {"uid": "x"}}', "kind must be AdmissionReview"),
    (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "no request"),
    (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"operation": "CREATE"}}',
     "request.uid is missing"),
    (b"[" * 100_000 + b"]" * 100_000, "malformed JSON"),
])
async def test_garbage_gets_400_with_a_diagnostic(start_webhook, body, why):
    hook = await start_webhook()
    for path in (MUTATE_PATH, VALIDATE_PATH):
        async with await hook.post_raw(path, body) as resp:
            assert resp.status == 400
            text = await resp.text()
            assert text.startswith("vllm-sizer: bad AdmissionReview:") and why in text, text


async def test_get_on_an_admission_route_is_405_and_health_is_ok(start_webhook):
    hook = await start_webhook()
    async with hook.session.get(hook.base + MUTATE_PATH) as resp:
        assert resp.status == 405
    async with hook.session.get(hook.base + HEALTH_PATH) as resp:
        assert resp.status == 200 and await resp.text() == "ok"
    async with aiohttp.ClientSession() as plain:
        async with plain.get(f"http://127.0.0.1:{hook.metrics_port}{HEALTH_PATH}") as resp:
            assert resp.status == 200


async def test_absurd_values_and_unicode_never_crash(start_webhook):
    hook = await start_webhook()
    cases = []
    for tokens in ("1e30", "-5", "0", "abc", "99999999999999999999999999"):
        o = lora_deployment("8Gi")
        container(o)["args"] = ["--max-num-batched-tokens", tokens, "--enable-lora"]
        cases.append(o)
    o = lora_deployment("8Gi")
    container(o)["args"] = ["--served-model-name", "模型-😀", "--max-model-len", "4096"] + ["--x"] * 20000
    cases.append(o)
    o = lora_deployment("8Gi")
    container(o)["resources"]["limits"]["memory"] = 10**30  # not a quantity string
    cases.append(o)
    o = lora_deployment("8Gi")
    o["metadata"]["annotations"]["vllm-sizer.io/headroom"] = "∞"
    cases.append(o)
    for o in cases:
        for path in (MUTATE_PATH, VALIDATE_PATH):
            resp = await hook.post(path, review(o))
            assert isinstance(resp["allowed"], bool)
            if "patch" in resp:
                jsonpatch.apply_patch(o, decode_patch(resp))
            if not resp["allowed"]:
                assert resp["status"]["code"] == 403


# ---- sizes -------------------------------------------------------------------------------------

async def test_a_2mib_review_succeeds(start_webhook):
    hook = await start_webhook()
    obj = lora_deployment("8Gi")
    old = lora_deployment("8Gi")
    # an UPDATE carries the object twice: ~1 MiB of annotations on each
    for o in (obj, old):
        o["metadata"]["annotations"]["example.com/blob"] = "x" * (1024 * 1024)
    body = json.dumps(review(obj, "UPDATE", old=old)).encode()
    assert 2 * 1024**2 <= len(body) < 8 * 1024**2
    async with await hook.post_raw(MUTATE_PATH, body) as resp:
        assert resp.status == 200
        out = (await resp.json())["response"]
    assert out["allowed"] is True
    assert parse_quantity(limit_of(jsonpatch.apply_patch(obj, decode_patch(out)))) > 8 * GiB


async def test_a_9mib_review_gets_413(start_webhook):
    hook = await start_webhook()
    obj = lora_deployment("8Gi")
    obj["metadata"]["annotations"]["example.com/blob"] = "x" * (9 * 1024 * 1024)
    body = json.dumps(review(obj)).encode()
    assert len(body) > 9 * 1024**2
    try:
        async with await hook.post_raw(MUTATE_PATH, body) as resp:
            assert resp.status == 413
    except aiohttp.ClientOSError:  # the server may close while the client still writes
        pytest.skip("connection closed before the 413 could be read")
    # and the server still answers
    resp = await hook.post(MUTATE_PATH, review(nginx_deployment()))
    assert resp["allowed"] is True


async def test_request_size_limit_follows_the_setting(start_webhook):
    hook = await start_webhook(max_request_bytes=64 * 1024)
    obj = nginx_deployment()
    obj["metadata"]["annotations"]["example.com/blob"] = "x" * (100 * 1024)
    async with await hook.post_raw(MUTATE_PATH, json.dumps(review(obj)).encode()) as resp:
        assert resp.status == 413


# ---- lookups and failures ------------------------------------------------------------------------

class HangingLookup:
    def __init__(self):
        self.calls = []

    def get(self, model):
        return None

    async def load(self, model):
        self.calls.append(model)
        await asyncio.sleep(3600)


class SlowLookup:
    """Knows one private model; answers after a short delay (a ConfigMap read)."""

    def __init__(self, delay=0.05):
        self.delay = delay
        self.cache = {}
        self.loads = 0
        self.models = []

    def get(self, model):
        return self.cache.get(model)

    async def load(self, model):
        self.loads += 1
        self.models.append(model)
        await asyncio.sleep(self.delay)
        if model == "acme/private-qwen":
            self.cache[model] = dict(QWEN3_0_6B)
            return self.cache[model]
        return None


class FailingLookup:
    def get(self, model):
        return None

    async def load(self, model):
        raise ConnectionError("API server unreachable")


async def test_a_hanging_lookup_is_answered_within_the_timeout_with_a_warning(start_webhook):
    lookup = HangingLookup()
    hook = await start_webhook(lookup=lookup, lookup_timeout_seconds=0.2)
    obj = lora_deployment("8Gi", model="acme/private-qwen")
    for path in (MUTATE_PATH, VALIDATE_PATH):
        t0 = time.monotonic()
        resp = await hook.post(path, review(obj))
        elapsed = time.monotonic() - t0
        assert elapsed < 0.2 + 0.7, elapsed
        assert resp["allowed"] is True and "patch" not in resp
    assert any("took longer than 0.2s" in w for w in resp["warnings"]), resp
    assert lookup.calls == ["acme/private-qwen"]  # the second review waited on the same load
    await asyncio.sleep(0.9)  # > 4 x the timeout: the stuck load is given up and retried
    resp = await hook.post(VALIDATE_PATH, review(obj))
    assert resp["allowed"] is True
    assert lookup.calls == ["acme/private-qwen", "acme/private-qwen"]


async def test_a_hanging_lookup_fail_closed_denies_with_500(start_webhook):
    hook = await start_webhook(lookup=HangingLookup(), lookup_timeout_seconds=0.2, fail_closed=True)
    resp = await hook.post(VALIDATE_PATH, review(lora_deployment("8Gi", model="acme/private-qwen")))
    assert resp["allowed"] is False and resp["status"]["code"] == 500
    assert "took longer than 0.2s" in resp["status"]["message"]


async def test_a_lookup_that_finds_the_model_sizes_it(start_webhook):
    lookup = SlowLookup()
    hook = await start_webhook(lookup=lookup)
    obj = lora_deployment("8Gi", model="acme/private-qwen")
    resp = await hook.post(MUTATE_PATH, review(obj))
    mutated = jsonpatch.apply_patch(obj, decode_patch(resp))
    assert parse_quantity(limit_of(mutated)) > 8 * GiB
    assert lookup.loads == 1
    # second time the config is in the lookup's memory: no load
    await hook.post(MUTATE_PATH, review(obj))
    assert lookup.loads == 1
    # catalog models never ask the lookup
    await hook.post(MUTATE_PATH, review(lora_deployment("8Gi")))
    assert lookup.loads == 1


async def test_a_failing_lookup_fails_open_with_a_warning(start_webhook):
    hook = await start_webhook(lookup=FailingLookup())
    resp = await hook.post(VALIDATE_PATH, review(lora_deployment("8Gi", model="acme/private-qwen")))
    assert resp["allowed"] is True
    assert any("lookup for acme/private-qwen failed" in w for w in resp["warnings"])
    assert any("cannot size" in w for w in resp["warnings"])


async def test_an_internal_error_admits_with_a_warning_or_denies_500_when_fail_closed(start_webhook):
    def broken_reader(obj, ctx):
        raise KeyError("boom")

    from vllm_sizer.operator import metrics
    before = metrics.INTERNAL_ERRORS_BY_ROUTE["mutate"]._value.get()
    hook = await start_webhook(read=broken_reader)
    resp = await hook.post(MUTATE_PATH, review(lora_deployment("8Gi")))
    assert resp["allowed"] is True and "patch" not in resp
    assert resp["warnings"] == ["vllm-sizer: internal error (KeyError: 'boom'); admitted unchanged"]
    assert metrics.INTERNAL_ERRORS_BY_ROUTE["mutate"]._value.get() == before + 1

    closed = await start_webhook(read=broken_reader, fail_closed=True)
    resp = await closed.post(VALIDATE_PATH, review(lora_deployment("8Gi")))
    assert resp["allowed"] is False and resp["status"]["code"] == 500
    assert "internal error" in resp["status"]["message"]


async def test_metrics_count_reviews(start_webhook):
    hook = await start_webhook()
    await hook.post(MUTATE_PATH, review(lora_deployment("8Gi")))
    await hook.post(VALIDATE_PATH, review(nginx_deployment()))
    await hook.post(VALIDATE_PATH, review(lora_deployment("8Gi", model="acme/unknown-model")))
    async with aiohttp.ClientSession() as plain:
        async with plain.get(f"http://127.0.0.1:{hook.metrics_port}{METRICS_PATH}") as resp:
            assert resp.status == 200
            text = await resp.text()
    assert 'vllm_sizer_admission_reviews_total{kind="Deployment",route="mutate",verdict="mutate"}' in text
    assert 'vllm_sizer_admission_reviews_total{kind="Deployment",route="validate",verdict="allow"}' in text
    assert 'vllm_sizer_estimate_failures_total{reason="unknown-model"}' in text
    # vLLM objects by namespace (the nginx review is not one of them)
    ns_lines = [l for l in text.splitlines() if l.startswith("vllm_sizer_vllm_reviews_total{")]
    assert ns_lines and all('verdict="' in l and 'namespace="' in l for l in ns_lines)
    assert sum(float(l.rsplit(" ", 1)[1]) for l in ns_lines) >= 1
    assert 'vllm_sizer_admission_review_seconds_bucket{le="0.0005",route="mutate"}' in text
    assert "vllm_sizer_internal_errors_total" in text and "vllm_sizer_oomkills_total" in text


# ---- concurrency -----------------------------------------------------------------------------

async def test_200_concurrent_reviews_match_sequential_answers(start_webhook):
    # about concurrency, not the lookup budget: a budget that a loaded CI machine cannot miss
    # (timeouts have their own tests below)
    budget = {"lookup_timeout_seconds": 60.0}
    lookup = SlowLookup(delay=0.02)
    hook = await start_webhook(lookup=lookup, **budget)
    objects = [
        lora_deployment("8Gi"),
        lora_deployment("12Gi", annotations={"vllm-sizer.io/mode": "enforce"}, tokens=4273),
        nginx_deployment(),
        lora_deployment("8Gi", model="acme/private-qwen"),
        lora_deployment("8Gi", model="acme/unknown"),
        lora_deployment("64Gi"),
        lora_deployment("8Gi", namespace="kube-system"),
        lora_deployment("8Gi", annotations={"vllm-sizer.io/mode": "warn"}),
    ]
    bodies = [(path, review(objects[i % len(objects)], uid=f"uid-{i}-{path}"))
              for i in range(100) for path in (MUTATE_PATH, VALIDATE_PATH)]
    assert len(bodies) == 200
    sequential = [await hook.post(p, b) for p, b in bodies]
    concurrent = await asyncio.gather(*(hook.post(p, b) for p, b in bodies))
    assert list(concurrent) == sequential
    assert any("patch" in r for r in sequential) and any(not r["allowed"] for r in sequential)

    # and with a cold lookup cache: concurrent reviews of one model share one load
    cold_lookup = SlowLookup(delay=0.2)
    fresh = await start_webhook(lookup=cold_lookup, **budget)
    cold = await asyncio.gather(*(fresh.post(p, b) for p, b in bodies))
    assert list(cold) == sequential
    assert cold_lookup.models.count("acme/private-qwen") == 1


async def test_a_slow_shared_load_serves_the_reviews_that_come_after_a_timeout(start_webhook):
    lookup = SlowLookup(delay=0.5)
    hook = await start_webhook(lookup=lookup, lookup_timeout_seconds=0.2)
    obj = lora_deployment("8Gi", model="acme/private-qwen")
    first = await hook.post(MUTATE_PATH, review(obj))  # times out: admitted unsized
    assert "patch" not in first
    await asyncio.sleep(0.5)  # the load went on and filled the cache
    second = await hook.post(MUTATE_PATH, review(obj))
    assert parse_quantity(limit_of(jsonpatch.apply_patch(obj, decode_patch(second)))) > 8 * GiB
    assert lookup.loads == 1


async def test_metrics_listener_can_be_disabled(start_webhook):
    hook = await start_webhook(metrics_port=-1)
    assert hook.metrics_port is None
    resp = await hook.post(MUTATE_PATH, review(nginx_deployment()))
    assert resp["allowed"] is True


async def test_an_answer_that_cannot_be_encoded_still_admits(start_webhook, monkeypatch):
    import vllm_sizer.operator.webhook.admission as mod

    monkeypatch.setattr(mod, "answer_for", lambda route, uid, decision, extra=(): {
        "apiVersion": mod.API_VERSION, "kind": "AdmissionReview",
        "response": {"uid": uid, "allowed": True, "bad": {1, 2}}})
    hook = await start_webhook()
    resp = await hook.post(MUTATE_PATH, review(lora_deployment("8Gi")))
    assert resp["allowed"] is True and "patch" not in resp
    assert resp["warnings"] == ["vllm-sizer: internal error (the answer could not be encoded); admitted unchanged"]
