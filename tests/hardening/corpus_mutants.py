"""Structure-aware mutation fuzzing of the published corpus (tests/data/published/**/*.yaml)
through the decision, as the webhook and `check` run it.

Each document of each corpus file is mutated (leaves and subtrees: wrong types, hostile
numbers and quantities, long and unprintable strings, deep nesting, duplicated items and YAML
keys, vLLM flags with empty / repeated / bad-JSON values, env `valueFrom` oddities, hostile
`vllm-sizer.io` annotations, kind and namespace confusion), then

- (a) sent as a real AdmissionReview body to `Admission.handle` (what the aiohttp handler
  calls), on both routes, with the file's ServingRuntimes as the background listing would hold
  them, and
- (b) written (with the file's other documents) to a file given to `vllm-sizer check`,

and the project's rules for bad input are checked: no exception and no internal error, every
message printable, the patch applies (RFC 6902) to the object reviewed and leaves valid
quantities (and a valid object where the mutant was one), no memory limit or request lowered,
no non-vLLM container and nothing outside the sized containers and the metadata touched, no
other namespace's data used, a second review changes no resource, each review within 1 s.

`mutate(doc, rng)` is deterministic in `rng` (a `random.Random`, or Hypothesis' `randoms()`):
a failure is reproduced by (file, document, seed). Used by test_corpus_mutation_fuzz.py (a
small Hypothesis budget) and scripts/fuzz_corpus.py (long runs, failures grouped by class).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import io
import json
import random
import re
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jsonpatch
import yaml

from vllm_sizer.operator.settings import OperatorSettings
from vllm_sizer.operator.webhook.admission import MUTATE, VALIDATE, Admission, parse_review
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads.quantity import parse_quantity
from vllm_sizer.workloads.reader import read_workloads

CORPUS = Path(__file__).parents[1] / "data" / "published"
TIME_BUDGET_S = 1.0
K8S_QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?")
MAX_BODY = 3 * 2**20  # kube-apiserver's request body limit (maxRequestBodyBytes)

# ------------------------------------------------------------------------------ the corpus


@dataclass
class Source:
    path: Path
    docs: list[Any]  # every document of the file (context: runtimes, ConfigMaps, ...)
    index: int  # the document mutated

    @property
    def doc(self) -> dict[str, Any]:
        return self.docs[self.index]

    def __str__(self) -> str:
        return f"{self.path.relative_to(CORPUS)}#{self.index}"


def corpus() -> list[Source]:
    out: list[Source] = []
    for path in sorted(CORPUS.rglob("*.yaml")):
        if path.name == "index.yaml":
            continue
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        except yaml.YAMLError:
            continue
        for i, d in enumerate(docs):
            if isinstance(d.get("kind"), str) and d.get("kind") not in ("ConfigMap", "Secret",
                                                                         "Service", "List"):
                out.append(Source(path, docs, i))
    return out


# ------------------------------------------------------------------------------ hostile values

BIG = 10**400
QUANTITIES: list[Any] = [
    "1e400", "-1Gi", "0.5", "1Ei", "8Ei", "9Ei", "Infinity", "NaN", "inf", "1e3", "1E3", "0",
    "0Gi", "1.5Gi", "1024", 1024, 1.5, 0, -1, True, None, [], {}, "1Gi ", " 1Gi", "1gi", "1GB",
    "1Pi", "1e18", "1e19", "123456789012345678901234567890", "0.000001Ki", "1m", "1500m",
    "+1Gi", "1..5Gi", "\u0663Gi", "\uff11Gi", "1Gi\n", "1Gi\x00", "", "Gi", "1e-3", "-0",
    "1" * 70, 2**63, 2**64, "9223372036854775807", "9223372036854775808", "0x10", "1_000Mi",
    "4Gi", "64Gi", "512Gi", "2Ti",
]
NUMBERS: list[Any] = [0, -1, 1, 2**31, 2**63, 2**64, -(2**63) - 1, BIG, -BIG, 1.5, -0.0, 1e308,
                      True, False, None]
STRINGS: list[Any] = [
    "", " ", "x" * 100_000, "\x00", "a\x00b", "\u202eevil", "\x1b[31mred", "a\nb", "\t",
    "\ud800", "\udfff", "💥" * 50, "é" * 300, "${X}", "$(X)", "$$(X)", "'", '"', "\\", "--",
    "-", "=", "null", "~", "true", "0", "-1", "1e400", "{", "[", "*a", "&a", "!!python/none",
    "%", "://", "hf://", "/", "..", "../../../../etc/passwd", "Qwen/Qwen3-0.6B",
    "meta-llama/Llama-3.1-8B-Instruct", "vllm", "vllm serve", "\u0663", "\uff11",
]
SCALARS = NUMBERS + STRINGS[:30]

NUMERIC_VALUES = ["", "0", "-1", "1e30", "1e400", "nan", "inf", "-inf", "abc", "\uff11", "\u0663",
                  "9" * 50, "1.5", "True", "0x10", "1_024", "4k", "4K", "1M", "1g", "2^20",
                  " 8", "8 ", "+8", "08", "1e-9", "-0", "0.0"]
JSON_VALUES = ["", "{", "}", "[]", "null", "1", '"x"', "{}", '{"a":', "{'a': 1}",
               '{"num_speculative_tokens": -5}', '{"method": "eagle", "model": 5}',
               '{"kv_connector": "OffloadingConnector", "kv_connector_extra_config": '
               '{"cpu_bytes_to_use": 1e400}}',
               '{"kv_connector": "LMCacheConnectorV1", "kv_connector_extra_config": []}',
               '{"kv_connector": "MultiConnector", "kv_connector_extra_config": '
               '{"connectors": [1, null, {"kv_connector": "OffloadingConnector"}]}}',
               '{"kv_connector": "OffloadingConnector", "kv_connector_extra_config": '
               '{"num_cpu_blocks": -1, "cpu_bytes_to_use": 80G}}',
               '{"a": ' * 300 + "1" + "}" * 300, '{"max_model_len": "x"}',
               '{"rope_scaling": {"factor": 1e308}}', '{"num_hidden_layers": -3}',
               '{"hidden_size": 1e400}', "[" * 5000]
FLAG_NAMES = [
    "max-model-len", "max-num-seqs", "max-num-batched-tokens", "max-lora-rank", "max-loras",
    "max-cpu-loras", "tensor-parallel-size", "pipeline-parallel-size", "data-parallel-size",
    "gpu-memory-utilization", "cpu-offload-gb", "swap-space", "kv-cache-memory-bytes",
    "kv-cache-memory", "mm-processor-cache-gb", "kv-offloading-size", "api-server-count",
    "data-parallel-start-rank", "dtype", "kv-cache-dtype", "quantization", "device",
    "load-format", "kv-offloading-backend", "enable-lora", "enforce-eager", "headless",
    "enable-chunked-prefill", "enable-prefix-caching", "model", "served-model-name",
    "lora-modules", "config", "block-size", "seed",
]
JSON_FLAGS = ["kv-transfer-config", "speculative-config", "hf-overrides", "compilation-config",
              "limit-mm-per-prompt", "override-generation-config", "lora-modules"]
ENV_NAMES = ["VLLM_CPU_KVCACHE_SPACE", "VLLM_CPU_OMP_THREADS_BIND", "VLLM_USE_V1",
             "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "MODEL", "MODEL_ID", "MODEL_NAME", "HF_TOKEN",
             "MAX_MODEL_LEN", "TENSOR_PARALLEL_SIZE", "VLLM_TARGET_DEVICE", "A", "B", ""]
ANNOTATIONS = {
    "vllm-sizer.io/mode": ["", "ENFORCE", "off ", "mutate\x00", 5, None, "warn", "enforce",
                           "off", "bogus", "\u202eoff"],
    "vllm-sizer.io/headroom": ["-1", "1e400", "nan", "inf", "200%", "-5%", "0.1", "", "%",
                               "1e-400", "0x1", 5, None, "10 %", "1000000%"],
    "vllm-sizer.io/skip": ["true", "TRUE", "yes", 1, True, "", "false", None],
    "vllm-sizer.io/model-config": [
        "{", "[]", "{}", '{"a":1}', "null", '"x"', "x" * 10_000,
        '{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": -1}',
        '{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1e400,'
        ' "num_hidden_layers": 1e308, "num_attention_heads": 0, "vocab_size": "x"}',
        '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": '
        '9999999999, "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000}',
        '{"architectures": [], "hidden_size": true, "num_hidden_layers": [], '
        '"num_attention_heads": {}, "vocab_size": null}',
        '{"Qwen/Qwen3-0.6B": 5, "x": {"hidden_size": 1}}', "[" * 3000 + "]" * 3000],
    "vllm-sizer.io/vllm-config": ["max-model-len: -1", "a: &a [*a]", "{", "max-num-batched-"
                                  "tokens: 1e400", "- 1\n- 2", "max-model-len: [1, 2]",
                                  "tensor-parallel-size: 0", "max-model-len: .inf",
                                  "max-num-seqs: !!binary aGk=", "kv-transfer-config: 5",
                                  "max-model-len: 1e400\nmax-num-seqs: -5\ndtype: 5"],
}
# the annotations vllm-sizer writes, as a person (or an old version) may have left them
OWN = ["", "x", "\x1b[31m", "mutate: limits.memory 8.0Gi → 27.3Gi", "mutate: limits.memory "
       "1e400 → -1Gi, requests.memory x → y", "allow: " + "a" * 70_000, "{", "[]", 5, None,
       "c1=1Gi,c2=", '{"vllm": {"kv_cache": -1}}', "0.0.0", "Undersized " + "f" * 64]
for _name in ("estimate", "breakdown", "notes", "decision", "estimator-version", "pods",
              "last-oom", "last-event"):
    ANNOTATIONS[f"vllm-sizer.io/{_name}"] = OWN
KINDS = [("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("v1", "Pod"),
         ("batch/v1", "Job"), ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
         ("serving.kserve.io/v1beta1", "InferenceService"),
         ("serving.kserve.io/v1alpha1", "ServingRuntime"),
         ("serving.kserve.io/v1alpha1", "LLMInferenceService"), ("kubeai.org/v1", "Model"),
         ("ray.io/v1", "RayService"), ("ray.io/v1", "RayCluster"), ("ray.io/v1", "RayJob"),
         ("nvidia.com/v1alpha1", "DynamoGraphDeployment"), ("kaito.sh/v1beta1", "Workspace"),
         ("serving.knative.dev/v1", "Service"), ("apps/v1", "DaemonSet"),
         ("batch/v1", "CronJob"), ("v1", "PodTemplate"), ("apps/v1", "ReplicaSet"),
         ("production-stack.vllm.ai/v1alpha1", "VLLMRuntime"), ("x.io/v1", "Whatever")]

# ------------------------------------------------------------------------------ tree helpers

Path_ = tuple[Any, ...]


def nodes(obj: Any, path: Path_ = (), depth: int = 0) -> list[tuple[Path_, Any]]:
    out = [(path, obj)]
    if depth > 60:
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += nodes(v, (*path, k), depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += nodes(v, (*path, i), depth + 1)
    return out


def get(obj: Any, path: Path_) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def put(obj: Any, path: Path_, value: Any) -> Any:
    if not path:
        return value
    get(obj, path[:-1])[path[-1]] = value
    return obj


def delete(obj: Any, path: Path_) -> None:
    if path:
        parent = get(obj, path[:-1])
        del parent[path[-1]]


def containers(obj: Any) -> list[tuple[Path_, dict[str, Any]]]:
    """Every container-like mapping: items of a `containers` / `initContainers` list."""
    return [(p, n) for p, n in nodes(obj)
            if p and isinstance(n, dict) and len(p) >= 2 and isinstance(p[-1], int)
            and p[-2] in ("containers", "initContainers")]


def pointer(path: Path_) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


# ------------------------------------------------------------------------------ mutators


def _retype(rng: random.Random, v: Any) -> Any:
    if isinstance(v, dict):
        return rng.choice([list(v.values()), list(v.items()) and [list(kv) for kv in v.items()],
                           json.dumps(v)[:200], None, 0, True, "", [v]])
    if isinstance(v, list):
        return rng.choice([{str(i): x for i, x in enumerate(v)}, " ".join(map(str, v)), None,
                           len(v), {}, v[:1] * 3, [v], [None, *v], [*v, None]])
    if isinstance(v, bool):
        return rng.choice([str(v).lower(), int(v), None, [v], {"v": v}])
    if isinstance(v, int | float):
        return rng.choice([str(v), -v if v else -1, v * 2**40, float(v) + 0.5, [v], {"v": v},
                           None, True, BIG])
    if isinstance(v, str):
        out = [[v], {"v": v}, None, 0, True, v * rng.choice([2, 1000]), v + rng.choice(STRINGS),
               rng.choice(STRINGS) + v, v[: len(v) // 2], ""]
        if v.isdigit():
            out += [int(v), float(v), -int(v)]
        return rng.choice(out)
    return rng.choice(SCALARS)


def _unicode(rng: random.Random, s: str) -> str:
    bad = rng.choice(["\x00", "\u202e", "\u200b", "\ud800", "\x1b", "\n", "\r", "\t", "\x7f",
                      "\u2028", "\ufeff", "\U0001F4A5", "\u0301", "\ufffd"])
    i = rng.randint(0, len(s))
    return s[:i] + bad + s[i:]


def _nest(rng: random.Random, v: Any) -> Any:
    for _ in range(rng.choice([10, 100, 400, 800])):
        v = rng.choice([[v], {"a": v}])
    return v


def mutate_generic(rng: random.Random, doc: dict[str, Any]) -> str:
    ns = nodes(doc)
    path, v = rng.choice(ns[1:] or ns)
    op = rng.choice(["retype", "scalar", "delete", "unicode", "nest", "dup", "empty", "huge"])
    if op == "retype":
        put(doc, path, _retype(rng, v))
    elif op == "scalar":
        put(doc, path, rng.choice(SCALARS))
    elif op == "delete" and path:
        delete(doc, path)
    elif op == "unicode" and isinstance(v, str):
        put(doc, path, _unicode(rng, v))
    elif op == "nest":
        put(doc, path, _nest(rng, v))
    elif op == "dup" and path and isinstance(get(doc, path[:-1]), list):
        get(doc, path[:-1]).insert(path[-1], copy.deepcopy(v))
    elif op == "empty":
        put(doc, path, type(v)() if isinstance(v, dict | list | str) else None)
    elif op == "huge" and isinstance(v, list) and v:
        # repeated references: bounded so that the object written out stays under the API
        # server's 3 MiB body (a repeat inside a repeat would be exponential)
        size = len(json.dumps(v, default=str))
        put(doc, path, v * max(1, min(rng.choice([50, 2000]), MAX_BODY // max(size, 1))))
    else:
        put(doc, path, rng.choice(SCALARS))
    return f"{op} {pointer(path)}"


def _argv_holder(rng: random.Random, doc: dict[str, Any]) -> tuple[Path_, list[Any]] | None:
    """A list of strings that is a command line (container args/command, or any list whose
    items look like flags)."""
    cands = [(p, n) for p, n in nodes(doc) if isinstance(n, list) and p
             and (p[-1] in ("args", "command", "extraArgs", "vllmArgs")
                  or any(isinstance(x, str) and x.startswith("--") for x in n))]
    return rng.choice(cands) if cands else None


def _flag_value(rng: random.Random, flag: str) -> str:
    if flag in JSON_FLAGS:
        return rng.choice(JSON_VALUES)
    return rng.choice(NUMERIC_VALUES + STRINGS[:20])


def mutate_args(rng: random.Random, doc: dict[str, Any]) -> str:
    found = _argv_holder(rng, doc)
    if found is None:
        return mutate_generic(rng, doc)
    path, argv = found
    argv = list(argv)
    op = rng.choice(["insert", "insert", "empty-eq", "repeat", "terminator", "json", "replace",
                     "clear", "retype", "underscore", "dangling", "script"])
    flag = rng.choice(FLAG_NAMES + JSON_FLAGS)
    at = rng.randint(0, len(argv))
    if op == "insert":
        new = ([f"--{flag}={_flag_value(rng, flag)}"] if rng.random() < 0.5
               else [f"--{flag}", _flag_value(rng, flag)])
        argv[at:at] = new
    elif op == "empty-eq":
        argv[at:at] = [f"--{flag}="]
    elif op == "repeat":
        flags = [a for a in argv if isinstance(a, str) and a.startswith("--")]
        f = rng.choice(flags) if flags else f"--{flag}"
        f = f.split("=", 1)[0]
        argv += [f, _flag_value(rng, flag), f"{f}={_flag_value(rng, flag)}"]
    elif op == "terminator":
        argv[at:at] = ["--"]
    elif op == "json":
        jf = rng.choice(JSON_FLAGS)
        argv[at:at] = [f"--{jf}", rng.choice(JSON_VALUES)]
    elif op == "replace" and argv:
        i = rng.randrange(len(argv))
        argv[i] = rng.choice(STRINGS + NUMERIC_VALUES + [None, 5, True, [], {}])
    elif op == "clear":
        argv = rng.choice([[], [""], [" "], ["--"], [None]])
    elif op == "retype":
        put(doc, path, _retype(rng, argv))
        return f"args {op} {pointer(path)}"
    elif op == "underscore":
        argv[at:at] = [f"--{flag.replace('-', '_')}", _flag_value(rng, flag)]
    elif op == "dangling":
        argv.append(f"--{flag}")
    elif op == "script":
        body = rng.choice([
            "vllm serve $MODEL --max-model-len ${LEN:-", "exec vllm serve Qwen/Qwen3-0.6B \\",
            "vllm serve Qwen/Qwen3-0.6B --max-num-seqs $((1<<62))",
            "X=$(cat /nope); vllm serve $X --max-model-len $X$X$X",
            "vllm serve Qwen/Qwen3-0.6B --kv-transfer-config '{\"kv_connector\": '",
            "eval \"$(echo vllm serve)\" Qwen/Qwen3-0.6B", "vllm serve \"\" --model ''",
            "cat <<EOF > /c.yaml\nmax-model-len: [\nEOF\nvllm serve Qwen/Qwen3-0.6B --config /c.yaml",
        ])
        argv = ["sh", "-c", body] if rng.random() < 0.5 else [*argv, "&&", body]
    put(doc, path, argv)
    return f"args {op} --{flag} {pointer(path)}"


def mutate_resources(rng: random.Random, doc: dict[str, Any]) -> str:
    cs = containers(doc)
    cands = [(p, n) for p, n in nodes(doc) if p and p[-1] == "resources"]
    if cs and rng.random() < 0.6:
        p, c = rng.choice(cs)
        rpath = (*p, "resources")
    elif cands:
        rpath = rng.choice(cands)[0]
    else:
        return mutate_generic(rng, doc)
    res = get(doc, rpath[:-1]).get("resources") if isinstance(get(doc, rpath[:-1]), dict) else None
    op = rng.choice(["limit", "request", "both", "inverted", "shape", "shape", "drop-memory"])
    q = rng.choice(QUANTITIES)
    if op in ("limit", "request", "both", "inverted", "drop-memory"):
        res = copy.deepcopy(res) if isinstance(res, dict) else {}
        for sec in ("limits", "requests"):
            if not isinstance(res.get(sec), dict):
                res[sec] = {}
        if op == "limit":
            res["limits"]["memory"] = q
        elif op == "request":
            res["requests"]["memory"] = q
        elif op == "both":
            res["limits"]["memory"] = q
            res["requests"]["memory"] = rng.choice(QUANTITIES)
        elif op == "inverted":
            res["limits"]["memory"], res["requests"]["memory"] = "1Gi", rng.choice(
                ["64Gi", "1Ti", "8Ei", "1e400"])
        else:
            res["limits"].pop("memory", None)
            res["requests"].pop("memory", None)
            res["limits"]["nvidia.com/gpu"] = rng.choice([1, "8", "-1", "1e400", "x", 0.5])
    else:
        res = rng.choice([[], "8Gi", 5, None, {"limits": []}, {"limits": "8Gi"},
                          {"limits": {"memory": {"a": 1}}}, {"requests": None, "limits": None},
                          {"limits": {"memory": ["8Gi"]}}, {"claims": [{"name": 5}]},
                          {"limits": {"Memory": "1Gi"}}, {"limits": {"memory ": "1Gi"}}])
    put(doc, rpath, res)
    return f"resources {op} {q!r:.40} {pointer(rpath)}"


def mutate_env(rng: random.Random, doc: dict[str, Any]) -> str:
    cs = containers(doc)
    cands = [(p, n) for p, n in nodes(doc) if p and p[-1] in ("env", "envFrom", "env_vars")]
    if cs and rng.random() < 0.7:
        p, c = rng.choice(cs)
        path = (*p, "env")
        env = c.get("env")
    elif cands:
        path, env = rng.choice(cands)
    else:
        return mutate_generic(rng, doc)
    env = copy.deepcopy(env) if isinstance(env, list) else []
    name = rng.choice(ENV_NAMES)
    item = rng.choice([
        {"name": name, "value": rng.choice(NUMERIC_VALUES + STRINGS[:25])},
        {"name": name, "valueFrom": {}}, {"name": name, "valueFrom": None},
        {"name": name, "valueFrom": "x"}, {"name": name, "valueFrom": {"fieldRef": None}},
        {"name": name, "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}, "value": "4"},
        {"name": name, "valueFrom": {"secretKeyRef": {"name": 5}}},
        {"name": name, "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
        {"name": None, "value": "4"}, {"name": 5, "value": 5}, {"value": "x"}, "A=1", None, 5,
        {"name": name, "value": None}, {"name": name, "value": 4}, {"name": name, "value": True},
        {"name": name, "value": "$(" + name + ")"}, {"name": "A", "value": "$(B)$(B)"},
        {"name": "B", "value": "$(A)"},
    ])
    op = rng.choice(["add", "add", "dup", "retype", "envfrom"])
    if op == "add":
        env.insert(rng.randint(0, len(env)), item)
        put(doc, path, env)
    elif op == "dup":
        env += [copy.deepcopy(item), copy.deepcopy(item)]
        put(doc, path, env)
    elif op == "retype":
        put(doc, path, rng.choice([{name: "4"}, "X=1", 5, None, [[name, "4"]], {"name": name}]))
    else:
        parent = get(doc, path[:-1])
        if isinstance(parent, dict):
            parent["envFrom"] = rng.choice([[{"configMapRef": {"name": "x"}}], "x", [None],
                                            [{"prefix": 5}], {}])
    return f"env {op} {json.dumps(item, default=str)[:80]} {pointer(path)}"


def mutate_annotations(rng: random.Random, doc: dict[str, Any]) -> str:
    target = rng.choice([("metadata",)] + [p[:-1] for p, _ in nodes(doc)
                                           if p and p[-1] == "metadata" and p != ("metadata",)])
    meta = get(doc, target) if target != ("metadata",) else doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        put(doc, target, meta)
    key = rng.choice(list(ANNOTATIONS))
    op = rng.choice(["set", "set", "set", "shape", "labels", "config", "near-limit"])
    if op == "near-limit":  # a large object's last-applied-configuration: annotations near
        # the API server's 256 KiB total
        ann = meta.get("annotations")
        if not isinstance(ann, dict):
            ann = meta["annotations"] = {}
        key = "kubectl.kubernetes.io/last-applied-configuration"
        ann[key] = "x" * (256 * 1024 - len(key) - rng.randint(0, 6000))
    elif op == "config":  # a real config.json with hostile numbers in its size fields
        key = "vllm-sizer.io/model-config"
        ann = meta.get("annotations")
        if not isinstance(ann, dict):
            ann = meta["annotations"] = {}
        ann[key] = json.dumps(_hostile_config(rng), default=str)
    elif op == "set":
        ann = meta.get("annotations")
        if not isinstance(ann, dict):
            ann = meta["annotations"] = {}
        ann[key] = rng.choice(ANNOTATIONS[key])
    elif op == "shape":
        meta["annotations"] = rng.choice([[], "x", 5, None, {key: {"a": 1}}, {key: [1]},
                                          {"": ""}, {5: 5}])
    else:
        meta["labels"] = rng.choice([[], "x", None, {"vllm-sizer.io/sized": rng.choice(
            ["true", "skip", "", None, 5])}])
    return f"annotations {op} {key} {pointer(target)}"


def _hostile_config(rng: random.Random) -> dict[str, Any]:
    from vllm_sizer.estimator.catalog import catalog_ids, model_config

    cfg = copy.deepcopy(model_config(rng.choice(catalog_ids())))
    leaves = [(p, v) for p, v in nodes(cfg)
              if p and isinstance(v, int | float) and not isinstance(v, bool)]
    for _ in range(rng.choice([1, 2, 3])):
        if leaves:
            p, v = rng.choice(leaves)
            put(cfg, p, rng.choice([0, -1, -v, v * 2**30, 2**63, 10**30, 1e308, 0.5, True,
                                    None, "x", [], -0.0]))
    return cfg


def mutate_kind(rng: random.Random, doc: dict[str, Any]) -> str:
    op = rng.choice(["kind", "namespace", "name", "apiVersion"])
    if op == "kind":
        api, kind = rng.choice(KINDS)
        doc["apiVersion"], doc["kind"] = api, kind
        return f"kind {api} {kind}"
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = doc["metadata"] = {}
    if op == "namespace":
        meta["namespace"] = rng.choice(["", None, 5, "other", "kube-system", "vllm-sizer",
                                        "default", "a" * 300, "\u202e", ["x"]])
        return f"namespace {meta['namespace']!r:.30}"
    if op == "name":
        meta["name"] = rng.choice(STRINGS + [None, 5, ["x"]])
        return "name"
    doc["apiVersion"] = rng.choice(["", None, 5, "v1", "apps/v2", "x/y/z", "/"])
    return f"apiVersion {doc['apiVersion']!r}"


MUTATORS = [(mutate_generic, 4), (mutate_args, 5), (mutate_resources, 4), (mutate_env, 2),
            (mutate_annotations, 2), (mutate_kind, 1)]


def mutate(doc: dict[str, Any], rng: random.Random, rounds: int | None = None) -> tuple[
        dict[str, Any], list[str]]:
    """A mutated deep copy of `doc` and what was done."""
    out = copy.deepcopy(doc)
    done: list[str] = []
    fns = [f for f, w in MUTATORS for _ in range(w)]
    for _ in range(rounds or rng.choice([1, 1, 1, 2, 3])):
        if not isinstance(out, dict):
            break
        try:
            done.append(rng.choice(fns)(rng, out))
        except (ArithmeticError, LookupError, TypeError, ValueError, RecursionError):
            done.append("(mutation skipped)")
    return out, done


# ------------------------------------------------------------------------------ invariants


@dataclass
class Failure:
    cls: str  # the class: what rule, and where
    detail: str
    source: str = ""
    mutations: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"[{self.cls}] {self.source} {self.mutations}: {self.detail}"


def _printable(text: Any) -> bool:
    return isinstance(text, str) and text.isprintable()


def _frame(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in tb if "vllm_sizer" in f.filename]
    f = (ours or tb)[-1]
    return f"{type(exc).__name__} at {Path(f.filename).name}:{f.lineno} ({f.name})"


def memory_values(obj: Any) -> dict[str, Any]:
    """pointer → value of every memory limit/request in the object (any depth)."""
    out = {}
    for p, v in nodes(obj):
        if (len(p) >= 3 and p[-1] == "memory" and p[-2] in ("limits", "requests")
                and p[-3] == "resources") or (len(p) >= 2 and p[-2:] == ("resources", "memory")):
            out[pointer(p)] = v
    return out


def _q(v: Any) -> int | None:
    try:
        return parse_quantity(v) if isinstance(v, str | int) and not isinstance(v, bool) else None
    except (ValueError, OverflowError):
        return None


def _wire(obj: Any) -> Any:
    """The object as the API server would send it: JSON (Go replaces lone surrogates with
    U+FFFD and refuses NaN/Infinity, so the mutant is normalised the same way)."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, default=str)
    text = text.encode("utf-8", "replace").decode("utf-8")
    return json.loads(text)


