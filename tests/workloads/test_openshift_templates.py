"""OpenShift Templates read as `oc process` makes their objects (workloads/templates.py).

The truth is openshift/library-go pkg/template/templateprocessing (processor.go: Process,
GenerateParameterValues, EvaluateParameterSubstitution, stripNamespace, addObjectLabels;
object.go: visitUnsettableValues), never what the reader gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vllm_sizer.cli.check import load_documents
from vllm_sizer.cli.main import main as cli_main
from vllm_sizer.workloads import read_workloads
from vllm_sizer.workloads.api_names import TEMPLATE_UNKNOWN_ANNOTATION
from vllm_sizer.workloads.templates import process_template

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "published"

TEMPLATE = """
apiVersion: template.openshift.io/v1
kind: Template
metadata:
  name: vllm-tpl
labels:
  app: ${APP}
parameters:
- name: APP
  value: vllm
- name: MODEL
  value: Qwen/Qwen2.5-7B-Instruct
- name: MAX_LEN
  value: "8192"
- name: REPLICAS
  value: "2"
- name: MEMORY
  value: 24Gi
- name: API_KEY
  generate: expression
  from: "[a-z0-9]{16}"
- name: EXTRA
- name: HF_TOKEN
  required: true
objects:
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: ${APP}-server
    namespace: hardcoded
  spec:
    replicas: ${{REPLICAS}}
    template:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          args: ["--model", "${MODEL}", "--max-model-len=${MAX_LEN}", "--api-key", "${API_KEY}",
                 "--served-model-name=x${EXTRA}y", "${UNDECLARED}"]
          env:
          - name: HF_TOKEN
            value: ${HF_TOKEN}
          resources:
            limits:
              memory: ${MEMORY}
              nvidia.com/gpu: "1"
        - name: proxy
          image: nginx
"""


def _write(tmp_path: Path, text: str, name: str = "t.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_oc_process_semantics(tmp_path):
    docs = load_documents([_write(tmp_path, TEMPLATE)])
    assert [d["kind"] for d in docs] == ["Deployment"]
    d = docs[0]
    meta = d["metadata"]
    assert meta["name"] == "vllm-server"
    assert "namespace" not in meta  # a literal namespace is stripped by oc process
    assert meta["labels"] == {"app": "vllm"}  # the Template's labels, substituted
    assert d["spec"]["replicas"] == 2  # ${{X}}: the value read as JSON
    args = d["spec"]["template"]["spec"]["containers"][0]["args"]
    # optional with no value: ""; not a parameter: as written; generated: unknown (as written)
    assert args == ["--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len=8192", "--api-key",
                    "${API_KEY}", "--served-model-name=xy", "${UNDECLARED}"]
    note = json.loads(meta["annotations"][TEMPLATE_UNKNOWN_ANNOTATION])
    assert note["template"] == "vllm-tpl"
    assert set(note["parameters"]) == {"API_KEY", "HF_TOKEN"}


def test_template_deployment_is_read_with_its_defaults(tmp_path):
    docs = load_documents([_write(tmp_path, TEMPLATE)])
    ws = [w for d in docs for w in read_workloads(d)]
    assert [(w.kind, w.name, w.container) for w in ws] == [("Deployment", "vllm-server", "vllm")]
    w = ws[0]
    assert w.model == "Qwen/Qwen2.5-7B-Instruct"
    assert w.settings is not None and w.settings.max_model_len == 8192
    assert w.limit_bytes == 24 * 2**30
    said = " ".join(d.message for d in w.diagnostics)
    assert "HF_TOKEN" in said and "required" in said
    assert "API_KEY" in said and "generated" in said


def test_read_workloads_on_a_template_reads_its_objects_unpatched():
    obj = yaml.safe_load(TEMPLATE)
    ws = read_workloads(obj)
    assert [(w.kind, w.name, w.model) for w in ws] == [
        ("Deployment", "vllm-server", "Qwen/Qwen2.5-7B-Instruct")]
    assert not ws[0].patchable


def test_legacy_v1_template_and_non_json_non_string_value(tmp_path):
    text = TEMPLATE.replace("template.openshift.io/v1", "v1").replace('value: "2"', "value: two")
    docs = load_documents([_write(tmp_path, text)])
    assert docs[0]["spec"]["replicas"] == "two"  # not JSON: kept as the string


def test_templated_namespace_is_kept(tmp_path):
    text = TEMPLATE.replace("namespace: hardcoded", "namespace: ns-${APP}")
    docs = load_documents([_write(tmp_path, text)])
    assert docs[0]["metadata"]["namespace"] == "ns-vllm"


def test_servingruntime_template_is_the_runtime_of_an_inferenceservice(tmp_path, capsys):
    """odh-model-controller's vLLM ServingRuntime Template (published) beside an
    InferenceService naming its runtime: the processed ServingRuntime is the runtime, as the
    plain object would be."""
    isvc = _write(tmp_path, """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: granite
spec:
  predictor:
    model:
      modelFormat:
        name: vLLM
      runtime: vllm-cuda-runtime
      storageUri: hf://ibm-granite/granite-3.1-8b-instruct
      args: ["--max-model-len=4096"]
      resources:
        limits:
          memory: 40Gi
          nvidia.com/gpu: "1"
""", "isvc.yaml")
    tpl = str(PUBLISHED / "opendatahub" / "template-vllm-cuda-runtime.yaml")
    rc = cli_main(["check", "-o", "json", tpl, isvc])
    rows = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert [(r["kind"], r["name"]) for r in rows] == [("InferenceService", "granite")]
    assert not any("not given to the reader" in x for x in rows[0]["warnings"])
    assert rows[0]["engine"]["model"] == "ibm-granite/granite-3.1-8b-instruct"
    assert rows[0]["engine"]["max_model_len"] == 4096


@pytest.mark.parametrize("bad", [
    "parameters: 3\nobjects: []",
    "parameters: [{value: x}]\nobjects: []",
    "objects: {a: 1}",
    "objects: [3, {kind: 4}, {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}]",
])
def test_bad_templates_are_said_never_a_crash(tmp_path, bad):
    text = "apiVersion: template.openshift.io/v1\nkind: Template\nmetadata: {name: bad}\n" + bad
    errors: list[str] = []
    docs = load_documents([_write(tmp_path, text)], errors)
    assert errors and all("Template bad" in e for e in errors)
    assert all(d["kind"] == "ConfigMap" for d in docs)
    assert read_workloads(yaml.safe_load(text)) == []


def test_substitution_is_bounded():
    big = "x" * 60_000
    obj = {"apiVersion": "v1", "kind": "Template", "metadata": {"name": "b"},
           "parameters": [{"name": "P", "value": big}],
           "objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                        "data": {str(i): "${P}" for i in range(40)}}]}
    processed = process_template(obj)
    assert processed.objects == [] and "past" in processed.problems[0]
