#!/usr/bin/env python3
"""Differential test: the project's reading of `vllm serve` command lines
(vllm_sizer/workloads/vllm_args.py:parse_vllm_args) against each vLLM version's REAL parser.

The real parser is built the way scripts/gen_vllm_flags.py builds it (its CHILD_SETUP: the
version's unpacked wheel sources with permissive stubs for what is not installed; its
serve_parsers(): the version's own `vllm serve` parser), in a child process that parses one
argv per line with `top.parse_args(["serve", *argv])` (FlexibleArgumentParser's argv rewriting
included: `_` keys, `-O3`, `--config FILE`, dotted keys, `--model` handling) and answers with
the Namespace values the project reads, or "exits" (SystemExit, or an exception out of
parse_args: vLLM stops before it serves).

Command lines are generated from a seeded random generator mixing fragments (exact, `_`,
unique-prefix and ambiguous-prefix spellings of long flags, `=` and two-token values, boolean
spellings, short flags, dotted JSON keys, human-readable ints, repeats, `--`, `--config FILE`,
unknown flags, the positional model in several places). A disagreement is minimised (fragments
dropped while it persists) and classed by the features of the fragments left.

Usage: diff_vllm_parser.py SRC_ROOT [-n CASES] [--seed S] [VERSION ...]
  (SRC_ROOT/VERSION/vllm/...; default versions: 0.6.6 0.8.5 0.11.0 0.14.0 0.20.0 0.26.0 0.33.0)
Prints per version the number of cases and the disagreement classes with a minimal example.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_vllm_flags import CHILD_SETUP

from vllm_sizer.estimator.versions import VllmVersion
from vllm_sizer.workloads import vllm_flags as vf
from vllm_sizer.workloads.vllm_args import parse_vllm_args

DEFAULT_VERSIONS = ["0.6.6", "0.8.5", "0.11.0", "0.14.0", "0.20.0", "0.26.0", "0.33.0"]

# Namespace dest → the project's name for it (ParsedVllm.values key; "model" and
# "kv_connector" handled apart)
DESTS = {
    "max_model_len": "max_model_len",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "max_num_seqs": "max_num_seqs",
    "tensor_parallel_size": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size",
    "data_parallel_size": "data_parallel_size",
    "enable_lora": "enable_lora",
    "max_lora_rank": "max_lora_rank",
    "max_loras": "max_loras",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "kv_cache_memory_bytes": "kv_cache_memory_bytes",
    "cpu_offload_gb": "cpu_offload_gb",
    "dtype": "dtype",
    "quantization": "quantization",
    "enforce_eager": "enforce_eager",
    "enable_chunked_prefill": "enable_chunked_prefill",
    "enable_prefix_caching": "enable_prefix_caching",
}

# ---------------------------------------------------------------- the child: parse argv lines
CHILD_DIFF = r"""
import io, contextlib
_top, _serve, _source = serve_parsers()
DESTS = json.loads(os.environ["DIFF_DESTS"])  # CHILD_SETUP resets sys.argv

def _plain(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {"kv_connector": v.get("kv_connector")} if "kv_connector" in v else repr(v)
    kc = getattr(type(v), "kv_connector", None) if False else None
    try:
        kc = v.kv_connector
    except Exception:
        return repr(v)[:200]
    return {"kv_connector": kc}

print("@@READY@@", flush=True)
for line in sys.stdin:
    argv = json.loads(line)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
            ns = _top.parse_args(["serve", *argv])
        vals = {d: _plain(getattr(ns, d, None)) for d in DESTS}
        model = getattr(ns, "model_tag", None)
        vals["model"] = model if model is not None else _plain(getattr(ns, "model", None))
        vals["kv_connector"] = (_plain(getattr(ns, "kv_transfer_config", None)) or {}).get(
            "kv_connector") if isinstance(_plain(getattr(ns, "kv_transfer_config", None)), dict) else None
        res = {"exits": False, "values": vals}
    except SystemExit as e:
        res = {"exits": True, "why": f"SystemExit({e.code}) " + err.getvalue()[-300:]}
    except Exception as e:
        res = {"exits": True, "why": f"{type(e).__name__}: {e}"[:300]}
    print("@@R@@" + json.dumps(res), flush=True)
"""


class RealParser:
    """One version's real `vllm serve` parser in a child process."""

    def __init__(self, src: Path) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD_SETUP + CHILD_DIFF,
                str(src),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if os.environ.get("DIFF_DEBUG") else subprocess.DEVNULL,
            text=True,
            env={
                **os.environ,
                "VLLM_LOGGING_LEVEL": "ERROR",
                "VLLM_CONFIGURE_LOGGING": "0",
                "PYTHONWARNINGS": "ignore",
                "DIFF_DESTS": json.dumps(list(DESTS)),
            },
        )
        self._read("@@READY@@")

    def _read(self, prefix: str) -> str:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(prefix):
                return line[len(prefix) :]
        raise RuntimeError("the child stopped")

    def parse(self, argv: list[str]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(argv) + "\n")
        self.proc.stdin.flush()
        return json.loads(self._read("@@R@@"))

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


