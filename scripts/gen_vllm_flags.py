#!/usr/bin/env python3
"""Build vllm_sizer/workloads/data/vllm_flags.json: every option string the parsers of
`vllm serve` and `python -m vllm.entrypoints.openai.api_server` register, per vLLM version.

Source of each list: the vLLM wheel of that version on PyPI (`pip download --no-deps
vllm==X`), its Python sources unpacked (`unzip WHEEL 'vllm/*.py' -d SRC/X`). Each version's
parser is not re-implemented: the version's own CLI entry point builds it
(vllm/scripts.py:main for 0.6.x, vllm/entrypoints/cli/main.py:main after it; the `__main__`
block of vllm/entrypoints/openai/api_server.py for the module), with FlexibleArgumentParser's
`parse_args` replaced by a function that captures the parser instead of parsing. Third-party
modules that are not installed (torch, transformers, triton, fastapi, ...) are replaced by
permissive stubs: the parsers are plain argparse calls over vLLM's config dataclasses, so the
stubs only change defaults and help texts, never option strings or argument counts. Defaults
vLLM computes in default factories are not needed and their errors are swallowed.

The option table of a parser is read from argparse itself (`_option_string_actions`): for each
option string its dest and how many arguments it takes: "v" one value, "?" an optional value,
"+" / "*" a list, "t" / "f" a valueless flag that sets True / False (store_true, store_false,
BooleanOptionalAction's --X / --no-X, vLLM's EnableDisableAction --enable-X / --disable-X),
"c" a valueless constant, "x" help/version (exits).

Usage: gen_vllm_flags.py SRC_ROOT [VERSION ...]   (SRC_ROOT/VERSION/vllm/...; default: all)
Writes the JSON delta-encoded: the first version in full, each later one as additions and
removals against the one before it (vllm_sizer/workloads/vllm_flags.py expands it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

OUT = (
    Path(__file__).resolve().parent.parent / "vllm_sizer" / "workloads" / "data" / "vllm_flags.json"
)

# ---------------------------------------------------------------- the child: one version
# CHILD_SETUP: stubs and the version's parsers (also used by scripts/diff_vllm_parser.py)
CHILD_SETUP = r"""
import argparse, importlib, importlib.abc, importlib.machinery, json, os, runpy, sys, types
SRC = sys.argv[1]
sys.path.insert(0, SRC)
# vLLM reads its own distribution's version (platform detection, `vllm --version`): a
# metadata-only distribution "X+cpu" selects vLLM's CPU platform, a platform without devices.
import tempfile
_META = tempfile.mkdtemp()
_dist = os.path.join(_META, f"vllm-{os.path.basename(SRC)}+cpu.dist-info")
os.makedirs(_dist)
with open(os.path.join(_dist, "METADATA"), "w") as f:
    f.write(f"Metadata-Version: 2.1\nName: vllm\nVersion: {os.path.basename(SRC)}+cpu\n")
sys.path.append(_META)
# Accelerator probes of vllm/platforms/__init__.py must find nothing.
ABSENT = {"libtpu", "amdsmi", "habana_frameworks", "intel_extension_for_pytorch",
          "oneccl_bindings_for_pytorch", "transformers_neuronx", "neuronx_distributed_inference",
          "torch_neuronx", "torch_xla", "jax", "tpu_commons", "tpu_inference", "vllm_hpu"}
sys.argv = ["vllm", "serve"]
REAL = set(sys.stdlib_module_names) | {"pydantic", "pydantic_core", "typing_extensions",
                                      "annotated_types", "typing_inspection", "yaml"}

class _Meta(type):
    def __new__(mcls, name, bases, ns, **kw):
        return type.__new__(mcls, name, bases, ns)
    def __init__(cls, name, bases, ns, **kw):
        type.__init__(cls, name, bases, ns)
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _make(name)
    def __call__(cls, *a, **k):
        if len(a) == 1 and not k and callable(a[0]) and not isinstance(a[0], _Meta):
            return a[0]  # used as a decorator
        return type.__call__(cls)
    def __getitem__(cls, item): return cls
    def __iter__(cls): return iter(())
    def __len__(cls): return 0
    def __bool__(cls): return False

