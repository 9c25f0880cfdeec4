"""Read a vLLM command line (already split into argv) into EngineSettings, the way vLLM's
FlexibleArgumentParser reads it. Bad values become diagnostics, never exceptions.

Rules (vllm/utils FlexibleArgumentParser and vllm/engine/arg_utils.py):
- `_` becomes `-` in the key part only (`--max_num_batched_tokens=4k`).
- token counts accept `4k` (4000) and `4K` (4096), also m/M, g/G.
- booleans: `--X` / `--no-X`; newer versions also `--enable-X` / `--disable-X`.
- short flags `-tp`, `-pp`, `-q`, `-O3` / `-O 3`.
- `--config FILE` is expanded (two-token form only); `--config=FILE` is silently not loaded.
- `vllm serve MODEL` takes the model positionally; the api_server module takes `--model`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from ..estimator.settings import EngineSettings
from ..estimator.versions import VllmVersion
from . import vllm_flags as vf
from .api_names import ANNOTATION_VLLM_CONFIG

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    message: str
    flag: str | None = None
    raw: str | None = None
    container: str | None = None  # set by the workload reader
    # vLLM stops on this before it serves (its parser exits with status 2, or its configuration
    # check raises at start-up): the pod will not start, and it is not sized
    # (policy/review.py: "will-not-start")
    exits: bool = False

    def __str__(self) -> str:
        where = (
            f"{self.flag}={_clipped(self.raw, MAX_QUOTED_CHARS)!r}: "
            if self.flag and self.raw is not None
            else (f"{_clipped(self.flag, MAX_QUOTED_CHARS)}: " if self.flag else "")
        )
        return f"{where}{_clipped(self.message, MAX_MESSAGE_CHARS)}"


# What a diagnostic shows of a value from the manifest and of its own text (vLLM's error
# messages quote the value): enough to recognise it, never a 60 KB value twice per line. Assumed:
# real flag values and messages are far shorter; the webhook cuts a warning at 512 characters.
MAX_QUOTED_CHARS = 200
MAX_MESSAGE_CHARS = 1000


def _clipped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


Kind = Literal["tokens", "int", "index", "float", "str", "bool", "list", "json", "choice"]

# flag key (dashes) → (EngineSettings field, kind). Flags that do not change memory are
# parsed only to consume their value correctly.
FLAGS: dict[str, tuple[str | None, Kind]] = {
    "model": ("model", "str"),
    "dtype": ("dtype", "str"),
    "quantization": ("quantization", "str"),
    "kv-cache-dtype": ("kv_cache_dtype", "str"),
    "max-model-len": ("max_model_len", "tokens"),
    "max-num-seqs": ("max_num_seqs", "int"),
    "max-num-batched-tokens": ("max_num_batched_tokens", "tokens"),
    "enable-chunked-prefill": ("enable_chunked_prefill", "bool"),
    "performance-mode": ("performance_mode", "str"),
    "enable-lora": ("enable_lora", "bool"),
    "max-lora-rank": ("max_lora_rank", "int"),
    "max-loras": ("max_loras", "int"),
    "max-cpu-loras": ("max_cpu_loras", "int"),
    "lora-dtype": ("lora_dtype", "str"),
    "fully-sharded-loras": ("fully_sharded_loras", "bool"),
    "lora-modules": (None, "list"),
    "tensor-parallel-size": ("tensor_parallel_size", "int"),
    "pipeline-parallel-size": ("pipeline_parallel_size", "int"),
    "data-parallel-size": ("data_parallel_size", "int"),
    "gpu-memory-utilization": ("gpu_memory_utilization", "float"),
    "cpu-offload-gb": ("cpu_offload_gb", "float"),
    "swap-space": ("swap_space_gib", "float"),
    "kv-cache-memory-bytes": ("kv_cache_memory_bytes", "tokens"),
    "kv-cache-memory": ("kv_cache_memory_bytes", "tokens"),
    "enforce-eager": ("enforce_eager", "bool"),
    "mm-processor-cache-gb": ("mm_processor_cache_gb", "float"),
    "device": ("device", "str"),
    # host processes and buffers (estimator/host_processes.py)
    "load-format": ("load_format", "str"),
    "api-server-count": ("api_server_count", "index"),
    "headless": ("headless", "bool"),
    "nnodes": ("nnodes", "int"),
    "node-rank": ("node_rank", "index"),
    "data-parallel-start-rank": ("data_parallel_start_rank", "index"),
    "data-parallel-external-lb": ("data_parallel_external_lb", "bool"),
    "data-parallel-hybrid-lb": ("data_parallel_hybrid_lb", "bool"),
    "enable-prefix-caching": ("enable_prefix_caching", "bool"),
    "kv-offloading-size": ("kv_offloading_size_gib", "float"),
    "kv-offloading-backend": ("kv_offloading_backend", "choice"),
    "kv-transfer-config": ("kv_transfer_config", "json"),
    # value-taking flags that do not change memory: consumed, not used
    "served-model-name": (None, "list"),
    "host": (None, "str"),
    "port": (None, "str"),
    "uvicorn-log-level": (None, "str"),
    "tokenizer": (None, "str"),
    "revision": (None, "str"),
    "download-dir": (None, "str"),
    "api-key": (None, "str"),
    "chat-template": (None, "str"),
    "tool-call-parser": (None, "str"),
    "block-size": (None, "int"),
    "seed": (None, "int"),
    "distributed-executor-backend": (None, "str"),
    "compilation-config": (None, "json"),
    "limit-mm-per-prompt": (None, "json"),
    "override-generation-config": (None, "json"),
    "hf-overrides": (None, "json"),
    "speculative-config": (None, "json"),
    "reasoning-parser": (None, "str"),
    "max-log-len": (None, "int"),
    "trust-remote-code": (None, "bool"),
    "disable-log-requests": (None, "bool"),
    "enable-auto-tool-choice": (None, "bool"),
    "disable-log-stats": (None, "bool"),
    "enable-log-requests": (None, "bool"),
    # more value-less vLLM flags, so that a positional model after them is not eaten
    "disable-custom-all-reduce": (None, "bool"),
    "disable-sliding-window": (None, "bool"),
    "disable-cascade-attn": (None, "bool"),
    "skip-tokenizer-init": (None, "bool"),
    "enable-sleep-mode": (None, "bool"),
    "disable-frontend-multiprocessing": (None, "bool"),
    "enable-request-id-headers": (None, "bool"),
    "enable-prompt-tokens-details": (None, "bool"),
    "enable-server-load-tracking": (None, "bool"),
    "disable-fastapi-docs": (None, "bool"),
    "disable-uvicorn-access-log": (None, "bool"),
    "enable-expert-parallel": (None, "bool"),
    "enable-eplb": (None, "bool"),
    "disable-async-output-proc": (None, "bool"),
    "return-tokens-as-token-ids": (None, "bool"),
    "enable-force-include-usage": (None, "bool"),
    "enable-tokenizer-info-endpoint": (None, "bool"),
    "async-scheduling": (None, "bool"),
    "calculate-kv-scales": (None, "bool"),
    "enable-log-outputs": (None, "bool"),
    "enable-lora-bias": (None, "bool"),
    "disable-mm-preprocessor-cache": (None, "bool"),
    "enable-reasoning": (None, "bool"),
    "use-v2-block-manager": (None, "bool"),
    "disable-hybrid-kv-cache-manager": (None, "bool"),
    "enable-dbo": (None, "bool"),
    "multi-step-stream-outputs": (None, "bool"),
    "enable-multimodal-encoder-data-parallel": (None, "bool"),
    "max-seq-len-to-capture": (None, "int"),
    "guided-decoding-backend": (None, "str"),
    "tokenizer-mode": (None, "str"),
    "generation-config": (None, "str"),
    "otlp-traces-endpoint": (None, "str"),
    "root-path": (None, "str"),
    "ssl-keyfile": (None, "str"),
    "ssl-certfile": (None, "str"),
    "allowed-origins": (None, "json"),
    "middleware": (None, "list"),
    "task": (None, "str"),
    "runner": (None, "str"),
    "convert": (None, "str"),
    "code-revision": (None, "str"),
    "tokenizer-revision": (None, "str"),
    "num-gpu-blocks-override": (None, "int"),
    "num-scheduler-steps": (None, "int"),
    "scheduling-policy": (None, "str"),
    "worker-cls": (None, "str"),
    "data-parallel-address": (None, "str"),
    "data-parallel-rpc-port": (None, "str"),
    "data-parallel-size-local": ("data_parallel_size_local", "int"),
    "data-parallel-rank": ("data_parallel_rank", "index"),
    "max-parallel-loading-workers": (None, "int"),
    "logits-processor-pattern": (None, "str"),
    "response-role": (None, "str"),
    "ssl-ca-certs": (None, "str"),
}
SHORT = {
    "tp": "tensor-parallel-size",
    "pp": "pipeline-parallel-size",
    "q": "quantization",
    "dp": "data-parallel-size",
}
# `--disable-X` / `--enable-X` spellings vLLM's newer parser accepts for boolean X.
# Modules that parse vLLM's engine flags with --model (no positional model): the OpenAI server,
# the old demo server, and the gRPC server (0.33.0 vllm/entrypoints/launchers/grpc_server.py:
# 176-197 AsyncEngineArgs.add_cli_args; vllm/entrypoints/grpc_server.py re-exports it)
API_SERVER_MODULES = {
    "vllm.entrypoints.openai.api_server",
    "vllm.entrypoints.api_server",
    "vllm.entrypoints.grpc_server",
    "vllm.entrypoints.launchers.grpc_server",
}
CLI_MODULES = {"vllm.entrypoints.cli.main", "vllm.scripts"}
# vLLM's batch runner: the server's engine over a file of requests (a Job). Its parser is the
# engine's arguments plus its own (opendatahub-io/vllm@7f15f7870a38aa1d06906c25156de8b100da140a:
# vllm/entrypoints/openai/run_batch.py:35-100; `vllm run-batch` from the CLI), set aside here.
RUN_BATCH_MODULE = "vllm.entrypoints.openai.run_batch"
RUN_BATCH_SUBCOMMAND = "run-batch"
RUN_BATCH_VALUE_FLAGS = {
    "-i",
    "--input-file",
    "-o",
    "--output-file",
    "--output-tmp-dir",
    "--response-role",
    "--url",
}
RUN_BATCH_VALUELESS_FLAGS = {
    "--enable-metrics",
    "--enable-prompt-tokens-details",
    "--enable-force-include-usage",
}
_TOKENS_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*$")
_SUFFIX = {"": 1, "k": 10**3, "K": 2**10, "m": 10**6, "M": 2**20, "g": 10**9, "G": 2**30}
MAX_CROSS_VERSION = 32  # rejected options checked against every known version's list
MAX_TOKENS = 1 << 40  # larger token counts or byte sizes are absurd input, not configuration
# Options whose `choices` (recorded per version in data/vllm_flags.json) are checked: those that
# come from a Literal of vLLM's config that no platform extends. Choices a platform or a vendor
# build extends (quantization, load_format, device, block_size and kv_cache_dtype on HPU / ROCm
# builds, parsers, backends) are not checked: a value outside upstream's list may be valid there.
CHECKED_CHOICES = frozenset(
    {
        "dtype",
        "lora_dtype",
        "max_lora_rank",
        "kv_offloading_backend",
        "performance_mode",
    }
)
# A value still holding a shell expansion the reader could not resolve (`$X`, `${X}`,
# `$((…))`); not Kubernetes' `$(X)`, which reaches vLLM as written when X is not defined.
_UNEXPANDED = re.compile(r"\$(?:[A-Za-z_{]|\(\()")


def parse_token_count(raw: str) -> int:
    """'4k' → 4000, '4K' → 4096, '2048' → 2048. Raises ValueError on anything else."""
    m = _TOKENS_RE.match(raw)
    if not m:
        raise ValueError("not a token count (digits with an optional k/K/m/M/g/G suffix)")
    if len(m[1]) > 20:  # float() of hundreds of digits is inf: refuse before converting
        raise ValueError("out of range")
    value = float(m[1]) * _SUFFIX[m[2]]
    if value != int(value):
        raise ValueError("not a whole number")
    if value <= 0 or value > MAX_TOKENS:
        raise ValueError("out of range")
    return int(value)


def _bool_text(raw: str) -> bool:
    t = raw.strip().lower()
    if t in ("true", "1", "yes"):
        return True
    if t in ("false", "0", "no"):
        return False
    raise ValueError("not a boolean")


@dataclass
class ParsedVllm:
    """What one vLLM invocation sets, before defaults."""

    values: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    lora_modules: list[str] = field(default_factory=list)
    config_file: str | None = None
    config_model: str | None = None  # `model:` in a --config file: below the command line
    unknown_flags: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    table_version: str | None = None  # the known vLLM version whose option list was used
    # --kv-transfer-config as vLLM ends up with it: the JSON value, or the dict its dotted form
    # (--kv-transfer-config.key value) builds, which vLLM appends last (so it replaces the JSON)
    kv_transfer_json: dict[str, Any] | None = None
    kv_transfer_dotted: dict[str, Any] = field(default_factory=dict)

    def to_settings(self, **facts: Any) -> tuple[EngineSettings | None, list[Diagnostic]]:
        """EngineSettings from the parsed values plus facts from outside the command line
        (device evidence, env, GPU size). Values vLLM would reject become diagnostics."""
        data = {k: v for k, v in {**facts, **self.values}.items() if v is not None}
        if self.model:
            data["model"] = self.model
        diags = list(self.diagnostics)
        while True:
            try:
                return EngineSettings(**data), diags
            except ValidationError as exc:
                bad = {str(e["loc"][0]) for e in exc.errors() if e.get("loc")}
                if not bad or not bad & set(data):
                    diags.append(
                        Diagnostic("error", f"settings rejected: {exc.errors()[0]['msg']}")
                    )
                    return None, diags
                why = {str(e["loc"][0]): str(e["msg"]) for e in exc.errors() if e.get("loc")}
                for key in bad & set(data):
                    diags.append(
                        Diagnostic(
                            "error",
                            f"the estimate cannot use it ({why.get(key, 'invalid')}): not sized "
                            "at this value, sized as if the flag were not set",
                            flag="--" + key.replace("_", "-"),
                            raw=str(data[key]),
                        )
                    )
                    del data[key]


def _dest_spec(dest: str) -> tuple[str | None, Kind] | None:
    """Our reading of a vLLM dest (argparse attribute): FLAGS keyed by the flag's key."""
    return FLAGS.get(dest.replace("_", "-"))


