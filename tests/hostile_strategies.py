"""Hypothesis generators of hostile inputs (shared by tests/hardening and tests/workloads) and
the profiles that bound their cost: `ci` (the default under CI=true: few examples, a per-example
deadline, so a suite takes seconds), `dev` (the default otherwise) and `long` (a deeper search:
VLLM_SIZER_HYPOTHESIS_PROFILE=long)."""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

_COMMON = dict(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
               derandomize=True)
settings.register_profile("ci", max_examples=25, deadline=timedelta(seconds=10), **_COMMON)
settings.register_profile("dev", max_examples=60, deadline=timedelta(seconds=10), **_COMMON)
settings.register_profile("long", max_examples=2000, deadline=timedelta(seconds=10), **_COMMON)
PROFILE = os.environ.get("VLLM_SIZER_HYPOTHESIS_PROFILE") or (
    "ci" if os.environ.get("CI") else "dev")
HOSTILE = settings(settings.get_profile(PROFILE))

NAMES = st.sampled_from(["X", "Y", "A_1", "MODEL", "ARGS"])


@st.composite
def doubling_script(draw):
    """`sh -c` scripts whose variables grow geometrically (doubling, tripling, exports, ${:-})."""
    var = draw(NAMES)
    lines = [f"{var}={draw(st.sampled_from(['a', 'ab ', '--x=1 ']))}"]
    for _ in range(draw(st.integers(10, 60))):
        form = draw(st.sampled_from([
            '{v}="${v}${v}"', 'export {v}="${v}${v}${v}"', '{v}="${{{v}:-x}}${{{v}}}"',
            'B="${v}"; {v}="$B$B"', '{v}=$(echo){v}${v}${v}']))
        lines.append(form.format(v=var))
    tail = draw(st.sampled_from([
        f"vllm serve Qwen/Qwen3-0.6B --max-model-len ${var}",
        f"exec vllm serve Qwen/Qwen3-0.6B ${var}",
        f"cat > /c.yaml <<EOF\nmax-model-len: ${var}\nEOF\nvllm serve Qwen/Qwen3-0.6B --config /c.yaml",
        f'sh -c "vllm serve Qwen/Qwen3-0.6B ${var}"']))
    return "\n".join(lines + [tail])


@st.composite
def kube_env_chain(draw):
    """env entries where each $(E_i) references the previous ones several times."""
    n = draw(st.integers(20, 45))
    fan = draw(st.integers(2, 3))
    env = [{"name": "E0", "value": draw(st.sampled_from(["a", "1", "--x "]))}]
    for i in range(1, n):
        env.append({"name": f"E{i}", "value": "".join(f"$(E{i - 1})" for _ in range(fan))})
    return env, f"$(E{n - 1})"


@st.composite
def yaml_bomb(draw):
    """Alias bombs: fan-out × levels, optionally under a vLLM flag key, as flow or block YAML."""
    fan = draw(st.integers(4, 12))
    levels = draw(st.integers(4, 9))
    text = "a0: &a0 [" + ",".join(['"x"'] * fan) + "]\n"
    for i in range(1, levels):
        text += f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * fan) + "]\n"
    key = draw(st.sampled_from(["max-model-len", "lora-modules", "other", "a-last"]))
    return text + f"{key}: *a{levels - 1}\n"


WRAPPERS = [["env"], ["env", "A=1"], ["exec"], ["tini", "--"], ["tini", "-g", "--"],
            ["dumb-init", "--"], ["nice", "-n", "5"], ["nohup"], ["timeout", "3600"],
            ["numactl", "--cpunodebind=0"], ["taskset", "-c", "0-3"], ["uv", "run"],
            ["uv", "run", "--with", "vllm"], ["conda", "run", "-n", "x"], ["stdbuf", "-oL"]]
MENTIONERS = [["docker", "run", "img"], ["kubectl", "exec", "p", "--"], ["ssh", "host"],
              ["echo"], ["grep"], ["python3", "deploy.py"], ["nsenter", "-t", "1", "--"],
              ["podman", "exec", "c"]]
INVOCATIONS = [["vllm", "serve", "Qwen/Qwen3-0.6B"],
               ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen3-0.6B"],
               ["python", "-m", "vllm.entrypoints.cli.main", "serve", "Qwen/Qwen3-0.6B"]]


@st.composite
def command_chain(draw):
    """(argv, executed): wrapper chains that exec vLLM, possibly behind a program that only
    mentions it (then vLLM is not executed here)."""
    chain: list[str] = []
    for w in draw(st.lists(st.sampled_from(WRAPPERS), max_size=3)):
        chain += w
    mention = draw(st.one_of(st.none(), st.sampled_from(MENTIONERS)))
    if mention is not None:
        insert = draw(st.integers(0, 1))
        chain = chain + mention if insert else mention + chain
    return chain + draw(st.sampled_from(INVOCATIONS)), mention is None


NAMESPACES = st.sampled_from(["team-a", "team-b", "aaa", "zzz", "vllm-sizer", ""])