class _Base(metaclass=_Meta):
    def __init_subclass__(cls, **kw): pass
    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        from pydantic_core import core_schema
        return core_schema.any_schema()
    def __init__(self, *a, **k): pass
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _make(name)()
    def __call__(self, *a, **k):
        if len(a) == 1 and not k and callable(a[0]):
            return a[0]
        return _Base()
    def __getitem__(self, k): return _Base()
    def __iter__(self): return iter(())
    def __bool__(self): return False
    def __int__(self): return 0
    def __index__(self): return 0
    def __float__(self): return 0.0
    def __lt__(self, o): return False
    __gt__ = __le__ = __ge__ = __lt__
    def __eq__(self, o): return True
    def __ne__(self, o): return False
    def __hash__(self): return id(self)
    def __enter__(self): return self
    def __exit__(self, *a): return False
    def __len__(self): return 0
    def __str__(self): return "stub"
    def __add__(self, o): return self
    __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = __truediv__ = __rtruediv__ = __add__
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __add__
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __lshift__ = __rshift__ = __add__
    def __neg__(self): return self
    __pos__ = __abs__ = __invert__ = __neg__
    def __contains__(self, x): return False

def _make(name):
    return _Meta(name, (_Base,), {"__module__": "stub"})

class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        v = _make(name)
        setattr(self, name, v)
        return v

class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        m = _StubModule(spec.name)
        m.__path__ = []
        m.__version__ = "99.0.0"
        return m
    def exec_module(self, module):
        pass

FAILED = []  # vLLM modules whose import failed under the stubs (kept as stubs, reported)
# Modules whose failure would change the option table: they must import for real.
CRITICAL = ("vllm.utils", "vllm.engine.arg_utils", "vllm.entrypoints.openai.cli_args",
            "vllm.entrypoints.common.cli_args", "vllm.entrypoints.cli.serve",
            "vllm.utils.argparse_utils", "vllm.config", "vllm.entrypoints.openai.api_server")

class _Lenient(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner
    def create_module(self, spec):
        return self.inner.create_module(spec)
    def __getattr__(self, name):  # get_code, get_filename, is_package (runpy)
        return getattr(self.inner, name)
    def exec_module(self, module):
        try:
            self.inner.exec_module(module)
        except Exception as exc:
            if module.__name__ in CRITICAL or module.__name__.startswith("vllm.config."):
                raise
            FAILED.append(f"{module.__name__}: {type(exc).__name__}")
            module.__class__ = _StubModule

class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        top = fullname.split(".")[0]
        if top in REAL:
            return None
        if top in ABSENT:
            raise ModuleNotFoundError(fullname)
        if top == "vllm":
            rel = os.path.join(SRC, fullname.replace(".", "/"))
            if os.path.exists(rel + ".py") or os.path.isdir(rel):
                spec = importlib.machinery.PathFinder.find_spec(fullname, path or [SRC])
                if spec is not None and spec.loader is not None:
                    spec.loader = _Lenient(spec.loader)
                return spec
        return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)

sys.meta_path.insert(0, _Finder())  # before site-packages: only REAL modules are real
import re as _re
sys.modules["regex"] = _re  # vLLM imports `regex as re`: its patterns must really match

class _Captured(Exception):
    pass

def _flexible():
    for mod in ("vllm.utils.argparse_utils", "vllm.utils"):
        try:
            m = importlib.import_module(mod)
        except Exception:
            continue
        cls = getattr(m, "FlexibleArgumentParser", None)
        if isinstance(cls, type) and issubclass(cls, argparse.ArgumentParser):
            return cls
    raise RuntimeError("no FlexibleArgumentParser")

class _Swallow:
    def __enter__(self): return self
    def __exit__(self, *a): return True

def _patch_arg_utils():
    try:
        au = importlib.import_module("vllm.engine.arg_utils")
    except Exception:
        return
    if hasattr(au, "suppress_logging"):  # default factories: defaults are not needed
        au.suppress_logging = lambda *a, **k: _Swallow()

def _capture(run):
    FAP = _flexible()
    _patch_arg_utils()
    def grab(self, *a, **k):
        raise _Captured(self)
    saved = FAP.__dict__.get("parse_args"), FAP.__dict__.get("parse_known_args")
    FAP.parse_args = grab
    FAP.parse_known_args = grab
    try:
        run()
    except _Captured as c:
        return c.args[0]
    finally:  # the parser captured parses for real afterwards (scripts/diff_vllm_parser.py)
        for name, fn in zip(("parse_args", "parse_known_args"), saved):
            if fn is None:
                delattr(FAP, name)
            else:
                setattr(FAP, name, fn)
    raise RuntimeError("the entry point returned without parsing")

