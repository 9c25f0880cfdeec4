"""The option strings vLLM's own parsers register, per vLLM version, and argparse's rules for
matching a command-line token against them (data/vllm_flags.json, built by
scripts/gen_vllm_flags.py from each version's wheel).

vLLM's FlexibleArgumentParser is an argparse.ArgumentParser with the default
allow_abbrev=True (the generator records it per parser): a unique prefix of a long option
selects that option, a prefix shared by several is argparse's "ambiguous option" error and
vLLM exits before it starts. Versions between two known lists use the nearest lower list.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from ..estimator.versions import VllmVersion

Parser = Literal["serve", "api_server"]
VALUELESS = {"t", "f", "c", "x"}
_NEG = re.compile(r"^-\d+$|^-\d*\.\d+$")  # argparse's _negative_number_matcher


@dataclass(frozen=True)
class ValueType:
    """How a version's parser converts one option's value (argparse `type` and `choices`, read
    by scripts/gen_vllm_flags.py from the parser itself). `convert`: "int" / "float" (Python's
    int() / float()), "hint" (vLLM's human_readable_int: k/m/g decimal, K/M/G binary),
    "hint-t" (also t/T), "hint-auto" / "hint-t-auto" (also `auto` and -1), "" (the text as
    written); `optional`: "" and "None" are read as None (vLLM's optional_type)."""

    convert: str
    optional: bool = False
    choices: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class OptionTable:
    version: str  # the known version whose list this is
    parser: Parser
    options: dict[str, tuple[str, str]]  # option string → (dest, kind)
    allow_abbrev: bool = True
    keys: tuple[str, ...] = ()  # the option strings, sorted (prefix search)
    # option string → (how the parser converts its value, the values it allows or None):
    # see ValueType (options taken as written, or whose conversion is not recorded, are absent)
    types: dict[str, ValueType] = field(default_factory=dict)
    # the parser's positional arguments: (dest, nargs), "v" one required value
    positionals: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.keys:
            object.__setattr__(self, "keys", tuple(sorted(self.options)))

    def starting_with(self, prefix: str) -> list[str]:
        i = bisect.bisect_left(self.keys, prefix)
        out = []
        while i < len(self.keys) and self.keys[i].startswith(prefix):
            out.append(self.keys[i])
            i += 1
        return out

    @property
    def count(self) -> int:
        return len(self.options)


@dataclass(frozen=True)
class Match:
    """How argparse reads one option token: `option` (the option string it selects) or an
    error (`ambiguous` with the candidates, or unknown: `option is None`)."""

    option: str | None
    dest: str | None = None
    kind: str | None = None
    abbreviated: bool = False
    ambiguous: tuple[str, ...] = ()
    explicit: str | None = None  # the attached value (`--x=v`, `-tp2`)


@lru_cache(maxsize=256)
def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split(".") if p.isdigit())


version_key = _vkey


@lru_cache(maxsize=1)
def _tables() -> dict[str, dict[str, OptionTable]]:
    raw = json.loads(resources.files(__package__).joinpath("data/vllm_flags.json").read_text())
    out: dict[str, dict[str, OptionTable]] = {}
    current: dict[str, dict[str, list[Any]]] = {}
    positionals: dict[str, tuple[tuple[str, str], ...]] = {}
    for version in sorted(raw["versions"], key=_vkey):
        entry = raw["versions"][version]
        out[version] = {}
        for pname in ("serve", "api_server"):
            e = entry.get(pname) or {}
            if "options" in e:
                opts = dict(e["options"])
            elif "add" in e and pname in current:
                opts = {**current[pname], **e["add"]}
                for k in e.get("remove", []):
                    opts.pop(k, None)
            else:
                continue
            current[pname] = opts
            if "positionals" in e:
                positionals[pname] = tuple((str(d), str(k)) for d, k in e["positionals"])
            out[version][pname] = OptionTable(
                version,
                pname,
                {k: (v[0], v[1]) for k, v in opts.items()},
                bool(e.get("allow_abbrev", True)),
                types={k: t for k, v in opts.items() if (t := _value_type(v[2:])) is not None},
                positionals=positionals.get(pname, ()),
            )
    return out


def _value_type(rec: list[Any]) -> ValueType | None:
    """[type] or [type, choices] of the generated file (after [dest, kind])."""
    if not rec:
        return None
    code = str(rec[0])
    choices = rec[1] if len(rec) > 1 and isinstance(rec[1], list) and rec[1] else None
    return ValueType(
        code.removeprefix("?"),
        code.startswith("?"),
        tuple(choices) if choices is not None else None,
    )


def known_versions() -> list[str]:
    return list(_tables())


def latest_version() -> str:
    return known_versions()[-1]


@lru_cache(maxsize=4)
def tables_from(parser: Parser, floor: str | None = None) -> tuple[OptionTable, ...]:
    """The distinct lists of `parser` from version `floor` on (all when None), oldest first."""
    seen: dict[str, OptionTable] = {}
    for v in known_versions():
        t = table_for(v, parser)
        if floor is None or _vkey(t.version) >= _vkey(floor):
            seen[t.version] = t
    return tuple(seen.values()) or (table_for(None, parser),)


def table_for(version: VllmVersion | str | None, parser: Parser = "serve") -> OptionTable:
    """The list of `version` (nearest lower known version; None or newer → the latest)."""
    tables = _tables()
    if version is None:
        want = None
    elif isinstance(version, str):
        want = _vkey(version)
    else:
        want = version.tuple
    chosen = None
    for v in tables:  # sorted
        if want is not None and _vkey(v) > want:
            break
        if parser in tables[v]:
            chosen = tables[v][parser]
    if chosen is None:  # older than every list: the oldest
        chosen = next(t[parser] for t in tables.values() if parser in t)
    return chosen


def is_exact_known(version: VllmVersion | None) -> bool:
    return version is not None and ".".join(map(str, version.tuple)) in _tables()


def match(table: OptionTable, token: str) -> Match:
    """argparse's _parse_optional / _get_option_tuples (CPython 3.10-3.12) for one token that
    starts with '-'. `token` is as vLLM passes it to argparse (underscores already dashes)."""
    opts = table.options
    if token in opts:
        d, k = opts[token]
        return Match(token, d, k)
    head, sep, value = token.partition("=")
    if sep and head in opts:
        d, k = opts[head]
        return Match(head, d, k, explicit=value)
    found: list[tuple[str, str | None, bool]] = []  # (option, attached value, abbreviated)
    if token.startswith("--"):
        if table.allow_abbrev:
            found = [(o, value if sep else None, True) for o in table.starting_with(head)]
    else:
        short, attached = token[:2], token[2:]
        if short in opts:
            found.append((short, attached, False))
        if table.allow_abbrev:
            found += [(o, None, True) for o in table.starting_with(token) if o != short]
    if len(found) > 1:
        return Match(None, ambiguous=tuple(o for o, _, _ in found))
    if len(found) == 1:
        o, explicit, abbreviated = found[0]
        d, k = opts[o]
        return Match(o, d, k, abbreviated=abbreviated, explicit=explicit or None)
    return Match(None)


def looks_like_option(token: str) -> bool:
    """argparse takes a token as an option (not a value) when it starts with '-', is not a
    negative number (vLLM registers no option that looks like one) and has no space unless it
    names a known option."""
    if not token.startswith("-") or token == "-" or token == "--":
        return token == "--"
    return _NEG.match(token) is None


class Rejected(ValueError):
    """The parser's error for a value (argparse's text after `argument FLAG: `), or
    `crash`: an exception argparse does not catch (vLLM exits with a traceback, status 1)."""

    def __init__(self, message: str, crash: bool = False) -> None:
        super().__init__(message)
        self.crash = crash


_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _human_readable_int(value: str, with_t: bool) -> int:
    """vLLM's human_readable_int (0.33.0:vllm/utils/argparse_utils.py:30-74; without t/T
    before: 0.11.0:vllm/engine/arg_utils.py:1740-1776, 0.8.5:arg_utils.py:1676-1712). A suffix
    the version's tables lack falls through to int() (ValueError)."""
    value = value.strip()
    m = _HUMAN.fullmatch(value)
    if m and (with_t or m[2] not in "tT"):
        number, suffix = m[1], m[2]
        if suffix in _DECIMAL:
            f = float(number) * _DECIMAL[suffix]
            if f != f or f in (float("inf"), float("-inf")):
                raise Rejected("OverflowError: cannot convert float infinity to integer", True)
            return int(f)
        try:
            return int(number) * _BINARY[suffix]
        except ValueError:
            raise Rejected(
                f"Decimals are not allowed with binary suffixes like {suffix}. Did you mean "
                f"to use {number}{suffix.lower()} instead?"
            ) from None
    return int(value)


def convert_value(vt: ValueType, raw: str) -> Any:
    """The value vLLM's parser makes of `raw` (argparse's _get_values → _get_value →
    _check_value, CPython 3.10-3.13), or Rejected with argparse's message. None: "" or "None"
    of an optional_type (vLLM's default)."""
    if vt.optional and raw in ("", "None"):
        value: Any = None
    else:
        code = vt.convert
        try:
            if code == "int":
                value = int(raw)
            elif code == "float":
                value = float(raw)
            elif code.startswith("hint"):
                s = raw.strip()
                if code.endswith("-auto") and (s == "-1" or s.lower() == "auto"):
                    value = -1
                else:
                    value = _human_readable_int(raw, "-t" in code)
            else:
                value = raw
        except Rejected:
            raise
        except ValueError:
            # optional_type wraps the function in parse_type, whose message names it (0.33.0:
            # vllm/engine/arg_utils.py:161-179); argparse names a bare one by __name__
            func = {"int": "int", "float": "float"}.get(code, "human_readable_int")
            if code.endswith("-auto"):
                func += "_or_auto"
            if vt.optional:
                shown = f"<class '{func}'>" if func in ("int", "float") else f"<function {func}>"
                raise Rejected(f"Value {raw} cannot be converted to {shown}.") from None
            raise Rejected(f"invalid {func} value: {raw!r}") from None
    if vt.choices is not None and value not in vt.choices:
        shown = ", ".join(repr(c) for c in vt.choices if c is not None)
        raise Rejected(f"invalid choice: {value!r} (choose from {shown})")
    return value
