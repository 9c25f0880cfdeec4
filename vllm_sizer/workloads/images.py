"""What a container image tells us: vLLM version, ENTRYPOINT, CPU build, allocator."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..estimator.versions import VllmVersion

API_SERVER = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
VLLM_SERVE = ["vllm", "serve"]
HF_SERVER = ["python3", "-m", "huggingfaceserver"]  # kserve python/huggingface_server.Dockerfile

# ENTRYPOINT of vLLM's own images (the `vllm-openai` stage of vLLM's Dockerfile, later
# docker/Dockerfile; the CPU images are assumed to follow the same stage), by first vLLM version.
# Source, vllm-project/vllm:
# - Dockerfile of the 0.5/0.6 era and docker/Dockerfile of mid-2025 (0.9/0.10, docs on mkdocs)
#   end with  ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server"];
# - docker/Dockerfile at a commit pinning flashinfer-cubin 0.4.1 (October 2025, after 0.11.0)
#   ends with ENTRYPOINT ["vllm", "serve"] (and vllm/vllm-openai:latest with vLLM 0.26.0 shows
#   Entrypoint=["vllm","serve"]).
# - docker/Dockerfile.cpu (recent, the image published as vllm-openai-cpu) ends its
#   `vllm-openai` stage with ENTRYPOINT ["vllm", "serve"] and sets
#   LD_PRELOAD=.../libtcmalloc_minimal.so.4 in its base stage (see preloads_tcmalloc).
# The first release with `vllm serve` is assumed to be 0.11.1. Both entrypoints accept
# `--model X`; only a positional model differs, and the reader warns about it.
ENTRYPOINT_TABLE: list[tuple[tuple[int, int, int], list[str]]] = [
    ((0, 0, 0), API_SERVER),
    ((0, 11, 1), VLLM_SERVE),  # assumed first release (see above)
]

# Repository names (last path component) of vLLM's published images.
VLLM_IMAGE_NAMES = {
    "vllm-openai",
    "vllm-openai-cpu",
    "vllm-cpu",
    "vllm-cpu-release-repo",
    "vllm-openai-rocm",
    "vllm-rocm",
    "vllm-openai-xpu",
}
HF_SERVER_NAMES = {"huggingfaceserver", "huggingfaceserver-gpu"}


@dataclass(frozen=True)
class VendorImage:
    """An image that is not vLLM's own but whose ENTRYPOINT is known from its build file.
    `entrypoint` None: the image runs no vLLM by itself (a command must say it). `device`: what
    the build targets (used only when the pod spec says nothing). Tags are the vendor's own
    versions, never vLLM's."""

    repo: str  # repository path without registry, matched as a suffix at a '/' boundary
    entrypoint: tuple[str, ...] | None
    device: str | None
    source: str
    # a repository that holds unrelated images: only tags that start with this are the row's
    tag_prefix: str | None = None
    # a path in the image holding a copy of vLLM's vllm/entrypoints/openai/api_server.py, run
    # as a script (`python3 <path> --model ...`): vLLM's OpenAI server, read as the module
    api_server_copy: str | None = None


