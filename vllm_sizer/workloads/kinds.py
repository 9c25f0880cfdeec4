"""The one table of Kubernetes kinds vllm-sizer knows, shared by the reader (`check`), the
webhook configurations (rules, matchConditions), the controller's watches, the Helm chart
(generated `files/served-resources.yaml`, RBAC) and the tests that hold them equal.

A kind is *served* when an object of that kind can be changed in place (its memory limit has a
patch path): `check` sizes it (mutates / denies), the webhooks are registered for it and the
controller watches it (unless `watched` is False). A kind that is only *read* (the platform
builds the pods from fields that cannot carry a memory limit, e.g. KubeAI Model, KAITO
Workspace) and any other kind read by structure (platforms.py, `find_pod_templates`) get an
estimate and warnings, never a patch or a denial: their pods are sized when they are created,
by the pod-level webhook (kind Pod).

Each entry names where its shape comes from (repo@commit:path of the project's API types or
CRD); platforms.py holds the readers of the CRDs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KindSpec:
    group: str  # "" for the core group
    version: str  # the version the webhook rules and the controller use
    plural: str
    kind: str
    # apiVersions the reader accepts for this kind (all stored versions with the same shape)
    api_versions: tuple[str, ...]
    # CEL paths (below `object`) of the pod specs whose containers the matchConditions test;
    # empty with always_send: every object of the kind is sent (CRDs whose vLLM command is
    # built by their operator, or nested where CEL cannot reach without a cost bound)
    pod_specs: tuple[str, ...] = ()
    always_send: bool = False
    served: bool = True  # the webhooks, the controller and `check` size it (patch path)
    watched: bool = True  # the controller watches it (False: pods / ReplicaSets come in bulk)
    operations: tuple[str, ...] = ("CREATE", "UPDATE")
    # pods are created directly from this kind's template (a pod owned by it and labelled
    # vllm-sizer.io/sized came from a template vllm-sizer sized)
    pod_owner: bool = False
    source: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


_TEMPLATE = ("object.spec.template.spec",)

KINDS: tuple[KindSpec, ...] = (
    # ---- Kubernetes built-ins (k8s.io/api apps/v1, batch/v1, core/v1 types)
    KindSpec(
        "",
        "v1",
        "pods",
        "Pod",
        ("v1",),
        ("object.spec",),
        operations=("CREATE",),
        watched=False,
        source="k8s.io/api core/v1 Pod",
    ),
    KindSpec(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        ("apps/v1", "extensions/v1beta1", "apps/v1beta1", "apps/v1beta2"),
        _TEMPLATE,
        source="k8s.io/api apps/v1",
    ),
    KindSpec(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        ("apps/v1", "apps/v1beta1", "apps/v1beta2"),
        _TEMPLATE,
        pod_owner=True,
        source="k8s.io/api apps/v1",
    ),
    KindSpec(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        ("apps/v1", "extensions/v1beta1", "apps/v1beta2"),
        _TEMPLATE,
        pod_owner=True,
        watched=False,
        source="k8s.io/api apps/v1",
    ),
    KindSpec(
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        ("apps/v1", "extensions/v1beta1", "apps/v1beta2"),
        _TEMPLATE,
        pod_owner=True,
        source="k8s.io/api apps/v1",
    ),
    KindSpec(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        ("v1",),
        _TEMPLATE,
        pod_owner=True,
        source="k8s.io/api core/v1",
    ),
    KindSpec(
        "batch",
        "v1",
        "jobs",
        "Job",
        ("batch/v1",),
        _TEMPLATE,
        pod_owner=True,
        source="k8s.io/api batch/v1",
    ),
    KindSpec(
        "batch",
        "v1",
        "cronjobs",
        "CronJob",
        ("batch/v1", "batch/v1beta1"),
        ("object.spec.jobTemplate.spec.template.spec",),
        source="k8s.io/api batch/v1",
    ),
    # ---- LeaderWorkerSet: kubernetes-sigs/lws api/leaderworkerset/v1
    KindSpec(
        "leaderworkerset.x-k8s.io",
        "v1",
        "leaderworkersets",
        "LeaderWorkerSet",
        ("leaderworkerset.x-k8s.io/v1",),
        (
            "object.spec.leaderWorkerTemplate.leaderTemplate.spec",
            "object.spec.leaderWorkerTemplate.workerTemplate.spec",
        ),
        source="kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go",
    ),
    # ---- KServe (kserve/kserve pkg/apis/serving): always sent, the predictor may name a
    # Hugging Face model with no "vllm" anywhere
    KindSpec(
        "serving.kserve.io",
        "v1beta1",
        "inferenceservices",
        "InferenceService",
        ("serving.kserve.io/v1beta1",),
        always_send=True,
        source="kserve/kserve pkg/apis/serving/v1beta1",
    ),
    KindSpec(
        "serving.kserve.io",
        "v1alpha1",
        "llminferenceservices",
        "LLMInferenceService",
        ("serving.kserve.io/v1alpha1", "serving.kserve.io/v1alpha2"),
        always_send=True,
        source="kserve/kserve pkg/apis/serving/v1alpha1/llm_inference_service_types.go",
    ),
    # ---- Knative Service: spec.template is a RevisionTemplateSpec (a pod spec)
    KindSpec(
        "serving.knative.dev",
        "v1",
        "services",
        "Service",
        ("serving.knative.dev/v1",),
        _TEMPLATE,
        source="knative/serving@98e5ef90aa7033797aa0a61ef97f3ff7e49a3944:"
        "pkg/apis/serving/v1/service_types.go",
    ),
    # ---- KubeRay: head and worker group pod templates; RayService adds serveConfigV2
    KindSpec(
        "ray.io",
        "v1",
        "rayclusters",
        "RayCluster",
        ("ray.io/v1",),
        always_send=True,
        pod_owner=True,
        source="ray-project/kuberay@feeaf72facab4881ba2b179248bb67315634e229:"
        "ray-operator/apis/ray/v1/raycluster_types.go",
    ),
    KindSpec(
        "ray.io",
        "v1",
        "rayservices",
        "RayService",
        ("ray.io/v1",),
        always_send=True,
        source="ray-project/kuberay@feeaf72facab4881ba2b179248bb67315634e229:"
        "ray-operator/apis/ray/v1/rayservice_types.go, "
        "ray-operator/config/samples/ray-service.llm-serve.yaml",
    ),
    # ---- AIBrix orchestration: RayClusterFleet (a RayCluster template), StormService (roles)
    KindSpec(
        "orchestration.aibrix.ai",
        "v1alpha1",
        "rayclusterfleets",
        "RayClusterFleet",
        ("orchestration.aibrix.ai/v1alpha1",),
        always_send=True,
        source="vllm-project/aibrix@e3e10f9e4aebe9aac5e7d992fb87d2648e01628b:"
        "api/orchestration/v1alpha1/rayclusterfleet_types.go, "
        "config/samples/orchestration_v1alpha1_rayclusterfleet.yaml",
    ),
    KindSpec(
        "orchestration.aibrix.ai",
        "v1alpha1",
        "stormservices",
        "StormService",
        ("orchestration.aibrix.ai/v1alpha1",),
        always_send=True,
        source="vllm-project/aibrix@e3e10f9e4aebe9aac5e7d992fb87d2648e01628b:"
        "api/orchestration/v1alpha1/stormservice_types.go, "
        "samples/disaggregation/vllm/1p1d.yaml",
    ),
    # ---- NVIDIA Dynamo: v1alpha1 services.<name>.extraPodSpec.mainContainer + resources;
    # v1beta1 components[].podTemplate
    KindSpec(
        "nvidia.com",
        "v1alpha1",
        "dynamographdeployments",
        "DynamoGraphDeployment",
        ("nvidia.com/v1alpha1", "nvidia.com/v1beta1"),
        always_send=True,
        source="ai-dynamo/dynamo@967e177cc5754a5c26c038744fd02f435600954c:"
        "deploy/cloud/operator/api/v1alpha1/dynamocomponentdeployment_types.go, "
        "ai-dynamo/dynamo@6746518267deebdf9fabaa3b95ec2b01e37195ea:"
        "deploy/cloud/operator/api/v1alpha1/common.go, "
        "examples/backends/vllm/deploy/agg.yaml and v1beta1/agg.yaml",
    ),
    # ---- vLLM production-stack operator: deploymentConfig.resources.memory is the limit
    KindSpec(
        "production-stack.vllm.ai",
        "v1alpha1",
        "vllmruntimes",
        "VLLMRuntime",
        ("production-stack.vllm.ai/v1alpha1",),
        always_send=True,
        source="vllm-project/production-stack@a6c01db05f65f556235413ba8dbcfb0c01132fff:"
        "operator/api/v1alpha1/vllmruntime_types.go, "
        "operator/internal/controller/vllmruntime_controller.go",
    ),
    # ---- read only: the platform builds the pod, the CR carries no memory limit
    KindSpec(
        "kubeai.org",
        "v1",
        "models",
        "Model",
        ("kubeai.org/v1",),
        always_send=True,
        served=False,
        source="substratusai/kubeai@2f32ef498da629f96fd417ddfaaf22c28d40787e:"
        "api/k8s/v1/model_types.go, internal/modelcontroller/engine_vllm.go",
    ),
    KindSpec(
        "kaito.sh",
        "v1beta1",
        "workspaces",
        "Workspace",
        ("kaito.sh/v1beta1", "kaito.sh/v1alpha1"),
        always_send=True,
        served=False,
        source="kaito-project/kaito@056b8280b1a8debf644bc6f4399e913a1f9c7e70:"
        "api/v1beta1/workspace_types.go",
    ),
    KindSpec(
        "kaito.sh",
        "v1alpha1",
        "inferencesets",
        "InferenceSet",
        ("kaito.sh/v1alpha1",),
        always_send=True,
        served=False,
        source="kaito-project/kaito@056b8280b1a8debf644bc6f4399e913a1f9c7e70:"
        "api/v1alpha1/inferenceset_types.go (spec.template: a Workspace's inference and resource)",
    ),
)

_BY_KIND: dict[tuple[str, str], KindSpec] = {(k.group, k.kind): k for k in KINDS}
_BY_API: dict[tuple[str, str], KindSpec] = {
    (api, k.kind): k for k in KINDS for api in k.api_versions
}


def group_of(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def lookup(api_version: str, kind: str) -> KindSpec | None:
    """The table entry for an object's apiVersion and kind (exact stored versions first, then
    any version of the group)."""
    spec = _BY_API.get((api_version, kind))
    if spec is None:
        spec = _BY_KIND.get((group_of(api_version), kind))
    return spec


def served() -> tuple[KindSpec, ...]:
    return tuple(k for k in KINDS if k.served)


def served_resources() -> tuple[tuple[str, str, str, str], ...]:
    """(group, version, plural, kind) of every served kind: the webhook rules and RBAC."""
    return tuple((k.group, k.version, k.plural, k.kind) for k in served())


def watched_resources() -> tuple[tuple[str, str, str, str], ...]:
    """What the controller watches: served kinds except those that come in bulk and whose
    pods the pod-level webhook sizes anyway (Pod, ReplicaSet)."""
    return tuple((k.group, k.version, k.plural, k.kind) for k in served() if k.watched)


def pod_owner_kinds() -> tuple[tuple[str, str], ...]:
    """(group, kind) of the kinds that create pods from a template vllm-sizer sizes."""
    return tuple((k.group, k.kind) for k in KINDS if k.pod_owner)