# ---------------------------------------------------------------- the project's reading
_EXIT_WORDS = re.compile(r"will not start|vLLM exits|startup error|does not run|exits at start")


def project(argv: list[str], version: str, config: dict[str, dict]) -> dict[str, Any]:
    p = parse_vllm_args(
        argv,
        version=VllmVersion.parse(version),
        config_loader=lambda path: config.get(path),
        positional_model=True,
        strict=True,
    )
    # vLLM's start-up configuration checks (STARTUP_RULES) run after the parser, when the
    # engine config is built: not the parser's verdict, left out of the comparison
    stops = [
        str(d)
        for d in p.diagnostics
        if (d.exits or (d.severity == "error" and _EXIT_WORDS.search(d.message)))
        and "when it builds its configuration at start-up" not in d.message
    ]
    if stops:
        return {"exits": True, "why": stops[0][:300]}
    # values the parser takes that the project deliberately does not size (its bounds:
    # vllm_args.OutOfRange / COUNT_MAX / MAX_TOKENS, said as "not sized at this value")
    unsized = {
        (d.flag or "").lstrip("-").replace("-", "_")
        for d in p.diagnostics
        if "not sized at this value" in d.message or "when it builds its configuration" in d.message
    }
    vals: dict[str, Any] = {d: p.values.get(t) for d, t in DESTS.items() if d not in unsized}
    vals["model"] = p.model
    vals["kv_connector"] = p.values.get("kv_connector")
    return {"exits": False, "values": vals}


def compare(real: dict, mine: dict, defaults: dict) -> list[str]:
    """The ways the two readings differ ([] when they agree)."""
    if real["exits"] != mine["exits"]:
        return ["real exits, project accepts" if real["exits"] else "project exits, real accepts"]
    if real["exits"]:
        return []
    out = []
    for d, rv in real["values"].items():
        if d not in mine["values"]:
            continue  # deliberately not sized (see project())
        mv = mine["values"].get(d)
        if mv is None:
            if d == "model" and rv == defaults.get("model"):
                continue
            if rv == defaults.get(d):
                continue
            out.append(f"{d}: real {rv!r}, project unset (default {defaults.get(d)!r})")
        elif isinstance(rv, float) or isinstance(mv, float):
            if rv is None or abs(float(rv) - float(mv)) > 1e-9:
                out.append(f"{d}: real {rv!r}, project {mv!r}")
        elif rv != mv:
            out.append(f"{d}: real {rv!r}, project {mv!r}")
    return out


# ---------------------------------------------------------------- generating command lines
def _prefixes(table: vf.OptionTable, flag: str) -> tuple[list[str], list[str]]:
    """(unique abbreviations, ambiguous abbreviations) of a long option in this table."""
    uniq, amb = [], []
    for n in range(4, len(flag)):
        pre = flag[:n]
        hits = table.starting_with(pre)
        if pre in table.options:
            continue
        (uniq if len(hits) == 1 else amb).append(pre)
    return uniq, amb