_API = ("python3", "-m", "vllm.entrypoints.openai.api_server")
VENDOR_IMAGES: tuple[VendorImage, ...] = (
    VendorImage(
        "llm-d/llm-d",
        ("python", "-m", "vllm.entrypoints.openai.api_server"),
        "cuda",
        "llm-d/llm-d@0199edbf64cb6f53c42975dd016471524c6a0d0b:docker/Dockerfile.cuda",
    ),
    VendorImage(
        "llm-d/llm-d-cuda",
        ("python", "-m", "vllm.entrypoints.openai.api_server"),
        "cuda",
        "llm-d/llm-d@0199edbf64cb6f53c42975dd016471524c6a0d0b:docker/Dockerfile.cuda",
    ),
    VendorImage(
        "modh/vllm",
        _API,
        None,
        "opendatahub-io/vllm@0312316dd49ffd08feb37cfae9af3e754c5163d5:Dockerfile.ubi "
        "(vllm-openai stage; CUDA and ROCm builds share it)",
    ),
    VendorImage(
        "rhaiis/vllm-cuda-rhel9",
        _API,
        "cuda",
        "assumed from opendatahub-io/vllm@0312316dd49ffd08feb37cfae9af3e754c5163d5:"
        "Dockerfile.ubi (the upstream of Red Hat's vLLM builds; not read for this image)",
    ),
    VendorImage(
        "rhaiis/vllm-rocm-rhel9",
        _API,
        "rocm",
        "assumed from opendatahub-io/vllm@0312316dd49ffd08feb37cfae9af3e754c5163d5:"
        "Dockerfile.ubi (not read for this image)",
    ),
    VendorImage(
        "opea/vllm",
        ("vllm", "serve"),
        "cpu",
        "opea-project/GenAIComps docs: built from vllm-project/vllm's Dockerfile.cpu "
        "(vllm-openai stage: ENTRYPOINT vllm serve in recent vLLM)",
    ),
    VendorImage(
        "opea/vllm-cpu",
        ("vllm", "serve"),
        "cpu",
        "opea-project/GenAIComps@0bb1c85f95d0b0d34fbb7aa8c7068034282a726c:"
        "comps/third_parties/vllm/src/build_docker_vllm.sh (vllm docker/Dockerfile.cpu)",
    ),
    VendorImage(
        "opea/vllm-rocm",
        ("python3", "/workspace/api_server.py"),
        "rocm",
        "opea-project/GenAIComps@1f255aa7e9c8d091e4b8fae2ebb53f4f72c22c73:"
        "comps/third_parties/vllm/src/Dockerfile.amd_gpu (FROM rocm/vllm:rocm6.3.1_instinct_"
        "vllm0.8.3_20250410; RUN cp .../vllm/entrypoints/openai/api_server.py "
        "/workspace/api_server.py; ENTRYPOINT python3 /workspace/api_server.py)",
        api_server_copy="/workspace/api_server.py",
    ),
    VendorImage(
        "opea/vllm-gaudi",
        _API,
        "other",
        "opea-project/GenAIComps@0bb1c85f95d0b0d34fbb7aa8c7068034282a726c:"
        "comps/third_parties/vllm/src/build_docker_vllm.sh → HabanaAI/vllm-fork@"
        "5c207d16f5ae7f73f7eff64facc61620bcaf5cdb:Dockerfile.hpu",
    ),
    VendorImage(
        "habanaai/vllm-fork",
        _API,
        "other",
        "HabanaAI/vllm-fork@5c207d16f5ae7f73f7eff64facc61620bcaf5cdb:Dockerfile.hpu",
    ),
    VendorImage(
        "intel/redhat-ai-services",
        _API,
        "other",
        "rh-aiservices-bu/llm-on-openshift@2b63898660f1ac651003e73a8ffe2a06b3d611f7:"
        "llm-servers/vllm/hpu/Containerfile (ENTRYPOINT python3 -m "
        "vllm.entrypoints.openai.api_server; HabanaAI/vllm-fork for Gaudi; its README.md "
        "publishes it as intel/redhat-ai-services:llm-on-openshift_ubi9.4_1.20.0)",
        tag_prefix="llm-on-openshift_",
    ),
    VendorImage(
        "rocm/vllm",
        None,
        "rocm",
        "ROCm/vllm@0004921e91151cef01a9c63c02413915fcb38504:docker/Dockerfile.rocm "
        "(`final` stage: CMD /bin/bash, no ENTRYPOINT; only the `vllm-openai` stage, "
        "vLLM's own vllm-openai-rocm, runs vllm serve; the stage is assumed)",
    ),
    VendorImage(
        "rocm/vllm-dev",
        None,
        "rocm",
        "ROCm/vllm@0004921e91151cef01a9c63c02413915fcb38504:docker/Dockerfile.rocm "
        "(`final` stage assumed: CMD /bin/bash)",
    ),
    VendorImage(
        "intel/vllm",
        ("vllm", "serve"),
        "other",
        "vllm-project/vllm@05cb1bc2ae71c406574afe51f4cd91f2a33e2891:docker/Dockerfile.xpu "
        "(vllm-openai stage; Intel's XPU builds assumed to use it)",
    ),
    # llm-d's modelservice chart runs these with `modelCommand: imageDefault` ("no command will
    # be added; the default command defined in the image will be used") and vLLM's flags as
    # args: the image's ENTRYPOINT is vLLM's server (llm-d-incubation/llm-d-modelservice@
    # 3051935eb5a49f6df21cd6aeb5e4f05b98799262: charts/llm-d-modelservice/values.yaml:339,
    # templates/_helpers.tpl:596-624; examples/values-xpu.yaml, values-rebellions-atom.yaml)
    VendorImage(
        "llm-d/llm-d-xpu",
        _API,
        "other",
        "assumed from llm-d-incubation/llm-d-modelservice@3051935eb5a49f6df21cd6aeb5e4f05b98799262:"
        "examples/values-xpu.yaml (modelCommand imageDefault with vLLM flags; Intel XPU)",
    ),
    VendorImage(
        "rebellions/vllm-rbln-rhel9",
        _API,
        "other",
        "assumed from llm-d-incubation/llm-d-modelservice@3051935eb5a49f6df21cd6aeb5e4f05b98799262:"
        "examples/values-rebellions-atom.yaml (modelCommand imageDefault; Rebellions ATOM NPU)",
    ),
    VendorImage(
        "ascend/vllm-ascend",
        None,
        "other",
        "vllm-project/vllm-ascend@182b75ea84ff13ece27b57391331ef8935410aea:Dockerfile:112 "
        "(CMD /bin/bash, no ENTRYPOINT: a command must start vLLM; Ascend NPU)",
    ),
    VendorImage(
        "nvidia/ai-dynamo/vllm-runtime",
        None,
        "cuda",
        "ai-dynamo/dynamo@039a024501f614aaed3c8120205060747103e3c5:container/Dockerfile.vllm "
        "(RUNTIME_IMAGE nvcr.io/nvidia/cuda ...-runtime, vLLM built with CUDA; its ENTRYPOINT "
        "not read: the pods give `python3 -m dynamo.vllm` as their command)",
    ),
    VendorImage(
        "lmcache/vllm-openai",
        ("vllm", "serve"),
        "cuda",
        "LMCache/LMCache@0340e303bf46294001d96d12d0c952495ea41420:docker/Dockerfile "
        "(FROM vllm/vllm-openai, ENTRYPOINT vllm serve)",
    ),
    VendorImage(
        "kserve/huggingfaceserver",
        ("python3", "-m", "huggingfaceserver"),
        None,
        "kserve/kserve@0000bfd8ede3ace813d7a1ac5f973f9f455d0dde:"
        "python/huggingface_server.Dockerfile",
    ),
    VendorImage(
        "kserve/huggingfaceserver-gpu",
        ("python3", "-m", "huggingfaceserver"),
        "cuda",
        "kserve/kserve@0000bfd8ede3ace813d7a1ac5f973f9f455d0dde:"
        "python/huggingface_server.Dockerfile",
    ),
)


