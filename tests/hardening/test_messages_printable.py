"""Messages and warnings carry names and values escaped: the API server drops a Warning with a
control character in it (net.NewWarningHeader), and a terminal interprets one."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.hardening.hostile_objects import (
    IMG,
    deployment,
)
from vllm_sizer.operator.settings import OperatorSettings
from vllm_sizer.operator.webhook.admission import MUTATE, VALIDATE, Admission
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads import ReadContext

GiB = 2**30


# ---------------------------------------------------------------- names with control characters
WEIRD = ["\x1b[31mred", "a\nb", "\u202eevil", "\x00", "\ud800", "é" * 300, "💥"]


@pytest.mark.parametrize("weird", WEIRD)
def test_control_characters_in_names_never_reach_a_message(weird):
    obj = deployment({"image": IMG, "command": ["vllm", "serve", "Qwen/Qwen3-0.6B",
                                                "--max-model-len", weird],
                      "resources": {"limits": {"memory": "1Gi"}}}, name=weird)
    obj["spec"]["template"]["spec"]["containers"][0]["name"] = weird
    d = review_object(obj)
    # the API server drops a Warning whose text holds a control character (net.NewWarningHeader)
    texts = d.warnings + [d.message]
    assert all(t.isprintable() for t in texts), [t for t in texts if not t.isprintable()]
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "u", "kind": {"group": "apps", "kind": "Deployment"},
                                   "operation": "CREATE", "namespace": "team-a", "object": obj}})
    if weird == "\ud800":
        return  # the API server (Go) sends U+FFFD for a lone surrogate, never the surrogate
    adm = Admission(OperatorSettings())
    for route in (MUTATE, VALIDATE):
        status, out, _ = asyncio.run(adm.handle(route, body.encode()))
        resp = json.loads(out)["response"]
        assert status == 200 and resp["allowed"] is True
        assert not any("internal error" in w for w in resp.get("warnings") or [])
        assert all(w.isprintable() for w in resp.get("warnings") or [])

def test_a_yaml_error_reaches_the_webhook_warnings_on_one_line():
    """PyYAML's messages span lines; the API server drops a Warning with a newline in it, so
    the one diagnostic that says why the config was not read would never reach the person."""
    ws = {"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace",
          "metadata": {"name": "w", "namespace": "a"},
          "inference": {"preset": {"name": "phi-4"}, "config": "c"}}
    ctx = ReadContext(config_maps={"c": {"inference_config.yaml": "vllm:\n\tmax-model-len: 4\n"}})
    d = review_object(ws, ctx)
    said = [w for w in d.warnings if "is not YAML" in w]
    assert said and all(w.isprintable() for w in d.warnings), d.warnings


# ---------------------------------------------------------------- huge values in messages
@pytest.mark.parametrize("args", [
    ["--max-num-seqs", "9" * 60_000 + "x"],       # vLLM's own error text quotes the value too
    ["--" + "y" * 60_000, "1"],                   # an unknown flag's name
    ["--dtype", "z" * 60_000],
])
def test_a_huge_value_is_shown_clipped_in_every_message(args):
    obj = deployment({"image": IMG, "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", *args],
                      "resources": {"limits": {"memory": "64Gi"}}})
    decision = review_object(obj, ReadContext())
    texts = [decision.message, *decision.warnings,
             *(str(d) for c in decision.containers for d in c.workload.diagnostics)]
    assert any("more characters)" in t for t in texts), texts
    assert max(len(t) for t in texts) < 2_000, [len(t) for t in texts]
