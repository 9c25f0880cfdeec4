{{/*
Names. The webhook configurations and the certificate Secret have fixed names: they are part of
the operator's contract (vllm_sizer/operator/settings.py), so one release per cluster.
*/}}
{{- define "vllm-sizer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "vllm-sizer.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "vllm-sizer.webhookName" -}}
{{- printf "%s-webhook" (include "vllm-sizer.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "vllm-sizer.controllerName" -}}
{{- printf "%s-controller" (include "vllm-sizer.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "vllm-sizer.metricsName" -}}
{{- printf "%s-metrics" (include "vllm-sizer.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fixed names from vllm_sizer/operator/settings.py. */}}
{{- define "vllm-sizer.mutatingConfigName" -}}vllm-sizer-mutating{{- end }}
{{- define "vllm-sizer.validatingConfigName" -}}vllm-sizer-validating{{- end }}
{{- define "vllm-sizer.certSecretName" -}}
{{- if .Values.existingSecret }}{{ .Values.existingSecret }}{{ else }}vllm-sizer-webhook-tls{{ end }}
{{- end }}

{{- define "vllm-sizer.certMode" -}}
{{- if .Values.certManager.enabled }}cert-manager{{ else if .Values.existingSecret }}secret{{ else }}self-signed{{ end }}
{{- end }}

{{- define "vllm-sizer.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "vllm-sizer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vllm-sizer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "vllm-sizer.labels" -}}
helm.sh/chart: {{ include "vllm-sizer.chart" . }}
{{ include "vllm-sizer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: vllm-sizer
{{- end }}

{{- define "vllm-sizer.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion (toString .Values.image.tag)) }}
{{- end }}
{{- end }}

{{/* Restricted Pod Security Standard, for both roles. */}}
{{- define "vllm-sizer.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "vllm-sizer.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
privileged: false
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
Namespaces the webhooks never see, in the order of the Python builder: kube-system, the release
namespace, then excludedNamespaces (no duplicates).
*/}}
{{- define "vllm-sizer.excludedNamespaces" -}}
{{- $excluded := list "kube-system" .Release.Namespace }}
{{- range .Values.excludedNamespaces }}{{ if not (has . $excluded) }}{{ $excluded = append $excluded . }}{{ end }}{{ end }}
{{- join "," $excluded }}
{{- end }}

{{/*
Settings shared by both roles, as the VLLM_SIZER_* variables OperatorSettings reads (env_names()).
*/}}
{{- define "vllm-sizer.env" -}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: VLLM_SIZER_OPERATOR_NAMESPACE
  value: {{ .Release.Namespace | quote }}
- name: VLLM_SIZER_MODE
  value: {{ .Values.mode | quote }}
- name: VLLM_SIZER_HEADROOM
  value: {{ .Values.headroom | toString | quote }}
- name: VLLM_SIZER_ROUNDING
  value: {{ .Values.rounding | toString | quote }}
- name: VLLM_SIZER_PIN_CPU_KV_GIB
  value: {{ .Values.pinCpuKvGiB | toString | quote }}
{{- if .Values.largestNodeMemory }}
- name: VLLM_SIZER_LARGEST_NODE_MEMORY
  value: {{ .Values.largestNodeMemory | toString | quote }}
{{- end }}
- name: VLLM_SIZER_FAIL_CLOSED
  value: {{ .Values.failClosed | toString | quote }}
- name: VLLM_SIZER_NAMESPACES
  value: {{ join "," .Values.namespaces | quote }}
- name: VLLM_SIZER_EXCLUDED_NAMESPACES
  value: {{ include "vllm-sizer.excludedNamespaces" . | quote }}
{{- if .Values.modelConfigs.namespace }}
- name: VLLM_SIZER_MODEL_CONFIGS_NAMESPACE
  value: {{ .Values.modelConfigs.namespace | quote }}
{{- end }}
- name: VLLM_SIZER_MODEL_CONFIGS_TRUSTED_NAMESPACE
  value: {{ .Values.modelConfigs.trustedNamespace | default .Values.modelConfigs.namespace | default .Release.Namespace | quote }}
- name: VLLM_SIZER_MODEL_CONFIGS_TTL_SECONDS
  value: {{ .Values.modelConfigs.ttlSeconds | toString | quote }}
- name: VLLM_SIZER_HUB_FETCH
  value: {{ .Values.hub.enabled | toString | quote }}
{{- if .Values.hub.enabled }}
- name: HF_ENDPOINT
  value: {{ .Values.hub.endpoint | quote }}
- name: VLLM_SIZER_HUB_TIMEOUT_SECONDS
  value: {{ .Values.hub.timeoutSeconds | toString | quote }}
{{- if .Values.hub.tokenSecret.name }}
- name: VLLM_SIZER_HUB_TOKEN_FILE
  value: /var/run/secrets/vllm-sizer/hub/{{ .Values.hub.tokenSecret.key }}
{{- end }}
{{- end }}
- name: VLLM_SIZER_LOOKUP_TIMEOUT_SECONDS
  value: {{ .Values.lookupTimeoutSeconds | toString | quote }}
- name: VLLM_SIZER_CERT_DIR
  value: /var/run/vllm-sizer/certs
- name: VLLM_SIZER_CERT_MODE
  value: {{ include "vllm-sizer.certMode" . | quote }}
- name: VLLM_SIZER_MAX_REQUEST_SIZE
  value: {{ .Values.maxRequestSize | toString | quote }}
- name: VLLM_SIZER_SERVICE_NAME
  value: {{ include "vllm-sizer.webhookName" . | quote }}
- name: VLLM_SIZER_PATCH_EXISTING
  value: {{ .Values.patchExisting | toString | quote }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Volumes shared by both roles: a writable /tmp, the cert dir, the Hub token. */}}
{{- define "vllm-sizer.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- if and .webhook (ne (include "vllm-sizer.certMode" .root) "self-signed") }}
- name: certs
  secret:
    secretName: {{ include "vllm-sizer.certSecretName" .root }}
    defaultMode: 0440
{{- else }}
- name: certs
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
{{- end }}
{{- if and .root.Values.hub.enabled .root.Values.hub.tokenSecret.name }}
- name: hub-token
  secret:
    secretName: {{ .root.Values.hub.tokenSecret.name }}
    defaultMode: 0440
    items:
      - key: {{ .root.Values.hub.tokenSecret.key }}
        path: {{ .root.Values.hub.tokenSecret.key }}
{{- end }}
{{- end }}

{{- define "vllm-sizer.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: certs
  mountPath: /var/run/vllm-sizer/certs
  {{- if and .webhook (ne (include "vllm-sizer.certMode" .root) "self-signed") }}
  readOnly: true
  {{- end }}
{{- if and .root.Values.hub.enabled .root.Values.hub.tokenSecret.name }}
- name: hub-token
  mountPath: /var/run/secrets/vllm-sizer/hub
  readOnly: true
{{- end }}
{{- end }}

{{/*
The workload kinds the webhooks serve (rules) and the controller watches (watched: true):
files/served-resources.yaml, generated by scripts/render-manifests.py from the one kinds table
(vllm_sizer/workloads/kinds.py; a test keeps them identical).
*/}}
{{- define "vllm-sizer.servedResources" -}}
{{ .Files.Get "files/served-resources.yaml" }}
{{- end }}

{{/* RBAC rules on the kinds the controller watches, one rule per API group, with the given
verbs. */}}
{{- define "vllm-sizer.servedRules" -}}
{{- $served := list }}
{{- range fromYamlArray (include "vllm-sizer.servedResources" .root) }}{{ if .watched }}{{ $served = append $served . }}{{ end }}{{ end }}
{{- $groups := list }}
{{- range $served }}{{ $groups = append $groups .group }}{{ end }}
{{- range ($groups | uniq) }}
{{- $group := . }}
{{- $plurals := list }}
{{- range $served }}{{ if eq .group $group }}{{ $plurals = append $plurals .plural }}{{ end }}{{ end }}
- apiGroups: [{{ $group | quote }}]
  resources: [{{ range $i, $p := ($plurals | uniq) }}{{ if $i }}, {{ end }}{{ $p | quote }}{{ end }}]
  verbs: [{{ range $i, $v := $.verbs }}{{ if $i }}, {{ end }}{{ $v | quote }}{{ end }}]
{{- end }}
{{- end }}

{{/* Read access both roles need to size a workload (model configs, LimitRanges, KServe). */}}
{{- define "vllm-sizer.sizingReadRules" -}}
{{- if not .Values.modelConfigs.namespace }}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch"]
{{- end }}
- apiGroups: [""]
  resources: ["limitranges"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["serving.kserve.io"]
  resources: ["servingruntimes", "clusterservingruntimes"]
  verbs: ["get", "list", "watch"]
{{- end }}

{{/* Whether the operator itself writes caBundle into the webhook configurations. */}}
{{- define "vllm-sizer.patchesCaBundle" -}}
{{- $mode := include "vllm-sizer.certMode" . }}
{{- if or (eq $mode "self-signed") (and (eq $mode "secret") (not .Values.caBundle)) }}true{{ end }}
{{- end }}

{{/* A probe from values, aimed at the bind address when one is set (hostNetwork with
bindAddress 127.0.0.1: the kubelet would otherwise probe the node IP). */}}
{{- define "vllm-sizer.probe" -}}
{{- $probe := deepCopy .probe }}
{{- if and .bind $probe.httpGet }}
{{- $_ := set $probe.httpGet "host" .bind }}
{{- end }}
{{- toYaml $probe }}
{{- end }}

{{/* dnsPolicy: the value, else ClusterFirstWithHostNet for hostNetwork pods. */}}
{{- define "vllm-sizer.dnsPolicy" -}}
{{- if .root.Values.dnsPolicy }}{{ .root.Values.dnsPolicy }}{{ else if .hostNetwork }}ClusterFirstWithHostNet{{ else }}ClusterFirst{{ end }}
{{- end }}
