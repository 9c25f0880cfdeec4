"""vllm-sizer audit with a lister over in-memory objects (the e2e suite runs it against a real
API server): verdicts, OOM history from pod statuses, owner mapping, risk order, outputs."""

import json
import copy

import yaml

from vllm_sizer.cli import audit as audit_mod
from vllm_sizer.cli.audit import RBAC_RULES, audit, render_markdown, render_text

VLLM = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
        "command": ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "8192"],
        "resources": {"limits": {"nvidia.com/gpu": 1, "memory": "64Gi"}}}


def deployment(name, container, uid):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "llm", "uid": uid},
            "spec": {"template": {"spec": {"containers": [container]}}}}


def owned(kind, name, uid, owner_kind, owner_name, owner_uid, spec=None):
    return {"apiVersion": "apps/v1" if kind != "Pod" else "v1", "kind": kind,
            "metadata": {"name": name, "namespace": "llm", "uid": uid,
                         "ownerReferences": [{"kind": owner_kind, "name": owner_name,
                                              "uid": owner_uid, "controller": True}]},
            "spec": spec or {}}


def cluster():
    ok = deployment("fits", VLLM, "u-ok")
    small = copy.deepcopy(VLLM)
    small["resources"]["limits"]["memory"] = "2Gi"
    under = deployment("undersized", small, "u-under")
    unknown = copy.deepcopy(VLLM)
    unknown["command"] = ["vllm", "serve", "acme/private-model-13b"]
    unk = deployment("unknown", unknown, "u-unk")
    oom = deployment("oomed", VLLM, "u-oom")
    rs = owned("ReplicaSet", "oomed-abc", "u-rs", "Deployment", "oomed", "u-oom",
               {"template": {"spec": {"containers": [VLLM]}}})
    pod = owned("Pod", "oomed-abc-x1", "u-pod", "ReplicaSet", "oomed-abc", "u-rs",
                {"containers": [VLLM]})
    pod["status"] = {"containerStatuses": [{
        "name": "vllm", "restartCount": 3,
        "lastState": {"terminated": {"reason": "OOMKilled", "finishedAt": "2026-11-30T10:00:00Z"}},
        "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}
    nginx = deployment("web", {"name": "nginx", "image": "nginx:1.27"}, "u-web")
    return {"deployments": [ok, under, unk, oom, nginx], "replicasets": [rs], "pods": [pod]}


def lister_for(objs, calls=None, forbidden=()):
    def lister(api, plural, namespace, selector):
        if calls is not None:
            calls.append((plural, namespace))
        if plural in forbidden:
            err = Exception("forbidden")
            err.status = 403
            raise err
        kind = audit_mod._KIND_OF[plural]
        return [dict(o, kind=kind) for o in objs.get(plural, [])
                if namespace is None or o["metadata"].get("namespace") == namespace]
    return lister


def test_rows_verdicts_and_order():
    rows, problems = audit(lister_for(cluster()), None)
    assert not problems
    by_name = {r.name: r for r in rows}
    assert set(by_name) == {"fits", "undersized", "unknown", "oomed"}  # nginx untouched, RS/pod folded
    assert by_name["oomed"].risk == "oomkilled"
    o = by_name["oomed"].oomkills
    assert len(o) == 1 and o[0].pod == "oomed-abc-x1" and o[0].limit == "64Gi" and o[0].restarts == 3
    assert by_name["undersized"].risk == "undersized"
    assert by_name["undersized"].needed_limit_bytes > by_name["undersized"].limit_bytes
    assert by_name["unknown"].risk == "cannot-size" and by_name["unknown"].estimate_bytes is None
    assert any("acme/private-model-13b" in n for n in by_name["unknown"].notes)
    assert by_name["fits"].risk == "ok" and by_name["fits"].estimate_bytes <= by_name["fits"].limit_bytes
    assert [r.name for r in rows] == ["oomed", "undersized", "unknown", "fits"]


def test_namespace_scope_is_passed_to_every_listing():
    calls = []
    audit(lister_for(cluster(), calls), "llm")
    assert calls and all(ns == "llm" for _, ns in calls)


def test_a_forbidden_kind_is_reported_not_fatal():
    rows, problems = audit(lister_for(cluster(), forbidden=("leaderworkersets",)), None)
    assert rows and any("leaderworkersets" in p and "403" in p for p in problems)


def test_outputs_and_exit_code(monkeypatch, capsys):
    monkeypatch.setattr(audit_mod, "kube_lister", lambda *a: lister_for(cluster()))
    from vllm_sizer.cli.main import main
    assert main(["audit", "-o", "json"]) == 1  # something is at risk
    data = json.loads(capsys.readouterr().out)
    assert data[0]["risk"] == "oomkilled" and data[0]["oomkills"][0]["time"]
    assert main(["audit", "-o", "yaml", "-n", "llm"]) == 1
    assert yaml.safe_load(capsys.readouterr().out)[0]["name"] == "oomed"
    rows, _ = audit(lister_for(cluster()), None)
    assert "| oomkilled | Deployment llm/oomed |" in render_markdown(rows)
    assert render_text(rows).splitlines()[0].startswith("RISK")
    ok_only = {"deployments": [cluster()["deployments"][0]]}
    monkeypatch.setattr(audit_mod, "kube_lister", lambda *a: lister_for(ok_only))
    assert main(["audit"]) == 0


def test_unreachable_cluster_exits_2(capsys, tmp_path):
    from vllm_sizer.cli.main import main
    bad = tmp_path / "kubeconfig"
    bad.write_text("not: a kubeconfig")
    assert main(["audit", "--kubeconfig", str(bad)]) == 2
    assert "vllm-sizer audit:" in capsys.readouterr().err


def test_rbac_rules_are_read_only_and_cover_every_listed_kind():
    verbs = {v for r in RBAC_RULES for v in r["verbs"]}
    assert verbs == {"get", "list"}
    granted = {(r["apiGroups"][0], res) for r in RBAC_RULES for res in r["resources"]}
    for api, plural, *_ in (*audit_mod.WORKLOAD_RESOURCES, *audit_mod.CONTEXT_RESOURCES):
        group = api.split("/")[0] if "/" in api else ""
        assert (group, plural) in granted


def test_an_oomkilled_ray_worker_pod_marks_its_pod_total_row():
    # kuberay's gemma4 sample: 8 engine replicas on one 8-GPU worker pod, container "llm"; the
    # pod total row ("llm (pod total)") is what the pod's limit must hold, so its OOMKills
    # belong to that row too (matched by the pod's container name)
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "data/published/kuberay/rayservice-high-throughput-gemma4.yaml"
    (svc,) = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "RayService"]
    svc["metadata"].update(namespace="llm", uid="u-svc")
    worker = svc["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    pod = owned("Pod", "gemma-worker-x1", "u-pod", "RayService", svc["metadata"]["name"], "u-svc",
                {"containers": [worker]})
    pod["status"] = {"containerStatuses": [{
        "name": worker["name"], "restartCount": 1,
        "lastState": {"terminated": {"reason": "OOMKilled", "finishedAt": "2026-12-01T10:00:00Z"}},
        "state": {"running": {}}}]}
    rows, _ = audit(lister_for({"rayservices": [svc], "pods": [pod]}), None)
    total = [r for r in rows if r.container.endswith("(pod total)")]
    assert total and total[0].container == worker["name"] + " (pod total)"
    assert total[0].risk == "oomkilled" and total[0].oomkills[0].pod == "gemma-worker-x1"
