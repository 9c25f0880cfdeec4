"""vLLM engine arguments in a Python app the manifest ships: a Ray Serve app or a Ray job's
script held in a ConfigMap the Ray pods mount. The source is parsed with `ast` and never run;
only what it builds its engine from is evaluated, from literals, its own simple assignments,
function defaults, the keywords a deployment is bound with, and environment variables whose
values the manifest gives.

Read: `AsyncEngineArgs(...)`, `EngineArgs(...)`, `LLM(...)` (their keywords are vLLM's engine
arguments; `**d` with a known dict too), and `vLLMEngineProcessorConfig(...)` / `LLMConfig(...)`
(ray.data.llm / ray.serve.llm: `model_source` and `engine_kwargs`). A value the code computes
from something not visible is unknown, and said.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

MAX_SOURCE_CHARS = 256 * 1024  # a bigger app is not read
MAX_DEPTH = 24  # nested evaluations of one value (names that refer to names ...)
MAX_STEPS = 20_000  # evaluations of one app in all (names fanning out to names ...)

ENGINE_CALLS = frozenset({"AsyncEngineArgs", "EngineArgs", "LLM"})
CONFIG_CALLS = frozenset({"vLLMEngineProcessorConfig", "LLMConfig"})


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()


@dataclass
class PyEngine:
    call: str  # the call that builds the engine
    model: str | None
    kwargs: dict[str, Any]  # the engine arguments whose values are known
    unknown: list[str] = field(default_factory=list)  # keywords whose values are not


def _name(node: ast.AST) -> str:
    """`a.b.c` of a Name / Attribute chain, else ''."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


