"""hostNetwork + URL mode: both roles on one node's network, distinct ports, a rollout that can
finish with host ports, probes aimed at the bind address, Kopf's liveness endpoint bound there,
webhook configurations by URL."""

from __future__ import annotations

from .conftest import by_kind, one, render_objects

HOST_VALUES = {
    "webhook": {"hostNetwork": True, "bindAddress": "127.0.0.1", "port": 19443,
                "metricsPort": 19080, "url": "https://127.0.0.1:19443", "replicas": 1,
                "pdb": {"enabled": False}},
    "controller": {"hostNetwork": True, "bindAddress": "127.0.0.1", "metricsPort": 19082,
                   "livenessPort": 19083},
    "dnsPolicy": "Default",
}


def deployments(objs):
    return {d["metadata"]["labels"]["app.kubernetes.io/component"]: d
            for d in by_kind(objs, "Deployment")}


def env(c):
    return {e["name"]: e.get("value") for e in c["env"]}


def test_defaults_keep_the_pod_network_and_distinct_ports():
    deps = deployments(render_objects())
    ports = []
    for dep in deps.values():
        spec = dep["spec"]["template"]["spec"]
        assert "hostNetwork" not in spec and spec["dnsPolicy"] == "ClusterFirst"
        ports += [p["containerPort"] for p in spec["containers"][0]["ports"]]
    assert len(ports) == len(set(ports)), ports  # both roles fit one node's network
    assert deps["webhook"]["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
    assert deps["controller"]["spec"]["template"]["spec"]["containers"][0]["args"] == \
        ["--role", "controller", "--liveness", "http://0.0.0.0:8083/healthz"]
    for cfg in by_kind(render_objects(), "MutatingWebhookConfiguration"):
        assert "service" in cfg["webhooks"][0]["clientConfig"]


def test_host_network_and_url_mode():
    objs = render_objects(HOST_VALUES)
    deps = deployments(objs)
    wh = deps["webhook"]["spec"]
    assert wh["strategy"] == {"type": "RollingUpdate",
                              "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    for role, dep in deps.items():
        spec = dep["spec"]["template"]["spec"]
        assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "Default"
        c = spec["containers"][0]
        e = env(c)
        assert e["VLLM_SIZER_WEBHOOK_HOST"] == "127.0.0.1"
        for probe in ("livenessProbe", "readinessProbe"):
            if probe in c:
                assert c[probe]["httpGet"]["host"] == "127.0.0.1", (role, probe)
    wc = deps["webhook"]["spec"]["template"]["spec"]["containers"][0]
    assert {p["name"]: p["containerPort"] for p in wc["ports"]} == {"webhook": 19443, "metrics": 19080}
    assert env(wc)["VLLM_SIZER_WEBHOOK_PORT"] == "19443"
    assert env(wc)["VLLM_SIZER_WEBHOOK_URL"] == "https://127.0.0.1:19443"
    cc = deps["controller"]["spec"]["template"]["spec"]["containers"][0]
    assert cc["args"] == ["--role", "controller", "--liveness", "http://127.0.0.1:19083/healthz"]
    assert env(cc)["VLLM_SIZER_METRICS_PORT"] == "19082"
    for kind, path in (("MutatingWebhookConfiguration", "/mutate"),
                       ("ValidatingWebhookConfiguration", "/validate")):
        cfg = one(objs, kind)["webhooks"][0]["clientConfig"]
        assert cfg == {"url": "https://127.0.0.1:19443" + path}


def test_service_links_cannot_shadow_the_settings():
    """The Services vllm-sizer-webhook / vllm-sizer-metrics would inject
    VLLM_SIZER_WEBHOOK_PORT=tcp://IP:443 and VLLM_SIZER_METRICS_PORT=tcp://IP:8080 into every pod
    of the namespace (Kubernetes' docker-link variables), which the operator reads as its ports
    and refuses to start with (seen on a real kubelet): both roles turn them off."""
    for objs in (render_objects(), render_objects(HOST_VALUES)):
        services = {s["metadata"]["name"] for s in by_kind(objs, "Service")}
        assert {"vllm-sizer-webhook", "vllm-sizer-metrics"} <= services
        for dep in by_kind(objs, "Deployment"):
            assert dep["spec"]["template"]["spec"]["enableServiceLinks"] is False
