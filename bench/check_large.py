"""`vllm-sizer check` on large inputs: seconds per MB for each output (-o text / json / yaml),
at two sizes of each shape, so that growth is read as a ratio (linear: the 4x input takes
about 4x). Shapes: many small Deployments (examples/01 renamed), one Deployment with a long
env list, one large ConfigMap (multi-MB of data) beside examples/01. In-process, after one
warm-up run (the catalog index is loaded once); the same files are read by each output, so
the text output is the baseline of the yaml and json ones.

    .venv/bin/python bench/check_large.py [--scale 1]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this tree's vllm_sizer

from vllm_sizer.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "01-cpu-lora-deployment.yaml"


def shapes(scale: int) -> dict[str, str]:
    dep = yaml.safe_load(EXAMPLE.read_text())
    out = {}
    for n in (250 * scale, 1000 * scale):
        docs = []
        for i in range(n):
            d = copy.deepcopy(dep)
            d["metadata"]["name"] = f"d{i}"
            docs.append(d)
        out[f"{n} Deployments"] = yaml.safe_dump_all(docs)
    for n in (5000 * scale, 20000 * scale):
        d = copy.deepcopy(dep)
        c = d["spec"]["template"]["spec"]["containers"][0]
        c.setdefault("env", []).extend({"name": f"E{i}", "value": "v" * 50} for i in range(n))
        out[f"1 Deployment, {n} env"] = yaml.safe_dump(d)
    for mb in (2 * scale, 8 * scale):
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c"},
            "data": {f"k{i}": "x" * 1000 for i in range(mb * 1000)},
        }
        out[f"ConfigMap {mb} MB + 1 Deployment"] = (
            yaml.safe_dump(cm) + "---\n" + yaml.safe_dump(dep)
        )
    return out


def run(path: Path, output: str) -> float:
    sink = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
        main(["check", "-o", output, str(path)])
    return time.perf_counter() - t0


def bench() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=int, default=1)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        run(EXAMPLE, "text")  # warm-up
        print("| input | MB | -o text s | -o json s | -o yaml s | yaml s/MB |")
        print("|---|---|---|---|---|---|")
        for name, text in shapes(args.scale).items():
            f = Path(d) / "in.yaml"
            f.write_text(text)
            mb = len(text.encode()) / 2**20
            t = {o: run(f, o) for o in ("text", "json", "yaml")}
            print(
                f"| {name} | {mb:.1f} | {t['text']:.2f} | {t['json']:.2f} | {t['yaml']:.2f} "
                f"| {t['yaml'] / mb:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    bench()
