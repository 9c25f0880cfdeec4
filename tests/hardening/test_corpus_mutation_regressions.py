"""One test per failure class the corpus mutation fuzzer (corpus_mutants.py,
scripts/fuzz_corpus.py) found, each minimised from a mutant of a published manifest."""

from __future__ import annotations

import contextlib
import io

import pytest
import yaml

from vllm_sizer.cli.main import main
from vllm_sizer.policy.review import review_object

from .hostile_objects import IMG, deployment


def run_check(tmp_path, docs, output="text"):
    f = tmp_path / "in.yaml"
    f.write_text(yaml.safe_dump_all(docs, allow_unicode=True), encoding="utf-8")
    out_b, err_b = io.BytesIO(), io.BytesIO()
    # a real terminal's streams: UTF-8, strict (a lone surrogate cannot be written)
    out = io.TextIOWrapper(out_b, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(err_b, encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["check", "-o", output, str(f)])
    return rc, out_b.getvalue().decode(), err_b.getvalue().decode()


def vllm(**meta):
    obj = deployment({"image": IMG, "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
                      "resources": {"limits": {"memory": "64Gi"}}})
    obj["metadata"].update(meta)
    return obj


# ---- class: the object's identity (kind, namespace, name) of another type than a string, or
# with control characters, reached `check`'s text output as is (a float namespace crashed it:
# "unsupported operand type(s) for +: 'float' and 'str'"; a BOM in the kind was printed raw)


@pytest.mark.parametrize("output", ["text", "json", "yaml"])
@pytest.mark.parametrize("meta", [{"namespace": 1e308}, {"namespace": ["a"]}, {"name": 5},
                                  {"name": {"a": 1}}, {"namespace": "a\x1b[31m"},
                                  {"name": "x\u202e"}])
def test_check_renders_any_identity(tmp_path, meta, output):
    rc, out, err = run_check(tmp_path, [vllm(**meta)], output)
    assert rc in (0, 1) and "internal error" not in err, err
    assert all(line.isprintable() for line in (out + err).splitlines()), out + err


def test_check_escapes_a_kind_with_a_control_character(tmp_path):
    obj = {"apiVersion": "kubeai.org/v1", "kind": "M\ufeffodel", "metadata": {"name": "m"}}
    rc, out, err = run_check(tmp_path, [obj])
    assert rc == 0 and all(line.isprintable() for line in out.splitlines()), out


def test_the_decision_names_only_string_identities():
    d = review_object(vllm(namespace=1e308, name=["x"] * 3))
    assert d.namespace is None and d.name == "" and d.containers
