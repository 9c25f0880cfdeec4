"""Render the chart for a matrix of values and check every object: Kubernetes JSON schemas of
several versions (kubernetes-validate, strict), required fields of the custom kinds, the
restricted security context, HA shape, certificates, RBAC and the settings contract."""

from __future__ import annotations

import base64
import re

import pytest

from .conftest import MATRIX, REPO, by_kind, one, render_docs, render_objects, requires_helm

pytestmark = requires_helm

kubernetes_validate = pytest.importorskip("kubernetes_validate")
from kubernetes_validate import utils as kv_utils

# matchConditions are GA (admissionregistration.k8s.io/v1) from 1.30: the chart's kubeVersion.
# The oldest supported, a middle one and the newest that kubernetes-validate ships.
_MINORS = sorted({kv_utils.major_minor(v) for v in kv_utils.all_versions()
                  if tuple(map(int, kv_utils.major_minor(v).split("."))) >= (1, 30)},
                 key=lambda v: tuple(map(int, v.split("."))))
K8S_VERSIONS = tuple(dict.fromkeys([_MINORS[0], _MINORS[len(_MINORS) // 2], _MINORS[-1]])) if _MINORS else ()


def test_three_kubernetes_versions() -> None:
    assert len(K8S_VERSIONS) >= 3, f"kubernetes-validate ships too few schemas >= 1.30: {_MINORS}"
CUSTOM_KINDS = {("cert-manager.io/v1", "Certificate"), ("cert-manager.io/v1", "Issuer"),
                ("monitoring.coreos.com/v1", "ServiceMonitor")}
NS = "vllm-sizer"


# ---- schemas -----------------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(MATRIX))
@pytest.mark.parametrize("k8s", K8S_VERSIONS)
def test_builtin_kinds_validate_strict(case: str, k8s: str) -> None:
    objs = render_objects(MATRIX[case])
    assert objs, "nothing rendered"
    checked = 0
    for obj in objs:
        if (obj["apiVersion"], obj["kind"]) in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(obj, k8s, strict=True)
        except kv_utils.ValidationError as exc:
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} invalid for Kubernetes {k8s}: "
                        f"{exc.message} at {list(exc.absolute_path)}")
        except kv_utils.SchemaNotFoundError as exc:
            pytest.fail(f"{exc.message}: not a built-in kind, and not a known custom kind")
        checked += 1
    assert checked >= 8


def test_strict_validation_rejects_unknown_fields() -> None:
    """Negative control: strict mode does reject what a typo in a template would produce."""
    dep = one(render_objects(), "Deployment", "vllm-sizer-webhook")
    dep["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
    with pytest.raises(kv_utils.ValidationError):
        kubernetes_validate.validate(dep, K8S_VERSIONS[0], strict=True)


def test_only_expected_kinds() -> None:
    kinds = sorted({o["kind"] for o in render_objects()})
    assert kinds == sorted(["ClusterRole", "ClusterRoleBinding", "Deployment",
                            "MutatingWebhookConfiguration", "PodDisruptionBudget", "Role",
                            "RoleBinding", "Service", "ServiceAccount",
                            "ValidatingWebhookConfiguration"])


# ---- custom kinds: required fields ------------------------------------------------------------

def test_cert_manager_objects() -> None:
    objs = render_objects(MATRIX["cert-manager"])
    issuer = one(objs, "Issuer")
    assert issuer["apiVersion"] == "cert-manager.io/v1"
    assert issuer["metadata"]["namespace"] == NS
    issuer_types = {"selfSigned", "ca", "acme", "vault", "venafi"}
    assert len(issuer_types & set(issuer["spec"])) == 1
    cert = one(objs, "Certificate")
    spec = cert["spec"]
    assert cert["apiVersion"] == "cert-manager.io/v1" and cert["metadata"]["namespace"] == NS
    # cert-manager's CRD requires secretName and issuerRef.name; one of dnsNames/commonName/...
    assert spec["secretName"] == "vllm-sizer-webhook-tls"
    assert spec["issuerRef"] == {"name": issuer["metadata"]["name"], "kind": "Issuer",
                                 "group": "cert-manager.io"}
    svc = one(objs, "Service", "vllm-sizer-webhook")["metadata"]["name"]
    assert f"{svc}.{NS}.svc" in spec["dnsNames"]  # the name kube-apiserver dials
    assert "server auth" in spec["usages"]
    assert re.fullmatch(r"\d+h", spec["duration"]) and re.fullmatch(r"\d+h", spec["renewBefore"])
    for cfg in by_kind(objs, "MutatingWebhookConfiguration") + by_kind(objs, "ValidatingWebhookConfiguration"):
        assert cfg["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == \
            f"{NS}/{cert['metadata']['name']}"
        assert "caBundle" not in cfg["webhooks"][0]["clientConfig"]
    # The webhook pods mount the Certificate's Secret.
    dep = one(objs, "Deployment", "vllm-sizer-webhook")
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert vols["certs"]["secret"]["secretName"] == spec["secretName"]
    assert _env(dep)["VLLM_SIZER_CERT_MODE"] == "cert-manager"


def test_cert_manager_external_issuer() -> None:
    objs = render_objects(MATRIX["cert-manager-clusterissuer"])
    assert not by_kind(objs, "Issuer")
    assert one(objs, "Certificate")["spec"]["issuerRef"] == {
        "name": "ca-issuer", "kind": "ClusterIssuer", "group": "cert-manager.io"}


def test_service_monitor() -> None:
    objs = render_objects(MATRIX["metrics-servicemonitor"])
    sm = one(objs, "ServiceMonitor")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["metadata"]["labels"]["release"] == "prom"
    # Required by the CRD: spec.selector; endpoints must name the Service's port.
    metrics_svc = one(objs, "Service", "vllm-sizer-metrics")
    labels = metrics_svc["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items())
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [NS]}
    port_names = {p["name"] for p in metrics_svc["spec"]["ports"]}
    assert sm["spec"]["endpoints"] and all(e["port"] in port_names for e in sm["spec"]["endpoints"])
    from vllm_sizer.operator.settings import METRICS_PATH
    assert sm["spec"]["endpoints"][0]["path"] == METRICS_PATH
    # The metrics Service selects both roles.
    sel = metrics_svc["spec"]["selector"]
    for dep in by_kind(objs, "Deployment"):
        pod_labels = dep["spec"]["template"]["metadata"]["labels"]
        assert all(pod_labels.get(k) == v for k, v in sel.items())
        c = dep["spec"]["template"]["spec"]["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert ports["metrics"] == int(env["VLLM_SIZER_METRICS_PORT"])  # what the process serves
    assert not by_kind(render_objects(), "ServiceMonitor")


# ---- pods -------------------------------------------------------------------------------------

def _env(dep: dict) -> dict[str, str]:
    c = dep["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in c["env"]}


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_restricted_security_context(case: str) -> None:
    for dep in by_kind(render_objects(MATRIX[case]), "Deployment"):
        pod = dep["spec"]["template"]["spec"]
        psc = pod["securityContext"]
        assert psc["runAsNonRoot"] is True and psc["runAsUser"] == 65532
        assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
        assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
        for c in pod["containers"] + pod.get("initContainers", []):
            sc = c["securityContext"]
            assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 65532
            assert sc["readOnlyRootFilesystem"] is True
            assert sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"] == {"drop": ["ALL"]}
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
            assert "limits" in c["resources"] and "requests" in c["resources"]
            mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
            assert mounts["/tmp"] == "tmp"
            assert mounts[_env(dep)["VLLM_SIZER_CERT_DIR"]] == "certs"
        vols = {v["name"]: v for v in pod["volumes"]}
        assert "emptyDir" in vols["tmp"]


def test_webhook_deployment_is_ha() -> None:
    objs = render_objects()
    dep = one(objs, "Deployment", "vllm-sizer-webhook")
    spec = dep["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    terms = spec["template"]["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert terms[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    sel = terms[0]["podAffinityTerm"]["labelSelector"]["matchLabels"]
    assert sel == spec["selector"]["matchLabels"]
    c = spec["template"]["spec"]["containers"][0]
    assert c["args"] == ["--role", "webhook"] and "command" not in c  # ENTRYPOINT vllm-sizer run
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"webhook": 9443, "metrics": 8080}
    from vllm_sizer.operator.settings import HEALTH_PATH
    for probe in (c["livenessProbe"], c["readinessProbe"]):
        assert probe["httpGet"] == {"path": HEALTH_PATH, "port": "webhook", "scheme": "HTTPS"}
    pdb = one(objs, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == spec["selector"]["matchLabels"]
    svc = one(objs, "Service", "vllm-sizer-webhook")
    assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "webhook",
                                     "protocol": "TCP"}]
    assert svc["spec"]["selector"] == spec["selector"]["matchLabels"]


def test_controller_deployment_is_single_recreate() -> None:
    dep = one(render_objects(), "Deployment", "vllm-sizer-controller")
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["strategy"] == {"type": "Recreate"}
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert c["args"] == ["--role", "controller", "--liveness", "http://0.0.0.0:8083/healthz"]
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "vllm-sizer-controller"
    # The controller and the webhook select disjoint pods.
    web = one(render_objects(), "Deployment", "vllm-sizer-webhook")
    assert dep["spec"]["selector"] != web["spec"]["selector"]


def test_scheduling_values_reach_both_roles() -> None:
    v = MATRIX["everything"]
    for dep in by_kind(render_objects(v), "Deployment"):
        pod = dep["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == v["nodeSelector"]
        assert pod["tolerations"] == v["tolerations"]
        assert pod["priorityClassName"] == v["priorityClassName"]
        assert pod["imagePullSecrets"] == v["imagePullSecrets"]
        c = pod["containers"][0]
        assert c["image"] == "registry.example/vllm-sizer:dev" and c["imagePullPolicy"] == "Always"


def test_default_image_tag_is_app_version() -> None:
    import yaml
    app_version = yaml.safe_load((REPO / "helm" / "vllm-sizer" / "Chart.yaml").read_text())["appVersion"]
    for dep in by_kind(render_objects(), "Deployment"):
        assert dep["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":" + app_version)


# ---- settings contract ------------------------------------------------------------------------

def _contract_env_names() -> set[str]:
    """Every environment variable OperatorSettings reads (tests/operator/test_settings.py checks
    that each one really sets its field)."""
    from vllm_sizer.operator.settings import OperatorSettings

    names = set(OperatorSettings.env_names())
    assert "VLLM_SIZER_MODE" in names and "HF_ENDPOINT" in names and "POD_NAMESPACE" in names
    return names


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_env_follows_settings_contract(case: str) -> None:
    from vllm_sizer.operator.settings import OperatorSettings

    contract = _contract_env_names()
    for dep in by_kind(render_objects(MATRIX[case]), "Deployment"):
        env = _env(dep)
        extra = set(MATRIX[case].get("extraEnv") and [e["name"] for e in MATRIX[case]["extraEnv"]] or [])
        unknown = set(env) - contract - extra
        assert not unknown, f"{dep['metadata']['name']} sets variables the operator never reads: {unknown}"
        env["POD_NAMESPACE"] = NS
        settings = OperatorSettings.from_env({k: v for k, v in env.items() if v is not None})
        assert settings.operator_namespace == NS
        assert settings.service_name == "vllm-sizer-webhook"
        from vllm_sizer.operator.settings import WEBHOOK_PORT
        # the ports the process serves are the ports the pod declares (per role: distinct, so
        # both roles fit one node with hostNetwork)
        ports = {p["name"]: p["containerPort"]
                 for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]}
        assert settings.metrics_port == ports["metrics"]
        assert settings.webhook_port == ports.get("webhook", WEBHOOK_PORT)


def test_settings_values_reach_the_operator() -> None:
    from vllm_sizer.operator.settings import OperatorSettings

    v = MATRIX["everything"]
    dep = one(render_objects(v), "Deployment", "vllm-sizer-webhook")
    env = {k: val for k, val in _env(dep).items() if val is not None}
    s = OperatorSettings.from_env(env)
    p = s.decision
    assert p.mode == "warn" and p.headroom == 0.25 and p.rounding_bytes == 1024**3
    assert p.pin_cpu_kv_gib == 8 and p.largest_node_memory_bytes == 512 * 1024**3
    assert p.fail_closed is True and s.namespaces == ["ml", "inference"]
    assert set(s.excluded_namespaces) == {"kube-system", "monitoring", NS}
    assert s.model_configs_namespace == "model-configs" and s.model_configs_ttl_seconds == 60
    assert s.hub_fetch is True and s.hub_endpoint == "https://hf-mirror.internal"
    assert s.hub_token_file is not None
    mounts = {m["name"]: m["mountPath"] for m in dep["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
    assert s.hub_token_file.startswith(mounts["hub-token"] + "/")
    assert s.cert_mode == "self-signed"
    # Defaults match OperatorSettings' own defaults.
    d = OperatorSettings.from_env({k: val for k, val in _env(one(render_objects(), "Deployment", "vllm-sizer-webhook")).items() if val})
    base = OperatorSettings()
    assert d.decision == base.decision
    for field in ("hub_fetch", "lookup_timeout_seconds", "max_request_bytes", "patch_existing",
                  "model_configs_ttl_seconds", "namespaces"):
        assert getattr(d, field) == getattr(base, field), field


def test_served_resources_match_settings() -> None:
    """Webhook rules cover exactly SERVED_RESOURCES; the controller may watch and patch exactly
    WATCHED_RESOURCES (served minus Pod and ReplicaSet)."""
    from vllm_sizer.operator.settings import SERVED_RESOURCES, WATCHED_RESOURCES

    objs = render_objects()
    served = {(g, v, p) for g, v, p, _k in SERVED_RESOURCES}
    for cfg in by_kind(objs, "MutatingWebhookConfiguration") + by_kind(objs, "ValidatingWebhookConfiguration"):
        got = {(r["apiGroups"][0], r["apiVersions"][0], r["resources"][0]) for r in cfg["webhooks"][0]["rules"]}
        assert got == served
    role = one(objs, "ClusterRole", "vllm-sizer-controller")
    patchable = {(g, r) for rule in role["rules"] if "patch" in rule["verbs"]
                 for g in rule["apiGroups"] for r in rule["resources"]}
    assert {(g, p) for g, _v, p, _k in WATCHED_RESOURCES} <= patchable
    assert ("", "pods") not in patchable and ("apps", "replicasets") not in patchable


# ---- certificates -------------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(MATRIX))
def test_no_private_key_and_deterministic(case: str) -> None:
    docs = render_docs(MATRIX[case])
    text = "\n".join(t for _p, _o, t in docs)
    assert "PRIVATE KEY" not in text
    assert not by_kind([o for _p, o, _t in docs], "Secret"), "the chart never renders a Secret"
    # Rendering twice (no cache) gives the same bytes: no random or time-dependent values.
    from .conftest import rm
    again = "\n".join(t for _p, _o, t in rm.documents(rm.render(MATRIX[case])))
    assert again == text


def test_default_certificates_are_the_operators() -> None:
    objs = render_objects()
    for cfg in by_kind(objs, "MutatingWebhookConfiguration") + by_kind(objs, "ValidatingWebhookConfiguration"):
        assert "caBundle" not in cfg["webhooks"][0]["clientConfig"]  # patched at run time
        assert "annotations" not in cfg["metadata"]
    dep = one(objs, "Deployment", "vllm-sizer-webhook")
    assert _env(dep)["VLLM_SIZER_CERT_MODE"] == "self-signed"
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert "emptyDir" in vols["certs"]  # written by the operator: must be writable
    assert not by_kind(objs, "Certificate") and not by_kind(objs, "Issuer")


def test_existing_secret() -> None:
    objs = render_objects(MATRIX["existing-secret"])
    dep = one(objs, "Deployment", "vllm-sizer-webhook")
    assert _env(dep)["VLLM_SIZER_CERT_MODE"] == "secret"
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert vols["certs"]["secret"]["secretName"] == "my-webhook-tls"
    mount = [m for m in dep["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] if m["name"] == "certs"][0]
    assert mount["readOnly"] is True
    assert not by_kind(objs, "Certificate")
    # No Secret permissions when the Secret is not the operator's.
    assert not [r for r in by_kind(objs, "Role") if any("secrets" in x["resources"] for x in r["rules"])]
    # With a caBundle value, it goes into both configurations.
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
    objs = render_objects({"existingSecret": "my-webhook-tls", "caBundle": ca})
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert one(objs, kind)["webhooks"][0]["clientConfig"]["caBundle"] == ca
    assert all(not any("admissionregistration.k8s.io" in r["apiGroups"] for r in cr["rules"])
               for cr in by_kind(objs, "ClusterRole"))


# ---- RBAC -------------------------------------------------------------------------------------

def _grants(role: dict) -> set[tuple[str, str, str, tuple[str, ...]]]:
    return {(g, r, v, tuple(rule.get("resourceNames", ())))
            for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]}


def test_rbac_is_exactly_least_privilege() -> None:
    objs = render_objects()
    read = {"get", "list", "watch"}
    sizing_reads = {(g, r, v, ()) for g, r in [("", "configmaps"), ("", "limitranges"),
                                               ("serving.kserve.io", "servingruntimes"),
                                               ("serving.kserve.io", "clusterservingruntimes")]
                    for v in read}
    webhook = _grants(one(objs, "ClusterRole", "vllm-sizer-webhook"))
    assert webhook == sizing_reads | {
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", v, ("vllm-sizer-mutating",))
        for v in ("get", "patch")} | {
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", v, ("vllm-sizer-validating",))
        for v in ("get", "patch")}
    certs = one(objs, "Role", "vllm-sizer-webhook-certs")
    assert certs["metadata"]["namespace"] == NS
    assert _grants(certs) == {("", "secrets", "get", ("vllm-sizer-webhook-tls",)),
                              ("", "secrets", "update", ("vllm-sizer-webhook-tls",)),
                              ("", "secrets", "create", ())}
    from vllm_sizer.operator.settings import CERT_SECRET_NAME, WATCHED_RESOURCES
    assert CERT_SECRET_NAME == "vllm-sizer-webhook-tls"
    workloads = {(g, p, v, ()) for g, _ver, p, _k in WATCHED_RESOURCES for v in ("get", "list", "watch", "patch")}
    controller = _grants(one(objs, "ClusterRole", "vllm-sizer-controller"))
    assert controller == workloads | sizing_reads | {
        ("", "events", "create", ()), ("", "events", "patch", ()),
        ("events.k8s.io", "events", "create", ()), ("events.k8s.io", "events", "patch", ()),
        ("", "pods", "list", ()), ("", "pods", "watch", ()), ("apps", "replicasets", "get", ()),
        ("", "events", "list", ()), ("", "events", "watch", ()),
        ("apiextensions.k8s.io", "customresourcedefinitions", "list", ()),
        ("apiextensions.k8s.io", "customresourcedefinitions", "watch", ()),
        ("", "namespaces", "list", ()), ("", "namespaces", "watch", ())}
    # No wildcard, no escalation verbs, no secrets cluster-wide.
    for role in by_kind(objs, "ClusterRole") + by_kind(objs, "Role"):
        for g, r, v, _n in _grants(role):
            assert "*" not in (g, r, v)
            assert v not in {"escalate", "bind", "impersonate", "delete", "deletecollection"}
            if r == "secrets":
                assert role["kind"] == "Role"
    # Bindings point at the right ServiceAccounts.
    for b in by_kind(objs, "ClusterRoleBinding") + by_kind(objs, "RoleBinding"):
        assert b["roleRef"]["name"].startswith(b["subjects"][0]["name"])
        assert b["subjects"][0]["namespace"] == NS


def test_rbac_model_configs_namespace_narrows_configmaps() -> None:
    objs = render_objects(MATRIX["everything"])
    for cr in by_kind(objs, "ClusterRole"):
        if cr["metadata"]["name"].endswith("-audit"):
            continue  # read-only role for people who audit; bound to no operator identity
        assert ("", "configmaps", "get", ()) not in _grants(cr)
    role = one(objs, "Role", "vllm-sizer-model-configs")
    assert role["metadata"]["namespace"] == "model-configs"
    assert _grants(role) == {("", "configmaps", v, ()) for v in ("get", "list", "watch")}
    rb = one(objs, "RoleBinding", "vllm-sizer-model-configs")
    assert {s["name"] for s in rb["subjects"]} == {"vllm-sizer-webhook", "vllm-sizer-controller"}


# ---- webhook configuration fields the issue fixes -----------------------------------------------

@pytest.mark.parametrize("case", sorted(MATRIX))
def test_webhook_configuration_fields(case: str) -> None:
    v = MATRIX[case]
    objs = render_objects(v)
    for kind, path in (("MutatingWebhookConfiguration", "/mutate"),
                       ("ValidatingWebhookConfiguration", "/validate")):
        cfg = one(objs, kind)
        assert cfg["metadata"]["name"].startswith("vllm-sizer")
        (hook,) = cfg["webhooks"]
        assert hook["clientConfig"]["service"] == {"namespace": NS, "name": "vllm-sizer-webhook",
                                                   "path": path, "port": 443}
        assert hook["sideEffects"] == "None" and hook["matchPolicy"] == "Equivalent"
        assert hook["timeoutSeconds"] == v.get("timeoutSeconds", 5)
        assert hook["failurePolicy"] == v.get("failurePolicy", "Ignore")
        assert hook["admissionReviewVersions"] == ["v1"]
        assert ("reinvocationPolicy" in hook) == (kind == "MutatingWebhookConfiguration")
        if "reinvocationPolicy" in hook:
            assert hook["reinvocationPolicy"] == "IfNeeded"
        notin = [e for e in hook["namespaceSelector"]["matchExpressions"]
                 if e["key"] == "kubernetes.io/metadata.name" and e["operator"] == "NotIn"]
        assert notin and {"kube-system", NS} <= set(notin[0]["values"])
        assert hook["objectSelector"] == v.get("objectSelector", {})
        assert ("matchConditions" in hook) == v.get("matchConditions", True)
        for r in hook["rules"]:
            ops = ["CREATE"] if r["resources"] == ["pods"] else ["CREATE", "UPDATE"]
            assert r["operations"] == ops and "/" not in r["resources"][0]


def test_release_namespace_is_excluded_whatever_it_is() -> None:
    from .conftest import rm
    objs = [o for _p, o, _t in rm.documents(rm.render({}, name="sizer", namespace="platform"))]
    hook = one(objs, "MutatingWebhookConfiguration")["webhooks"][0]
    assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "platform"]
    assert hook["clientConfig"]["service"]["namespace"] == "platform"
    assert hook["clientConfig"]["service"]["name"] == "sizer-vllm-sizer-webhook"
    dep = one(objs, "Deployment", "sizer-vllm-sizer-webhook")
    assert _env(dep)["VLLM_SIZER_SERVICE_NAME"] == "sizer-vllm-sizer-webhook"


def test_namespaces_and_selectors() -> None:
    v = MATRIX["everything"]
    hook = one(render_objects(v), "ValidatingWebhookConfiguration")["webhooks"][0]
    sel = hook["namespaceSelector"]
    assert sel["matchLabels"] == {"team": "ml"}
    assert {"key": "kubernetes.io/metadata.name", "operator": "In",
            "values": ["ml", "inference"]} in sel["matchExpressions"]
    assert sel["matchExpressions"][0]["values"] == ["kube-system", NS, "monitoring"]


def test_image_tag_and_digest() -> None:
    def images(values: dict) -> set[str]:
        return {d["spec"]["template"]["spec"]["containers"][0]["image"]
                for d in by_kind(render_objects(values), "Deployment")}

    assert images({"image": {"tag": 1.2}}) == {"ghcr.io/vllm-sizer/vllm-sizer:1.2"}
    digest = "sha256:" + "a" * 64
    assert images({"image": {"tag": "x", "digest": digest}}) == {"ghcr.io/vllm-sizer/vllm-sizer@" + digest}


def test_hub_learning_grants_the_controller_only_its_learned_models_configmap() -> None:
    objs = render_objects(MATRIX["everything"])  # hub.enabled, modelConfigs.namespace set
    role = one(objs, "Role", "vllm-sizer-learned-models")
    assert role["metadata"]["namespace"] == "model-configs"
    rules = {(tuple(r["verbs"]), tuple(r.get("resourceNames", ()))) for r in role["rules"]}
    assert rules == {(("create",), ()), (("get", "patch"), ("vllm-sizer-learned-models",))}
    rb = one(objs, "RoleBinding", "vllm-sizer-learned-models")
    assert [s["name"] for s in rb["subjects"]] == ["vllm-sizer-controller"]
    assert not [o for o in render_objects({}) if o["metadata"]["name"].endswith("learned-models")]