def review_body(obj: dict[str, Any], ns: str | None, operation: str = "CREATE") -> dict[str, Any]:
    api = obj.get("apiVersion") if isinstance(obj.get("apiVersion"), str) else ""
    group, _, version = api.rpartition("/")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "fuzz-uid", "kind": {"group": group, "version": version,
                                                    "kind": str(obj.get("kind"))},
                        "operation": operation, "namespace": ns, "name": meta.get("name"),
                        "object": obj, "oldObject": None, "dryRun": False}}


class _Runtimes:
    def __init__(self, docs: list[Any]):
        self.serving_runtimes: dict[str, dict[str, Any]] = {}
        self.cluster_serving_runtimes: dict[str, Any] = {}
        for d in docs:
            if not isinstance(d, dict):
                continue
            meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
            name = meta.get("name")
            if d.get("kind") == "ServingRuntime" and isinstance(name, str):
                ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
                self.serving_runtimes.setdefault(ns, {})[name] = d
            elif d.get("kind") == "ClusterServingRuntime" and isinstance(name, str):
                self.cluster_serving_runtimes[name] = d


def _decode(response: dict[str, Any]) -> list[dict[str, Any]] | None:
    if "patch" not in response:
        return None
    return json.loads(base64.b64decode(response["patch"]))


def _validatable(obj: Any) -> bool:
    try:
        import kubernetes_validate

        kubernetes_validate.validate(obj, "1.30", strict=False)
        return True
    except Exception:  # noqa: BLE001 - unknown kind, or invalid: then not compared
        return False


