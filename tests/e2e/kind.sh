#!/usr/bin/env bash
# Create (or reuse) a kind cluster and run the e2e suite against it:
#   tests/e2e/kind.sh [pytest args...]
# Environment: KIND_CLUSTER (default vllm-sizer-e2e), KEEP_CLUSTER=1 to keep a cluster this
# script created, KIND_IMAGE to pick the node image, PYTHON (default .venv/bin/python or python3).
#
# The suite itself needs only an API server that can reach the webhook: to run it against any
# other cluster (e.g. a locally built kube-apiserver), skip this script and run
#   VLLM_SIZER_E2E=1 KUBECONFIG=... [VLLM_SIZER_E2E_WEBHOOK_HOST=<address the API server
#   reaches this machine at>] python -m pytest -q tests/e2e
set -euo pipefail
cd "$(dirname "$0")/../.."

die() { echo "kind.sh: $*" >&2; exit 2; }

command -v docker >/dev/null 2>&1 || die "docker is not installed; the e2e suite needs an API server (install Docker and kind, or set KUBECONFIG and run pytest tests/e2e with VLLM_SIZER_E2E=1)"
docker info >/dev/null 2>&1 || die "docker is installed but its daemon is not reachable (is dockerd running, may this user use it?)"
command -v kind >/dev/null 2>&1 || die "kind is not installed (https://kind.sigs.k8s.io/docs/user/quick-start/#installation)"

CLUSTER="${KIND_CLUSTER:-vllm-sizer-e2e}"
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

created=0
if ! kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  echo "kind.sh: creating kind cluster $CLUSTER"
  kind create cluster --name "$CLUSTER" ${KIND_IMAGE:+--image "$KIND_IMAGE"} --wait 120s
  created=1
fi

KUBECONFIG_FILE="$(mktemp)"
cleanup() {
  rm -f "$KUBECONFIG_FILE"
  if [ "$created" = 1 ] && [ "${KEEP_CLUSTER:-0}" != 1 ]; then
    echo "kind.sh: deleting kind cluster $CLUSTER"
    kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
kind get kubeconfig --name "$CLUSTER" > "$KUBECONFIG_FILE"

# The API server runs in a container on the "kind" docker network: it reaches this machine at
# that network's gateway address, where the --dev webhook must listen.
GATEWAY="$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' \
  | tr ' ' '\n' | grep -E '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$' | head -n1 || true)"
[ -n "$GATEWAY" ] || die "could not find the IPv4 gateway of the docker network 'kind'"
echo "kind.sh: the webhook listens on $GATEWAY (docker network 'kind' gateway)"

export KUBECONFIG="$KUBECONFIG_FILE" VLLM_SIZER_E2E=1 VLLM_SIZER_E2E_WEBHOOK_HOST="$GATEWAY"
"$PYTHON" -m pytest -q tests/e2e "$@"
