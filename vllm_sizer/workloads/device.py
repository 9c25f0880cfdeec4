"""Where a vLLM container runs, from evidence in the pod spec, never from its absence."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .images import image_device, is_cpu_image
from .vllm_args import Diagnostic

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB (GPU feature discovery)
OTHER_ACCELERATORS = (  # extended-resource prefixes, compared lowercase
    "habana.ai/gaudi",
    "google.com/tpu",
    "aws.amazon.com/neuron",
    "intel.com/gpu",
    "gpu.intel.com/",
    "huawei.com/ascend",  # Ascend NPU device plugin (huawei.com/Ascend910, aibrix samples)
    "rebellions.ai/",  # Rebellions ATOM NPU operator (rebellions.ai/ATOM, llm-d examples)
)
# Words in a DRA device class or claim name that name the vendor (gpu.nvidia.com,
# gaudi.intel.com, gpu.amd.com, neuron.aws.com, ...); checked in this order.
DRA_VENDOR_WORDS = (
    ("other", ("gaudi", "habana", "intel", "xpu", "neuron", "tpu", "ascend", "rbln", "rebellions")),
    ("rocm", ("amd", "rocm")),
    ("cuda", ("nvidia", "cuda")),
)
_MIG_RE = re.compile(r"^nvidia\.com/mig-(\d+)g\.(\d+)gb$")
ARG_DEVICES = {
    "cpu": "cpu",
    "cuda": "cuda",
    "gpu": "cuda",
    "rocm": "rocm",
    "hip": "rocm",
    "tpu": "other",
    "xpu": "other",
    "hpu": "other",
    "neuron": "other",
    "openvino": "other",
}


@dataclass
class DeviceFacts:
    device: str = "unknown"
    gpu_count: int | None = None
    gpu_product: str | None = None
    gpu_memory_bytes: int | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


# No node holds more accelerators than this (assumed: 8-16 GPUs, up to 128 NeuronCores): a
# count past it is a typo, and KServe's Hugging Face server would size that many ranks
MAX_DEVICES = 1024


# A count the author fills in before applying (`nvidia.com/gpu: ${GPU_COUNT}`, a template):
# the accelerator is asked for, only how many is unknown
_FILL_IN_COUNT = re.compile(r"\$\{?[A-Za-z_]|\$\([A-Za-z_]|\{\{|<[A-Za-z]")


def _asks_for(raw: Any, key: str, diags: list[Diagnostic]) -> tuple[bool, int]:
    """(whether the resource is requested, how many when the count is known: else 0)."""
    if isinstance(raw, str) and _FILL_IN_COUNT.search(raw):
        diags.append(
            Diagnostic(
                "warning",
                "a placeholder: the device is requested, how many is unknown",
                key,
                raw[:40],
            )
        )
        return True, 0
    n = _count(raw, key, diags)
    return bool(n), n or 0


def _count(raw: Any, key: str, diags: list[Diagnostic]) -> int | None:
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = int(str(raw).strip())
        if value < 0:
            raise ValueError
        if value > MAX_DEVICES:
            diags.append(
                Diagnostic(
                    "warning",
                    f"not a device count (more than {MAX_DEVICES} on one node): ignored",
                    key,
                    str(raw)[:40],
                )
            )
            return None
        return value
    except (TypeError, ValueError):
        diags.append(Diagnostic("warning", "not a device count", key, str(raw)[:40]))
        return None


_DRA_SUFFIX = re.compile(r"^(v?\d+[a-z]?|gpus?|npus?|tpus?|xpus?|cores?)?$")


def _dra_vendors(words: str) -> list[str]:
    """Devices whose vendor word is a whole word of the names (or the word with a model number
    or a device noun: gaudi2, amdgpu), in DRA_VENDOR_WORDS order: `gpu-output-cache` names no
    TPU, `nvidia-for-intelligence` no Intel."""
    tokens = set(re.split(r"[^a-z0-9]+", words))
    out = []
    for device, vendor_words in DRA_VENDOR_WORDS:
        if any(
            t.startswith(w) and _DRA_SUFFIX.match(t[len(w) :]) for t in tokens for w in vendor_words
        ):
            out.append(device)
    return out


def _label_values(pod_spec: dict[str, Any], key: str) -> list[str]:
    values: list[str] = []
    sel = _dict(pod_spec.get("nodeSelector"))
    if key in sel and sel[key] is not None:
        values.append(str(sel[key]))
    affinity = _dict(_dict(pod_spec.get("affinity")).get("nodeAffinity"))
    required = _dict(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    for term in _list(required.get("nodeSelectorTerms")):
        for expr in _list(_dict(term).get("matchExpressions")):
            expr = _dict(expr)
            if expr.get("key") == key and expr.get("operator") == "In":
                values.extend(str(v) for v in _list(expr.get("values")) if v is not None)
    return sorted(set(values))


# DRA objects a pod's resourceClaims name: the device class is in them, not in the pod
CLAIM_KINDS = ("ResourceClaimTemplate", "ResourceClaim")


def claim_device_classes(
    pod_spec: dict[str, Any], objects: dict[tuple[str, str], dict[str, Any]]
) -> tuple[str, ...]:
    """The deviceClassName of every request of the ResourceClaimTemplates / ResourceClaims the
    pod's resourceClaims name, when the caller has them (`check`: the same file): a claim named
    `gpu` from a template `gpu-template` whose class is gpu.intel.com asks for an Intel GPU.
    resource.k8s.io v1: requests[].exactly.deviceClassName (or firstAvailable[]); v1beta1:
    requests[].deviceClassName; a ResourceClaimTemplate nests the claim spec in spec.spec."""
    classes: list[str] = []
    for claim in _list(pod_spec.get("resourceClaims"))[:16]:
        claim = _dict(claim)
        for kind, key in (
            ("ResourceClaimTemplate", "resourceClaimTemplateName"),
            ("ResourceClaim", "resourceClaimName"),
        ):
            name = claim.get(key)
            obj = objects.get((kind, name)) if isinstance(name, str) else None
            if obj is None:
                continue
            spec = _dict(obj.get("spec"))
            if kind == "ResourceClaimTemplate":
                spec = _dict(spec.get("spec"))
            for req in _list(_dict(spec.get("devices")).get("requests"))[:16]:
                req = _dict(req)
                for sub in [
                    req,
                    _dict(req.get("exactly")),
                    *map(_dict, _list(req.get("firstAvailable"))[:8]),
                ]:
                    cls = sub.get("deviceClassName")
                    if isinstance(cls, str) and cls and cls not in classes:
                        classes.append(cls[:253])
    return tuple(classes)


# VLLM_TARGET_DEVICE (vllm/envs.py) names the platform a vLLM build or image targets; set in a
# pod it says which accelerator the author means when the pod spec leaves it open (a DRA claim
# with no vendor in its names)
TARGET_DEVICES = {
    "cuda": "cuda",
    "rocm": "rocm",
    "tpu": "other",
    "xpu": "other",
    "hpu": "other",
    "neuron": "other",
    "openvino": "other",
}


def detect_device(
    *,
    image: str | None,
    arg_device: str | None,
    env: dict[str, str],
    resources: dict[str, Any],
    pod_spec: dict[str, Any],
    container: dict[str, Any],
    dra_classes: tuple[str, ...] = (),
    hint: tuple[str, str] | None = None,
) -> DeviceFacts:
    """`dra_classes`: DRA device classes the platform adds to the pod (KServe's managed DRA
    annotation), beside the claims the pod spec names; `hint`: (device, why) from the platform,
    used when the pod spec gives no evidence."""
    facts = DeviceFacts()
    diags = facts.diagnostics
    limits = _dict(resources.get("limits"))
    requests = _dict(resources.get("requests"))
    extended = {**requests, **limits}  # extended resources: limits are authoritative

    accel: str | None = None
    count = 0
    mig_gb: int | None = None
    why: list[str] = []
    for key, raw in extended.items():
        key_s = str(key)
        if key_s == "nvidia.com/gpu" or key_s.startswith("nvidia.com/mig-"):
            asked, n = _asks_for(raw, key_s, diags)
            if asked:
                accel, count = "cuda", count + n
                why.append(key_s)
                m = _MIG_RE.match(key_s)
                if m:
                    mig_gb = int(m.group(2)) if mig_gb is None else min(mig_gb, int(m.group(2)))
        elif key_s == "amd.com/gpu":
            asked, n = _asks_for(raw, key_s, diags)
            if asked:
                accel, count = accel or "rocm", count + n
                why.append(key_s)
        elif any(key_s.lower().startswith(p) for p in OTHER_ACCELERATORS):
            asked, _ = _asks_for(raw, key_s, diags)
            if asked:
                accel = accel or "other"
                why.append(key_s)
    runtime_class = pod_spec.get("runtimeClassName")
    if accel is None and isinstance(runtime_class, str) and "nvidia" in runtime_class.lower():
        accel = "cuda"
        why.append(f"runtimeClassName {runtime_class}")
    claims = _list(pod_spec.get("resourceClaims")) or _list(
        _dict(container.get("resources")).get("claims")
    )
    if accel is None and (claims or dra_classes):
        words = " ".join(
            [*dra_classes]
            + [
                str(_dict(c).get(k) or "")
                for c in claims
                for k in ("name", "resourceClaimTemplateName", "resourceClaimName")
            ]
        ).lower()
        named = _dra_vendors(words)
        vendor = named[0] if len(named) == 1 else None
        several = f" (the names say {' and '.join(named)})" if len(named) > 1 else ""
        target = TARGET_DEVICES.get(env.get("VLLM_TARGET_DEVICE", "").strip().lower())
        if vendor is None and target is not None:
            vendor = target
            how = f"VLLM_TARGET_DEVICE={env['VLLM_TARGET_DEVICE'].strip()[:20]}{several}"
        elif vendor is None and image_device(image) not in (None, "cpu"):
            vendor = image_device(image)
            how = f"the image's build ({image}){several}"
        elif vendor is None:
            vendor = "cuda"
            how = (
                f"assumed an NVIDIA GPU{several}"
                if several
                else "assumed an NVIDIA GPU (no vendor in the claim or class names)"
            )
        else:
            how = f"the vendor named in the claim or device class ({words.strip()[:80]})"
        accel = vendor
        why.append("DRA resourceClaims")
        diags.append(Diagnostic("info", f"device from DRA resource claims: {vendor}, from {how}"))

    cpu_why: str | None = None
    explicit: str | None = None
    if arg_device:
        explicit = ARG_DEVICES.get(arg_device.lower())
        if arg_device.lower() not in ("auto", "") and explicit is None:
            diags.append(
                Diagnostic(
                    "warning",
                    "unknown device; read from the pod spec instead",
                    "--device",
                    arg_device,
                )
            )
    if explicit == "cpu":
        cpu_why = "--device cpu"
    elif env.get("VLLM_TARGET_DEVICE", "").lower() == "cpu":
        cpu_why = "VLLM_TARGET_DEVICE=cpu"
    elif explicit is None and is_cpu_image(image):
        cpu_why = f"CPU image {image}"
    elif explicit is None and accel is None and image_device(image) == "cpu":
        cpu_why = f"CPU build {image}"
    elif explicit is None and accel is None and image_device(image) is None:
        cpu_env = sorted(k for k in env if k.startswith("VLLM_CPU_"))
        if cpu_env:
            # vllm/envs.py: VLLM_CPU_* configure only the CPU backend (KV cache space, OMP
            # thread binding, ...): set without any accelerator request, the pod is a CPU pod
            cpu_why = f"{', '.join(cpu_env)} set (vLLM's CPU backend settings)"
            diags.append(
                Diagnostic(
                    "info", f"runs on CPU: {', '.join(cpu_env)} set and no accelerator requested"
                )
            )

    if cpu_why:
        facts.device = "cpu"
        if accel and accel != "cpu":
            diags.append(
                Diagnostic(
                    "warning",
                    f"runs on CPU ({cpu_why}) although an accelerator "
                    f"is requested ({', '.join(why)}): the accelerator is unused",
                )
            )
    elif explicit:
        facts.device = explicit
    elif accel:
        facts.device = accel
    elif hint is not None:
        facts.device = hint[0]
        diags.append(Diagnostic("info", f"device {hint[0]}: {hint[1]}"))
    elif TARGET_DEVICES.get(env.get("VLLM_TARGET_DEVICE", "").strip().lower()):
        facts.device = TARGET_DEVICES[env["VLLM_TARGET_DEVICE"].strip().lower()]
        diags.append(
            Diagnostic(
                "info",
                f"device {facts.device} from VLLM_TARGET_DEVICE; no accelerator is requested "
                "in the pod spec",
            )
        )
    elif image_device(image):
        facts.device = image_device(image) or "unknown"
        diags.append(
            Diagnostic(
                "info",
                f"device {facts.device} from the image's build "
                f"({image}); no accelerator is requested in the pod spec",
            )
        )
    else:
        facts.device = "unknown"
        diags.append(
            Diagnostic(
                "info",
                "device unknown (no CPU image, --device or accelerator "
                "request): sized without the CPU-only terms",
            )
        )
    if accel in ("cuda", "rocm") and count:
        facts.gpu_count = count

    if facts.device in ("cuda", "rocm"):
        products = _label_values(pod_spec, GPU_PRODUCT_LABEL)
        if len(products) == 1:
            facts.gpu_product = products[0]
        elif len(products) > 1:
            diags.append(
                Diagnostic(
                    "info",
                    f"several GPU products allowed ({', '.join(products)}): "
                    "defaults for an unknown GPU used",
                )
            )
        mems: list[int] = []
        for raw in _label_values(pod_spec, GPU_MEMORY_LABEL):
            try:
                mib = int(raw)
                if mib <= 0:
                    raise ValueError
                mems.append(mib)
            except ValueError:
                diags.append(
                    Diagnostic("warning", "not a GPU memory size in MiB", GPU_MEMORY_LABEL, raw)
                )
        if mems:
            facts.gpu_memory_bytes = min(mems) * 2**20
            if len(set(mems)) > 1:
                diags.append(
                    Diagnostic("info", "several GPU memory sizes allowed: the smallest used")
                )
        elif mig_gb is not None:
            facts.gpu_memory_bytes = mig_gb * 2**30
            diags.append(Diagnostic("info", f"GPU memory from the MIG profile: about {mig_gb} GiB"))
    return facts
