"""Hard bounds on everything the reader expands, so a hostile manifest costs a bounded time and
memory per review (webhook and `check` alike).

What is bounded, and what happens past the bound (always with a diagnostic naming what was cut,
never a guessed value):
- a shell variable's value (`X="$X$X"`) and the characters all shell expansions of one object
  produce: past the bound the expansion is left literal (unknown), as for a `valueFrom` value;
- the kubelet's `$(VAR)` expansion of one env value or argument: past the bound the variable's
  value is unknown (env) or the reference stays literal (command/args);
- the simple commands and variables of one script;
- the number and length of a container's command-line arguments: past the bound the container
  cannot be sized (its flags cannot be read in full; later flags win in argparse);
- the containers (and Ray Serve engines) of one object read: MAX_CONTAINERS; the characters of
  one script (shell.MAX_SCRIPT); a script cut by any bound is never read as "starts no server";
- YAML (the `vllm-sizer.io/vllm-config` annotation, `serveConfigV2`, KAITO's
  `inference_config.yaml`, a script-written or mounted `--config`, `check` input): alias uses,
  nodes and nesting counted on the parser's event stream before anything is composed (composing
  is what costs: 20 s for 300,000 nodes), then the size a document has once its aliases are
  expanded, measured on the composed node graph before anything is constructed (`load_yaml` /
  `load_all_yaml`).

The numbers are assumed (no published manifest comes near them): a real vLLM command line is
well under 100 arguments of under 4 KiB (a `--lora-modules` JSON list can reach a few KiB), and
a real `--config` file under a thousand nodes.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

# assumed bounds (see the module docstring)
MAX_VALUE_CHARS = 64 * 1024  # one shell variable / one $(VAR) expansion result
MAX_EXPANDED_CHARS = 1024 * 1024  # all expansions of one object together
MAX_COMMANDS = 1024  # simple commands of all the scripts of one object
MAX_ASSIGNMENTS = 512  # shell assignments / exports of all the scripts of one object
MAX_CONTAINERS = 128  # containers (and Ray Serve engines) of one object read
MAX_ENV_ENTRIES = 512  # env entries of one container read (the rest: values unknown)
# keys of the ConfigMaps one container's envFrom names, all sources together: a source past
# the bound is read as a Secret is (its variables unknown), never cut to its first keys
MAX_ENV_FROM_KEYS = 4096
MAX_ARGS = 4096  # command + args words of one container, after expansion
MAX_ARG_CHARS = 64 * 1024  # one word of the command line
MAX_YAML_ALIASES = 64  # alias uses in an annotation / script-written --config
MAX_YAML_NODES = 20_000  # nodes of an annotation / --config / serveConfigV2, aliases expanded
MAX_YAML_DEPTH = 64
MAX_DOC_ALIASES = 1_000  # `check` input: one document
MAX_DOC_NODES = 2_000_000
MAX_DOC_DEPTH = 200
MAX_CUTS_LOGGED = 10_000
CUTS_OVERFLOW = "more cuts than can be listed"


class LimitExceeded(ValueError):
    """An input beyond one of the bounds above; the message names what was cut."""


@dataclass
class Budget:
    """The expansion budget of one object: characters produced, and the notes of what was cut
    (deduplicated, in order)."""

    max_chars: int = MAX_EXPANDED_CHARS
    used: int = 0
    commands: int = 0
    assignments: int = 0
    notes: list[str] = field(default_factory=list)
    # every cut in order, repeats too: a later container cut by a bound an earlier one already
    # hit (the object's command budget spent) is cut as well, and must be told so
    cuts: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.notes and len(self.notes) < 50:
            self.notes.append(text)
        if len(self.cuts) < MAX_CUTS_LOGGED:
            self.cuts.append(text)
        elif self.cuts[-1] != CUTS_OVERFLOW:
            self.cuts.append(CUTS_OVERFLOW)

    def mark(self) -> int:
        """A point in the cuts log; `since(mark)` names the cuts made after it."""
        return len(self.cuts)

    def since(self, mark: int) -> list[str]:
        return list(dict.fromkeys(self.cuts[mark:]))

    def take(self, n: int, what: str) -> bool:
        """Spend n characters on `what`; False (and a note) when the budget cannot pay."""
        if n > MAX_VALUE_CHARS:
            self.note(
                f"{what} expands to more than {MAX_VALUE_CHARS} characters: not expanded "
                "(left literal, its value unknown)"
            )
            return False
        if self.used + n > self.max_chars:
            self.note(
                f"{what}: the expansions of this object exceed {self.max_chars} characters "
                "in all: not expanded (left literal, its value unknown)"
            )
            return False
        self.used += n
        return True

    def take_command(self) -> bool:
        self.commands += 1
        if self.commands > MAX_COMMANDS:
            self.note(f"scripts with more than {MAX_COMMANDS} commands: the rest is not read")
            return False
        return True

    def take_assignment(self, name: str, value: str) -> bool:
        self.assignments += 1
        if len(value) > MAX_VALUE_CHARS:
            self.note(
                f"shell variable {name} is assigned more than {MAX_VALUE_CHARS} "
                "characters: its value is unknown"
            )
            return False
        if self.assignments > MAX_ASSIGNMENTS:
            self.note(
                f"scripts with more than {MAX_ASSIGNMENTS} variable assignments: later "
                "values are unknown"
            )
            return False
        return True


_BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "vllm_sizer_budget", default=None
)


def current() -> Budget:
    """The budget of the object being read, or a fresh one for a call outside `budget()`."""
    b = _BUDGET.get()
    return b if b is not None else Budget()


@contextlib.contextmanager
def budget() -> Iterator[Budget]:
    """One budget for everything expanded inside the block (nested blocks share the outer)."""
    outer = _BUDGET.get()
    if outer is not None:
        yield outer
        return
    b = Budget()
    token = _BUDGET.set(b)
    try:
        yield b
    finally:
        _BUDGET.reset(token)


# ---------------------------------------------------------------------------------- copies
def json_copy(
    value: Any,
    max_nodes: int = MAX_DOC_NODES,
    leaf: Callable[[Any], Any] | None = None,
    key: Callable[[str], Any] | None = None,
) -> Any:
    """A deep copy of JSON-like data (mappings, lists, scalars; a Kopf body is a mapping) made
    with a stack, not by recursion: copy.deepcopy takes two Python frames a level and raises
    RecursionError on an object nested a few hundred levels deep, which the API server
    accepts (its decoder allows 10,000) in a custom resource's free-form fields. Data shared
    between two places is copied twice (a JSON document shares nothing); past `max_nodes`
    containers (a cycle, which only a YAML alias can make) LimitExceeded. `leaf` maps every
    value that is no mapping or list, `key` every string key (a template rendered over a whole
    object: KServe's LLMInferenceServiceConfig, an OpenShift Template)."""

    def fresh(node: Any) -> Any:  # a shallow copy, its keys mapped
        if isinstance(node, Mapping):
            if key is None:
                return dict(node)
            return {(key(k) if isinstance(k, str) else k): v for k, v in node.items()}
        return list(node)

    if not isinstance(value, Mapping | list):
        return leaf(value) if leaf is not None else value
    root: Any = fresh(value)
    stack = [root]
    seen = 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > max_nodes:
            raise LimitExceeded(f"more than {max_nodes} nested objects and lists: not copied")
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, child in list(items):
            if isinstance(child, Mapping | list):
                child = node[k] = fresh(child)
                stack.append(child)
            elif leaf is not None:
                node[k] = leaf(child)
    return root


# ---------------------------------------------------------------------------------- YAML
def _safe_loader() -> type:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def dump_all_yaml(docs: Iterable[Any]) -> str:
    """yaml.safe_dump_all (keys in their order) through libyaml's emitter when PyYAML has it:
    the pure-Python emitter is linear too, but took 18 s for the 8 MB of one large ConfigMap
    that libyaml writes in a fraction of a second (bench/check_large.py). The documents read
    back the same; only where a long quoted string is folded may differ."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(docs, Dumper=dumper, sort_keys=False)


def _measure(root: yaml.Node, max_nodes: int, max_depth: int) -> None:
    """Expanded size (every alias counted as the whole subtree it stands for) and depth of a
    composed node graph, in time linear in its distinct nodes; raises LimitExceeded."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            kids = _children(node)
            s = 1 + sum(size[id(k)] for k in kids)
            d = 1 + max((depth[id(k)] for k in kids), default=0)
            if s > max_nodes:
                raise LimitExceeded(
                    f"YAML expands to more than {max_nodes} nodes (aliases): not read"
                )
            if d > max_depth:
                raise LimitExceeded(f"YAML nests deeper than {max_depth} levels: not read")
            size[key], depth[key] = s, d
            continue
        if key in size:
            continue
        if key in on_path:  # a recursive alias (`&a [*a]`)
            raise LimitExceeded("YAML holds a recursive alias: not read")
        on_path.add(key)
        stack.append((node, True))
        if len(on_path) > max_depth:
            raise LimitExceeded(f"YAML nests deeper than {max_depth} levels: not read")
        for k in _children(node):
            if id(k) not in size:
                stack.append((k, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _same(a: yaml.Node, b: yaml.Node) -> bool:
    """Two composed nodes stand for the same value (aliases are one node)."""
    if a is b:
        return True
    if type(a) is not type(b) or a.tag != b.tag:
        return False
    if isinstance(a, yaml.ScalarNode):
        return bool(a.value == b.value)
    if len(a.value) != len(b.value):
        return False
    if isinstance(a, yaml.MappingNode):
        pairs = zip(a.value, b.value, strict=True)
        return all(_same(k1, k2) and _same(v1, v2) for (k1, v1), (k2, v2) in pairs)
    return all(_same(x, y) for x, y in zip(a.value, b.value, strict=True))


def _repeated_keys(root: yaml.Node, found: list[str]) -> None:
    """Add to `found` every key a mapping of the composed graph repeats with another value:
    PyYAML keeps the last without a word, kubectl's client keeps the last, server-side apply
    refuses the file (go-yaml v3: `mapping key "x" already defined at line N`), so which
    value the cluster gets depends on how it is applied. A merge key `<<` is not one (its
    keys are overridden by design), nor a key repeated with the same value (a published Helm
    chart renders labels so)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, str], tuple[int, yaml.Node]] = {}
            for k, v in node.value:
                if not isinstance(k, yaml.ScalarNode) or k.tag == _MERGE_TAG:
                    continue
                line = k.start_mark.line + 1
                at, value = first.setdefault((k.tag, k.value), (line, v))
                if value is not v and not _same(value, v):
                    found.append(
                        f'line {line}: mapping key "{k.value[:80]}" already defined at line '
                        f"{at} with another value: the last is read, as kubectl apply does "
                        "(kubectl apply --server-side refuses the file)"
                    )
        stack.extend(_children(node))


def _prescan(
    text: str, max_aliases: int, max_nodes: int, max_depth: int
) -> tuple[int, Exception | None]:
    """(how many documents pass, the error of the first that does not), on the C parser's event
    stream before anything is composed: alias uses (the whole text), nodes written and nesting
    (per document). Composing costs far more than parsing (a 1.5 MB serveConfigV2 of 300,000
    nodes took 20 s to compose and was refused only after), so a document past a bound is
    never composed."""
    docs = aliases = nodes = depth = 0
    try:
        for event in yaml.parse(text, Loader=_safe_loader()):
            kind = type(event)
            if kind is yaml.ScalarEvent:
                nodes += 1
            elif kind in (yaml.SequenceStartEvent, yaml.MappingStartEvent):
                nodes += 1
                depth += 1
                if depth > max_depth:
                    raise LimitExceeded(f"YAML nests deeper than {max_depth} levels: not read")
            elif kind in (yaml.SequenceEndEvent, yaml.MappingEndEvent):
                depth -= 1
            elif kind is yaml.AliasEvent:
                aliases += 1
                if aliases > max_aliases:
                    raise LimitExceeded(f"YAML uses more than {max_aliases} aliases: not read")
            elif kind is yaml.DocumentEndEvent:
                docs += 1
                nodes = depth = 0
            if nodes > max_nodes:
                raise LimitExceeded(f"YAML holds more than {max_nodes} nodes: not read")
    except (yaml.YAMLError, LimitExceeded) as exc:
        return docs, exc
    except RecursionError:
        return docs, LimitExceeded(f"YAML nests deeper than {max_depth} levels: not read")
    return docs, None


def load_all_yaml(
    text: str,
    *,
    max_aliases: int = MAX_DOC_ALIASES,
    max_nodes: int = MAX_DOC_NODES,
    max_depth: int = MAX_DOC_DEPTH,
    repeated_keys: list[str] | None = None,
) -> Iterator[Any]:
    """yaml.safe_load_all with bounds: the event stream is scanned first (aliases, nodes,
    depth), then each document that passed is composed, measured (nodes once its aliases are
    expanded), then constructed. Raises LimitExceeded or yaml.YAMLError for the document that
    fails; documents before it have been yielded. `repeated_keys`: a list to which a mapping
    key written twice with two values is said (the last is read, as PyYAML and kubectl's
    client read it; an embedded config vLLM reads keeps the last too, as vLLM does)."""
    passing, error = _prescan(text, max_aliases, max_nodes, max_depth)
    loader = _safe_loader()(text)
    try:
        for _ in range(passing):
            if not loader.check_node():
                break
            try:
                node = loader.get_node()
            except RecursionError:
                raise LimitExceeded(
                    f"YAML nests deeper than {max_depth} levels: not read"
                ) from None
            if node is None:
                continue
            _measure(node, max_nodes, max_depth)
            if repeated_keys is not None:
                _repeated_keys(node, repeated_keys)
            yield loader.construct_document(node)
    finally:
        loader.dispose()
    if error is not None:
        raise error


def load_yaml(
    text: str,
    *,
    max_aliases: int = MAX_YAML_ALIASES,
    max_nodes: int = MAX_YAML_NODES,
    max_depth: int = MAX_YAML_DEPTH,
) -> Any:
    """yaml.safe_load with the bounds of a small embedded document (an annotation, a
    script-written --config): the first document, or None."""
    for doc in load_all_yaml(
        text, max_aliases=max_aliases, max_nodes=max_nodes, max_depth=max_depth
    ):
        return doc
    return None
