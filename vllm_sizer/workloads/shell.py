"""Enough of a POSIX shell to find the vLLM command in a `sh -c` / `bash -c` script.

The script is split into simple commands (newline, `;`, `&&`, `||`, `|`, `&`, `(`, `)`), with
shell quoting (shlex rules: single quotes literal, double quotes with backslash escapes,
backslash-newline continuations, comments) and parameter expansion from what is known:
`$VAR`, `${VAR}`, `${VAR:-default}` (and `-`, `:=`, `=`, `:+`, `+`), `$@` / `$1` from the
arguments after the script. Unquoted expansions are split into words as the shell splits them
(so `vllm serve $MODEL $EXTRA_ARGS` works). A variable whose value is not known (from
`valueFrom`, `envFrom`, or the image) stays literal and is reported, never guessed.
`export NAME=value` / `NAME=value` before a command update the variables for later commands
(on a branch that may not run, only when the value is known). Here-documents are read, and
files written with `cat > f <<EOF`, `tee f <<EOF`, `echo/printf ... > f` are remembered, so a
`--config f` the script writes can be read.

Every expansion is bounded (limits.py): a variable longer than limits.MAX_VALUE_CHARS, or past
the object's budget of expanded characters, stays literal and unknown, with a note in the
object's budget naming it; so are commands and assignments past their counts.

A hand-written tokenizer rather than `shlex.split`: expansion must know the quoting context
(`'$X'` is literal, `"$X"` is one word, `$X` is split), which shlex discards.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from . import limits

SHELLS = {"sh", "bash", "dash", "ash", "zsh", "ksh"}
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_PLAIN_RUN = re.compile(r"[^ \t\r\n;|()&<>\\'\"$`]+")  # ordinary word characters
_QUOTED_RUN = re.compile(r'[^"\\$`]+')  # ordinary characters inside double quotes
# A documentation placeholder (`--model <model-path>`), a whole word or a word's end: sh would
# read `<model-path` and `> NEXT` as redirections and lose the next word (a flag); the author
# meant one word that the user fills in, so it is read as that word (reader.py says so).
_DOC_PLACEHOLDER = re.compile(r"<[A-Za-z][\w.-]*>(?=[ \t\r\n;&|)]|\\\n|$)")
KEYWORDS = {
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "do",
    "done",
    "while",
    "until",
    "!",
    "{",
    "}",
    "time",
    "case",
    "esac",
    "for",
    "in",
}
# bash arrays: an array literal travels as one word, marked, its elements joined by a
# separator no script contains; ${A[@]} / ${A[*]} / ${A[N]} read it back
ARRAY_MARK, ARRAY_SEP = "\x1f", "\x1e"
_ARRAY_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_ARRAY_REF = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[(@|\*|\d{1,4})\]")
# $(( ... )): integers, names ($X, ${X}, X), operators, parentheses, spaces
_ARITH_TOKEN = re.compile(
    r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$?[A-Za-z_][A-Za-z0-9_]*|\d+|[-+*/%()]|\s+|."
)


def _arith_sum(tokens: list[str]) -> tuple[int, list[str]]:
    value, rest = _arith_product(tokens)
    while rest and rest[0] in "+-":
        op, (rhs, rest) = rest[0], _arith_product(rest[1:])
        value = value + rhs if op == "+" else value - rhs
    return value, rest


def _arith_product(tokens: list[str]) -> tuple[int, list[str]]:
    value, rest = _arith_unary(tokens)
    while rest and rest[0] in ("*", "/", "%"):
        op, (rhs, rest) = rest[0], _arith_unary(rest[1:])
        if op == "*":
            value *= rhs
        elif op == "/":
            value = int(value / rhs)  # the shell truncates toward zero
        else:
            value = value - rhs * int(value / rhs)
        if abs(value) > 10**18:
            raise ValueError("out of range")
    return value, rest


def _arith_unary(tokens: list[str]) -> tuple[int, list[str]]:
    tok = tokens[0]
    if tok == "(":
        value, rest = _arith_sum(tokens[1:])
        if not rest or rest[0] != ")":
            raise ValueError("unbalanced")
        return value, rest[1:]
    if tok == "-":
        value, rest = _arith_unary(tokens[1:])
        return -value, rest
    if tok == "+":
        return _arith_unary(tokens[1:])
    if tok.lstrip("-").isdigit():
        return int(tok), tokens[1:]
    raise ValueError(f"not an arithmetic token: {tok!r}")


MAX_SCRIPT = 200_000  # characters; longer scripts are read up to this point (said: cut)
MAX_DEPTH = 4  # nested `sh -c` levels


@dataclass
class Command:
    words: list[str]
    env: dict[str, str]  # exported variables as this command sees them (prefix assignments too)
    unresolved: list[str] = field(default_factory=list)  # variables left literal in its words
    # files the script wrote before this command (`cat > f <<EOF`, `echo ... > f`): path → text
    files: dict[str, str] = field(default_factory=dict)
    # expansions the shell fails on (an arithmetic division by zero) in this command or in an
    # unconditional one before it: a non-interactive shell exits there (bash status 1, dash 2),
    # so this command never runs (`$((4/0))`)
    fails: list[str] = field(default_factory=list)


@dataclass
class _Raw:
    words: list[str]
    unresolved: list[str]
    conditional: bool  # follows `&&`, `||` or `|`
    heredoc: str | None  # body of its (last) here-document
    redirect: tuple[str, bool] | None  # stdout target and whether it appends
    fails: list[str] = field(default_factory=list)  # expansions the shell exits on


def find_shell(argv: list[str]) -> tuple[str, list[str]] | None:
    """(script, arguments after it: $0, $1, ...) when argv runs `sh -c SCRIPT ...`, through
    wrappers that exec their argument (`/usr/bin/env bash -c`, `tini -- sh -c`; see
    execution.py), never a shell another program runs elsewhere (`docker run IMG sh -c`,
    `kubectl exec POD -- sh -c`, `ssh host sh -c`)."""
    from .execution import executes_shell

    start = executes_shell(argv)
    for idx, tok in enumerate(argv[start:], start) if start is not None else ():
        if os.path.basename(str(tok)) not in SHELLS:
            continue
        j = idx + 1
        has_c = False
        while j < len(argv):
            opt = str(argv[j])
            if opt == "--":
                j += 1
                break
            if not opt.startswith(("-", "+")) or opt in ("-", "+"):
                break
            if not opt.startswith("--") and "c" in opt[1:]:
                has_c = True
            if (opt.startswith(("-o", "+o")) and opt[1:] == "o") or opt == "-O":
                j += 1  # `-o pipefail`
            j += 1
        if has_c and j < len(argv):
            return str(argv[j]), [str(a) for a in argv[j + 1 :]]
        return None
    return None


class _Tokenizer:
    def __init__(
        self,
        script: str,
        vars_: dict[str, str],
        unknown: set[str],
        maybe_env: bool,
        positional: list[str],
        depth: int = 0,
    ):
        self.depth = depth  # nesting of ${X:-${Y:-...}} defaults
        self.s = script[:MAX_SCRIPT]
        self.vars = vars_
        self.unknown = unknown
        self.maybe_env = maybe_env
        self.positional = positional  # $0, $1, ...
        self.arrays: dict[str, list[str]] = {}  # bash arrays: NAME=( ... ), NAME+=( ... )
        self.i = 0
        self.failures: list[str] = []  # expansions the shell exits on, in script order

    # ---------------------------------------------------------------- variable lookup
    def _state(self, name: str) -> tuple[str, str | None]:
        if name in self.vars:
            return "set", self.vars[name]
        if name in self.unknown or self.maybe_env:
            return "unknown", None
        return "unset", None

    def _arith(self, expr: str) -> str | None:
        """An arithmetic expansion of integers, known variables ($X, ${X}, X), + - * / % and
        parentheses, as the shell computes it; None when a variable is unknown or the
        expression is anything else (left unknown, never guessed). A division by zero of known
        values is the shell's error: bash prints "division by 0", dash "division by zero", and a
        non-interactive shell exits (recorded in self.failures)."""
        if len(expr) > 200:
            return None
        tokens: list[str] = []
        for tok in _ARITH_TOKEN.findall(expr):
            if tok.isspace():
                continue
            name = tok.lstrip("$").strip("{}")
            if _NAME_RE.fullmatch(name):
                state, value = self._state(name)
                if state != "set" or value is None or not value.strip().lstrip("-").isdigit():
                    return None
                tok = value.strip()
            tokens.append(tok)
        try:  # anything but integers and + - * / % ( ) raises in the parser
            result, rest = _arith_sum(tokens)
        except ZeroDivisionError:
            self.failures.append(f"$(({expr}))")
            return None
        except (ValueError, IndexError):
            return None
        if rest or abs(result) > 10**18:
            return None
        return str(result)

    def _special(self, name: str) -> tuple[str, str | None]:
        if name.isascii() and name.isdigit():
            k = int(name)
            if k < len(self.positional):
                return "set", self.positional[k]
            return "unset", None
        if name in ("@", "*"):
            return "set", " ".join(self.positional[1:])
        if name == "#":
            return "set", str(max(0, len(self.positional) - 1))
        return "unknown", None

    def _braced(self, inner: str) -> tuple[str, str | None]:
        """${...}: returns (state, value) after applying the operator."""
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(.*)$", inner, re.S)
        if not m:
            return "unknown", None
        name, rest = m.group(1), m.group(2)
        state, value = self._special(name) if not _NAME_RE.fullmatch(name) else self._state(name)
        if rest == "":
            return state, value
        op_m = re.match(r"^(:-|-|:=|=|:\+|\+)(.*)$", rest, re.S)
        if not op_m:
            return "unknown", None
        op, word = op_m.group(1), op_m.group(2)
        if self.depth >= 8:
            return "unknown", None
        word_value = " ".join(
            _Tokenizer(
                word, self.vars, self.unknown, self.maybe_env, self.positional, self.depth + 1
            ).words_only()
        )
        if state == "unknown":
            return "unknown", None
        empty = state == "unset" or (op.startswith(":") and value == "")
        if op in (":-", "-", ":=", "="):
            if state == "unset" or (op.startswith(":") and empty):
                if op in (":=", "=") and _NAME_RE.fullmatch(name):
                    self.vars[name] = word_value
                return "set", word_value
            return "set", value
        # :+ / +
        use = state == "set" and not (op == ":+" and value == "")
        return "set", word_value if use else ""

    # ---------------------------------------------------------------- scanning helpers
    def _match(self, start: int, open_: str, close: str) -> int:
        """Index just past the bracket closing the one at `start` (naive nesting)."""
        depth = 0
        j = start
        while j < len(self.s):
            ch = self.s[j]
            if ch == "\\":
                j += 2
                continue
            if ch == open_:
                depth += 1
            elif ch == close:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return len(self.s)

    def _dollar(self) -> tuple[str, str, str, bool]:
        """At a `$`: returns (kind, text, literal, is_at) where kind is set/unknown/unset/lit;
        a value past the expansion bounds is returned as unknown (limits.py)."""
        kind, value, literal, is_at = self._dollar_raw()
        if kind in ("set", "array"):
            size = len(" ".join(self.positional[1:])) if is_at else len(value)
            if size and not limits.current().take(size, f"shell expansion {literal[:40]}"):
                return "unknown", "", literal, False
        return kind, value, literal, is_at

    def _dollar_raw(self) -> tuple[str, str, str, bool]:
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if nxt == "(":
            end = self._match(i + 1, "(", ")")
            self.i = end
            if s.startswith("((", i + 1) and s.endswith("))", 0, end):
                value = self._arith(s[i + 3 : end - 2])  # $(( expression ))
                if value is not None:
                    return "set", value, s[i:end], False
            return "unknown", "", s[i:end], False
        if nxt == "{":
            end = self._match(i + 1, "{", "}")
            self.i = end
            inner = s[i + 2 : end - 1]
            am = _ARRAY_REF.fullmatch(inner)
            if am and am.group(1) in self.arrays:
                items = self.arrays[am.group(1)]
                if am.group(2) in ("@", "*"):
                    return (
                        "array" if am.group(2) == "@" else "set",
                        (ARRAY_SEP.join(items) if am.group(2) == "@" else " ".join(items)),
                        s[i:end],
                        False,
                    )
                k = int(am.group(2))
                return "set", items[k] if k < len(items) else "", s[i:end], False
            state, value = self._braced(inner)
            return state, value or "", s[i:end], inner in ("@", "*")
        m = _NAME_RE.match(s, i + 1) if nxt else None
        if m:
            self.i = m.end()
            state, value = self._state(m.group(0))
            return state, value or "", s[i : m.end()], False
        if nxt and (nxt in "0123456789@*#?$!-"):
            self.i = i + 2
            state, value = self._special(nxt)
            return state, value or "", s[i : i + 2], nxt in ("@", "*")
        self.i = i + 1
        return "lit", "$", "$", False

    # ---------------------------------------------------------------- tokenizing
    def _expand_text(self, text: str) -> str:
        """Here-document body with an unquoted delimiter: parameter expansion only."""
        sub = _Tokenizer(
            text, self.vars, self.unknown, self.maybe_env, self.positional, self.depth + 1
        )
        out: list[str] = []
        while sub.i < len(sub.s):
            ch = sub.s[sub.i]
            if ch == "\\" and sub.i + 1 < len(sub.s) and sub.s[sub.i + 1] in "$`\\":
                out.append(sub.s[sub.i + 1])
                sub.i += 2
            elif ch == "$":
                kind, value, literal, _ = sub._dollar()
                out.append(value if kind == "set" else literal)
            else:
                out.append(ch)
                sub.i += 1
        return "".join(out)

    def _read_heredocs(self, pending: list[tuple[str, bool, bool]]) -> str | None:
        """Consume the bodies of pending here-documents (self.i at the start of a line);
        returns the last body."""
        s, n = self.s, len(self.s)
        body: str | None = None
        for delim, strip_tabs, expand in pending:
            lines: list[str] = []
            while self.i < n:
                end = s.find("\n", self.i)
                end = n if end < 0 else end
                line = s[self.i : end]
                self.i = end + 1
                if strip_tabs:
                    line = line.lstrip("\t")
                if line == delim:
                    break
                lines.append(line)
            text = "".join(line + "\n" for line in lines)
            body = self._expand_text(text) if expand else text
        pending.clear()
        return body

    def commands(self) -> Iterator[_Raw]:
        """Yields each simple command; reads self.vars lazily, so a caller may apply
        assignments between commands."""
        s = self.s
        n = len(s)
        words: list[str] = []
        unresolved: list[str] = []
        cur: list[str] = []
        have = False
        drop_next = False  # the next word is a redirection target
        capture: str | None = None  # the next word is stdout's target: ">" or ">>"
        redirect: tuple[str, bool] | None = None  # (file, append) of this command's stdout
        pending: list[tuple[str, bool, bool]] = []  # here-documents: (delimiter, <<-, expand)
        conditional = False  # this command follows `&&`, `||` or `|`
        budget = limits.current()
        failed = len(self.failures)  # failures before this command

        def end_word() -> None:
            nonlocal cur, have, drop_next, capture, redirect
            if have:
                if capture is not None:
                    redirect = ("".join(cur), capture == ">>")
                    capture = None
                elif drop_next:
                    drop_next = False
                elif len(words) <= limits.MAX_ARGS:  # one more: the reader sees the excess
                    words.append("".join(cur))
                else:
                    budget.note(f"a command with more than {limits.MAX_ARGS} words: cut")
            cur, have = [], False

        def add_split(value: str) -> None:
            nonlocal have
            for k, piece in enumerate(re.split(r"[ \t\n]+", value)):
                if k > 0:
                    end_word()
                if piece:
                    cur.append(piece)
                    have = True

        def add_at(quoted: bool) -> None:
            nonlocal cur, have
            params = self.positional[1:]
            for k, p in enumerate(params):
                if k > 0:
                    if quoted:
                        words.append("".join(cur)) if not drop_next else None
                        cur, have = [], False
                    else:
                        end_word()
                if quoted:
                    cur.append(p)
                    have = True
                else:
                    add_split(p)

        def expansion(quoted: bool) -> None:
            nonlocal have, cur
            kind, value, literal, is_at = self._dollar()
            if kind == "array":  # "${A[@]}": one word per element; unquoted: split too
                for k, item in enumerate(value.split(ARRAY_SEP) if value else []):
                    if k > 0:
                        end_word()
                    if quoted:
                        cur.append(item)
                        have = True
                    else:
                        add_split(item)
                return
            if kind == "lit":
                cur.append(literal)
                have = True
            elif kind == "set":
                if is_at:
                    add_at(quoted)
                elif quoted:
                    cur.append(value)
                    have = True
                else:
                    add_split(value)
            else:  # unknown or unset: keep literal, report
                cur.append(literal)
                have = True
                unresolved.append(literal)

        while self.i < n:
            c = s[self.i]
            if c in " \t\r":
                end_word()
                self.i += 1
            elif c == "(" and have and _ARRAY_ASSIGN.fullmatch("".join(cur)):
                # NAME=( a "b c" $X ): the elements, expanded as words, in one marked word
                end = self._match(self.i, "(", ")")
                inner = s[self.i + 1 : end - 1]
                sub = _Tokenizer(
                    inner, self.vars, self.unknown, self.maybe_env, self.positional, self.depth + 1
                )
                sub.arrays = self.arrays
                items = [w for raw in sub.commands() for w in raw.words]
                cur.append(ARRAY_MARK + ARRAY_SEP.join(items))
                self.i = end
            elif (
                c == "("
                and not have
                and s.startswith("((", self.i)
                and all(w in KEYWORDS for w in words)
            ):
                # `(( SECONDS <= 240 ))`: bash's arithmetic command runs no program (its `<`
                # is no redirection); read as the no-op `:` (KServe's multinode worker loops
                # on one before `ray start`)
                close = s.find("))", self.i + 2)
                self.i = n if close < 0 else close + 2
                cur.append(":")
                have = True
                end_word()
            elif c == "\n" or c in ";|()&":
                if c == "&" and self.i + 1 < n and s[self.i + 1] == ">":  # &> file
                    end_word()
                    self.i += 2
                    drop_next = True
                    continue
                end_word()
                logical = c in "&|" and self.i + 1 < n and s[self.i + 1] == c
                self.i += 2 if logical else 1
                heredoc = self._read_heredocs(pending) if c == "\n" and pending else None
                if words:
                    if not budget.take_command():
                        return
                    yield _Raw(
                        words, unresolved, conditional, heredoc, redirect, self.failures[failed:]
                    )
                failed = len(self.failures)
                # the command after `&&` / `||` may not run; one after `|` runs in a subshell
                conditional = logical or c == "|"
                words, unresolved = [], []
                drop_next, capture, redirect = False, None, None
            elif c == "<" and (ph := _DOC_PLACEHOLDER.match(s, self.i)):
                cur.append(ph.group(0))
                have = True
                self.i = ph.end()
            elif c in "<>":
                fd = None
                if have and "".join(cur).isdigit():  # 2>file: the fd number is no word
                    fd = "".join(cur)
                    cur, have = [], False
                end_word()
                j = self.i
                while j < n and s[j] in "<>&|":
                    j += 1
                op, self.i = s[self.i : j], j
                if op.startswith("<<") and not op.startswith("<<<"):
                    strip_tabs = self.i < n and s[self.i] == "-"
                    self.i += 1 if strip_tabs else 0
                    while self.i < n and s[self.i] in " \t":
                        self.i += 1
                    k = self.i
                    while k < n and s[k] not in " \t\n;&|<>()":
                        k += 1
                    raw = s[self.i : k]
                    self.i = k
                    delim = raw.replace("'", "").replace('"', "").replace("\\", "")
                    pending.append((delim, strip_tabs, not any(q in raw for q in "'\"\\")))
                    continue
                if op.endswith("&") and self.i < n and s[self.i].isdigit():
                    while self.i < n and s[self.i].isdigit():  # >&2, 2>&1
                        self.i += 1
                    continue
                if op in (">", ">>", ">|") and fd in (None, "1"):
                    capture = ">>" if op == ">>" else ">"
                else:
                    drop_next = True
            elif c == "#" and not have:
                while self.i < n and s[self.i] != "\n":
                    self.i += 1
            elif c == "\\":
                if self.i + 1 < n:
                    if s[self.i + 1] != "\n":
                        cur.append(s[self.i + 1])
                        have = True
                    self.i += 2
                else:
                    self.i += 1
            elif c == "'":
                end = s.find("'", self.i + 1)
                end = n if end < 0 else end
                cur.append(s[self.i + 1 : end])
                have = True
                self.i = end + 1
            elif c == '"':
                self.i += 1
                have = True
                while self.i < n and s[self.i] != '"':
                    ch = s[self.i]
                    if ch == "\\" and self.i + 1 < n:
                        nx = s[self.i + 1]
                        if nx in '$`"\\':
                            cur.append(nx)
                        elif nx != "\n":
                            cur.append("\\" + nx)
                        self.i += 2
                    elif ch == "$":
                        expansion(quoted=True)
                    elif ch == "`":
                        end = s.find("`", self.i + 1)
                        end = n if end < 0 else end
                        literal = s[self.i : end + 1]
                        cur.append(literal)
                        unresolved.append(literal)
                        self.i = end + 1
                    else:
                        m = _QUOTED_RUN.match(s, self.i)
                        run = m.group(0) if m else ch  # a backslash that ends the script
                        cur.append(run)
                        self.i += len(run)
                self.i += 1
            elif c == "$":
                expansion(quoted=False)
            elif c == "`":
                end = s.find("`", self.i + 1)
                end = n if end < 0 else end
                literal = s[self.i : end + 1]
                cur.append(literal)
                have = True
                unresolved.append(literal)
                self.i = end + 1
            else:
                m = _PLAIN_RUN.match(s, self.i)
                if m is None:  # a character the branches above did not take
                    cur.append(c)
                    self.i += 1
                else:
                    cur.append(m.group(0))
                    self.i = m.end()
                have = True
        end_word()
        heredoc = self._read_heredocs(pending) if pending else None
        if words and budget.take_command():
            yield _Raw(words, unresolved, conditional, heredoc, redirect, self.failures[failed:])

    def words_only(self) -> list[str]:
        out: list[str] = []
        for raw in self.commands():
            out.extend(raw.words)
        return out


def run_script(
    script: str,
    env: dict[str, str],
    unknown: set[str] | None = None,
    maybe_env: bool = False,
    positional: list[str] | None = None,
) -> list[Command]:
    """The simple commands of a script, each with the exported environment it runs with.
    `env`: literal container env; `unknown`: names set from valueFrom (value unknown);
    `maybe_env`: envFrom present, so any other name may be set too."""
    with limits.budget() as budget:
        if len(script) > MAX_SCRIPT:
            budget.note(
                f"a script of more than {MAX_SCRIPT} characters: read up to there only, "
                "what it runs past that point is unknown"
            )
        return _run_script(script, env, unknown, maybe_env, positional)


def _holds_unresolved(value: str, unresolved: list[str]) -> bool:
    """Whether an assigned value holds an expansion whose value is unknown (left literal in the
    word): the variable's value is unknown, never that literal text, which a later unquoted
    `$NAME` would split into words the script never had (`R=$(( ${I:-0} * N ))`)."""
    return any(u in value for u in unresolved)


_ARRAY_WORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=\x1f(.*)", re.S)


def _run_script(
    script: str,
    env: dict[str, str],
    unknown: set[str] | None,
    maybe_env: bool,
    positional: list[str] | None,
) -> list[Command]:
    vars_ = dict(env)
    exported = dict(env)
    tok = _Tokenizer(script, vars_, set(unknown or ()), maybe_env, list(positional or ["sh"]))
    out: list[Command] = []
    files: dict[str, str] = {}
    budget = limits.current()
    snapshot: dict[str, str] | None = None
    files_snapshot: dict[str, str] | None = None
    changed = files_changed = False

    def _forget(name: str) -> None:  # a value past the bounds: unknown from here on
        nonlocal changed
        vars_.pop(name, None)
        if exported.pop(name, None) is not None:
            changed = True
        tok.unknown.add(name)

    def _forget_unset(assigned: dict[str, str], unresolved: list[str]) -> None:
        """A skipped conditional assignment of an unknown value to an unset or empty name."""
        for name, value in assigned.items():
            if not vars_.get(name) and _holds_unresolved(value, unresolved):
                _forget(name)

    depth = 0  # inside if / while / until / for / case: assignments may not happen
    stopped: list[str] = []  # an unconditional command the shell exits on: nothing after runs
    for raw in tok.commands():
        words, unresolved, after_logical = raw.words, raw.unresolved, raw.conditional
        fails = stopped + raw.fails
        if raw.fails and not stopped and depth == 0 and not after_logical:
            stopped = [f"{f} (in an earlier command)" for f in raw.fails]
        ws = list(words)
        if ws and ws[0] in ("if", "while", "until", "for", "case"):
            depth += 1
        elif ws and ws[0] in ("fi", "done", "esac"):
            depth = max(0, depth - 1)
        while ws and ws[0] in KEYWORDS:
            ws.pop(0)
        if not ws:
            continue
        # A conditional assignment is applied only when its value is fully known: an
        # unknown value must not replace a known one on a branch that may not run (a default
        # the branch may override). A variable that is unset or empty before it has no value
        # to keep: the branch is its only source (`RANK=""; for ...; do RANK=$(...); done`),
        # so it becomes unknown rather than empty.
        skip_assign = (depth > 0 or after_logical) and bool(unresolved)
        arrays = [a for a in (_ARRAY_WORD.match(w) for w in ws) if a]
        if arrays and len(arrays) == len(ws):  # only array assignments: NAME=( ) / NAME+=( )
            for am in arrays:
                items = am.group(3).split(ARRAY_SEP) if am.group(3) else []
                if am.group(2):
                    tok.arrays.setdefault(am.group(1), []).extend(items)
                else:
                    tok.arrays[am.group(1)] = items
                if len(tok.arrays[am.group(1)]) > limits.MAX_ARGS:
                    del tok.arrays[am.group(1)]  # past the bounds: unknown, left literal
                    budget.note(f"array {am.group(1)} with more than {limits.MAX_ARGS} items")
            continue
        prefix: dict[str, str] = {}
        k = 0
        while k < len(ws) and _ASSIGN_RE.match(ws[k]):
            m = _ASSIGN_RE.match(ws[k])
            assert m
            prefix[m.group(1)] = m.group(2)
            k += 1
        if k == len(ws):  # only assignments: shell variables (exported if already exported)
            if skip_assign:
                _forget_unset(prefix, unresolved)
                continue
            for name, value in prefix.items():
                if not budget.take_assignment(name, value) or _holds_unresolved(value, unresolved):
                    _forget(name)
                    continue
                vars_[name] = value
                tok.unknown.discard(name)
                if name in exported:
                    exported[name] = value
                    changed = True
            continue
        cmd = ws[k:]
        if cmd[0] == "export" or (cmd[0] in ("declare", "typeset") and "-x" in cmd[1:]):
            if skip_assign:
                _forget_unset(
                    {m.group(1): m.group(2) for m in map(_ASSIGN_RE.match, cmd[1:]) if m},
                    unresolved,
                )
                continue
            for arg in cmd[1:]:
                m = _ASSIGN_RE.match(arg)
                if m:
                    if not budget.take_assignment(m.group(1), m.group(2)) or _holds_unresolved(
                        m.group(2), unresolved
                    ):
                        _forget(m.group(1))
                        continue
                    vars_[m.group(1)] = m.group(2)
                    exported[m.group(1)] = m.group(2)
                    tok.unknown.discard(m.group(1))
                elif _NAME_RE.fullmatch(arg) and arg in vars_:
                    exported[arg] = vars_[arg]
                changed = True
            continue
        if cmd[0] == "unset":
            for arg in cmd[1:]:
                vars_.pop(arg, None)
                exported.pop(arg, None)
            changed = True
            continue
        if prefix and any(not budget.take_assignment(k, v) for k, v in prefix.items()):
            prefix = {k: v for k, v in prefix.items() if len(v) <= limits.MAX_VALUE_CHARS}
        files_changed = _record_file(cmd, raw, files) or files_changed
        # commands share one snapshot of the environment (and of the files) until it changes:
        # a long script costs one copy per change, not one per command
        if changed or snapshot is None:
            snapshot, changed = dict(exported), False
        if files_changed or files_snapshot is None:
            files_snapshot, files_changed = dict(files), False
        out.append(
            Command(
                words=cmd,
                env={**snapshot, **prefix} if prefix else snapshot,
                unresolved=list(unresolved),
                files=files_snapshot,
                fails=fails,
            )
        )
    return out


def _record_file(cmd: list[str], raw: _Raw, files: dict[str, str]) -> bool:
    """Files a script writes with `cat > f <<EOF`, `tee f <<EOF`, `echo/printf ... > f`."""
    target, append = raw.redirect if raw.redirect else (None, False)
    content: str | None = None
    if cmd[0] in ("cat", "tee") and raw.heredoc is not None:
        content = raw.heredoc
        if cmd[0] == "tee":
            args = [a for a in cmd[1:] if not a.startswith("-")]
            append = append or "-a" in cmd[1:]
            target = args[0] if args else target
    elif cmd[0] == "echo" and target:
        args = cmd[1:]
        while args and args[0] in ("-e", "-n", "-en", "-ne", "-E"):
            args = args[1:]
        content = " ".join(args) + "\n"
        if "-e" in cmd[1:2] or "-en" in cmd[1:2] or "-ne" in cmd[1:2]:
            content = content.replace("\\n", "\n")
    elif cmd[0] == "printf" and target and len(cmd) > 1:
        content = cmd[1].replace("\\n", "\n")
    if target and content is not None:
        text = (files.get(target, "") if append else "") + content
        if len(text) > limits.MAX_VALUE_CHARS:
            limits.current().note(
                f"the script writes more than {limits.MAX_VALUE_CHARS} "
                f"characters to {target[:80]}: its contents are unknown"
            )
            files.pop(target, None)
            return True
        files[target] = text
        return True
    return False