def _vllm_container_paths(obj: dict[str, Any], ctx: Any) -> list[str]:
    out = []
    for w in read_workloads(obj, ctx):
        out += [w.container_path, w.resources_path, w.memory_limit_path, w.memory_request_path,
                w.env_list_path]
        if w.labels_path:
            out.append(w.labels_path)
    return out


def _under(p: str, prefixes: list[str]) -> bool:
    return any(p == q or p.startswith(q + "/") for q in prefixes)


def _timed(adm: Admission, route: str, req: Any) -> float:
    t0 = time.perf_counter()
    asyncio.run(adm.review(route, req))
    return time.perf_counter() - t0


def check_webhook(obj: dict[str, Any], source: Source, mode: str = "mutate",
                  operation: str = "CREATE") -> list[Failure]:
    """(a): the AdmissionReview through Admission.handle, both routes."""
    fails: list[Failure] = []
    try:
        obj = _wire(obj)
    except (ValueError, RecursionError, TypeError):
        return []  # not sendable by an API server (Go's decoder caps depth at 10,000)
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) and meta.get(
        "namespace") else "fuzz-ns"
    try:
        body = json.dumps(review_body(obj, ns, operation)).encode()
    except (ValueError, RecursionError):
        return []
    if len(body) > MAX_BODY:
        return []  # the API server refuses it first
    adm = Admission(OperatorSettings(mode=mode), runtimes=_Runtimes(source.docs))
    answers = {}
    for route in (MUTATE, VALIDATE):
        t0 = time.perf_counter()
        status, out, _ = asyncio.run(adm.handle(route, body))
        took = time.perf_counter() - t0
        if took > TIME_BUDGET_S:
            # the time budget is the decision's: parsing a hostile 3 MiB body of nested
            # brackets takes any JSON parser (the API server's too) about a second by itself;
            # 2 cores shared: measured twice before it counts
            req = parse_review(body)
            took = min(_timed(adm, route, req), _timed(adm, route, req))
        if took > TIME_BUDGET_S:
            fails.append(Failure("slow", f"{route} took {took:.2f}s"))
        if status != 200:
            fails.append(Failure("http", f"{route} answered {status}: {out[:200]!r}"))
            continue
        resp = json.loads(out)["response"]
        answers[route] = resp
        texts = list(resp.get("warnings") or []) + [(resp.get("status") or {}).get("message", "")]
        for t in texts:
            if "internal error" in str(t):
                cls = "internal-error"
                try:
                    ctx = adm._context_for(ns)
                    review_object(obj, ctx, adm._policy(ns))
                except Exception as exc:  # noqa: BLE001 - recorded as the class
                    cls = f"internal-error {_frame(exc)}"
                fails.append(Failure(cls, f"{route}: {str(t)[:300]}"))
            elif not _printable(t) and t:
                fails.append(Failure("unprintable", f"{route}: {t[:200]!r}"))
    resp = answers.get(MUTATE)
    if resp is None:
        return fails
    ops = _decode(resp)
    if not ops:
        return fails
    after, failed = apply_ops(obj, ops)
    if failed is not None:
        return [*fails, failed]
    fails += _compare(obj, after, ops, adm._context_for(ns))
    # a second review of the patched object changes no resource
    try:
        body2 = json.dumps(review_body(after, ns, operation)).encode()
        _, out2, _ = asyncio.run(adm.handle(MUTATE, body2))
        ops2 = _decode(json.loads(out2)["response"]) or []
        moving = [op for op in ops2 if not op["path"].startswith("/metadata/")
                  and "/labels" not in op["path"]]
        if moving:
            fails.append(Failure("not-idempotent", json.dumps(moving)[:300]))
    except (ValueError, RecursionError):
        pass
    return fails


