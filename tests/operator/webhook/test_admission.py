"""admission.py without a server: parsing, the answer shapes, the route matrix, and a fuzz of
`Admission.handle` (no exception escapes, no patch for non-vLLM objects, patches apply, are
idempotent and never lower a limit)."""

from __future__ import annotations

import asyncio
import base64
import json

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from vllm_sizer.operator.settings import OperatorSettings
from vllm_sizer.operator.webhook.admission import (API_VERSION, MUTATE, VALIDATE, Admission,
                                                   BadReview, answer_for, parse_review,
                                                   review_response)
from vllm_sizer.policy.review import ObjectDecision
from vllm_sizer.workloads.quantity import parse_quantity
from vllm_sizer.workloads.reader import read_workloads

from .conftest import decode_patch, lora_deployment, nginx_deployment, review


def test_parse_review_reads_the_request():
    body = review(lora_deployment(), "UPDATE", old=nginx_deployment(), dry_run=True, uid="abc")
    req = parse_review(json.dumps(body).encode())
    assert (req.uid, req.kind, req.group, req.operation) == ("abc", "Deployment", "apps", "UPDATE")
    assert req.namespace == "llm" and req.name == "qwen3-lora-cpu" and req.dry_run is True
    assert req.sub_resource is None and req.object["kind"] == "Deployment"
    assert req.old_object["metadata"]["name"] == "web"
    assert parse_review(body).uid == "abc"  # an already parsed dict too
    scale = review({"kind": "Scale"}, "UPDATE", sub_resource="scale")
    assert parse_review(scale).sub_resource == "scale"


def test_parse_review_accepts_integers_beyond_64_bits():
    body = review(nginx_deployment())
    body["request"]["object"]["spec"]["replicas"] = 10**30
    # (orjson reads it as a float, the stdlib as an int: either way, no 400)
    assert float(parse_review(json.dumps(body).encode()).object["spec"]["replicas"]) == 1e30


