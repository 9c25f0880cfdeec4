"""Packaging: the base install is the estimator (pydantic only); `estimate` runs on it, and
commands that need an extra say which, instead of a traceback."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]
# everything beyond pydantic that the extras bring
EXTRAS_ONLY = ["yaml", "jsonpatch", "kopf", "kubernetes", "aiohttp", "prometheus_client",
               "pydantic_settings", "dotenv",
               "cryptography", "orjson", "matplotlib"]
BLOCKER = f"""
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {EXTRAS_ONLY!r}:
            raise ImportError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Block())
sys.argv = ['vllm-sizer'] + sys.argv[1:]
from vllm_sizer.cli.main import main
sys.exit(main())
"""


def run(*args):
    return subprocess.run([sys.executable, "-c", BLOCKER, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_base_dependencies_are_pydantic_only_and_extras_say_why():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert [d.split(">")[0] for d in meta["dependencies"]] == ["pydantic"]
    extras = meta["optional-dependencies"]
    assert {"cli", "operator", "plot", "test"} <= set(extras)
    text = (ROOT / "pyproject.toml").read_text()
    for group in ("cli", "operator", "test"):
        for dep in extras[group]:
            line = next(l for l in text.splitlines() if f'"{dep}"' in l)
            assert "#" in line, f"{dep}: no one-line reason in pyproject.toml"


def test_estimate_runs_on_the_base_install():
    out = run("estimate", "--device", "cpu", "--", "vllm", "serve", "Qwen/Qwen3-0.6B")
    assert out.returncode == 0, out.stderr
    assert "TOTAL (host memory)" in out.stdout


def test_commands_that_need_an_extra_say_which():
    out = run("check", "examples/")
    assert out.returncode == 2 and "pip install 'vllm-sizer[cli]'" in out.stderr
    assert "Traceback" not in out.stderr
    out = run("run", "--role", "webhook")
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "vllm-sizer[operator]" in out.stderr or "No module named 'kopf'" in out.stderr
