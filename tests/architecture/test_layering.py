"""The layering contract: estimator ← workloads ← policy ← operator / cli, one way only.

- estimator imports nothing else of the project (and stays pydantic-only: test_catalog);
- workloads imports only estimator;
- policy imports estimator and workloads, never operator or cli;
- operator never imports cli.
Imports are read with ast (module-level and inside functions alike)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2]
ALLOWED: dict[str, set[str]] = {
    "estimator": set(),
    "workloads": {"estimator"},
    "policy": {"estimator", "workloads"},
    "operator": {"estimator", "workloads", "policy"},
    "cli": {"estimator", "workloads", "policy", "operator"},
}


def _imported_layers(root: Path, path: Path, package: str, layer: str) -> set[tuple[str, int]]:
    tree = ast.parse(path.read_text(), str(path))
    rel_parts = path.relative_to(root / package).with_suffix("").parts
    out = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(rel_parts[:-1])[: len(rel_parts) - node.level]
                # `from .. import x` at the package's top: the names are the layers
                mod = ".".join([package, *base, *(node.module.split(".") if node.module else [])])
                targets = [mod] if node.module else [f"{mod}.{a.name}" for a in node.names]
            elif node.module:
                targets = [node.module]
        for t in targets:
            parts = t.split(".")
            if parts[0] == package and len(parts) > 1 and parts[1] in ALLOWED and parts[1] != layer:
                out.add((parts[1], node.lineno))
    return out


def violations(root: Path = ROOT, package: str = "vllm_sizer") -> list[str]:
    found = []
    for layer, allowed in ALLOWED.items():
        for path in sorted((root / package / layer).rglob("*.py")):
            for target, line in _imported_layers(root, path, package, layer):
                if target not in allowed:
                    found.append(f"{path.relative_to(root)}:{line}: {layer} imports {target}")
    return found


def test_the_project_keeps_its_layering():
    assert violations() == []


def test_a_forbidden_import_is_caught(tmp_path):
    pkg = tmp_path / "vllm_sizer"
    for layer in ALLOWED:
        (pkg / layer).mkdir(parents=True)
        (pkg / layer / "__init__.py").write_text("")
    (pkg / "estimator" / "bad.py").write_text("from ..policy import review\n")
    (pkg / "workloads" / "bad.py").write_text("def f():\n    import vllm_sizer.operator.metrics\n")
    (pkg / "policy" / "ok.py").write_text("from ..workloads import reader\nfrom ..estimator import x\n")
    (pkg / "policy" / "bad.py").write_text("from vllm_sizer.cli import check\n")
    found = violations(tmp_path)
    assert len(found) == 3, found
    assert any("estimator imports policy" in f for f in found)
    assert any("workloads imports operator" in f for f in found)
    assert any("policy imports cli" in f for f in found)


# estimator, workloads and policy run on the base install (pydantic only); pydantic-settings
# (and its python-dotenv) come with the operator extra, for OperatorSettings alone.
BASE_LAYERS = ("estimator", "workloads", "policy")
EXTRA_ONLY = ("pydantic_settings", "dotenv")


def test_the_base_layers_never_import_pydantic_settings():
    found = []
    for layer in BASE_LAYERS:
        for path in sorted((ROOT / "vllm_sizer" / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module] if isinstance(node, ast.ImportFrom) and node.module
                         and not node.level else [])
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                          if n.split(".")[0] in EXTRA_ONLY]
    assert found == []


def test_importing_the_base_layers_loads_no_pydantic_settings():
    import subprocess
    import sys

    code = ("import sys, vllm_sizer.estimator, vllm_sizer.workloads.reader, vllm_sizer.policy.review, "
            "vllm_sizer.policy.settings; print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('pydantic_settings', 'dotenv')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "[]"