def vendor_image(image: str | None) -> VendorImage | None:
    """The VENDOR_IMAGES row of an image (registry ignored), else None."""
    repo = split_image(image)[0].lower()
    if not repo:
        return None
    parts = repo.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]  # registry host
    path = "/".join(parts)
    tag = (split_image(image)[1] or "").lower()
    best = None
    for row in VENDOR_IMAGES:
        if row.tag_prefix is not None and not tag.startswith(row.tag_prefix.lower()):
            continue
        if (path == row.repo or path.endswith("/" + row.repo)) and (
            best is None or len(row.repo) > len(best.repo)
        ):
            best = row
    return best


def image_device(image: str | None) -> str | None:
    """The device a vendor image is built for (VENDOR_IMAGES), else None."""
    row = vendor_image(image)
    return row.device if row else None


_VLLM_TAG_RE = re.compile(r"^v?(0\.\d+)(?:\.(\d+))?")


def split_image(image: str | None) -> tuple[str, str | None, str | None]:
    """'reg:5000/org/name:tag@sha256:..' → ('reg:5000/org/name', 'tag', 'sha256:..')."""
    if not image or not isinstance(image, str):
        return "", None, None
    ref, _, digest = image.partition("@")
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    tag = None
    if colon > slash:
        ref, tag = ref[:colon], ref[colon + 1 :]
    return ref, tag or None, digest or None


