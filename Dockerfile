# syntax=docker/dockerfile:1
# vllm-sizer: the admission webhook and controller image.
#   docker build -t vllm-sizer:0.1.0 .
#   (the Helm chart runs it as `vllm-sizer run --role webhook|controller`)

# The base: any Debian-like image with Python 3.11+ (`python`, `python -m venv`, groupadd and
# useradd), e.g. one made from a debootstrap rootfs (tests/node builds it that way with
# buildah: --build-arg PYTHON_IMAGE=localhost/...). PIP_CERT: a CA bundle for pip where a
# proxy re-signs TLS (mount it, e.g. -v /etc/ssl/certs/ca-certificates.crt:...:ro).
ARG PYTHON_IMAGE=python:3.11-slim

# ---- build: install the package and its dependencies into a venv ----------------------------
FROM ${PYTHON_IMAGE} AS build
ARG PIP_CERT=""
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/vllm-sizer
WORKDIR /src
# Only what `pip install .` needs (see .dockerignore).
COPY pyproject.toml README.md ./
COPY vllm_sizer ./vllm_sizer
RUN if [ -z "$PIP_CERT" ]; then unset PIP_CERT; fi \
 && /opt/vllm-sizer/bin/pip install --no-compile '.[operator]' \
 && /opt/vllm-sizer/bin/python -m compileall -q /opt/vllm-sizer/lib \
 && /opt/vllm-sizer/bin/vllm-sizer --help >/dev/null

# ---- runtime ------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="vllm-sizer" \
      org.opencontainers.image.description="Admission webhook and controller that size vLLM pods' memory" \
      org.opencontainers.image.licenses="Apache-2.0"
# 65532: the "nonroot" uid/gid the chart's securityContext runs as.
RUN groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --home-dir /home/nonroot --create-home \
      --shell /usr/sbin/nologin nonroot
COPY --from=build /opt/vllm-sizer /opt/vllm-sizer
# The root filesystem is read-only in the cluster: bytecode is precompiled above, nothing is
# written at run time except to /tmp and the certificate directory (emptyDirs in the chart).
ENV PATH=/opt/vllm-sizer/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/home/nonroot \
    VLLM_SIZER_CERT_DIR=/tmp/vllm-sizer-certs
USER 65532:65532
WORKDIR /home/nonroot
# 9443: webhook (TLS: /mutate, /validate, /healthz); 8080: /metrics and /healthz (plain HTTP).
EXPOSE 9443 8080
ENTRYPOINT ["vllm-sizer", "run"]
CMD ["--role", "webhook"]
