"""One home for the `vllm-sizer.io` names: vllm_sizer/workloads/api_names.py. A string literal
holding the group anywhere else in the package (docstrings aside: they are prose) fails here,
so a key cannot be spelled twice and drift."""

from __future__ import annotations

import ast
from pathlib import Path

from vllm_sizer.workloads import api_names

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "vllm_sizer"
HOME = PACKAGE / "workloads" / "api_names.py"


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def literals_naming_the_group(source: str, filename: str = "<string>") -> list[tuple[int, str]]:
    tree = ast.parse(source, filename)
    docs = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and api_names.GROUP in node.value
        and id(node) not in docs
    ]


def test_no_vllm_sizer_io_literal_outside_api_names():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != HOME
        for line, value in literals_naming_the_group(path.read_text(), str(path))
    ]
    assert not found, "import these from vllm_sizer.workloads.api_names:\n" + "\n".join(found)


def test_the_check_sees_keys_in_code_and_f_strings_but_not_in_docstrings():
    source = '''"""Writes vllm-sizer.io/estimate."""
KEY = "vllm-sizer.io/estimate"
def f(x):
    """Reads vllm-sizer.io/mode."""
    return f"{x} vllm-sizer.io/mode"
'''
    assert [line for line, _ in literals_naming_the_group(source)] == [2, 5]


def test_every_name_is_under_the_group_and_none_is_spelled_twice():
    names = {k: v for k, v in vars(api_names).items() if k.isupper() and isinstance(v, str)}
    assert all(api_names.GROUP in v for v in names.values())
    assert len(set(names.values())) == len(names), "two names for one key"