def _range_of(
    version: VllmVersion | None, parser: vf.Parser, floor: str | None = None
) -> list[vf.OptionTable]:
    """The lists a command line is checked against: the version's, or every known list from
    `floor` on when the version is unknown (the image tag does not say)."""
    if version is not None:
        return [vf.table_for(version, parser)]
    return list(vf.tables_from(parser, floor))


def _spans(versions: list[str]) -> str:
    """['0.6.0', '0.6.6', '0.9.2'] → '0.6.0-0.9.2' (consecutive known lists merged)."""
    if not versions:
        return "none"
    known = vf.known_versions()
    idx = sorted(known.index(v) for v in versions)
    parts, start, prev = [], idx[0], idx[0]
    for i in [*idx[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(known[start] if start == prev else f"{known[start]}-{known[prev]}")
        if i is not None:
            start = prev = i
    return ", ".join(parts)


UNEXPECTED_POSITIONAL = "unexpected positional argument"


def _unexpected_positional(tok: str, exits: bool) -> Diagnostic:
    """A word argparse has no positional slot for: with vLLM's parse_args (strict) its
    `unrecognized arguments` error, exit status 2 (CPython argparse parse_args)."""
    # not said as an exit yet: LLMInferenceService reads (KServe's template plus the user's
    # args) give the model twice in the published corpus; to settle before it is (see the
    # parser-diff report)
    return Diagnostic("error" if exits else "warning", UNEXPECTED_POSITIONAL, raw=tok)


# `vllm serve` rewrites its argv before argparse (FlexibleArgumentParser.parse_args, when the
# first word is `serve`): from 0.11.1 the first `--model X` / `--model=X` is moved to the
# positional slot (0.11.1:vllm/utils/argparse_utils.py:196-227, 0.33.0:vllm/utils/
# argparse_utils.py:324-356); before, the two-token `--model X` raises (0.8.5:vllm/utils.py:
# 1338-1346, 0.11.0:vllm/utils/__init__.py:1856-1864).
MODEL_MOVED_FROM = (0, 11, 1)
RAISE_EXIT = (
    "vLLM exits at start-up (an exception before argparse, status 1): the pod will not start"
)
# 0.17+: `--served-model-name` with no model first and no --config raises (0.17.0:vllm/utils/
# argparse_utils.py:220-233, 0.33.0:vllm/utils/argparse_utils.py:357-369).
SERVED_NAME_NEEDS_MODEL_FROM = (0, 17)
# 0.8.5+: `--config FILE` under `vllm serve` with no model first and none in the file raises
# (0.8.5:vllm/utils.py:1441, 0.33.0:vllm/utils/argparse_utils.py:574-583).
CONFIG_NEEDS_MODEL_FROM = (0, 8, 5)
_MODEL_TOKEN = re.compile(r"^--model(=.+|$)")
_SERVED_NAME_TOKEN = re.compile(r"^--served[-_]model[-_]name(=.+|$)")
_CONFIG_TOKEN = re.compile(r"^--config(=.+|$)")


def _serve_rewrite(
    args: list[str], version: VllmVersion | None, diags: list[Diagnostic]
) -> tuple[list[str], bool]:
    """`vllm serve`'s argv as FlexibleArgumentParser hands it to argparse (see MODEL_MOVED_FROM),
    and whether it raises before (said in `diags`)."""
    moved = version is None or version.at_least(*MODEL_MOVED_FROM)
    if moved:
        idx = next((i for i, a in enumerate(args) if _MODEL_TOKEN.match(a)), None)
        if idx is not None:
            if args[idx] == "--model":
                if idx + 1 >= len(args):
                    diags.append(
                        Diagnostic(
                            "error",
                            "--model is last, with no value: vLLM's parser raises IndexError "
                            f"moving it to the model's place; {RAISE_EXIT}",
                            "--model",
                            exits=True,
                        )
                    )
                    return args, True
                args = [args[idx + 1], *args[:idx], *args[idx + 2 :]]
            else:
                args = [args[idx].removeprefix("--model="), *args[:idx], *args[idx + 1 :]]
    if (
        version is not None
        and version.at_least(*SERVED_NAME_NEEDS_MODEL_FROM)
        and args
        and args[0].startswith("-")
        and not any(_CONFIG_TOKEN.match(a) for a in args)
        and any(_SERVED_NAME_TOKEN.match(a) for a in args)
    ):
        diags.append(
            Diagnostic(
                "error",
                "--served-model-name with no model first: vLLM raises ValueError (`model` "
                "should be provided as the first positional argument when using `vllm "
                f"serve`); {RAISE_EXIT}",
                "--served-model-name",
                exits=True,
            )
        )
        return args, True
    return args, False


def parse_vllm_args(
    args: list[str],
    version: VllmVersion | None = None,
    config_loader: Callable[[str], dict[str, Any] | None] | None = None,
    positional_model: bool = True,
    strict: bool = False,
    version_floor: str | None = None,
) -> ParsedVllm:
    """Parse the flags of one vLLM invocation (the tokens after `vllm serve` or after the
    api_server module) with the option list of that vLLM version (latest when unknown):
    argparse's abbreviations, value counts and boolean flags as vLLM registers them.
    `strict`: the tokens go to vLLM's own parser (parse_args): an option it rejects is its
    startup error; otherwise (KServe's server, parse_known_args) unknown flags are collected.
    `version_floor`: with no version, the oldest version the image can be (vLLM's `latest`
    image: the newest known list). `config_loader` returns the YAML dict of a `--config FILE`,
    if known."""
    out = ParsedVllm()
    pname: vf.Parser = "serve" if positional_model else "api_server"
    table = vf.table_for(version, pname)
    out.table_version = table.version
    if version is not None and not vf.is_exact_known(version) and strict:
        out.diagnostics.append(
            Diagnostic(
                "info",
                f"vLLM {version}'s option list is not recorded: read with the nearest "
                f"lower known list ({table.version})",
            )
        )
    flag_model: str | None = None
    after_dd = False
    rejected = 0
    superseded: dict[str, list[Diagnostic]] = {}  # setting → what its last occurrence said
    args = [str(a) for a in args]
    if positional_model:
        args, stopped = _serve_rewrite(args, version, out.diagnostics)
        if stopped:
            return out
    if (
        args.count("--config") > 1
    ):  # FlexibleArgumentParser asserts one (0.33.0:argparse_utils.py:551)
        out.diagnostics.append(
            Diagnostic(
                "error",
                f"more than one --config: vLLM's parser asserts one (AssertionError); {RAISE_EXIT}",
                "--config",
                exits=True,
            )
        )
        return out
    i = 0
    n = len(args)

    def take_values(kind: str, explicit: str | None) -> list[str] | None:
        """argparse's value consumption for an option of `kind` (None: missing value)."""
        nonlocal i
        if kind in vf.VALUELESS:
            return []
        if explicit is not None:
            # argparse's consume_optional matches an attached value against the pattern 'A'
            # alone: `--served-model-name=a b` takes `a`, and `b` stays a positional argument,
            # whatever the nargs (CPython 3.11/3.12 Lib/argparse.py consume_optional)
            return [explicit]
        if kind == "r":
            items = [str(a) for a in args[i:]]
            i = n
            return items
        if kind in ("+", "*"):
            items = []
            while i < n and not vf.looks_like_option(str(args[i])):
                items.append(str(args[i]))
                i += 1
            return items if items or kind == "*" else None
        if i < n and not vf.looks_like_option(str(args[i])):
            i += 1
            return [str(args[i - 1])]
        return [] if kind == "?" else None

    while i < n:
        tok = str(args[i])
        i += 1
        if after_dd or not vf.looks_like_option(tok):
            if positional_model and out.model is None:
                out.model = tok
            elif _UNEXPANDED.search(tok):
                # a word still holding a shell expansion the reader could not resolve
                # (`$VLLM_ADDITIONAL_ARGS` with no known value): the shell reader already said
                # it; when the container runs it is other words, or none when unset
                out.diagnostics.append(
                    Diagnostic(
                        "info",
                        "words known only when the container runs (none when unset); "
                        "not read as vLLM arguments",
                        raw=tok,
                    )
                )
            else:
                out.diagnostics.append(_unexpected_positional(tok, strict and positional_model))
            continue
        if tok == "--":
            after_dd = True
            continue
        # FlexibleArgumentParser: `-O3` / `-O 3` (compilation level), `_` → `-` in the key
        if tok.startswith("-O") and not tok.startswith("--"):
            if tok == "-O" and i < n and not vf.looks_like_option(str(args[i])):
                i += 1
            continue
        if tok.startswith("--"):
            head, eq, inline = tok.partition("=")
            base, dot, _sub = head.partition(".")
            tok = base.replace("_", "-") + (dot + _sub if dot else "") + eq + inline
        else:
            head, eq, inline = tok.partition("=")
            base, dot = head, ""
        lookup = base.replace("_", "-") + eq + inline if dot else tok
        m = vf.match(table, lookup)
        used = table
        if m.option is None:
            if " " in tok and not m.ambiguous:
                # argparse reads an unknown token holding a space as a positional argument
                if positional_model and out.model is None:
                    out.model = tok
                else:
                    out.diagnostics.append(_unexpected_positional(tok, strict))
                continue
            rejected += 1
            accepting = []
            if rejected <= MAX_CROSS_VERSION:  # hostile input: bounded work per command line
                for t in _range_of(None, pname, version_floor):
                    alt = vf.match(t, lookup)
                    if alt.option is not None:
                        accepting.append((t, alt))
            shown = base.replace("_", "-") if tok.startswith("--") else base
            if m.ambiguous:
                why = (
                    f"ambiguous option: {shown} could match "
                    f"{', '.join(m.ambiguous[:6])}{' …' if len(m.ambiguous) > 6 else ''}"
                )
            else:
                why = f"unrecognized argument {shown}"
            if strict and rejected <= MAX_CROSS_VERSION:
                out.diagnostics.append(
                    _rejection(why, shown, table, version, accepting, pname, version_floor)
                )
            elif strict and rejected == MAX_CROSS_VERSION + 1:
                out.diagnostics.append(
                    Diagnostic(
                        "error",
                        f"more than {MAX_CROSS_VERSION} options vLLM rejects: the rest are "
                        "not reported one by one; vLLM exits, the pod will not start",
                        shown,
                    )
                )
            reading = accepting or (
                [
                    (t, a)
                    for t in _range_of(None, pname)
                    if (a := vf.match(t, lookup)).option is not None
                ]
                if version_floor and rejected <= MAX_CROSS_VERSION
                else []
            )
            if reading:
                accepting = reading
                # read it as the newest version that has it as written, else the newest that
                # expands it
                exact = [a for a in accepting if not a[1].abbreviated]
                used, m = (exact or accepting)[-1]
            else:
                if not strict:
                    out.unknown_flags.append(shown)
                # argparse gives no value to an option it does not know: a following word is
                # a positional argument (the model, while none is read yet); after the model
                # it is taken as this flag's value (one rejection, not two)
                cands = [table.options[o][1] for o in m.ambiguous]
                if (
                    not eq
                    and i < n
                    and not vf.looks_like_option(str(args[i]))
                    and not (cands and all(k in vf.VALUELESS for k in cands))
                    and not (positional_model and out.model is None)
                ):
                    i += 1
                continue
        assert m.option is not None and m.dest is not None and m.kind is not None
        if m.abbreviated and used is table:
            written = base.replace("_", "-") if base.startswith("--") else base
            former = (
                [t.version for t in _range_of(None, pname) if written in t.options]
                if len(out.diagnostics) < 200
                else []
            )
            if former:  # an option of other versions, expanded to another one here
                out.diagnostics.append(
                    Diagnostic(
                        "warning",
                        f"vLLM {table.version}'s parser has no {written} (an option of "
                        f"vLLM {_spans(former)}): argparse expands it to {m.option}, so it is read "
                        f"as {m.option}",
                        flag=written,
                    )
                )
            else:
                out.diagnostics.append(
                    Diagnostic(
                        "info",
                        f"abbreviation: vLLM's parser (argparse, allow_abbrev) reads it as "
                        f"{m.option}",
                        flag=written,
                    )
                )
        if m.dest == "config" and m.kind != "x":
            if eq:
                out.diagnostics.append(
                    Diagnostic(
                        "warning",
                        "vLLM does not load --config=FILE (only the two-token form "
                        "--config FILE): its contents are ignored",
                        flag="--config",
                        raw=inline,
                    )
                )
                continue
            if i >= n and tok == "--config":
                out.diagnostics.append(
                    Diagnostic(
                        "error",
                        "--config is last, with no file: vLLM's parser raises ValueError (No "
                        "config file specified; 0.8.5:vllm/utils.py:1417-1423, 0.33.0:vllm/utils/"
                        f"argparse_utils.py:553-557); {RAISE_EXIT}",
                        "--config",
                        exits=True,
                    )
                )
            if i < n:
                path = str(args[i])
                i += 1
                out.config_file = path
                try:
                    loaded = config_loader(path) if config_loader else None
                except Exception:  # noqa: BLE001 - a caller's loader must not break the reader
                    loaded = None
                if not isinstance(loaded, dict):
                    out.diagnostics.append(
                        Diagnostic(
                            "warning",
                            "config file contents unknown: settings in it are not "
                            f"seen (inline them with the {ANNOTATION_VLLM_CONFIG} annotation)",
                            flag="--config",
                            raw=path,
                        )
                    )
                else:
                    if (
                        positional_model
                        and tok == "--config"
                        and "model" not in loaded
                        and args[0].startswith("-")
                        and (version is None or version.at_least(*CONFIG_NEEDS_MODEL_FROM))
                    ):
                        out.diagnostics.append(
                            Diagnostic(
                                "error",
                                "no model first and none in the --config file: vLLM's parser "
                                "raises ValueError (No model specified!; 0.8.5:vllm/utils.py:"
                                f"1435-1442, 0.33.0:vllm/utils/argparse_utils.py:574-583); {RAISE_EXIT}",
                                "--config",
                                path,
                                # a `--model X` elsewhere names the model: sized, as for
                                # `vllm serve --model X`'s own start-up error (the size of the fix)
                                exits=not any(re.match(r"--model(=|$)", str(a)) for a in args),
                            )
                        )
                    _apply_config_file(out, loaded, version, table)
            continue
        flag = m.option
        kind = "v" if dot else m.kind  # `--json-arg.key value`: one value
        explicit = inline if eq else m.explicit
        if kind in vf.VALUELESS and explicit is not None:
            if strict:
                out.diagnostics.append(
                    _valueless_with_value(
                        flag, explicit, used, version, lookup, pname, version_floor
                    )
                )
            try:
                value = _bool_text(explicit)
            except ValueError:
                continue
            spec = _dest_spec(m.dest)
            if spec and spec[0] and spec[1] == "bool":
                out.values[spec[0]] = value if kind == "t" else not value
            continue
        if kind == "x":
            if strict:
                out.diagnostics.append(
                    Diagnostic(
                        "error",
                        "prints help or the version and exits: the server does not run",
                        flag,
                    )
                )
            continue
        values = take_values(kind, explicit)
        if values is None:
            out.diagnostics.append(
                Diagnostic(
                    "error",
                    f"flag has no value (argparse: expected {'at least one argument' if kind == '+' else 'one argument'})"
                    + ("; vLLM exits, the pod will not start" if strict else ""),
                    flag,
                )
            )
            continue
        if dot:
            if m.dest == "kv_transfer_config" and values:
                _set_dotted(out.kv_transfer_dotted, _sub.split("."), values[0])
            continue  # other keys of JSON arguments: no memory effect read
        vt = used.types.get(flag)
        # a value known only when the container runs (said by the shell reader) is not judged
        if vt is not None and values and not any(_UNEXPANDED.search(v) for v in values):
            if vt.choices is not None and m.dest not in CHECKED_CHOICES:
                vt = dataclasses.replace(vt, choices=None)
            said = _value_rejection(flag, values, vt, used, version, lookup, pname, version_floor)
            if said is not None:
                out.diagnostics.append(said)
                if said.severity == "error":
                    continue  # vLLM exits (or may): nothing of it is read
        spec = _dest_spec(m.dest)
        if spec is None or spec[0] is None:
            if m.dest == "lora_modules" or (
                spec and spec[1] == "list" and m.dest.replace("_", "-") == "lora-modules"
            ):
                out.lora_modules.extend(values)
            continue
        target, conv = spec[0], spec[1]
        if conv == "bool":
            if kind in ("t", "f", "c"):
                value = kind != "f"
            elif not values:
                value = True  # nargs='?' with const True
            else:
                try:
                    value = _bool_text(values[0])
                except ValueError:
                    out.diagnostics.append(Diagnostic("error", "not a boolean", flag, values[0]))
                    continue
            out.values[target] = value
            continue
        if not values:
            continue
        raw = values[0]
        auto = _auto_model_len(raw, flag, version) if target == "max_model_len" else None
        if auto is not None:
            out.diagnostics.append(auto)
            continue
        if vt is not None and vt.optional and raw in ("", "None"):
            continue  # vLLM's optional_type reads these as None: its default, no error
        # argparse keeps the last occurrence: what an earlier one of this setting was said to be
        # (out of range, refused at start-up, known only at run time) no longer holds
        for earlier in superseded.pop(target, ()):
            if earlier in out.diagnostics:
                out.diagnostics.remove(earlier)
        try:
            value = _convert(conv, raw, target, vt, version)
        except ValueError as exc:
            if _UNEXPANDED.search(raw):  # the shell reader already said the value is unknown
                said = Diagnostic(
                    "info",
                    "value known only when the container runs: sized as if the flag were not set",
                    flag,
                    raw,
                )
            else:
                said = _out_of_range(exc, flag, raw)
            out.diagnostics.append(said)
            superseded[target] = [said]
            out.values.pop(target, None)  # an earlier occurrence's value is not the one vLLM uses
            continue
        if target == "model":
            if (
                positional_model
                and not eq
                and version is not None
                and version.at_least(0, 8, 5)
                and not version.at_least(*MODEL_MOVED_FROM)
            ):
                out.diagnostics.append(
                    Diagnostic(
                        "error",
                        f"`vllm serve --model X` is a startup error in vLLM {version} "
                        "(pass the model positionally)",
                        flag,
                        raw,
                    )
                )
            flag_model = value  # argparse: the last --model wins
            continue
        if target == "device":
            value = value.lower()
        if target == "kv_transfer_config":
            obj = _json_value(raw, version, out.diagnostics, flag)
            if obj is not None:
                out.kv_transfer_json = obj
            continue
        out.values[target] = value
    if (
        strict
        and positional_model
        and out.model is None
        and flag_model is None  # `vllm serve --model X`: said apart (read as the model)
        and any(k == "v" for _, k in table.positionals)
    ):
        # `vllm serve` up to 0.8.0: model_tag is a required positional (0.6.6:vllm/scripts.py:158, 0.8.0:vllm/entrypoints/cli/serve.py:
        # 45; nargs="?" from 0.8.5)
        out.diagnostics.append(
            Diagnostic(
                "error",
                f"no model: vLLM {table.version}'s `vllm serve` requires it (argparse: the "
                f"following arguments are required: model_tag); {PARSER_EXIT}",
                exits=True,
            )
        )
    kv = out.kv_transfer_dotted or out.kv_transfer_json
    if kv is not None:
        out.values.update(kv_transfer_settings(kv, out.diagnostics))
    if flag_model is None and out.model is None and out.config_model is not None:
        out.model = out.config_model
    if flag_model is not None:
        if out.model is None:
            out.model = flag_model
        elif out.model != flag_model:
            out.diagnostics.append(
                Diagnostic(
                    "warning",
                    f"both a positional model ({out.model}) and --model given: the "
                    "positional one is used",
                    "--model",
                    flag_model,
                )
            )
    return out


def _valueless_with_value(
    flag: str,
    explicit: str,
    used: vf.OptionTable,
    version: VllmVersion | None,
    lookup: str,
    pname: vf.Parser,
    floor: str | None,
) -> Diagnostic:
    """`--enable-chunked-prefill=false` where the flag takes no value (a BooleanOptionalAction
    from the config-dataclass parser on): argparse's error, unless the image can be a version
    whose flag still took one (0.6's StoreBoolean with nargs='?'), which the tag does not say."""
    why = (
        f"{flag} takes no value (argparse: ignored explicit argument); use {flag} or its "
        "negative form"
    )
    if version is None:
        every = [t.version for t in _range_of(None, pname, floor)]
        taking = [
            t.version
            for t in _range_of(None, pname, floor)
            if (a := vf.match(t, lookup)).option is not None and a.kind not in vf.VALUELESS
        ]
        if taking:
            rejecting = [v for v in every if v not in taking]
            return Diagnostic(
                "warning",
                f"{why}: vLLM {_spans(rejecting)} exit on it, {_spans(taking)} take the value; "
                "the image tag does not say which version runs: with one that exits the pod "
                "will not start",
                flag,
                explicit,
            )
    return Diagnostic(
        "error",
        f"vLLM {used.version}'s {why}: vLLM exits, the pod will not start",
        flag,
        explicit,
    )


PARSER_EXIT = "vLLM exits at start-up (argparse, status 2): the pod will not start"


def _rejected_text(flag: str, exc: vf.Rejected) -> str:
    """vLLM's own words for a value its parser rejects (or the exception it dies of)."""
    if exc.crash:
        return f"{exc} (argparse does not catch it: vLLM exits with a traceback)"
    return f"argument {flag}: {exc}"


def _value_rejection(
    flag: str,
    values: list[str],
    vt: vf.ValueType,
    used: vf.OptionTable,
    version: VllmVersion | None,
    lookup: str,
    pname: vf.Parser,
    floor: str | None,
) -> Diagnostic | None:
    """The diagnostic for values the version's parser rejects (its `type` or `choices`), None
    when it takes them. With no version, and versions that differ, said as for a valueless
    flag given a value: a warning naming which versions exit (read as the others read it)."""

    def rejection(t: vf.OptionTable, v: vf.ValueType) -> vf.Rejected | None:
        for raw in values:
            try:
                vf.convert_value(v, raw)
            except vf.Rejected as exc:
                return exc
        return None

    exc = rejection(used, vt)
    raw = values[0] if len(values) == 1 else " ".join(values)
    if version is None:
        every = _range_of(None, pname, floor)
        verdicts = []
        for t in every:
            m = vf.match(t, lookup)
            tv = t.types.get(m.option or "")
            if m.option is None:
                continue  # a version without the option: said by the option's own check
            if tv is not None and tv.choices is not None and m.dest not in CHECKED_CHOICES:
                tv = dataclasses.replace(tv, choices=None)
            verdicts.append((t.version, rejection(t, tv) if tv is not None else None))
        rejecting = [v for v, e in verdicts if e is not None]
        taking = [v for v, e in verdicts if e is None]
        if rejecting and taking:
            shown = next(e for _, e in verdicts if e is not None)
            assert shown is not None
            return Diagnostic(
                "warning",
                f"vLLM {_spans(rejecting)} reject it ({_rejected_text(flag, shown)}), "
                f"{_spans(taking)} take it; the image tag does not say which version runs: "
                "with one that rejects it vLLM exits at start-up and the pod will not start",
                flag,
                raw,
            )
        if not rejecting:
            return None
    if exc is None:
        return None
    who = f"vLLM {used.version}" if version is not None else "every vLLM version it can be"
    return Diagnostic(
        "error",
        f"{who} rejects it: {_rejected_text(flag, exc)}; {PARSER_EXIT}",
        flag,
        raw,
        exits=True,
    )


def _rejection(
    why: str,
    flag: str,
    table: vf.OptionTable,
    version: VllmVersion | None,
    accepting: list[tuple[vf.OptionTable, vf.Match]],
    pname: vf.Parser,
    floor: str | None = None,
) -> Diagnostic:
    """The diagnostic for an option vLLM's parser rejects (its startup error)."""
    accepted_by = [t.version for t, _ in accepting]
    pick = ([a for a in accepting if not a[1].abbreviated] or accepting)[-1] if accepting else None
    read_as = f"; read as {pick[1].option} of vLLM {pick[0].version}" if pick else ""
    if version is not None:
        also = f" (accepted by vLLM {_spans(accepted_by)})" if accepted_by else ""
        return Diagnostic(
            "error",
            f"{why} in vLLM {version}'s parser{also}: vLLM exits with an "
            f"argument error, the pod will not start{read_as}",
            flag,
        )
    every = [t.version for t in _range_of(None, pname, floor)]
    if not accepted_by:
        span = (
            f"every vLLM version the image can be (its tag means the newest: {every[-1]} or later)"
            if floor
            else f"every known vLLM version ({every[0]} to {every[-1]})"
        )
        return Diagnostic(
            "error",
            f"{why}: {span} rejects it, vLLM exits with an argument error "
            "and the pod will not start",
            flag,
        )
    rejected = [v for v in every if v not in accepted_by]
    return Diagnostic(
        "warning",
        f"{why} in vLLM {table.version}'s parser; vLLM "
        f"{_spans(rejected)} reject it, {_spans(accepted_by)} accept it; the image "
        "tag does not say which version runs: with a version that rejects it the "
        "pod will not start" + read_as,
        flag,
    )


_HUMAN_NUMBER = re.compile(r"\b\d+(?:\.\d+)?[kKmMgGtT]\b")
_HUMAN_MULT = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
               "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}  # fmt: skip


def _human_number(m: re.Match[str]) -> str:
    """80G → 85899345920; a number too large to be one (hundreds of digits) stays as written
    (and the JSON then fails to parse: said)."""
    try:
        return str(int(float(m[0][:-1]) * _HUMAN_MULT[m[0][-1]]))
    except (OverflowError, ValueError):
        return str(m[0])


def _json_value(
    raw: str, version: VllmVersion | None, diags: list[Diagnostic], flag: str
) -> dict[str, Any] | None:
    """A JSON-valued vLLM flag (--kv-transfer-config): a JSON object. From 0.20 vLLM expands
    bare human-readable numbers first (`{"cpu_bytes_to_use": 80G}`:
    0.20.0:vllm/engine/arg_utils.py _expand_json_human_readable_numbers, k/m/g/t decimal,
    K/M/G/T binary); older versions validate the JSON as written (TypeAdapter.validate_json,
    0.19.0:vllm/engine/arg_utils.py:299-303)."""
    import json

    # nested past Python's stack: RecursionError, which vLLM's parser does not catch either
    # (vLLM exits); said like any JSON it rejects, never an internal error
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        obj = None
        if version is None or version.at_least(0, 20):
            parts = re.split(r'("(?:[^"\\]|\\.)*")', raw)
            for i in range(0, len(parts), 2):
                parts[i] = _HUMAN_NUMBER.sub(_human_number, parts[i])
            try:
                obj = json.loads("".join(parts))
            except (ValueError, RecursionError):
                obj = None
    if not isinstance(obj, dict):
        diags.append(
            Diagnostic(
                "error",
                "not a JSON object: vLLM's parser rejects it (vLLM exits); its settings are "
                "not read",
                flag,
                raw[:200],
            )
        )
        return None
    return obj


def _set_dotted(target: dict[str, Any], keys: list[str], raw: str) -> None:
    """`--kv-transfer-config.a.b value`: vLLM's FlexibleArgumentParser nests the keys and reads
    the value as JSON, else as a string (0.19.0:vllm/utils/argparse_utils.py:323-346)."""
    import json

    try:
        value: Any = json.loads(raw)
    except (ValueError, RecursionError):
        value = raw
    for k in keys[:-1]:
        nxt = target.get(k)
        if not isinstance(nxt, dict):
            nxt = target[k] = {}
        target = nxt
    if keys and keys[-1]:
        target[keys[-1]] = value


# Connectors whose buffers the estimator counts (host_processes.py); MultiConnector wraps a list
# of {"kv_connector", "kv_connector_extra_config"} under extra config "connectors".
HOST_KV_CONNECTORS = ("OffloadingConnector", "SimpleCPUOffloadConnector", "LMCacheConnectorV1")


def kv_transfer_settings(cfg: dict[str, Any], diags: list[Diagnostic]) -> dict[str, Any]:
    """EngineSettings values from a --kv-transfer-config object: the connector and the sizes
    its kv_connector_extra_config gives (docs/research/gpu-memory.md §4): cpu_bytes_to_use
    (OffloadingConnector from 0.14, SimpleCPUOffloadConnector), num_cpu_blocks
    (OffloadingConnector 0.11-0.13), spec_name, and LMCache's `lmcache.`-prefixed overrides
    (lmcache.max_local_cpu_size, lmcache.local_cpu), which win over LMCACHE_* variables
    (0.19.0:vllm/distributed/kv_transfer/kv_connector/v1/lmcache_integration/vllm_v1_adapter.py:586-601)."""
    out: dict[str, Any] = {}
    name = str(cfg.get("kv_connector") or "") or None
    extra = cfg.get("kv_connector_extra_config")
    extra = extra if isinstance(extra, dict) else {}
    if name and cfg.get("kv_role") is None:
        # KVTransferConfig.__post_init__ (0.6.6:vllm/config.py:2579-2581, 0.11.0:vllm/config/
        # kv_transfer.py:91-93, 0.33.0:vllm/config/kv_transfer.py:120-124)
        diags.append(
            Diagnostic(
                "error",
                "kv_connector without kv_role: vLLM raises ValueError (Please specify kv_role "
                "when kv_connector is set); vLLM exits at start-up: the pod will not start",
                "--kv-transfer-config",
                name,
                exits=True,
            )
        )
    if name:
        out["kv_connector"] = name  # as vLLM reads it (a MultiConnector stays one)
    if name == "MultiConnector":
        # the sizes are those of the wrapped connector that holds host memory
        inner = [c for c in extra.get("connectors") or [] if isinstance(c, dict)]
        chosen = next((c for c in inner if c.get("kv_connector") in HOST_KV_CONNECTORS), None)
        if chosen is not None:
            out["kv_host_connector"] = str(chosen["kv_connector"])
            extra = chosen.get("kv_connector_extra_config")
            extra = extra if isinstance(extra, dict) else {}

    def number(key: str, kind: type) -> Any:
        if key not in extra:
            return None
        try:
            f = float(extra[key])  # JSON's Infinity / NaN, 1e999, a string: never an int here
            if not (0 <= f <= MAX_TOKENS):
                raise ValueError
            return kind(f) if kind is int else kind(extra[key])
        except (TypeError, ValueError, OverflowError):
            diags.append(
                Diagnostic(
                    "error",
                    f"kv_connector_extra_config.{key} is not a number: not read",
                    "--kv-transfer-config",
                    str(extra[key])[:80],
                )
            )
            return None

    for key, target, kind in (
        ("cpu_bytes_to_use", "kv_connector_cpu_bytes", int),
        ("num_cpu_blocks", "kv_connector_cpu_blocks", int),
        ("lmcache.max_local_cpu_size", "lmcache_local_cpu_gb", float),
    ):
        v = number(key, kind)
        if v is not None:
            out[target] = v
    if isinstance(extra.get("spec_name"), str):
        out["kv_connector_spec"] = extra["spec_name"]
    if "lmcache.local_cpu" in extra:
        v = extra["lmcache.local_cpu"]
        out["lmcache_local_cpu"] = v if isinstance(v, bool) else str(v).lower() in _TRUE
    return out


_TRUE = ("true", "1", "yes", "y", "on")


# Counts of processes, ranks and adapter slots past which no deployment is real (assumed; the
# largest published run tensor-parallel 16, data-parallel a few hundred ranks across nodes):
# a typo (`-tp 40000`, a KServe workerSpec of 10**12) would be sized as that many worker
# processes, petabytes. Past the bound the value is out of range, said, and sized as if the flag
# were not set (vLLM's parser takes such a value: said so, never that vLLM uses its default).
MAX_RANKS = 1024
COUNT_MAX: dict[str, int] = {
    "tensor_parallel_size": MAX_RANKS,
    "pipeline_parallel_size": MAX_RANKS,
    "data_parallel_size": MAX_RANKS,
    "data_parallel_size_local": MAX_RANKS,
    "api_server_count": MAX_RANKS,
    "max_loras": MAX_RANKS,
    "max_cpu_loras": 64 * MAX_RANKS,
    "max_lora_rank": 512,  # vLLM's largest allowed rank (LoRAConfig possible_max_ranks)
}


# `--max-model-len auto` / -1: from vLLM 0.14 the length derived from the model's config, then
# fitted to the memory left after the weights (0.14.0:vllm/config/model.py:175 `ge=-1`;
# 0.33.0:vllm/utils/argparse_utils.py:77-95 `if value == "-1" or value.lower() == "auto"`);
# a validation error before (0.13.0:model.py:167 `gt=0`).
AUTO_MODEL_LEN_FROM = (0, 14)


def _auto_model_len(raw: str, flag: str, version: VllmVersion | None) -> Diagnostic | None:
    """The diagnostic for `auto` / -1 as max_model_len (None: not that spelling)."""
    if raw.strip().lower() not in ("auto", "-1"):
        return None
    if version is not None and not version.at_least(*AUTO_MODEL_LEN_FROM):
        return Diagnostic(
            "error",
            f"`auto` / -1 is accepted from vLLM 0.14; vLLM {version} rejects it at startup",
            flag,
            raw,
        )
    return Diagnostic(
        "info",
        "auto: vLLM derives the length from the model's config and fits it to the memory left "
        "after the weights (0.14+); sized at the derived length, an upper bound",
        flag,
        raw,
    )


class OutOfRange(ValueError):
    """A value vLLM's parser takes that this reader does not size: past a bound no deployment
    reaches (COUNT_MAX, MAX_TOKENS) or below what a count can be. `startup`: vLLM's
    configuration check rejects it when the server starts (the source cited in the message)."""

    def __init__(self, message: str, startup: bool = False) -> None:
        super().__init__(message)
        self.startup = startup


# Values vLLM's parser takes and its configuration check rejects when the server starts (a
# ValueError or pydantic ValidationError out of create_engine_config: status 1, before it
# serves): setting → (rule, the test, first version read to check it, where).
STARTUP_RULES: dict[str, list[tuple[str, Callable[[float], bool], tuple[int, ...], str]]] = {
    "gpu_memory_utilization": [
        (
            "must be at most 1",
            lambda v: v > 1,
            (0, 6),
            "0.6.0:vllm/config.py:639, 0.11.0:vllm/config/cache.py:168; Field(gt=0, le=1) "
            "0.11.1:vllm/config/cache.py:50, 0.33.0:vllm/config/cache.py:215",
        ),
        (
            "must be above 0",
            lambda v: not v > 0,
            (0, 11, 1),
            "Field(gt=0, le=1) 0.11.1:vllm/config/cache.py:50, 0.33.0:vllm/config/cache.py:215",
        ),
    ],
    "cpu_offload_gb": [
        (
            "must be at least 0",
            lambda v: not v >= 0,
            (0, 8, 5),
            "0.8.5:vllm/config.py:1390, 0.11.0:vllm/config/cache.py:164; Field(ge=0) "
            "0.11.1:vllm/config/cache.py:84, 0.33.0:vllm/config/offload.py:23",
        )
    ],
    "max_loras": [
        (
            "must be at least 1",
            lambda v: v < 1,
            (0, 6),
            "0.6.0:vllm/config.py:1521; Field(ge=1) 0.11.1:vllm/config/lora.py:37, "
            "0.33.0:vllm/config/lora.py:36",
        )
    ],
    "max_num_seqs": [
        (
            "must be at least 1",
            lambda v: v < 1,
            (0, 11, 1),
            "Field(ge=1) 0.11.1:vllm/config/scheduler.py:44, 0.33.0:vllm/config/scheduler.py:62",
        )
    ],
    "max_num_batched_tokens": [
        (
            "must be at least 1",
            lambda v: v < 1,
            (0, 11, 1),
            "Field(ge=1) 0.11.1:vllm/config/scheduler.py:37, 0.33.0:vllm/config/scheduler.py:48",
        )
    ],
    **{
        key: [
            (
                "must be at least 1",
                lambda v: v < 1,
                (0, 23),
                f"Field(ge=1) 0.23.0:vllm/config/parallel.py:{line}, "
                f"0.33.0:vllm/config/parallel.py:{line33}",
            )
        ]
        for key, line, line33 in (
            ("pipeline_parallel_size", 112, 140),
            ("tensor_parallel_size", 114, 142),
            ("data_parallel_size", 118, 147),
        )
    },
}


def _startup_check(target: str | None, value: float, version: VllmVersion | None) -> None:
    """OutOfRange(startup=True) when vLLM's configuration check rejects the value at start-up
    in this version (an unknown version: the newest's rule)."""
    for rule, rejects, since, where in STARTUP_RULES.get(target or "", []):
        if rejects(value) and (version is None or version.at_least(*since)):
            key = (target or "").replace("_", "-")
            raise OutOfRange(
                f"vLLM rejects it when it builds its configuration at start-up ({key} {rule}: "
                f"{where})",
                startup=True,
            )


def _convert(
    kind: Kind,
    raw: str,
    target: str | None = None,
    vt: vf.ValueType | None = None,
    version: VllmVersion | None = None,
) -> Any:
    """The value as vLLM's parser makes it (`vt`: the version's conversion; without one the
    text is read as the kind says), checked against vLLM's start-up rules and this reader's
    bounds. ValueError (OutOfRange for a value vLLM's parser takes) when it is not sized."""
    numeric = kind in ("tokens", "int", "index", "float")
    value: Any
    if numeric and vt is not None and (vt.convert in ("int", "float") or vt.convert[:4] == "hint"):
        try:
            value = vf.convert_value(dataclasses.replace(vt, choices=None), raw)
        except vf.Rejected as exc:  # this version rejects it, another takes it (said): not read
            raise ValueError(str(exc)) from None
        if value is None:
            raise ValueError("None: vLLM's default")
    elif kind == "tokens":
        value = parse_token_count(raw)
    elif kind in ("int", "index"):
        try:
            value = int(raw.strip())
        except ValueError:
            raise ValueError("not an integer") from None
    elif kind == "float":
        try:
            value = float(raw.strip())
        except ValueError:
            raise ValueError("not a number") from None
    else:
        return raw
    _startup_check(target, value, version)
    if kind == "float":
        value = float(value)
        if not (value == value) or value < 0 or value > 1e6:  # NaN, negative, absurd
            raise OutOfRange("out of range")
        return value
    cap = COUNT_MAX.get(target or "", MAX_TOKENS)
    if value > cap:
        raise OutOfRange(
            f"out of range (above {cap}): vLLM's parser takes it, but no deployment runs with "
            "that many"
        )
    if value < (0 if kind == "index" else 1):
        raise OutOfRange("out of range")
    return int(value)


def _out_of_range(exc: ValueError, flag: str, raw: str, where: str = "") -> Diagnostic:
    """The diagnostic for a value `_convert` does not size."""
    if isinstance(exc, OutOfRange) and exc.startup:
        return Diagnostic(
            "error",
            f"{exc}{where}; vLLM exits at start-up: the pod will not start",
            flag,
            raw,
            exits=True,
        )
    return Diagnostic(
        "error",
        f"{exc}{where}; not sized at this value: sized as if the flag were not set",
        flag,
        raw,
    )


def _apply_config_file(
    out: ParsedVllm,
    loaded: dict[str, Any],
    version: VllmVersion | None = None,
    table: vf.OptionTable | None = None,
) -> None:
    """A `--config` YAML: keys like CLI flags (without dashes); the command line wins. vLLM
    turns each key into `--key str(value)` for its parser (0.33.0:vllm/utils/argparse_utils.py:
    569-604), so a value its parser rejects stops it as on the command line."""
    for k, v in loaded.items():
        key = str(k).replace("_", "-")
        spec = FLAGS.get(key)
        if not spec or not spec[0]:
            continue
        target, kind = spec
        assert target is not None  # checked above (flags without a target were skipped)
        if target == "kv_transfer_config":
            if out.kv_transfer_json is None:
                obj = v if isinstance(v, dict) else _json_value(str(v), None, out.diagnostics, key)
                if isinstance(obj, dict):
                    out.kv_transfer_json = obj
            continue
        if target in out.values:
            continue
        auto = _auto_model_len(str(v), "--" + key, version) if target == "max_model_len" else None
        if auto is not None:
            out.diagnostics.append(
                dataclasses.replace(auto, message=auto.message + " (in --config)")
            )
            continue
        value: Any
        vt = table.types.get("--" + key) if table is not None and kind != "bool" else None
        if vt is not None and vt.choices is not None and target not in CHECKED_CHOICES:
            vt = dataclasses.replace(vt, choices=None)
        if vt is not None:
            try:
                vf.convert_value(vt, str(v))
            except vf.Rejected as exc:
                out.diagnostics.append(
                    Diagnostic(
                        "error",
                        f"vLLM {table.version if table else ''} rejects it (in --config): "
                        f"{_rejected_text('--' + key, exc)}; {PARSER_EXIT}",
                        "--" + key,
                        str(v),
                        exits=True,
                    )
                )
                continue
            if vt.optional and str(v) in ("", "None"):
                continue
        try:
            if kind == "bool":
                value = v if isinstance(v, bool) else _bool_text(str(v))
            else:
                value = _convert(kind, str(v), target, vt, version)
        except ValueError as exc:
            out.diagnostics.append(_out_of_range(exc, "--" + key, str(v), " (in --config)"))
            continue
        if target == "model":
            out.config_model = value
        else:
            out.values[target] = value


# KAITO's vLLM runtime: `python3 /workspace/vllm/inference_api.py` parses vLLM's api_server
# flags after its own `--kaito-*` ones (kaito-project/kaito@056b8280b1a8debf644bc6f4399e913a1f9c7e70:
# presets/workspace/inference/vllm/inference_api.py:64-154; the command pkg/model/interface.go:394-483)
KAITO_ENTRYPOINT = "/workspace/vllm/inference_api.py"
KAITO_VALUE_FLAGS = {
    "--kaito-adapters-dir",
    "--kaito-config-file",
    "--kaito-max-probe-steps",
    "--kaito-kv-cache-cpu-memory-utilization",
}


def is_kaito_entrypoint(tok: str) -> bool:
    return str(tok).endswith(KAITO_ENTRYPOINT)


def _without_wrapper_flags(
    flags: list[str], owns: Callable[[str], bool], takes_value: Callable[[str], bool]
) -> list[str]:
    """The flags left for vLLM's parser once a wrapper's parser has consumed its own (`owns`),
    with the next word as the value of those that take one (`--flag value`, not `--flag=v`)."""
    out: list[str] = []
    skip = False
    for tok in flags:
        if skip:
            skip = False
            continue
        key, eq, _ = str(tok).partition("=")
        if owns(key):
            skip = takes_value(key) and not eq
            continue
        out.append(str(tok))
    return out


def without_kaito_flags(flags: list[str]) -> list[str]:
    """vLLM's flags of a KAITO command line: KAITO's own `--kaito-*` flags (and their values)
    are consumed by its parser before vLLM's."""
    return _without_wrapper_flags(
        flags, lambda k: k.startswith("--kaito-"), lambda k: k in KAITO_VALUE_FLAGS
    )


def without_run_batch_flags(flags: list[str]) -> list[str]:
    """The engine's flags of a batch-runner command line: the runner's own (-i/-o, metrics)
    and their values are its parser's, not the engine's."""
    return _without_wrapper_flags(
        flags,
        lambda k: k in RUN_BATCH_VALUE_FLAGS or k in RUN_BATCH_VALUELESS_FLAGS,
        lambda k: k in RUN_BATCH_VALUE_FLAGS,
    )


def find_invocation(argv: list[str]) -> tuple[list[str], bool] | None:
    """Locate a vLLM invocation in an argv: returns (flags after it, model is positional)."""
    for idx, tok in enumerate(argv):
        if is_kaito_entrypoint(tok):
            return without_kaito_flags([str(a) for a in argv[idx + 1 :]]), False
        base = str(tok).rsplit("/", 1)[-1]
        if base == "vllm" and idx + 1 < len(argv) and argv[idx + 1] == "serve":
            return [str(a) for a in argv[idx + 2 :]], True
        if base == "vllm" and idx + 1 < len(argv) and argv[idx + 1] == RUN_BATCH_SUBCOMMAND:
            return without_run_batch_flags([str(a) for a in argv[idx + 2 :]]), False
        if tok == "-m" and idx + 1 < len(argv) and argv[idx + 1] == RUN_BATCH_MODULE:
            return without_run_batch_flags([str(a) for a in argv[idx + 2 :]]), False
        if (
            tok == "-m"
            and idx + 2 < len(argv)
            and argv[idx + 1] in CLI_MODULES
            and argv[idx + 2] == RUN_BATCH_SUBCOMMAND
        ):
            return without_run_batch_flags([str(a) for a in argv[idx + 3 :]]), False
        if tok == "-m" and idx + 1 < len(argv) and argv[idx + 1] in API_SERVER_MODULES:
            return [str(a) for a in argv[idx + 2 :]], False
        if str(tok).startswith("-m") and tok[2:] in API_SERVER_MODULES:
            return [str(a) for a in argv[idx + 1 :]], False
        if (
            tok == "-m"
            and idx + 2 < len(argv)
            and argv[idx + 1] in CLI_MODULES
            and argv[idx + 2] == "serve"
        ):
            return [str(a) for a in argv[idx + 3 :]], True
    return None


# From 0.11.1 the engine evaluates every vLLM variable once at start-up on any device
# (enable_envs_cache: 0.11.1:vllm/v1/engine/core.py:652, 0.33.0:vllm/envs.py:2310-2328 called
# from 0.33.0:vllm/v1/engine/core.py:248): a variable vLLM converts with int() stops it when set
# to anything else. Before, VLLM_CPU_KVCACHE_SPACE was read by the CPU backend only.
ENVS_READ_AT_START = (0, 11, 1)


def env_settings(
    env: dict[str, str], device: str | None = None, version: VllmVersion | None = None
) -> tuple[dict[str, Any], list[Diagnostic]]:
    """Settings from literal environment values (VLLM_CPU_KVCACHE_SPACE, VLLM_TARGET_DEVICE).
    `device` / `version`: the container's, when known (they say whether vLLM reads a bad
    VLLM_CPU_KVCACHE_SPACE and so stops on it)."""
    values: dict[str, Any] = {}
    diags: list[Diagnostic] = []
    raw = env.get("VLLM_CPU_KVCACHE_SPACE")
    if raw is not None:
        # vLLM reads it with int() whenever it is set, "" included (0.8.5:vllm/envs.py:363-364,
        # 0.11.0:vllm/envs.py:628-630, 0.33.0:vllm/envs.py:896-900)
        try:
            gib: int | None = int(raw)
        except ValueError:
            gib = None
        if gib is None and raw.strip() == "":
            diags.append(
                Diagnostic(
                    "warning",
                    "set but empty: vLLM reads it with int(), and int('') raises ValueError when "
                    "it does (the CPU backend; every device from 0.11.1, when the engine reads "
                    "all its variables at start-up): remove it or set a whole number of GiB",
                    "VLLM_CPU_KVCACHE_SPACE",
                    raw,
                )
            )
        elif gib is None:
            text = f"ValueError: invalid literal for int() with base 10: {raw!r}"
            read = device == "cpu" or (
                version is not None and version.at_least(*ENVS_READ_AT_START)
            )
            diags.append(
                Diagnostic(
                    "error" if read else "warning",
                    f"not a whole number of GiB: vLLM reads it with int() (vllm/envs.py): {text}; "
                    + (
                        "vLLM exits at start-up: the pod will not start"
                        if read
                        else "the CPU backend, and every device from vLLM 0.11.1, exits on it "
                        "at start-up"
                    ),
                    "VLLM_CPU_KVCACHE_SPACE",
                    raw,
                    exits=read,
                )
            )
        elif 0 <= gib <= 1e6:
            values["cpu_kvcache_space_gib"] = float(gib)
        else:
            diags.append(
                Diagnostic(
                    "error",
                    "out of range: not sized at this value, sized as if it were not set",
                    "VLLM_CPU_KVCACHE_SPACE",
                    raw,
                )
            )
    if env.get("VLLM_TARGET_DEVICE", "").lower() == "cpu":
        values["device"] = "cpu"
    # VLLM_USE_SIMPLE_KV_OFFLOAD: bool(int(value)) (0.19.0:vllm/envs.py:1666-1668); a value that
    # is not an integer raises when vLLM reads it
    raw = env.get("VLLM_USE_SIMPLE_KV_OFFLOAD")
    if raw is not None and raw.strip() != "":
        try:
            values["simple_kv_offload"] = bool(int(raw))
        except ValueError:
            diags.append(
                Diagnostic(
                    "error",
                    "not an integer: vLLM raises ValueError when it reads it",
                    "VLLM_USE_SIMPLE_KV_OFFLOAD",
                    raw,
                )
            )
    # LMCache reads LMCACHE_<FIELD> (get_env_name, lmcache 0.5.6 v1/config.py:1002-1003):
    # max_local_cpu_size as float GiB per worker (:96, × 1024**3 in
    # v1/storage_backend/local_cpu_backend.py:403), local_cpu by _to_bool ("true"/"1")
    # (v1/config_base.py:128-134).
    raw = env.get("LMCACHE_MAX_LOCAL_CPU_SIZE")
    if raw is not None and raw.strip() != "":
        try:
            gb = float(raw)
            if not 0 <= gb <= 1e6:
                raise ValueError
            values["lmcache_local_cpu_gb"] = gb
        except ValueError:
            diags.append(
                Diagnostic(
                    "error",
                    "not a number of GB; LMCache's default used instead",
                    "LMCACHE_MAX_LOCAL_CPU_SIZE",
                    raw,
                )
            )
    raw = env.get("LMCACHE_LOCAL_CPU")
    if raw is not None:
        values["lmcache_local_cpu"] = raw.strip().lower() in ("true", "1")
    if env.get("LMCACHE_CONFIG_FILE"):
        diags.append(
            Diagnostic(
                "info",
                "LMCache reads its settings from this file first (LMCACHE_* variables "
                "override it); the file is not read here: LMCache's defaults apply to what the "
                "variables and --kv-transfer-config do not set",
                "LMCACHE_CONFIG_FILE",
                env["LMCACHE_CONFIG_FILE"][:200],
            )
        )
    return values, diags