def apply_ops(obj: Any, ops: list[dict[str, Any]], prefix: str = "") -> tuple[
        Any, Failure | None]:
    """The object as RFC 6902 leaves it (jsonpatch, as an independent patcher), or the
    failure to apply."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # jsonpatch deep-copies; Go's patcher has no such limit
    try:
        return jsonpatch.apply_patch(obj, ops), None
    except Exception as exc:  # noqa: BLE001 - recorded as the class
        return None, Failure(f"{prefix}patch-does-not-apply {type(exc).__name__}",
                             f"{exc}: {json.dumps(ops)[:300]}")
    finally:
        sys.setrecursionlimit(limit)


def _compare(before: Any, after: Any, ops: list[dict[str, Any]], ctx: Any) -> list[Failure]:
    fails = []
    mb, ma = memory_values(before), memory_values(after)
    for p, v in mb.items():
        old = _q(v)
        new = _q(ma.get(p))
        if old is not None and (new is None or new < old):
            fails.append(Failure("lowered", f"{p}: {v!r} → {ma.get(p)!r}"))
    for p, v in ma.items():
        if mb.get(p) != v and not (isinstance(v, str) and K8S_QUANTITY.fullmatch(v)
                                   and (_q(v) or 0) <= 2**63 - 1):
            fails.append(Failure("invalid-quantity-written", f"{p}: {v!r}"))
    for p, res in nodes(after):
        if not (p and p[-1] == "resources" and isinstance(res, dict)):
            continue
        lim, req = (_q((res.get(k) or {}).get("memory")) if isinstance(res.get(k), dict)
                    else None for k in ("limits", "requests"))
        if lim is not None and req is not None and req > lim:
            try:
                old = get(before, p)
                olim, oreq = (_q((old.get(k) or {}).get("memory")) if isinstance(old.get(k), dict)
                              else None for k in ("limits", "requests"))
            except (KeyError, IndexError, TypeError, AttributeError):
                olim = oreq = None
            if not (olim is not None and oreq is not None and oreq > olim):
                fails.append(Failure("request-above-limit-written",
                                     f"{pointer(p)}: request {req} > limit {lim}"))
    for path, c in containers(before):
        env = c.get("env")
        if not isinstance(env, list):
            continue
        try:
            env_after = get(after, (*path, "env"))
        except (KeyError, IndexError, TypeError):
            env_after = None
        kept = env_after if isinstance(env_after, list) else []
        for e in env:
            if isinstance(e, dict) and "valueFrom" in e and e not in kept:
                fails.append(Failure("env-source-clobbered", f"{pointer(path)}: {e}"[:200]))
        names = [e.get("name") for e in kept if isinstance(e, dict)]
        old_names = [e.get("name") for e in env if isinstance(e, dict)]
        dup = {n for n in names if names.count(n) > old_names.count(n) and old_names.count(n)}
        if dup:
            fails.append(Failure("env-duplicated", f"{pointer(path)}: {sorted(map(str, dup))}"))
    def ann_bytes(o: Any) -> int:
        meta = o.get("metadata") if isinstance(o, dict) else None
        ann = meta.get("annotations") if isinstance(meta, dict) else None
        return sum(len(str(k).encode("utf-8", "replace")) + len(str(v).encode("utf-8", "replace"))
                   for k, v in ann.items()) if isinstance(ann, dict) else 0

    if ann_bytes(before) <= 256 * 1024 < ann_bytes(after):
        fails.append(Failure("annotations-past-the-api-server-limit", f"{ann_bytes(after)} B"))
    sized = _vllm_container_paths(before, ctx)
    for path, c in containers(before):
        ptr = pointer(path)
        if _under(ptr, sized) or any(_under(s, [ptr]) for s in sized):
            continue
        try:
            now = get(after, path)
        except (KeyError, IndexError, TypeError):
            now = None
        if now != c:
            fails.append(Failure("touched-non-vllm-container", ptr))
    for op in ops:
        p = op["path"]
        if "/metadata/annotations" in p or "/metadata/labels" in p or p in ("/metadata",):
            continue
        if (p.endswith("/labels") and isinstance(op.get("value"), dict)
                and set(op["value"]) <= {"vllm-sizer.io/sized"}) or "/labels/vllm-sizer.io~1" in p:
            continue  # the sized label on a pod template (KServe: the predictor's labels)
        if p.endswith("/metadata") and isinstance(op.get("value"), dict) and set(
                op["value"]) <= {"labels", "annotations"}:
            continue
        if not _under(p, sized) and not any(_under(s, [p]) for s in sized):
            fails.append(Failure("patched-outside-sized-containers", f"{op['op']} {p}"))
    if _validatable(before) and not _validatable(after):
        fails.append(Failure("invalid-object-after-patch", json.dumps(ops)[:300]))
    return fails


_WARM = False  # the first `check` of a process loads the catalog index: not timed


def check_cli(obj: dict[str, Any], source: Source, output: str = "json",
              rng: random.Random | None = None) -> list[Failure]:
    """(b): the mutant among its file's other documents, through `vllm-sizer check`."""
    import tempfile

    from vllm_sizer.cli.main import main

    docs = list(source.docs)
    docs[source.index] = obj
    twice = None
    try:
        text = yaml.safe_dump_all(docs, allow_unicode=True, sort_keys=False)
        if rng is not None and rng.random() < 0.3:
            twice = duplicate_key_yaml(obj, rng)
            if twice is not None:
                others = [d for i, d in enumerate(docs) if i != source.index]
                text = twice[0] + "---\n" + yaml.safe_dump_all(others, allow_unicode=True,
                                                                sort_keys=False)
    except (yaml.YAMLError, RecursionError, ValueError):
        return []
    fails = []
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "in.yaml"
        f.write_text(text, encoding="utf-8", errors="surrogatepass")
        out_b, err_b = io.BytesIO(), io.BytesIO()
        out = io.TextIOWrapper(out_b, encoding="utf-8", write_through=True)
        err = io.TextIOWrapper(err_b, encoding="utf-8", write_through=True)
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(["check", "-o", output, str(f)])
        except SystemExit as exc:
            rc = exc.code
        except Exception as exc:  # noqa: BLE001 - recorded as the class
            return [Failure(f"check-crash {_frame(exc)}", str(exc)[:300])]
        took = time.perf_counter() - t0
        so, se = out_b.getvalue().decode("utf-8", "replace"), err_b.getvalue().decode(
            "utf-8", "replace")
    global _WARM
    if _WARM and took > 2 * TIME_BUDGET_S * max(1, len(docs)):  # its own process: 2x budget
        fails.append(Failure("check-slow", f"{took:.2f}s for {len(docs)} documents"))
    _WARM = True
    if twice is not None and twice[1] and "document 1:" not in se:
        fails.append(Failure("check-duplicate-key-not-said", se[:200]))
    if rc not in (0, 1, 2):
        fails.append(Failure("check-exit", f"rc={rc}"))
    if "Traceback" in se or "internal error" in se:
        line = next((x for x in se.splitlines() if "internal error" in x or "Error" in x), se)
        fails.append(Failure("check-internal-error", line[:300]))
    if any(not (ln.isprintable() or ln == "") for ln in (so + se).splitlines()):
        bad = next(ln for ln in (so + se).splitlines() if not ln.isprintable())
        fails.append(Failure("check-unprintable", repr(bad[:200])))
    if output == "json" and so.strip():
        try:
            json.loads(so)
        except ValueError as exc:
            fails.append(Failure("check-json-invalid", str(exc)[:200]))
    return fails