@pytest.mark.parametrize("body", [b"nope", b"null", b'"x"', b'{"apiVersion": "v1"}',
                                  b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": []}',
                                  b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": ""}}'])
def test_parse_review_refuses(body):
    with pytest.raises(BadReview):
        parse_review(body)


def test_response_shapes():
    assert review_response("u") == {"apiVersion": API_VERSION, "kind": "AdmissionReview",
                                     "response": {"uid": "u", "allowed": True}}
    ops = [{"op": "add", "path": "/metadata/labels", "value": {"a": "é"}}]
    r = review_response("u", patch=ops, warnings=["w1", "w1", "w2"])["response"]
    assert r["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(r["patch"])) == ops
    assert r["warnings"] == ["w1", "w2"]
    d = review_response("u", False, code=403, message="no", patch=ops)["response"]
    assert d == {"uid": "u", "allowed": False, "status": {"code": 403, "reason": "Forbidden", "message": "no"}}
    many = review_response("u", warnings=[f"w{i}" for i in range(100)])["response"]["warnings"]
    assert len(many) == 40 and many[-1] == "... and 61 more warnings"


def _decision(verdict, patch=(), message="", warnings=()):
    return ObjectDecision(kind="Deployment", namespace="llm", name="x", verdict=verdict,
                          containers=[], patch=list(patch), message=message, warnings=list(warnings))


OPS = [{"op": "replace", "path": "/spec/x", "value": 1}]


@pytest.mark.parametrize("verdict, route, allowed, patched, warned", [
    ("mutate", MUTATE, True, True, True),
    ("allow", MUTATE, True, True, False),  # annotations only
    ("deny", MUTATE, True, False, False),
    ("unknown", MUTATE, True, False, False),
    ("skip", MUTATE, True, False, False),
    ("deny", VALIDATE, False, False, True),
    ("unknown", VALIDATE, True, False, True),
    ("allow", VALIDATE, True, False, True),
    ("skip", VALIDATE, True, False, True),
])
def test_route_matrix(verdict, route, allowed, patched, warned):
    d = _decision(verdict, OPS if verdict in ("mutate", "allow") else (), "denied because", ["a warning"])
    r = answer_for(route, "u", d)["response"]
    assert r["allowed"] is allowed
    assert ("patch" in r) is patched
    assert ("warnings" in r) is warned
    if not allowed:
        assert r["status"] == {"code": 403, "reason": "Forbidden", "message": "denied because"}


def run(coro):
    return asyncio.run(coro)


def test_handle_returns_400_for_bad_bodies_and_200_otherwise():
    a = Admission(OperatorSettings())
    status, body, ctype = run(a.handle(MUTATE, b"{"))
    assert status == 400 and ctype == "text/plain" and body.startswith(b"vllm-sizer: bad AdmissionReview")
    status, body, ctype = run(a.handle(MUTATE, json.dumps(review(nginx_deployment())).encode()))
    assert status == 200 and ctype == "application/json"


def test_non_vllm_objects_skip_the_decision_entirely(monkeypatch):
    import vllm_sizer.operator.webhook.admission as mod

    def no_review(*a, **k):
        raise AssertionError("review_object must not run for a non-vLLM object")
    monkeypatch.setattr(mod, "review_object", no_review)
    a = Admission(OperatorSettings())
    status, body, _ = run(a.handle(MUTATE, json.dumps(review(nginx_deployment())).encode()))
    assert json.loads(body)["response"] == {"uid": json.loads(body)["response"]["uid"], "allowed": True}


def test_mode_off_never_asks_the_lookup():
    class Lookup:
        loads = 0

        def get(self, m):
            return None

        async def load(self, m):
            Lookup.loads += 1

    obj = lora_deployment(model="acme/private", annotations={"vllm-sizer.io/mode": "off"})
    run(Admission(OperatorSettings(), Lookup()).handle(VALIDATE, json.dumps(review(obj)).encode()))
    run(Admission(OperatorSettings(mode="off"), Lookup()).handle(VALIDATE,
                                                                 json.dumps(review(lora_deployment(model="acme/p"))).encode()))
    assert Lookup.loads == 0


# ---- fuzz ------------------------------------------------------------------------------------

FLAGS = ["--max-num-batched-tokens", "--max-num-seqs", "--max-model-len", "--max-lora-rank",
         "--enable-lora", "--tensor-parallel-size", "--dtype", "--gpu-memory-utilization",
         "--kv-cache-memory-bytes", "--max-loras", "--enforce-eager", "--no-enable-prefix-caching",
         "--device", "--model", "--config", "-tp", "--served-model-name"]
VALUES = st.one_of(st.sampled_from(["0", "-1", "1", "2394", "4k", "4K", "1e30", "abc", "auto", "bfloat16",
                                    "0.9", "cpu", "Qwen/Qwen3-0.6B", "acme/x", "", "∞", "$(X)", "99999999999999999999"]),
                   st.text(max_size=12))
ARGS = st.lists(st.one_of(st.sampled_from(FLAGS), VALUES,
                          st.builds(lambda f, v: f"{f}={v}", st.sampled_from(FLAGS), VALUES)), max_size=14)
MEMORY = st.one_of(st.none(), st.sampled_from(["8Gi", "512Mi", "1", "0", "100Ti", "-1Gi", "abc", "12G", "1e3"]),
                   st.integers(min_value=-10, max_value=2**70))
IMAGES = st.sampled_from(["vllm/vllm-openai:v0.11.0", "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.11.0",
                          "vllm/vllm-openai:latest", "nginx:1.27", "busybox", "kserve/huggingfaceserver:v0.15.0"])
COMMANDS = st.sampled_from([None, ["vllm", "serve", "Qwen/Qwen3-0.6B"], ["vllm", "serve"],
                            ["python3", "-m", "vllm.entrypoints.openai.api_server"],
                            ["sh", "-c"], ["sleep", "3600"], []])
# Unique names: duplicate env names are covered by the xfail below.
ENV = st.lists(st.fixed_dictionaries({"name": st.sampled_from(["VLLM_CPU_KVCACHE_SPACE", "X", "VLLM_TARGET_DEVICE"]),
                                      "value": st.sampled_from(["4", "0", "-2", "cpu", "lots", ""])}),
               max_size=3, unique_by=lambda e: e["name"])


@st.composite
def containers(draw):
    c = {"name": draw(st.sampled_from(["vllm", "side", "ünï"])), "image": draw(IMAGES)}
    cmd = draw(COMMANDS)
    if cmd is not None:
        c["command"] = cmd
    args = draw(ARGS)
    if cmd == ["sh", "-c"]:
        args = ["set -e\nexec vllm serve Qwen/Qwen3-0.6B " + " ".join(args)]
    c["args"] = args
    c["env"] = draw(ENV)
    lim, req = draw(MEMORY), draw(MEMORY)
    res = {}
    if lim is not None:
        res["limits"] = {"memory": lim}
    if req is not None:
        res["requests"] = {"memory": req}
    if res:
        c["resources"] = res
    return c


@st.composite
def objects(draw):
    cs = draw(st.lists(containers(), min_size=1, max_size=3))
    for i, c in enumerate(cs):  # the API server rejects duplicate container names
        c["name"] = f"{c.get('name', 'c')}-{i}"
    ann = draw(st.dictionaries(st.sampled_from(["vllm-sizer.io/mode", "vllm-sizer.io/headroom", "vllm-sizer.io/skip", "x"]),
                               st.sampled_from(["enforce", "warn", "off", "mutate", "true", "10%", "-3", "nan", "bogus"]),
                               max_size=2))
    kind = draw(st.sampled_from(["Deployment", "StatefulSet", "Job"]))
    api = "batch/v1" if kind == "Job" else "apps/v1"
    return {"apiVersion": api, "kind": kind,
            "metadata": {"name": "f", "namespace": "llm", "annotations": ann},
            "spec": {"template": {"metadata": {}, "spec": {"containers": cs}}}}


def _limits(obj):
    out = []
    for c in obj["spec"]["template"]["spec"]["containers"]:
        v = (c.get("resources") or {}).get("limits", {}).get("memory")
        try:
            out.append(parse_quantity(v) if v is not None else None)
        except Exception:  # noqa: BLE001
            out.append("unparseable")
    return out


_ADMISSION = Admission(OperatorSettings())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=objects(), operation=st.sampled_from(["CREATE", "UPDATE"]), route=st.sampled_from([MUTATE, VALIDATE]))
def test_fuzz_reviews(obj, operation, route):
    body = json.dumps(review(obj, operation, old=obj if operation == "UPDATE" else None)).encode()
    status, out, _ = run(_ADMISSION.handle(route, body))
    assert status == 200
    resp = json.loads(out)["response"]
    assert isinstance(resp["allowed"], bool)
    if resp.get("warnings"):
        assert not any("internal error" in w for w in resp["warnings"]), resp["warnings"]
    ops = decode_patch(resp)
    if not read_workloads(obj):
        assert ops is None and resp["allowed"] is True
        return
    if ops is None:
        return
    assert route == MUTATE
    mutated = jsonpatch.apply_patch(obj, ops)
    for before, after in zip(_limits(obj), _limits(mutated)):
        if isinstance(before, int) and isinstance(after, int):
            assert after >= before  # never lowered
    # idempotent: reviewing the mutated object changes nothing more
    again_body = review(mutated, operation, old=mutated if operation == "UPDATE" else None)
    status2, out2, _ = run(_ADMISSION.handle(MUTATE, json.dumps(again_body).encode()))
    again = decode_patch(json.loads(out2)["response"])
    assert again is None or jsonpatch.apply_patch(mutated, again) == mutated


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                      st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5)),
                                   lambda ch: st.one_of(st.lists(ch, max_size=4), st.dictionaries(st.text(max_size=5), ch, max_size=4)),
                                   max_leaves=20).map(lambda v: json.dumps({"apiVersion": API_VERSION, "kind": "AdmissionReview",
                                                                            "request": {"uid": "u", "operation": "CREATE", "object": v}}).encode())))
