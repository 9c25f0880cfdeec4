"""Which program an argv executes: the argv[0] chain through wrappers.

A vLLM invocation is an executed command, not a mention: `docker run IMG vllm serve`,
`kubectl exec POD -- vllm serve` and `ssh host vllm serve` run docker, kubectl and ssh in this
container (vLLM runs elsewhere, if at all), so they are not vLLM containers. `executed(argv)`
strips the wrappers that exec their argument in the same container (env, exec, tini,
dumb-init, nice, nohup, timeout, taskset, numactl, stdbuf, chrt, ionice, time, gosu, su-exec,
setpriv, sudo, catatonit, uv run / uvx, conda / mamba / micromamba run, poetry / pipenv / pdm /
hatch / rye run, ...) and returns the argv of the program that really runs; `executes_vllm` says
whether that program is vLLM's server (`vllm serve`, `python -m vllm.entrypoints...`,
`python -m huggingfaceserver`); `executes_shell` whether it is a shell.

Option tables are from each tool's --help / man page (coreutils env, nice, nohup, timeout,
stdbuf; util-linux taskset, chrt, ionice, setpriv; numactl(8); tini and dumb-init README; uv
run --help; conda run --help); options not listed are taken as flags without a value.
"""

from __future__ import annotations

import os
import re

from .vllm_args import (
    API_SERVER_MODULES,
    CLI_MODULES,
    RUN_BATCH_MODULE,
    RUN_BATCH_SUBCOMMAND,
    is_kaito_entrypoint,
)

HF_SERVER_MODULE = "huggingfaceserver"
SHELLS = {"sh", "bash", "dash", "ash", "zsh", "ksh"}
_PYTHON_RE = re.compile(r"^python(\d+(\.\d+)?)?$")
_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_MAX_HOPS = 16

# wrapper → (options taking a value, positional arguments before the command)
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), 0),
    "exec": (frozenset({"-a"}), 0),
    "tini": (frozenset({"-p", "-e"}), 0),
    "tini-static": (frozenset({"-p", "-e"}), 0),
    "dumb-init": (frozenset({"-r", "--rewrite"}), 0),
    "catatonit": (frozenset(), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "nohup": (frozenset(), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "chrt": (frozenset({"-T", "-P", "-D"}), 1),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata"}), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "numactl": (
        frozenset(
            {
                "-N",
                "-m",
                "-C",
                "-i",
                "-p",
                "-P",
                "-w",
                "-b",
                "--cpunodebind",
                "--membind",
                "--physcpubind",
                "--interleave",
                "--preferred",
            }
        ),
        0,
    ),
    "gosu": (frozenset(), 1),
    "su-exec": (frozenset(), 1),
    "setpriv": (
        frozenset(
            {
                "--reuid",
                "--regid",
                "--groups",
                "--inh-caps",
                "--ambient-caps",
                "--bounding-set",
                "--securebits",
                "--selinux-label",
                "--apparmor-profile",
            }
        ),
        0,
    ),
    "sudo": (
        frozenset({"-u", "--user", "-g", "--group", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}),
        0,
    ),
    "uvx": (
        frozenset(
            {
                "--from",
                "--with",
                "--python",
                "-p",
                "--index",
                "--index-url",
                "--with-requirements",
                "--with-editable",
            }
        ),
        0,
    ),
    "pipx": (frozenset({"--spec", "--python", "--pip-args"}), 0),  # after `pipx run`
}
# `X run ...` launchers: X → options taking a value
_RUNNERS: dict[str, frozenset[str]] = {
    "uv": frozenset(
        {
            "--with",
            "--with-requirements",
            "--with-editable",
            "--python",
            "-p",
            "--project",
            "--directory",
            "--env-file",
            "--extra",
            "--group",
            "--package",
            "--index",
            "--index-url",
            "--extra-index-url",
            "--from",
            "--only-group",
            "--no-group",
            "--config-file",
            "--cache-dir",
        }
    ),
    "conda": frozenset({"-n", "--name", "-p", "--prefix", "--cwd"}),
    "mamba": frozenset({"-n", "--name", "-p", "--prefix", "--cwd"}),
    "micromamba": frozenset({"-n", "--name", "-p", "--prefix", "--cwd", "-r", "--root-prefix"}),
    "poetry": frozenset({"-C", "--directory", "-P", "--project"}),
    "pipenv": frozenset(),
    "pdm": frozenset({"-p", "--project"}),
    "hatch": frozenset({"-e", "--env"}),
    "rye": frozenset(),
    "pipx": frozenset({"--spec", "--python", "--pip-args"}),
}
# python interpreter options that take a value
_PYTHON_VALUE_OPTS = {"-W", "-X", "--check-hash-based-pycs"}


def _base(tok: str) -> str:
    return os.path.basename(str(tok))


def _skip_options(argv: list[str], i: int, takes_value: frozenset[str]) -> int:
    """Index of the first non-option word from i (after `--` when present)."""
    while i < len(argv):
        tok = str(argv[i])
        if tok == "--":
            return i + 1
        if not tok.startswith("-") or tok == "-":
            return i
        name = tok.split("=", 1)[0]
        i += 1
        if "=" not in tok and name in takes_value:
            i += 1
    return i


