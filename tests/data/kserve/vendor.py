"""Regenerate the vendored KServe CRD schemas from a kserve/kserve checkout:
    python tests/data/kserve/vendor.py /path/to/kserve COMMIT
Keeps each served version's openAPIV3Schema for the fields vllm-sizer patches (the predictor,
LLMInferenceService template / prefill / worker / model / parallelism), drops descriptions, and
marks every other top-level spec field as an object of any content."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import yaml

SOURCES = {
    "inferenceservices": ("config/crd/full/serving.kserve.io_inferenceservices.yaml",
                          {"predictor"}),
    "llminferenceservices": ("config/crd/full/llmisvc/serving.kserve.io_llminferenceservices.yaml",
                             {"model", "template", "prefill", "worker", "parallelism"}),
}


def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k != "description"}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def main(root: str, commit: str) -> None:
    out_dir = Path(__file__).parent
    for plural, (path, keep) in SOURCES.items():
        crd = yaml.safe_load((Path(root) / path).read_text())
        versions = {}
        for v in crd["spec"]["versions"]:
            schema = strip(v["schema"]["openAPIV3Schema"])
            spec = schema["properties"]["spec"]
            for name in list(spec["properties"]):
                if name not in keep:
                    spec["properties"][name] = {"x-kubernetes-preserve-unknown-fields": True}
            versions[v["name"]] = schema
        data = {"source": f"kserve/kserve@{commit}:{path}", "kind": crd["spec"]["names"]["kind"],
                "group": crd["spec"]["group"], "versions": versions}
        with gzip.open(out_dir / f"{plural}.schema.json.gz", "wt", encoding="utf-8") as fh:
            json.dump(data, fh, separators=(",", ":"), sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
