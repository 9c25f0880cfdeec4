import pytest

from vllm_sizer.workloads.expand import kube_expand, pointer
from vllm_sizer.workloads.quantity import format_quantity, parse_quantity


@pytest.mark.parametrize("text,expected", [
    ("1Gi", 2**30), ("1.5Gi", 3 * 2**29), ("512Mi", 512 * 2**20), ("100Ki", 102400),
    ("2Ti", 2 * 2**40), ("1k", 1000), ("500M", 500_000_000), ("16G", 16 * 10**9),
    ("1e3", 1000), ("1E9", 10**9), ("12e-1", 2), ("100m", 1), ("0.5", 1), ("0", 0),
    ("123", 123), (" 64Gi ", 64 * 2**30), ("1E", 10**18), (".5Ki", 512), (4096, 4096),
])
def test_parse_quantity(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("bad", ["", "Gi", "1 Gi", "1GB", "1gi", "-1Gi", "1e99999", "abc", "1.2.3",
                                 None, True, [], -5, float("nan")])
def test_parse_quantity_rejects(bad):
    with pytest.raises(ValueError):
        parse_quantity(bad)


@pytest.mark.parametrize("n,text", [(2**31, "2Gi"), (3 * 2**20, "3Mi"), (1536 * 2**20, "1536Mi"),
                                    (1024, "1Ki"), (1000, "1000"), (0, "0")])
def test_format_quantity(n, text):
    assert format_quantity(n) == text
    assert parse_quantity(text) == n


def test_kube_expand_like_the_kubelet():
    env = {"A": "x", "B": "y y"}
    assert kube_expand("$(A)-$(B)", env.get) == ("x-y y", [])
    assert kube_expand("$$(A)", env.get) == ("$(A)", [])  # escaped
    assert kube_expand("$(NOPE)", env.get) == ("$(NOPE)", ["NOPE"])  # stays literal
    assert kube_expand("$A ${A} $", env.get) == ("$A ${A} $", [])  # not kubelet syntax
    assert kube_expand("$(A", env.get) == ("$(A", [])  # unterminated
    assert kube_expand("$$$(A)", env.get) == ("$x", [])
    # kept literally; not a variable reference to report: the shell runs `$(date +%s)` later
    assert kube_expand("$()", env.get) == ("$()", [])
    assert kube_expand("$(date +%s)", env.get) == ("$(date +%s)", [])


def test_json_pointer_escapes():
    assert pointer("spec", "template", "spec", "containers", 0) == "/spec/template/spec/containers/0"
    assert pointer("metadata", "annotations", "vllm-sizer.io/x~y") == \
        "/metadata/annotations/vllm-sizer.io~1x~0y"