def executed(argv: list[str]) -> list[str]:
    """The argv of the program that runs, after the wrapper chain; [] when none is left."""
    argv = [str(a) for a in argv]
    i = 0
    for _ in range(_MAX_HOPS):
        if i >= len(argv):
            return []
        prog = _base(argv[i])
        if _ASSIGN_RE.match(argv[i]):  # `A=1 vllm serve` (a shell prefix assignment)
            i += 1
            continue
        if prog in _WRAPPERS:
            takes, positional = _WRAPPERS[prog]
            j = _skip_options(argv, i + 1, takes)
            if prog == "env":
                while j < len(argv) and _ASSIGN_RE.match(argv[j]):
                    j += 1
            i = j + positional
            continue
        if prog == "taskset":  # taskset [-c] MASK|LIST command
            j = i + 1
            while j < len(argv) and argv[j].startswith("-"):
                j += 1
            i = j + 1
            continue
        if prog in _RUNNERS and i + 1 < len(argv) and argv[i + 1] == "run":
            j = _skip_options(argv, i + 2, _RUNNERS[prog])
            i = j
            continue
        if prog in ("uv", "pipx") and argv[i + 1 : i + 3] == ["tool", "run"]:
            i = _skip_options(argv, i + 3, _WRAPPERS["uvx"][0])
            continue
        return argv[i:]
    return []


def _python_module(head: list[str]) -> tuple[str, int] | None:
    """(module, index after it) for `python [opts] -m module ...`."""
    i = 1
    while i < len(head):
        tok = head[i]
        if tok == "-m":
            return (head[i + 1], i + 2) if i + 1 < len(head) else None
        if tok.startswith("-m") and len(tok) > 2:
            return tok[2:], i + 1
        if not tok.startswith("-") or tok == "-" or tok == "-c":
            return None  # a script, stdin or -c code runs, not a module
        i += 2 if tok in _PYTHON_VALUE_OPTS else 1
    return None


# vLLM's server modules by the file that holds them: `python3 <site-packages>/vllm/entrypoints/
# openai/api_server.py` runs the module's file as a script (its `__main__` block parses the
# same flags as `-m vllm.entrypoints.openai.api_server`)
API_SERVER_FILES = {
    "vllm/entrypoints/openai/api_server.py": "vllm.entrypoints.openai.api_server",
    "vllm/entrypoints/api_server.py": "vllm.entrypoints.api_server",
}


def as_api_server_module(argv: list[str], copy: str | None = None) -> list[str] | None:
    """`python [opts] SCRIPT ARGS` where SCRIPT is one of vLLM's server module files (by its
    path under vllm/entrypoints/) or `copy`, the path where the image keeps a copy of vLLM's
    OpenAI api_server.py: the same argv with `-m <module>` in place of the script (wrappers in
    front kept); None for anything else."""
    argv = [str(a) for a in argv]
    head = executed(argv)
    if not head or not _PYTHON_RE.match(_base(head[0])):
        return None
    i = 1
    while i < len(head) and head[i].startswith("-") and head[i] != "-":
        if head[i] == "-c" or head[i].startswith("-m"):
            return None  # code or a module runs, not a script file
        i += 2 if head[i] in _PYTHON_VALUE_OPTS else 1
    if i >= len(head):
        return None
    script = os.path.normpath(head[i])
    module = next(
        (
            mod
            for path, mod in API_SERVER_FILES.items()
            if script == path or script.endswith("/" + path)
        ),
        None,
    )
    if module is None and copy is not None and script == os.path.normpath(copy):
        module = "vllm.entrypoints.openai.api_server"
    if module is None:
        return None
    start = len(argv) - len(head)
    return [*argv[:start], *head[:i], "-m", module, *head[i + 1 :]]


def executes_vllm(argv: list[str]) -> bool:
    """Whether argv executes vLLM's server (or KServe's Hugging Face server) in this container."""
    head = executed(argv)
    if not head:
        return False
    prog = _base(head[0])
    if prog == "vllm":
        return len(head) > 1 and head[1] in ("serve", RUN_BATCH_SUBCOMMAND)
    if prog == HF_SERVER_MODULE:
        return True
    if _PYTHON_RE.match(prog):
        script = next((t for t in head[1:] if not t.startswith("-")), "")
        if is_kaito_entrypoint(script):
            return True  # KAITO's vLLM server script (vllm_args.KAITO_ENTRYPOINT)
        mod = _python_module(head)
        if mod is None:
            return False
        module, after = mod
        if module in API_SERVER_MODULES or module in (HF_SERVER_MODULE, RUN_BATCH_MODULE):
            return True
        return (
            module in CLI_MODULES
            and after < len(head)
            and head[after] in ("serve", RUN_BATCH_SUBCOMMAND)
        )
    return False


def executes_shell(argv: list[str]) -> int | None:
    """Index in argv of the shell that the wrapper chain executes, else None."""
    head = executed(argv)
    if not head or _base(head[0]) not in SHELLS:
        return None
    return len(argv) - len(head)