VALUES = {
    "--max-model-len": ["4096", "4k", "4K", "1M", "2.5k", "8192", "1.5K", "0", "x"],
    "--max-num-batched-tokens": ["2048", "8k", "8K", "16384", "1m", "abc"],
    "--max-num-seqs": ["16", "256", "0", "1k", "7"],
    "--tensor-parallel-size": ["1", "2", "4", "two"],
    "--pipeline-parallel-size": ["1", "2"],
    "--data-parallel-size": ["1", "2"],
    "--gpu-memory-utilization": ["0.5", "0.95", "1.5", "0", "abc"],
    "--cpu-offload-gb": ["4", "0.5", "-1"],
    "--kv-cache-memory-bytes": ["4G", "1g", "1073741824", "2.5G", "None"],
    "--dtype": ["half", "bfloat16", "auto", "float32", "fp8x"],
    "--quantization": ["awq", "fp8", "gptq"],
    "--max-lora-rank": ["8", "64", "7", "256"],
    "--max-loras": ["2", "4", "0"],
    "--seed": ["1"],
    "--port": ["8000"],
    "--served-model-name": ["a", "a b"],
}
BOOLS = ["--enable-lora", "--enforce-eager", "--enable-chunked-prefill", "--enable-prefix-caching"]
SHORTS = [
    (["-tp", "2"], "short"),
    (["-tp=2"], "short="),
    (["-tp2"], "short-attached"),
    (["-pp", "2"], "short"),
    (["-dp", "2"], "short"),
    (["-q", "awq"], "short"),
    (["-O3"], "-O3"),
    (["-O", "3"], "-O 3"),
    (["-O=3"], "-O=3"),
    (["-O0"], "-O3"),
]
MODEL = "org/model"


def fragments(table: vf.OptionTable, rng: random.Random, cfg_path: str) -> tuple[list[str], str]:
    """One fragment of a command line and its feature label."""
    r = rng.random()
    opts = table.options
    if r < 0.45:
        flag = rng.choice([f for f in VALUES if f in opts] or ["--port"])
        value = rng.choice(VALUES[flag])
        uniq, amb = _prefixes(table, flag)
        spell = rng.choice(["exact", "exact", "underscore", "unique", "ambiguous"])
        if spell == "unique" and uniq:
            name = rng.choice(uniq)
        elif spell == "ambiguous" and amb:
            name = rng.choice(amb)
        elif spell == "underscore":
            name = "--" + flag[2:].replace("-", "_")
        else:
            spell, name = "exact", flag
        form = rng.choice(["=", " "])
        toks = [f"{name}={value}"] if form == "=" else [name, value]
        if flag == "--served-model-name" and value == "a b":
            toks = [name, "a", "b"] if form == " " else toks
        return toks, f"value/{spell}/{'eq' if form == '=' else 'sep'}"
    if r < 0.65:
        base = rng.choice(BOOLS)
        key = base[2:].removeprefix("enable-")
        forms = [
            ([base], "bool/X"),
            (["--no-" + base[2:]], "bool/no-X"),
            (["--enable-" + key], "bool/enable-X"),
            (["--disable-" + key], "bool/disable-X"),
            ([base + "=true"], "bool/X=true"),
            ([base + "=False"], "bool/X=False"),
            (["--" + base[2:].replace("-", "_")], "bool/underscore"),
        ]
        uniq, _ = _prefixes(table, base)
        if uniq:
            forms.append(([rng.choice(uniq)], "bool/unique-prefix"))
        return rng.choice(forms)
    if r < 0.75:
        toks, label = rng.choice(SHORTS)
        return list(toks), f"short/{label}"
    if r < 0.82:
        return rng.choice(
            [
                (
                    [
                        "--kv-transfer-config.kv_connector",
                        "LMCacheConnectorV1",
                        "--kv-transfer-config.kv_role",
                        "kv_both",
                    ],
                    "dotted/sep",
                ),
                (
                    [
                        "--kv-transfer-config.kv_connector=OffloadingConnector",
                        "--kv-transfer-config.kv_role=kv_both",
                    ],
                    "dotted/eq",
                ),
                (
                    [
                        "--kv-transfer-config",
                        '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}',
                    ],
                    "json/sep",
                ),
                (["-cc.mode=0"], "dotted/short-cc"),
                (
                    [
                        "--kv_transfer_config.kv_connector",
                        "X",
                        "--kv_transfer_config.kv_role",
                        "kv_both",
                    ],
                    "dotted/underscore",
                ),
                # kv_role missing: KVTransferConfig's own check (a parser `type`)
                (["--kv-transfer-config", '{"kv_connector":"X"}'], "json/no-role"),
            ]
        )
    if r < 0.88:
        return rng.choice(
            [
                (["--unknown-flag-xyz"], "unknown/bool"),
                (["--unknown-flag-xyz", "5"], "unknown/value"),
                (["--unknown-flag-xyz=5"], "unknown/eq"),
            ]
        )
    if r < 0.93:
        return (
            (["--config", cfg_path], "config/sep")
            if rng.random() < 0.8
            else (
                [f"--config={cfg_path}"],
                "config/eq",
            )
        )
    if r < 0.97:
        return rng.choice(
            [
                (["--model", "other/model"], "model/--model sep"),
                (["--model=other/model"], "model/--model="),
            ]
        )
    return (["--"], "dashdash")