def duplicate_key_yaml(doc: dict[str, Any], rng: random.Random) -> tuple[str, bool] | None:
    """YAML text of `doc` with one key line (`memory:`, `name:`, `image:`, `kind:`) written
    again below itself, and whether the second value differs (then kubectl refuses the file,
    and so must `check`), or one `- --flag` item repeated (a valid list)."""
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    lines = text.splitlines()
    # a key whose value is a plain one-line scalar (a quoted or folded one may span lines)
    idx = [i for i, ln in enumerate(lines)
           if ln.lstrip().startswith(("memory: ", "- --", "name: ", "image: ", "kind: "))
           and re.fullmatch(r"[\w./:=-]+", ln.split(": ", 1)[-1].strip())]
    if not idx:
        return None
    i = rng.choice(idx)
    ln = lines[i]
    if ln.lstrip().startswith("-"):
        lines.insert(i + 1, ln)
        return "\n".join(lines) + "\n", False
    key = ln.split(":", 1)[0]
    value = rng.choice(["1Gi", "1e400", "-1Gi", "x", "[]", "{}", ln.split(":", 1)[1].strip()])
    lines.insert(i + 1, f"{key}: {value}")
    return "\n".join(lines) + "\n", value != ln.split(":", 1)[1].strip()


def run_one(source: Source, seed: int, *, cli: bool = True, mode: str | None = None) -> tuple[
        list[Failure], list[str]]:
    rng = random.Random(seed)
    others = [i for i, d in enumerate(source.docs) if i != source.index and isinstance(d, dict)]
    try:
        if others and rng.random() < 0.15:
            # the object as written, its context mutated (a ServingRuntime, a ConfigMap the
            # pods mount, a LimitRange, a model-configs ConfigMap, ...)
            j = rng.choice(others)
            docs = list(source.docs)
            docs[j], done = mutate(docs[j], rng)
            done = [f"context #{j}: {x}" for x in done]
            source = Source(source.path, docs, source.index)
            mutant = copy.deepcopy(source.doc)
        else:
            mutant, done = mutate(source.doc, rng)
    except RecursionError:  # the harness's deep copy of a deeply nested mutant
        return [], ["(too deep to copy)"]
    fails: list[Failure] = []
    if not isinstance(mutant, dict):
        return fails, done
    mode = mode or rng.choice(["mutate", "mutate", "enforce", "warn"])
    operation = rng.choice(["CREATE", "CREATE", "UPDATE"])
    try:
        fails += check_webhook(mutant, source, mode, operation)
    except Exception as exc:  # noqa: BLE001 - a crash of the harness path itself
        fails.append(Failure(f"webhook-crash {_frame(exc)}", str(exc)[:300]))
    if cli:
        try:
            fails += check_cli(mutant, source, rng.choice(["json", "text", "yaml"]), rng)
        except Exception as exc:  # noqa: BLE001
            fails.append(Failure(f"cli-harness {_frame(exc)}", str(exc)[:300]))
    extra = rng.random()
    ctl = rng.random()  # drawn after the others: the seeds of earlier runs keep their mutants
    for check, when in ((lambda: check_controller(mutant, source, ctl < 0.1), ctl < 0.3),
                        (lambda: check_truth(mutant, source), True),
                        (lambda: check_tenants(mutant, source), extra < 0.3),
                        (lambda: check_equivalent(source, random.Random(seed)), extra > 0.6),
                        (lambda: check_pods(mutant, source), 0.3 <= extra < 0.6)):
        if not when:
            continue
        try:
            fails += check()
        except RecursionError:
            pass
        except Exception as exc:  # noqa: BLE001 - recorded as the class
            fails.append(Failure(f"crash {_frame(exc)}", str(exc)[:300]))
    for f in fails:
        f.source, f.mutations = str(source), done
    return fails, done