def _closure(fn, name):
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        if var == name:
            return cell.cell_contents
    return None

def _accepts(fn, text):
    try:
        fn(text)
        return True
    except Exception:
        return False

def _value_type(act):
    # How the parser converts a value of this option, for the reader to say which values vLLM
    # rejects: [] (taken as written, or a conversion not recorded: JSON, config dataclasses),
    # [type] or [type, choices]. type: "int" / "float" (Python's int() / float()), "hint"
    # (vLLM's human_readable_int: k/m/g decimal, K/M/G binary; "hint-t": also t/T; "-auto":
    # also auto / -1), prefixed "?" when the function reads "" and "None" as None
    # (optional_type). Read from the function itself: its name, its closure (optional_type,
    # parse_type) and what it accepts ("1t", "auto", "").
    if act.nargs == 0 or isinstance(act, (argparse._HelpAction, argparse._VersionAction)):
        return []
    fn = act.type
    optional = False
    inner = fn
    for _ in range(3):  # optional_type(parse_type(f)) at most
        name = getattr(inner, "__name__", "")
        if name in ("_optional_type", "_parse_type"):
            optional = optional or name == "_optional_type"
            nxt = _closure(inner, "return_type")
            if nxt is None:
                break
            inner = nxt
        else:
            break
    name = getattr(inner, "__name__", "")
    if inner is int:
        code = "int"
    elif inner is float:
        code = "float"
    elif name.startswith("human_readable_int"):
        code = "hint" + ("-t" if _accepts(inner, "1t") else "")
        code += "-auto" if _accepts(inner, "auto") else ""
    else:
        code = ""
    if code and optional and not (fn is not None and _accepts(fn, "")):
        optional = False
    choices = act.choices
    if isinstance(choices, dict):  # subparsers
        choices = None
    out = [("?" if optional else "") + code] if code or choices else []
    if choices is not None:
        try:
            out.append([c for c in choices if c is None or isinstance(c, (str, int, float))])
        except TypeError:
            pass
    return out

def _table(parser):
    assert isinstance(parser, argparse.ArgumentParser), type(parser)
    opts = {}
    for s, act in parser._option_string_actions.items():
        n = act.nargs
        neg = getattr(act, "negative_option_strings", None)
        if isinstance(act, (argparse._HelpAction, argparse._VersionAction)):
            kind = "x"
        elif isinstance(act, argparse._StoreTrueAction):
            kind = "t"
        elif isinstance(act, argparse._StoreFalseAction):
            kind = "f"
        elif isinstance(act, argparse.BooleanOptionalAction):
            if neg is not None:
                kind = "f" if s in neg else "t"
            else:
                kind = "f" if s.startswith("--no-") else "t"
        elif n == 0:
            kind = "c"
        elif n is None:
            kind = "v"
        elif n in ("?", "+", "*"):
            kind = n
        elif n == argparse.REMAINDER:
            kind = "r"
        else:
            kind = str(n)
        opts[s] = [act.dest, kind, *_value_type(act)]
    pos = [[a.dest, a.nargs if a.nargs is not None else "v"] for a in parser._actions
           if not a.option_strings]
    return {"options": dict(sorted(opts.items())), "positionals": pos,
            "allow_abbrev": parser.allow_abbrev}

def serve_parsers():
    # (top-level parser, its `serve` subparser, source): `vllm serve` as the version builds
    # it; `top.parse_args(["serve", *argv])` is what `vllm serve ARGV` parses
    if os.path.exists(os.path.join(SRC, "vllm/entrypoints/cli/serve.py")):
        # vllm/entrypoints/cli/main.py:main calls cmd.subparser_init(subparsers) for `serve`
        _patch_arg_utils()
        FAP = _flexible()
        import vllm.entrypoints.cli.serve as m
        cmd = next(c for c in m.cmd_init() if getattr(c, "name", None) == "serve")
        top = FAP(description="vLLM CLI")
        subs = top.add_subparsers(required=False, dest="subparser")
        return top, cmd.subparser_init(subs), "vllm/entrypoints/cli/serve.py:ServeSubcommand.subparser_init"
    def cli():
        import vllm.scripts as m
        m.main()
    top = _capture(cli)
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return top, sub.choices["serve"], "vllm/scripts.py:main"
"""

# ---------------------------------------------------------------- the child's tables
CHILD_TABLES = r"""
out = {}
_top, _serve, _source = serve_parsers()
serve = _table(_serve)
serve["source"] = _source
out["serve"] = serve
try:
    api = _capture(lambda: runpy.run_module("vllm.entrypoints.openai.api_server",
                                            run_name="__main__"))
    out["api_server"] = _table(api)
    out["api_server"]["source"] = "vllm/entrypoints/openai/api_server.py:__main__"