def repo_name(image: str | None) -> str:
    return split_image(image)[0].rsplit("/", 1)[-1].lower()


def is_vllm_image(image: str | None) -> bool:
    return repo_name(image) in VLLM_IMAGE_NAMES


def is_hf_server_image(image: str | None) -> bool:
    return repo_name(image) in HF_SERVER_NAMES


def is_cpu_image(image: str | None) -> bool:
    """vLLM CPU builds: vllm-cpu*, *-cpu, cpu-release repositories or -cpu tags."""
    if not image or not isinstance(image, str):
        return False
    repo, tag, _ = split_image(image)
    name = repo.rsplit("/", 1)[-1].lower()
    t = (tag or "").lower()
    return (
        "vllm-cpu" in name
        or name.endswith("-cpu")
        or "cpu-release" in name
        or t.endswith("-cpu")
        or "-cpu-" in t
        or t == "cpu"
        or t.startswith("cpu-")
    )


# vLLM's first release, v0.1.0 (June 2023): a lower tag on an image that names vLLM is the
# builder's own numbering (quay.io/rh-aiservices-bu/vllm-openai-ubi9:0.0.2)
FIRST_VLLM_RELEASE = (0, 1, 0)


# Images whose `vllm serve` takes more options than vLLM's own parser: a flag vLLM lacks may be
# theirs, so it is listed, not said to stop the pod. vLLM-Omni's image (vllm/vllm-omni) adds
# --omni, --stage-configs-path and more to vllm serve; its tag follows the vLLM release it is
# built on ("vLLM-Omni is released against the matching upstream vLLM major/minor version",
# docs.vllm.ai/projects/vllm-omni getting_started/installation), so the tag is read as vLLM's.
PARSER_EXTENDING_IMAGES = {"vllm-omni": "vLLM-Omni's"}


def extends_vllm_parser(image: str | None) -> str | None:
    """Whose options an image adds to vLLM's parser ("vLLM-Omni's"), or None."""
    return PARSER_EXTENDING_IMAGES.get(repo_name(image))


def image_version(image: str | None) -> VllmVersion | None:
    """The vLLM version in an image tag (v0.11.0, 0.10.1.1, v0.11.0-cpu), for images whose
    repository names vLLM; None when the tag says nothing (latest, nightly, a digest) or the
    image is not a vLLM image (other products' version numbers are not vLLM's)."""
    repo, tag, _ = split_image(image)
    if not tag or "vllm" not in repo.lower() or vendor_image(image) is not None:
        return None
    m = _VLLM_TAG_RE.match(tag)
    if not m:
        return None
    version = VllmVersion.parse(m.group(0), source="image tag")
    if version.tuple < FIRST_VLLM_RELEASE:
        return None  # a builder's own 0.0.x numbering, not a vLLM release
    return version


def is_newest_tag(image: str | None) -> bool:
    """vLLM's own image pulled as `latest` (or without a tag or digest): the newest release."""
    _repo, tag, digest = split_image(image)
    return is_vllm_image(image) and digest is None and (tag is None or tag.lower() == "latest")


def entrypoint_for(image: str | None) -> list[str] | None:
    """The ENTRYPOINT of known images (vLLM's, KServe's Hugging Face server, the vendor images
    of VENDOR_IMAGES), else None (also for a vendor image that runs no vLLM by itself)."""
    row = vendor_image(image)
    if row is not None:
        return list(row.entrypoint) if row.entrypoint else None
    if is_hf_server_image(image):
        return list(HF_SERVER)
    if not is_vllm_image(image):
        return None
    version = image_version(image)
    chosen = ENTRYPOINT_TABLE[-1][1]  # unknown tag → latest
    if version is not None:
        for first, ep in ENTRYPOINT_TABLE:
            if version.tuple >= first:
                chosen = ep
    return list(chosen)


def api_server_copy(image: str | None) -> str | None:
    """Where a known vendor image keeps its copy of vLLM's api_server.py (VendorImage)."""
    row = vendor_image(image)
    return row.api_server_copy if row is not None else None


def preloads_tcmalloc(image: str | None) -> bool:
    """vLLM's official CPU images set LD_PRELOAD to tcmalloc (docker/Dockerfile.cpu)."""
    return is_vllm_image(image) and is_cpu_image(image)
