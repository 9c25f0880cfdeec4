"""Every name vllm-sizer reads from or writes to the Kubernetes API under its own `vllm-sizer.io`
group: annotation and label keys, the admission webhooks' names, Kopf's annotation prefix.

The one home of these strings (tests/architecture/test_api_names.py fails on a `vllm-sizer.io`
literal anywhere else in the package). It sits in workloads, the lowest layer that knows
Kubernetes objects, so the reader, the policy, the operator and the CLI all import it. The
chart's webhook conditions are rendered from the Python builder (scripts/render-manifests.py),
and tests/helm holds the chart's other copies (webhook names, labels) equal to these.

Naming: `ANNOTATION_*` an object's owner writes and vllm-sizer reads (inputs);
`*_ANNOTATION` vllm-sizer writes (outputs); `*_LABEL` labels.
"""

from __future__ import annotations

GROUP = "vllm-sizer.io"
PREFIX = GROUP + "/"

# ---- inputs: annotations on the workload, set by its owner
ANNOTATION_MODEL_CONFIG = PREFIX + "model-config"  # inline config.json (JSON)
ANNOTATION_VLLM_CONFIG = PREFIX + "vllm-config"  # contents of a --config YAML file
ANNOTATION_MODE = PREFIX + "mode"  # mutate | enforce | warn | off for this object
ANNOTATION_HEADROOM = PREFIX + "headroom"  # "0.2" or "20%"
ANNOTATION_SKIP = PREFIX + "skip"  # "true": never sized

# ---- outputs: annotations vllm-sizer writes on the workload
ESTIMATE_ANNOTATION = PREFIX + "estimate"  # the estimated peak, per container
BREAKDOWN_ANNOTATION = PREFIX + "breakdown"  # the terms of the estimate (JSON)
NOTES_ANNOTATION = PREFIX + "notes"  # the estimate's notes
DECISION_ANNOTATION = PREFIX + "decision"  # what changed, from → to, or why nothing did
ESTIMATOR_VERSION_ANNOTATION = PREFIX + "estimator-version"
LAST_EVENT_ANNOTATION = PREFIX + "last-event"  # "<Reason> <digest>" of the last Event posted
PODS_ANNOTATION = PREFIX + "pods"  # what the pod-level webhook did to the object's pods
LAST_OOM_ANNOTATION = PREFIX + "last-oom"  # the last OOMKill of a sized container (JSON)
# on an object `check` made from an OpenShift Template (templates.py): the Template and its
# parameters whose value is unknown there (generated, or required with no value), JSON
TEMPLATE_UNKNOWN_ANNOTATION = PREFIX + "template-unknown"

# ---- labels
SIZED_LABEL = PREFIX + "sized"  # pod templates of sized workloads: the OOM watch selects by it
MODEL_CONFIGS_LABEL = PREFIX + "model-configs"  # ConfigMaps holding model config.json files
DEV_LABEL = PREFIX + "dev"  # webhook configurations registered by `vllm-sizer run --dev`

# ---- the admission webhooks and the controller's own state
MUTATING_WEBHOOK_NAME = "mutate." + GROUP
VALIDATING_WEBHOOK_NAME = "validate." + GROUP
KOPF_PREFIX = "controller." + GROUP  # Kopf's progress and diff-base annotations