class _App:
    def __init__(self, tree: ast.Module, env: dict[str, str]) -> None:
        self.env = env
        self.steps = 0
        self.assigns: dict[str, ast.expr] = {}  # every simple `NAME = expr` (the last one wins)
        self.parent: dict[int, ast.AST] = {}
        self.binds: dict[str, list[ast.Call]] = {}  # class → its .bind(...) / .options().bind()
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[id(child)] = node
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    self.assigns[target.id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None:
                    self.assigns[node.target.id] = node.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "bind"
            ):
                owner = node.func.value
                if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Attribute):
                    owner = owner.func.value  # X.options(...).bind(...)
                if isinstance(owner, ast.Name):
                    self.binds.setdefault(owner.id, []).append(node)

    def _function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        cur = self.parent.get(id(node))
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            cur = self.parent.get(id(cur))
        return cur

    def _param(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str, depth: int) -> Any:
        """A parameter's value: the keyword (or position) its class is bound with, when the
        function is a Ray Serve deployment's __init__, else its default."""
        a = fn.args
        positional = [p.arg for p in a.posonlyargs + a.args]
        cls = self.parent.get(id(fn))
        binds = self.binds.get(cls.name, []) if isinstance(cls, ast.ClassDef) else []
        if fn.name == "__init__" and binds:
            call = binds[0]
            keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
            if a.kwarg is not None and name == a.kwarg.arg:
                named = set(positional) | {p.arg for p in a.kwonlyargs}
                return {k: self.eval(v, depth + 1) for k, v in keywords.items() if k not in named}
            if name in keywords:
                return self.eval(keywords[name], depth + 1)
            args = positional[1:]  # after self
            if name in args and args.index(name) < len(call.args):
                return self.eval(call.args[args.index(name)], depth + 1)
        defaults = dict(
            zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True)
        )
        defaults.update(
            {p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None}
        )
        if name in defaults:
            return self.eval(defaults[name], depth + 1)
        return UNKNOWN

    def eval(self, node: ast.AST | None, depth: int = 0) -> Any:
        self.steps += 1
        if node is None or depth > MAX_DEPTH or self.steps > MAX_STEPS:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            fn = self._function(node)
            if fn is not None:
                a = fn.args
                params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
                params |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
                if node.id in params:
                    return self._param(fn, node.id, depth)
            value = self.assigns.get(node.id)
            return UNKNOWN if value is None or value is node else self.eval(value, depth + 1)
        if isinstance(node, ast.Subscript) and _name(node.value) == "os.environ":
            key = self.eval(node.slice, depth + 1)
            return self.env.get(key, UNKNOWN) if isinstance(key, str) else UNKNOWN
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.eval(e, depth + 1) for e in node.elts]
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                key = self.eval(k, depth + 1)
                if k is None or key is UNKNOWN or not isinstance(key, str):
                    continue
                out[key] = self.eval(v, depth + 1)
            return out
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand, depth + 1)
            if v is UNKNOWN:
                return UNKNOWN
            if isinstance(node.op, ast.Not):
                return not v
            if isinstance(node.op, ast.USub) and isinstance(v, (int, float)):
                return -v
            return UNKNOWN
        if isinstance(node, ast.BoolOp):
            values = [self.eval(v, depth + 1) for v in node.values]
            for v in values[:-1]:
                if v is UNKNOWN:
                    return UNKNOWN
                if bool(v) == isinstance(node.op, ast.Or):
                    return v
            return values[-1]
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = self.eval(node.left, depth + 1)
            right = self.eval(node.comparators[0], depth + 1)
            if left is UNKNOWN or right is UNKNOWN:
                return UNKNOWN
            op = node.ops[0]
            if isinstance(op, ast.Eq):
                return left == right
            if isinstance(op, ast.NotEq):
                return left != right
            if isinstance(op, ast.In) and isinstance(right, (str, list, dict)):
                return left in right
            return UNKNOWN
        if isinstance(node, ast.IfExp):
            test = self.eval(node.test, depth + 1)
            if test is UNKNOWN:
                return UNKNOWN
            return self.eval(node.body if test else node.orelse, depth + 1)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        return UNKNOWN

    def _call(self, node: ast.Call, depth: int) -> Any:
        fname = _name(node.func)
        args = [self.eval(a, depth + 1) for a in node.args]
        if fname in ("os.environ.get", "os.getenv"):
            if not args or not isinstance(args[0], str):
                return UNKNOWN
            default = args[1] if len(args) > 1 else None
            return self.env.get(args[0], default)
        if fname in ("int", "float", "str", "bool") and len(args) == 1:
            v = args[0]
            if v is UNKNOWN:
                return UNKNOWN
            try:
                if fname == "bool" and isinstance(v, str):
                    return UNKNOWN  # bool("False") is True: said as unknown, not guessed
                return {"int": int, "float": float, "str": str, "bool": bool}[fname](v)
            except (TypeError, ValueError, OverflowError):
                return UNKNOWN
        if fname == "dict" and not args:
            known, unknown = self._keywords(node, depth)
            return {**known, **{k: UNKNOWN for k in unknown}}
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("lower", "upper", "strip"):
            v = self.eval(node.func.value, depth + 1)
            return getattr(v, node.func.attr)() if isinstance(v, str) else UNKNOWN
        return UNKNOWN

    def _keywords(self, node: ast.Call, depth: int) -> tuple[dict[str, Any], list[str]]:
        known: dict[str, Any] = {}
        unknown: list[str] = []
        for kw in node.keywords:
            value = self.eval(kw.value, depth + 1)
            if kw.arg is None:  # **d
                if isinstance(value, dict):
                    for k, v in value.items():
                        (unknown.append(k) if v is UNKNOWN else known.__setitem__(k, v))
                else:
                    unknown.append("**")
            elif value is UNKNOWN:
                unknown.append(kw.arg)
            else:
                known[kw.arg] = value
        return known, unknown

    def _split(self, kwargs: dict[str, Any], unknown: list[str]) -> dict[str, Any]:
        """The keywords whose whole value is known; the others go to `unknown`."""
        out: dict[str, Any] = {}
        for k, v in kwargs.items():
            if _has_unknown(v):
                unknown.append(k)
            else:
                out[k] = v
        return out

    def engines(self, tree: ast.Module) -> list[PyEngine]:
        out: list[PyEngine] = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            call = _name(node.func).rsplit(".", 1)[-1]
            if call in ENGINE_CALLS:
                first = self.eval(node.args[0]) if node.args else None  # the model, first
                kwargs, unknown = self._keywords(node, 0)
                if node.args and "model" not in kwargs:
                    if first is UNKNOWN:
                        unknown.insert(0, "model")
                    else:
                        kwargs["model"] = first
                model = kwargs.pop("model", None)
                kwargs = self._split(kwargs, unknown)
                out.append(
                    PyEngine(call, model if isinstance(model, str) else None, kwargs, unknown)
                )
            elif call in CONFIG_CALLS:
                fields, unknown = self._keywords(node, 0)
                engine = fields.get("engine_kwargs")
                loading = fields.get("model_loading_config")
                model = fields.get("model_source")
                if model is None and isinstance(loading, dict):
                    model = loading.get("model_source") or loading.get("model_id")
                unknown = [u for u in unknown if u in ("model_source", "engine_kwargs")]
                kwargs = self._split(engine if isinstance(engine, dict) else {}, unknown)
                out.append(
                    PyEngine(call, model if isinstance(model, str) else None, kwargs, unknown)
                )
        return out


