"""What a container image tells us: vLLM version, ENTRYPOINT, CPU build, allocator."""

from __future__ import annotations

import re

from ..estimator.versions import VllmVersion

API_SERVER = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
VLLM_SERVE = ["vllm", "serve"]
HF_SERVER = ["python", "-m", "huggingfaceserver"]

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
    "vllm-openai", "vllm-openai-cpu", "vllm-cpu", "vllm-cpu-release-repo", "vllm-openai-rocm",
    "vllm-rocm", "vllm-openai-xpu",
}
HF_SERVER_NAMES = {"huggingfaceserver", "huggingfaceserver-gpu"}
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
        ref, tag = ref[:colon], ref[colon + 1:]
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
    return ("vllm-cpu" in name or name.endswith("-cpu") or "cpu-release" in name
            or t.endswith("-cpu") or "-cpu-" in t or t == "cpu" or t.startswith("cpu-"))


def image_version(image: str | None) -> VllmVersion | None:
    """The vLLM version in an image tag (v0.11.0, 0.10.1.1, v0.11.0-cpu), for images whose
    repository names vLLM; None when the tag says nothing (latest, nightly, a digest) or the
    image is not a vLLM image (other products' version numbers are not vLLM's)."""
    repo, tag, _ = split_image(image)
    if not tag or "vllm" not in repo.lower():
        return None
    m = _VLLM_TAG_RE.match(tag)
    if not m:
        return None
    return VllmVersion.parse(m.group(0), source="image tag")


def entrypoint_for(image: str | None) -> list[str] | None:
    """The ENTRYPOINT of known images (vLLM's, KServe's Hugging Face server), else None."""
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


def preloads_tcmalloc(image: str | None) -> bool:
    """vLLM's official CPU images set LD_PRELOAD to tcmalloc (docker/Dockerfile.cpu)."""
    return is_vllm_image(image) and is_cpu_image(image)