except Exception as exc:
    out["api_server"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
out["stubbed_vllm_modules"] = sorted(set(FAILED))
print("@@JSON@@" + json.dumps(out))
"""
CHILD = CHILD_SETUP + CHILD_TABLES


def run_version(src_root: Path, version: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(src_root / version)],
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **os.environ,
            "VLLM_LOGGING_LEVEL": "ERROR",
            "VLLM_CONFIGURE_LOGGING": "0",
            "PYTHONWARNINGS": "ignore",
        },
    )
    for line in proc.stdout.splitlines():
        if line.startswith("@@JSON@@"):
            return json.loads(line[len("@@JSON@@") :])
    raise RuntimeError(f"vLLM {version}: {proc.stderr[-3000:]}")


def _vkey(v: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in v.replace("post", ".").split("."))


def encode(tables: dict[str, dict]) -> dict:
    """Delta-encode: the first version in full, each later one against the previous."""
    versions = sorted(tables, key=_vkey)
    out: dict = {
        "format": "per parser, option string -> [dest, kind, type?, choices?] (type: how "
        "the parser converts the value, see vllm_flags.ValueType); later versions as "
        "add/remove against the previous one",
        "kinds": {
            "v": "one value",
            "?": "optional value",
            "+": "one or more values",
            "*": "zero or more values",
            "t": "valueless, sets True",
            "f": "valueless, sets False",
            "c": "valueless constant",
            "x": "help/version: exits",
            "r": "all remaining arguments",
        },
        "source": "the vLLM wheel of each version on PyPI; parsers built by the "
        "version's own entry points (scripts/gen_vllm_flags.py)",
        "versions": {},
    }
    prev: dict[str, dict] = {}
    for v in versions:
        entry: dict = {}
        for pname in ("serve", "api_server"):
            cur = tables[v].get(pname, {})
            if "options" not in cur:
                entry[pname] = {"error": cur.get("error", "missing")}
                continue
            before = prev.get(pname, {})
            base_opts = before.get("options", {})
            e: dict = {
                "source": cur["source"],
                "allow_abbrev": cur["allow_abbrev"],
                "positionals": cur["positionals"],
            }
            if base_opts:
                e["add"] = {k: val for k, val in cur["options"].items() if base_opts.get(k) != val}
                e["remove"] = sorted(k for k in base_opts if k not in cur["options"])
            else:
                e["options"] = cur["options"]
            e["count"] = len(cur["options"])
            entry[pname] = e
            prev[pname] = cur
        # vLLM modules that failed to import under the stubs (kept as stubs); none of them
        # registers options (the modules that do must import for real, see CRITICAL)
        entry["stubbed_vllm_modules"] = tables[v].get("stubbed_vllm_modules", [])
        out["versions"][v] = entry
    return out


def main(argv: list[str]) -> int:
    src_root = Path(argv[1])
    versions = argv[2:] or sorted(
        (p.name for p in src_root.iterdir() if (p / "vllm").is_dir()), key=_vkey
    )
    tables = {}
    for v in versions:
        try:
            tables[v] = run_version(src_root, v)
        except Exception as exc:  # noqa: BLE001 - report and go on: a missing version is visible in the file
            print(f"{v}: FAILED {exc}", file=sys.stderr)
            continue
        s = tables[v]["serve"]
        a = tables[v].get("api_server", {})
        print(
            f"{v}: serve {len(s['options'])} option strings, api_server "
            f"{len(a['options']) if 'options' in a else a.get('error')}, stubbed modules "
            f"{tables[v].get('stubbed_vllm_modules')}",
            file=sys.stderr,
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(encode(tables), indent=None, separators=(",", ":"), sort_keys=False) + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