def _has_unknown(value: Any, depth: int = 0) -> bool:
    """Unknown somewhere inside, or not a value a command line can carry (bytes, ...)."""
    if value is UNKNOWN or depth > MAX_DEPTH:
        return True
    if isinstance(value, dict):
        return any(_has_unknown(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_has_unknown(v, depth + 1) for v in value)
    return not (value is None or isinstance(value, (str, int, float, bool)))


def read_engines(source: str, env: dict[str, str]) -> list[PyEngine]:
    """The vLLM engines a Python app builds, with the engine arguments that are known; [] when
    the source is not Python this reader takes (too big, not parseable)."""
    if not isinstance(source, str) or len(source) > MAX_SOURCE_CHARS:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    try:
        app = _App(tree, env)
        return app.engines(tree)
    except RecursionError:
        return []


# Calls that start another program or run code the source does not show: with an argument
# that is not a literal free of "vllm" they may start vLLM out of sight.
_SPAWNERS = frozenset(
    {
        "os.system",
        "os.popen",
        "os.execv",
        "os.execve",
        "os.execvp",
        "os.execvpe",
        "os.execl",
        "os.execle",
        "os.execlp",
        "os.execlpe",
        "os.spawnv",
        "os.spawnve",
        "os.spawnvp",
        "os.spawnl",
        "os.posix_spawn",
        "os.posix_spawnp",
        "pty.spawn",
        "exec",
        "eval",
        "compile",
        "__import__",
        "importlib.import_module",
        "runpy.run_module",
        "runpy.run_path",
    }
)


def _visible_literal(node: ast.AST) -> bool:
    """A string (or list/tuple of strings) written in the source that does not mention vLLM."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return "vllm" not in node.value.lower()
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_visible_literal(e) for e in node.elts)
    return False


def starts_no_engine(source: str) -> bool:
    """Whether `python -c SOURCE` visibly starts no vLLM engine: the code parses, never names
    vLLM, and every call that could start another program or run code it does not show
    (os.system, subprocess, exec, runpy, ...) gets only literal strings that do not name vLLM.
    False (unknown) for anything else: code that is cut, imports vLLM, or spawns from a value."""
    if len(source) > MAX_SOURCE_CHARS or "vllm" in source.lower():
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names]
            if isinstance(node, ast.ImportFrom) and node.module:
                mods.append(node.module)
            if any(str(m).split(".")[0] in ("subprocess", "multiprocessing") for m in mods):
                return False  # a process started from values the code may compute
        if isinstance(node, ast.Call):
            name = _name(node.func)
            if name in _SPAWNERS or name.startswith("subprocess."):
                args = list(node.args) + [k.value for k in node.keywords]
                if not args or not all(_visible_literal(a) for a in args):
                    return False
    return True
