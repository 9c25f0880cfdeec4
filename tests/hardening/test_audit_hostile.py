"""`vllm-sizer audit` over hostile cluster objects (a lister over in-memory objects): a pod
whose ownerReference carries another namespace's uid, objects of odd shapes among the listed,
mutated corpus objects; rows never mix namespaces and the audit never stops."""

from __future__ import annotations

import random

from vllm_sizer.cli.audit import audit, render_json, render_markdown, render_text, render_yaml

from ..cli.test_audit import VLLM, cluster, deployment, lister_for, owned
from .corpus_mutants import _wire, corpus, mutate


def test_a_pod_claiming_another_namespaces_owner_stays_in_its_own():
    """Tenant `evil` makes a pod whose controller reference holds the uid of tenant `llm`'s
    Deployment (the API server does not check a uid): its OOMKills must not mark `llm`'s
    Deployment OOMKilled, and the pod is not hidden from its own namespace's rows."""
    objs = cluster()
    victim = deployment("victim", VLLM, "u-victim")
    pod = owned("Pod", "evil-pod", "u-evil", "Deployment", "victim", "u-victim",
                {"containers": [VLLM]})
    pod["metadata"]["namespace"] = "evil"
    pod["status"] = {"containerStatuses": [{
        "name": "vllm", "restartCount": 9,
        "lastState": {"terminated": {"reason": "OOMKilled",
                                     "finishedAt": "2026-11-30T10:00:00Z"}}}]}
    objs["deployments"].append(victim)
    objs["pods"].append(pod)
    rows, _ = audit(lister_for(objs), None)
    mine = [r for r in rows if r.name == "victim"]
    assert mine and all(r.risk != "oomkilled" and r.namespace == "llm" for r in mine), mine
    assert [r for r in rows if r.namespace == "evil" and r.name == "evil-pod"]


def test_mutated_corpus_objects_never_stop_the_audit():
    rng = random.Random(11)
    sources = corpus()
    objs: dict[str, list] = {"deployments": [], "pods": [], "statefulsets": []}
    plural = {"Deployment": "deployments", "Pod": "pods", "StatefulSet": "statefulsets"}
    for s in rng.sample([s for s in sources if s.doc.get("kind") in plural], 40):
        try:
            m = _wire(mutate(s.doc, rng)[0])  # as the API server sends it
        except (ValueError, RecursionError, TypeError):
            continue
        if not isinstance(m, dict) or not isinstance(m.get("metadata"), dict):
            continue  # the API server never sends one
        m["metadata"].setdefault("uid", f"u{rng.random()}")
        objs[plural[s.doc["kind"]]].append(m)
    rows, problems = audit(lister_for(objs), None)
    for render in (render_json, render_yaml, render_markdown, render_text):
        assert isinstance(render(rows), str)