# ------------------------------------------------------------------------------ the controller


class RecordingApi:
    """The API calls the controller makes, each answered 200 (listings empty): what it would
    read and write, recorded. kmock's server copies objects by recursion, so it cannot hold
    the mutants nested deepest."""

    concurrency = 4

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    async def get(self, path: str, **_: Any) -> Any:
        self.calls.append(("GET", path, None))
        return {"items": []}

    async def patch(self, path: str, body: Any, content_type: str | None = None) -> Any:
        self.calls.append(("PATCH", path, body))
        return {}

    async def post(self, path: str, body: Any) -> Any:
        self.calls.append(("POST", path, body))
        return body


def check_controller(obj: dict[str, Any], source: Source, patch_existing: bool) -> list[Failure]:
    """(c): the mutant as the controller meets it (an object that existed before the install,
    handed over by Kopf): Sizer.size never raises (but for the API's own errors), reads and
    writes nothing outside the object's namespace, writes only its own annotations (or, with
    patch_existing, a JSON patch that keeps every rule of the webhook's), and every Event it
    posts is about the object, in its namespace."""
    from vllm_sizer.operator.controller import Sizer
    from vllm_sizer.operator.controller.sizing import OUTPUT_ANNOTATIONS
    from vllm_sizer.workloads.model import ReadContext

    try:
        obj = _wire(obj)
    except (ValueError, RecursionError, TypeError):
        return []
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return []  # the API server never sends one
    ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
    meta.setdefault("uid", "fuzz-uid")
    meta.setdefault("resourceVersion", "7")
    api = RecordingApi()
    sizer = Sizer(api, OperatorSettings(patch_existing=patch_existing))
    kopf_patch: dict[str, Any] = {}
    try:
        result = asyncio.run(sizer.size(obj, kopf_patch))
    except Exception as exc:  # noqa: BLE001 - recorded as the class
        return [Failure(f"controller-crash {_frame(exc)}", str(exc)[:300])]
    fails: list[Failure] = []
    for method, path, body in api.calls:
        cluster_list = method == "GET" and "/namespaces/" not in path and path.endswith(
            "clusterservingruntimes")
        if not cluster_list and ns and f"/namespaces/{quote(ns, safe='')}/" not in path:
            fails.append(Failure("controller-other-namespace", f"{method} {path}"[:300]))
        if method == "POST" and isinstance(body, dict):
            inv = body.get("involvedObject") or {}
            if inv.get("name") != meta.get("name") or (ns and inv.get("namespace") != ns):
                fails.append(Failure("controller-event-elsewhere", json.dumps(inv)[:300]))
            if not _printable(body.get("message", "")):
                fails.append(Failure("controller-unprintable-event",
                                     repr(body.get("message"))[:200]))
    written = dict((kopf_patch.get("metadata") or {}).get("annotations") or {})
    for method, _path, body in api.calls:
        if method == "PATCH" and isinstance(body, dict):  # a merge patch of annotations
            extra = set(body) - {"metadata"} or set(body.get("metadata") or {}) - {"annotations"}
            if extra:
                fails.append(Failure("controller-merge-patch-outside-annotations", str(extra)))
            written.update((body.get("metadata") or {}).get("annotations") or {})
    stray = set(written) - set(OUTPUT_ANNOTATIONS)
    if stray:
        fails.append(Failure("controller-wrote-foreign-annotation", str(sorted(stray))[:200]))
    for k, v in written.items():
        if v is not None and not isinstance(v, str):
            fails.append(Failure("controller-annotation-not-a-string", f"{k}: {v!r}"[:200]))
    ops = [op for method, _p, body in api.calls if method == "PATCH" and isinstance(body, list)
           for op in body if op.get("op") != "test"]
    if result.action == "patched" and ops:
        after, failed = apply_ops(obj, ops, "controller-")
        if failed is not None:
            return [*fails, failed]
        # the context the controller reads with: no objects beside the object (its listings
        # are empty here), so the containers it sizes are the ones read without them
        fails += [Failure(f"controller-{f.cls}", f.detail)
                  for f in _compare(obj, after, ops, ReadContext())]
    return fails


# ------------------------------------------------------------------------------ more rules

_TRUTH: dict[str, list[tuple[str, str, str]]] | None = None


def truth_non_vllm(source: Source) -> list[tuple[Path_, dict[str, Any]]]:
    """The document's containers that the corpus index says never run vLLM."""
    global _TRUTH
    if _TRUTH is None:
        index = yaml.safe_load((CORPUS / "index.yaml").read_text())
        _TRUTH = {e["file"]: [(c.get("kind"), c.get("name"), c.get("container"))
                              for c in e.get("non_vllm_containers") or []]
                  for e in index["files"]}
    doc = source.doc
    rows = _TRUTH.get(str(source.path.relative_to(CORPUS)), [])
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    return [(p, c) for p, c in containers(doc)
            if (doc.get("kind"), meta.get("name"), c.get("name")) in rows]