def test_fuzz_garbage_never_escapes(data):
    status, out, _ = run(_ADMISSION.handle(VALIDATE, data))
    assert status in (200, 400)
    if status == 200:
        assert json.loads(out)["response"]["allowed"] is True


JUNK = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
                    lambda ch: st.one_of(st.lists(ch, max_size=3), st.dictionaries(st.text(max_size=5), ch, max_size=3)),
                    max_leaves=8)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=objects(), metadata=st.one_of(JUNK, st.fixed_dictionaries({"annotations": JUNK, "namespace": JUNK})),
       route=st.sampled_from([MUTATE, VALIDATE]))
def test_fuzz_odd_metadata_on_vllm_objects(obj, metadata, route):
    obj["metadata"] = metadata
    body = review(obj, namespace="llm")
    status, out, _ = run(_ADMISSION.handle(route, json.dumps(body).encode()))
    assert status == 200
    resp = json.loads(out)["response"]
    assert resp["allowed"] is True or resp["status"]["code"] == 403
    assert not any("internal error" in w for w in resp.get("warnings", [])), resp
    if "patch" in resp:
        jsonpatch.apply_patch(obj, decode_patch(resp))


@pytest.mark.parametrize("metadata", [[], True, {"annotations": 1}, {"annotations": ["a"]}])
def test_review_object_with_non_object_metadata_does_not_raise(metadata):
    """Found by the fuzz above (fixed in policy/review.py): a regression guard."""
    from vllm_sizer.operator.settings import OperatorSettings as S
    from vllm_sizer.policy.review import review_object
    obj = lora_deployment("8Gi")
    obj["metadata"] = metadata
    review_object(obj, None, S().policy())


def test_unknown_verdict_keeps_the_annotations_of_the_containers_that_were_sized():
    d = _decision("unknown", OPS, warnings=["side: cannot size: unknown model"])
    r = answer_for(MUTATE, "u", d)["response"]
    assert "patch" in r and "warnings" not in r
    assert "patch" not in answer_for(MUTATE, "u", _decision("deny", OPS, "no"))["response"]


# Regression: a duplicated VLLM_CPU_KVCACHE_SPACE (the kubelet uses the last entry) is pinned
# on that last entry, so a second review changes nothing.
def test_duplicate_kv_env_mutation_is_idempotent():
    obj = lora_deployment("8Gi")
    c = obj["spec"]["template"]["spec"]["containers"][0]
    c["image"], c["args"] = "vllm/vllm-openai:latest", []
    c["env"] = [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "4"}, {"name": "VLLM_CPU_KVCACHE_SPACE", "value": "-2"},
                {"name": "VLLM_TARGET_DEVICE", "value": "cpu"}]
    first = decode_patch(json.loads(run(_ADMISSION.handle(MUTATE, json.dumps(review(obj)).encode()))[1])["response"])
    mutated = jsonpatch.apply_patch(obj, first)
    again = decode_patch(json.loads(run(_ADMISSION.handle(MUTATE, json.dumps(review(mutated)).encode()))[1])["response"])
    assert again is None
