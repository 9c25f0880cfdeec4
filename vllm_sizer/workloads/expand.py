"""Kubernetes `$(VAR)` expansion (kubelet: third_party/forked/golang/expansion) and JSON pointers."""

from __future__ import annotations

import re
from collections.abc import Callable

from . import limits

# what can name an environment variable in a pod (the kubelet leaves any other `$(...)` alone)
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")


def kube_expand(
    text: str, lookup: Callable[[str], str | None], cut: list[str] | None = None
) -> tuple[str, list[str]]:
    """Expand `$(VAR)` the way the kubelet expands command, args and env values: `$$` is a
    literal `$`, `$(VAR)` is replaced when VAR is known and kept literally otherwise, any other
    `$` is literal. Returns the text and the names that stayed unresolved.

    Bounded (limits.py): a result longer than limits.MAX_VALUE_CHARS, or past the object's
    budget of expanded characters, keeps the reference literally; its name is added to `cut`
    and the budget notes it (`$(E)$(E)` chains double at every step)."""
    if "$" not in text:  # the common case: nothing to expand
        return text, []
    out: list[str] = []
    unresolved: list[str] = []
    size = 0
    i, n = 0, len(text)
    while i < n:
        j = text.find("$", i)
        if j < 0:
            out.append(text[i:])
            break
        if j > i:
            out.append(text[i:j])
            i = j
        if i + 1 >= n:
            out.append("$")
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
                continue
            name = text[i + 2 : close]
            value = lookup(name)
            if value is None:
                out.append(f"$({name})")
                if _ENV_NAME.fullmatch(name):  # `$(date +%s)`, `$((A*B))`: the shell's, not ours
                    unresolved.append(name)
            elif size + len(value) > limits.MAX_VALUE_CHARS or not limits.current().take(
                len(value), f"$({name[:40]})"
            ):
                limits.current().note(
                    f"$({name[:40]}) expands to more than "
                    f"{limits.MAX_VALUE_CHARS} characters (or past the "
                    "object's budget): left literal, its value unknown"
                )
                out.append(f"$({name})")
                if cut is not None:
                    cut.append(name)
            else:
                out.append(value)
                size += len(value)
            i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out), unresolved


def pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer from path segments (`~` → `~0`, `/` → `~1`)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