def check_truth(mutant: dict[str, Any], source: Source) -> list[Failure]:
    """A container the corpus truth says is not vLLM, left as it was by the mutation, is never
    read as a vLLM container (and so never sized or patched)."""
    same_id = (mutant.get("kind") == source.doc.get("kind")
               and isinstance(mutant.get("metadata"), dict)
               and mutant["metadata"].get("name") == source.doc.get("metadata", {}).get("name"))
    if not same_id:
        return []
    truth = truth_non_vllm(source)
    if not truth:
        return []
    from vllm_sizer.policy.cluster import ClusterContext

    # only mutants changed inside the original's vLLM containers (or its annotations): a
    # mutation elsewhere may rightly change a container's role (no worker group left: the Ray
    # head runs the engine)
    ctx0 = ClusterContext.from_objects(source.docs, "vllm-sizer").read_context(_ns(source.doc))
    undone = copy.deepcopy(mutant)
    try:
        for w in read_workloads(source.doc, ctx0):
            parent, _, last = w.container_path.rpartition("/")
            holder = _resolve(undone, parent)
            key = int(last) if isinstance(holder, list) else last.replace("~1", "/").replace(
                "~0", "~")
            holder[key] = _resolve(source.doc, w.container_path)
        undone["metadata"]["annotations"] = source.doc.get("metadata", {}).get("annotations")
        if source.doc.get("metadata", {}).get("annotations") is None:
            del undone["metadata"]["annotations"]
    except (KeyError, IndexError, TypeError, ValueError):
        return []
    if undone != source.doc:
        return []
    kept = [pointer(p) for p, _c in truth]

    ctx = ClusterContext.from_objects(source.docs, "vllm-sizer").read_context(
        _ns(mutant))
    return [Failure("non-vllm-container-read-as-vllm", w.container_path)
            for w in read_workloads(mutant, ctx) if w.container_path in kept]


def _ns(obj: dict[str, Any]) -> str | None:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    ns = meta.get("namespace")
    return ns if isinstance(ns, str) else None


NOISE_NS = "zz-other-tenant"


def _noise(docs: list[Any], models: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for d in docs:
        if isinstance(d, dict) and d.get("kind") in ("ServingRuntime", "ConfigMap", "LimitRange",
                                                      "Secret"):
            n = copy.deepcopy(d)
            if not isinstance(n.get("metadata"), dict):
                continue
            n["metadata"]["namespace"] = NOISE_NS
            for _p, c in containers(n):
                c["resources"] = {"limits": {"memory": "1Ei"}, "requests": {"memory": "1Ei"}}
                c["args"] = ["--max-model-len=1", "--enable-lora", "--max-lora-rank=512",
                             *(c.get("args") if isinstance(c.get("args"), list) else [])]
            out.append(n)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16384,
           "intermediate_size": 53248, "num_hidden_layers": 400, "num_attention_heads": 128,
           "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
           "torch_dtype": "float32"}
    out.append({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "evil-configs", "namespace": NOISE_NS,
                             "labels": {"vllm-sizer.io/model-configs": "true"}},
                "data": {m.replace("/", "--"): json.dumps(cfg) for m in models if m}})
    out.append({"apiVersion": "v1", "kind": "LimitRange",
                "metadata": {"name": "tiny", "namespace": NOISE_NS},
                "spec": {"limits": [{"type": "Container", "max": {"memory": "1Mi"}}]}})
    return out


def _outcome(d: Any) -> tuple[Any, ...]:
    return (d.verdict, json.dumps(d.patch, sort_keys=True, default=str), d.message,
            tuple(d.warnings))


def check_tenants(mutant: dict[str, Any], source: Source) -> list[Failure]:
    """Another namespace's runtimes, model configs and LimitRanges never change a decision."""
    from vllm_sizer.policy.cluster import ClusterContext
    from vllm_sizer.policy.settings import PolicySettings

    ns = _ns(mutant)
    if ns == NOISE_NS:
        return []
    docs = list(source.docs)
    docs[source.index] = mutant
    models = [w.model for w in read_workloads(mutant) if w.model]
    clean = ClusterContext.from_objects(docs, "vllm-sizer")
    noisy = ClusterContext.from_objects(_noise(docs, models) + docs + _noise(docs, models),
                                        "vllm-sizer")
    a, b = (review_object(mutant, c.read_context(ns),
                          PolicySettings(limit_range_max_bytes=c.limit_range_max(ns)))
            for c in (clean, noisy))
    if _outcome(a) != _outcome(b):
        return [Failure("other-namespace-changed-decision",
                        f"{_outcome(a)[0]} → {_outcome(b)[0]}: {_outcome(b)[1][:200]}")]
    return []


# ---- metamorphic: spellings vLLM reads the same must be sized the same (a silently wrong
# number shows as two estimates for one engine)

SCALAR_FLAGS = {"max-model-len", "max-num-seqs", "max-num-batched-tokens", "max-lora-rank",
                "max-loras", "tensor-parallel-size", "pipeline-parallel-size",
                "gpu-memory-utilization", "dtype", "kv-cache-dtype", "cpu-offload-gb",
                "swap-space", "block-size", "data-parallel-size", "quantization",
                "max-cpu-loras", "kv-cache-memory-bytes", "mm-processor-cache-gb"}
NEUTRAL = [["--disable-log-stats"], ["--port", "8123"], ["--host", "0.0.0.0"],
           ["--uvicorn-log-level", "warning"], ["--seed", "7"]]


def _argv_lists(c: dict[str, Any]) -> list[str]:
    return [k for k in ("command", "args") if isinstance(c.get(k), list)
            and all(isinstance(x, str) for x in c[k])]


def _equivalent(rng: random.Random, c: dict[str, Any], doc: Any = None) -> str | None:
    """Rewrite the container's command/args into a spelling vLLM parses the same; None when
    the container offers nothing to rewrite."""
    keys = _argv_lists(c)
    if not keys:
        return None
    key = rng.choice(keys)
    argv: list[str] = c[key]
    flags = [i for i, a in enumerate(argv) if a.startswith("--")
             and a[2:].split("=", 1)[0] in SCALAR_FLAGS]
    op = rng.choice(["split-join", "underscore", "repeat", "neutral", "neutral", "quantity",
                     "move", "env-indirect", "sh-c", "alias"])
    if op == "config-file" or (op == "alias" and doc is not None and rng.random() < 0.5):
        # a flag moved into the --config file vLLM reads (given as the vllm-config annotation)
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        ann = meta.get("annotations") if isinstance(meta, dict) else None
        if not flags or not isinstance(meta, dict) or (ann is not None and not isinstance(
                ann, dict)) or any(a.startswith("--config") for a in argv):
            return None
        if ann and "vllm-sizer.io/vllm-config" in ann:
            return None
        i = rng.choice(flags)
        f, eq, v = argv[i].partition("=")
        if eq:
            del argv[i]
        elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            v = argv[i + 1]
            del argv[i:i + 2]
        else:
            return None
        argv.extend(["--config", "/vsz/config.yaml"])
        meta["annotations"] = {**(ann or {}),
                               "vllm-sizer.io/vllm-config": yaml.safe_dump({f[2:]: v})}
        return f"config-file {f}={v}"
    if op == "alias":
        short = {"--tensor-parallel-size": "-tp", "--pipeline-parallel-size": "-pp",
                 "--data-parallel-size": "-dp", "--quantization": "-q"}
        hits = [i for i, a in enumerate(argv) if a.split("=", 1)[0] in short]
        if not hits:
            return None
        i = rng.choice(hits)
        f, eq, v = argv[i].partition("=")
        argv[i] = short[f] + eq + v
        return f"{op} {argv[i]}"
    if op == "split-join" and flags:
        i = rng.choice(flags)
        if "=" in argv[i]:
            f, v = argv[i].split("=", 1)
            argv[i:i + 1] = [f, v]
        elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            argv[i:i + 2] = [f"{argv[i]}={argv[i + 1]}"]
        else:
            return None
        return f"{op} {argv[i]}"
    if op == "underscore" and flags:
        i = rng.choice(flags)
        f, eq, v = argv[i].partition("=")
        argv[i] = "--" + f[2:].replace("-", "_") + eq + v
        return f"{op} {argv[i]}"
    if op == "repeat" and flags:
        i = rng.choice(flags)
        f = argv[i].split("=", 1)[0]
        if "=" not in argv[i] and not (i + 1 < len(argv) and not argv[i + 1].startswith("-")):
            return None
        other = {"dtype": "float32", "kv-cache-dtype": "fp8", "quantization": "awq"}.get(
            f[2:], "3")
        argv[i:i] = [f, other]  # argparse: the last occurrence wins
        return f"{op} {f}"
    if op == "neutral":
        extra = rng.choice(NEUTRAL)
        if key == "command" and argv[:1] in (["sh"], ["bash"], ["/bin/sh"], ["/bin/bash"]):
            return None
        if not any(a.startswith("--") for a in argv) and key == "command":
            return None
        argv.extend(extra)
        return f"{op} {' '.join(extra)}"
    if op == "quantity":
        res = c.get("resources")
        mem = (res.get("limits") or {}).get("memory") if isinstance(res, dict) and isinstance(
            res.get("limits"), dict) else None
        q = _q(mem)
        if q is None or q % 2**20:
            return None
        c["resources"] = copy.deepcopy(res)
        c["resources"]["limits"]["memory"] = rng.choice([str(q), f"{q // 2**20}Mi",
                                                         f"{q // 1024}Ki"])
        req = (res.get("requests") or {}).get("memory") if isinstance(res.get("requests"),
                                                                       dict) else None
        if _q(req) is not None and _q(req) % 1024 == 0:
            c["resources"]["requests"]["memory"] = f"{_q(req) // 1024}Ki"
        return f"{op} {mem} → {c['resources']['limits']['memory']}"
    if op == "env-indirect" and flags:
        i = rng.choice(flags)
        f, eq, v = argv[i].partition("=")
        if not eq:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                return None
            i, v = i + 1, argv[i + 1]
        if "$" in v:
            return None
        env = c.get("env")
        if isinstance(env, dict):  # KubeAI Model: a map, made the container's env
            env["VSZ_FUZZ_V"] = v
        elif env is None and c.get("engine") is not None:
            c["env"] = {"VSZ_FUZZ_V": v}
        elif env is None or isinstance(env, list):
            c["env"] = [*(env or []), {"name": "VSZ_FUZZ_V", "value": v}]
        else:
            return None
        argv[i] = f"{f}=$(VSZ_FUZZ_V)" if eq else "$(VSZ_FUZZ_V)"
        return f"{op} {f}"
    if op == "sh-c" and "command" in keys and c["command"]:
        import shlex

        words = c["command"] + (c.get("args") or [])
        if words[0] in ("sh", "bash", "/bin/sh", "/bin/bash") or any("$" in w for w in words):
            return None
        c["command"] = ["/bin/sh", "-c", "exec " + shlex.join(words)]
        c.pop("args", None)
        return op
    if op == "move" and keys == ["command", "args"] and c["args"] and c["command"]:
        if c["command"][-1:] == ["-c"] or c["command"][:1] in (["sh"], ["bash"]):
            return None
        c["command"] = c["command"] + c["args"]
        del c["args"]
        return op
    return None