def make_case(
    table: vf.OptionTable, rng: random.Random, cfg_path: str
) -> list[tuple[list[str], str]]:
    frags = [fragments(table, rng, cfg_path) for _ in range(rng.randint(0, 4))]
    where = rng.random()
    if where < 0.75:
        frags.insert(0, ([MODEL], "model/first"))
    elif where < 0.9:
        frags.insert(rng.randint(0, len(frags)), ([MODEL], "model/middle"))
    elif where < 0.95:
        frags.append(([MODEL], "model/last"))
    if rng.random() < 0.1 and frags:  # a repeat: last wins
        frags.append(rng.choice(frags))
    return frags


def flatten(frags: list[tuple[list[str], str]]) -> list[str]:
    return [t for toks, _ in frags for t in toks]


def minimise(frags: list[tuple[list[str], str]], fails: Any) -> list[tuple[list[str], str]]:
    """Drop fragments while the disagreement persists."""
    changed = True
    while changed:
        changed = False
        for i in range(len(frags)):
            trial = frags[:i] + frags[i + 1 :]
            if fails(trial):
                frags, changed = trial, True
                break
    return frags


def run(src_root: Path, versions: list[str], n: int, seed: int) -> dict:
    tmp = tempfile.mkdtemp()
    cfg_path = os.path.join(tmp, "cfg.yaml")
    config = {"max_num_seqs": 7, "max_model_len": 2048}
    Path(cfg_path).write_text("max_num_seqs: 7\nmax_model_len: 2048\n")
    report: dict = {}
    for version in versions:
        table = vf.table_for(version)
        real = RealParser(src_root / version)
        try:
            defaults = real.parse([MODEL])
            assert not defaults["exits"], defaults
            dflt = dict(defaults["values"])
            dflt["model"] = real.parse([]).get("values", {}).get("model")
            rng = random.Random(f"{seed}-{version}")
            classes: dict[str, list] = defaultdict(list)
            seen: set[str] = set()
            cases = 0
            for _ in range(n):
                frags = make_case(table, rng, cfg_path)
                argv = flatten(frags)
                key = json.dumps(argv)
                if key in seen:
                    continue
                seen.add(key)
                cases += 1

                def diff(
                    fr: list[tuple[list[str], str]],
                    real: RealParser = real,
                    version: str = version,
                    dflt: dict = dflt,
                ) -> list[str]:
                    a = flatten(fr)
                    return compare(real.parse(a), project(a, version, {cfg_path: config}), dflt)

                got = diff(frags)
                if not got:
                    continue
                kinds = {g.split(":")[0] for g in got}

                def still(fr: list[tuple[list[str], str]], kinds: set[str] = kinds) -> bool:
                    return bool({g.split(":")[0] for g in diff(fr)} & kinds)

                small = minimise(frags, still)
                a = flatten(small)
                why = diff(small)
                label = " + ".join(sorted({lab for _, lab in small})) or "(empty)"
                cls = f"{why[0].split(':')[0] if why else '?'} | {label}"
                r, m = real.parse(a), project(a, version, {cfg_path: config})
                classes[cls].append(
                    {"argv": a, "diff": why, "real": r.get("why", ""), "project": m.get("why", "")}
                )
            report[version] = {"cases": cases, "classes": classes}
        finally:
            real.close()
    return report


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src_root", type=Path)
    ap.add_argument("versions", nargs="*", default=DEFAULT_VERSIONS)
    ap.add_argument("-n", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="write the full report here")
    a = ap.parse_args(argv[1:])
    report = run(a.src_root, a.versions, a.n, a.seed)
    for v, r in report.items():
        total = sum(len(x) for x in r["classes"].values())
        print(f"vLLM {v}: {r['cases']} cases, {total} disagreements, {len(r['classes'])} classes")
        for cls, items in sorted(r["classes"].items(), key=lambda kv: -len(kv[1])):
            ex = min(items, key=lambda e: len(e["argv"]))
            print(f"  [{len(items)}] {cls}")
            print(f"      argv {ex['argv']}  {ex['diff']}")
            print(f"      real: {ex['real'][:160]!r}")
            print(f"      project: {ex['project'][:160]!r}")
    if a.json:
        a.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