def _sizes(d: Any) -> list[tuple[Any, ...]]:
    return [(c.workload.container_path, c.verdict,
             c.report.total_memory_bytes if c.report else None, c.limit_after)
            for c in d.containers]


def check_equivalent(source: Source, rng: random.Random) -> list[Failure]:
    from vllm_sizer.policy.cluster import ClusterContext

    doc = source.doc
    ctx = ClusterContext.from_objects(source.docs, "vllm-sizer").read_context(_ns(doc))
    base = review_object(doc, ctx)
    sized = [c.workload.container_path for c in base.containers]
    if not sized:
        return []
    path = rng.choice(sized)
    twin = copy.deepcopy(doc)
    try:
        c = _resolve(twin, path)
    except (KeyError, IndexError, TypeError, ValueError):
        return []
    if not isinstance(c, dict):
        return []
    what = _equivalent(rng, c, twin)
    if what is None:
        return []
    version = next(x.workload.vllm_version for x in base.containers
                   if x.workload.container_path == path)
    if what.startswith("config-file") and (version is None or not version.at_least(0, 10)):
        return []  # --config is vLLM 0.10's (before, argparse took it for --config-format)
    other = review_object(twin, ctx)
    if _sizes(base) != _sizes(other):
        diff = [(x, y) for x, y in zip(_sizes(base), _sizes(other), strict=False) if x != y]
        return [Failure(f"metamorphic {what.split()[0]}", f"{what}: {diff or (_sizes(base), _sizes(other))}"[:400])]
    return []


def _resolve(obj: Any, ptr: str) -> Any:
    for raw in ptr.split("/")[1:]:
        key = raw.replace("~1", "/").replace("~0", "~")
        obj = obj[int(key)] if isinstance(obj, list) else obj[key]
    return obj


# ---- the pod a controller makes from a template: sized as its template was (same engine,
# same estimate), and left alone once the template carries the sized label

TEMPLATE_KINDS = {"Deployment": "/spec/template", "StatefulSet": "/spec/template",
                  "Job": "/spec/template", "ReplicaSet": "/spec/template",
                  "DaemonSet": "/spec/template",
                  "LeaderWorkerSet": "/spec/leaderWorkerTemplate/leaderTemplate"}
# (not a RayCluster: KubeRay rewrites the Ray container's command into the pod it makes)
# the pods' controller: a ReplicaSet for a Deployment, a StatefulSet for a LeaderWorkerSet
POD_OWNER = {"Deployment": ("apps/v1", "ReplicaSet"),
             "LeaderWorkerSet": ("apps/v1", "StatefulSet")}


def pod_from(obj: dict[str, Any], template_ptr: str) -> dict[str, Any] | None:
    try:
        t = _resolve(obj, template_ptr)
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    if not isinstance(t, dict) or not isinstance(t.get("spec"), dict):
        return None
    meta = copy.deepcopy(t.get("metadata")) if isinstance(t.get("metadata"), dict) else {}
    src = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    meta["name"] = f"{src.get('name', 'x')}-abcde"
    if isinstance(src.get("namespace"), str):
        meta["namespace"] = src["namespace"]
    api, kind = POD_OWNER.get(str(obj.get("kind")), (obj.get("apiVersion"), obj.get("kind")))
    meta["ownerReferences"] = [{"apiVersion": api, "kind": kind,
                                "name": src.get("name"), "uid": "u", "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": copy.deepcopy(t["spec"])}


def check_pods(obj: dict[str, Any], source: Source) -> list[Failure]:
    from vllm_sizer.policy.cluster import ClusterContext

    ptr = TEMPLATE_KINDS.get(obj.get("kind")) if isinstance(obj.get("kind"), str) else None
    if ptr is None:
        return []
    try:
        meta = _resolve(obj, ptr + "/metadata")
    except (KeyError, IndexError, TypeError, ValueError):
        meta = None
    if meta is not None and not (isinstance(meta, dict) and isinstance(meta.get("labels"),
                                                                       dict | None)):
        return []  # a template that cannot be labelled (refused by the API server as written)
    ctx = ClusterContext.from_objects(source.docs, "vllm-sizer").read_context(_ns(obj))
    d = review_object(obj, ctx, label_pods=True)
    pod = pod_from(obj, ptr)
    if pod is None or not d.containers or d.verdict == "deny":
        return []
    if d.patch:  # the pods come from the template as admitted
        try:
            pod = pod_from(jsonpatch.apply_patch(obj, d.patch), ptr)
        except jsonpatch.JsonPatchException:
            return []
        if pod is None:
            return []
        labels = pod["metadata"].get("labels")
        if isinstance(labels, dict) and labels.get("vllm-sizer.io/sized"):
            return []  # the label says: left alone (checked below)
    ann = obj["metadata"].get("annotations") if isinstance(obj.get("metadata"), dict) else None
    if isinstance(ann, dict) and ({"vllm-sizer.io/model-config", "vllm-sizer.io/vllm-config"}
                                  & set(ann)):
        return []  # the workload's own annotations, which its pods do not carry
    p = review_object(pod, ctx, label_pods=True)
    fails = []
    sized = sorted((c.workload.container, c.report.total_memory_bytes if c.report else None)
                   for c in d.containers if c.workload.container_path.startswith(ptr))
    psized = sorted((c.workload.container, c.report.total_memory_bytes if c.report else None)
                    for c in p.containers)
    if sized != psized:
        fails.append(Failure("pod-sized-unlike-its-template", f"{sized} vs pod {psized}"[:300]))
    if d.patch and d.verdict != "deny":
        try:
            after = jsonpatch.apply_patch(obj, d.patch)
        except jsonpatch.JsonPatchException:
            return fails
        pod2 = pod_from(after, ptr)
        if pod2 is not None:
            p2 = review_object(pod2, ctx, label_pods=True)
            moving = [op for op in p2.patch if "/resources" in op["path"] or "/env" in op["path"]]
            if moving:
                fails.append(Failure("pod-of-a-sized-template-patched", json.dumps(moving)[:300]))
    return fails
