"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource), read exactly.

`parse_quantity("1.5Gi") == 1610612736`; fractional bytes round up, as the API server does when
it canonicalises a memory quantity. `format_quantity` writes the largest exact binary unit.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: dict[str, int | Fraction] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
_RE = re.compile(
    r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE]([+-]?\d+))?$"
)
_MAX_EXP = 30  # 1e30 bytes is already absurd; bigger exponents are refused, not computed
# The largest quantity Kubernetes represents: "no quantity may represent a number greater than
# 2^63-1" (k8s.io/apimachinery/pkg/api/resource/quantity.go, the Quantity doc comment); a
# larger one is refused here, not carried into arithmetic (a 400-digit limit overflowed the
# message's float formatting and crashed the review)
MAX_QUANTITY = 2**63 - 1


def parse_quantity(value: str | int) -> int:
    """A memory quantity in bytes, rounded up. Raises ValueError on anything Kubernetes would
    not accept as a quantity, and on negative values."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"negative quantity: {value}")
        if value > MAX_QUANTITY:
            raise ValueError(f"quantity out of range: {value}")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a quantity: {value!r}")
        value = repr(value)
    if not isinstance(value, str):
        raise ValueError(f"not a quantity: {value!r}")
    text = value.strip()
    if len(text) > 64:  # far past 2^63-1 in any spelling; never converted digit by digit
        raise ValueError(f"quantity out of range: {text[:40]!r}...")
    m = _RE.match(text)
    if not m:
        raise ValueError(f"not a quantity: {value!r}")
    sign, number, suffix, exp = m.group(1), m.group(2), m.group(3), m.group(4)
    try:
        amount = Fraction(Decimal(number))
    except (InvalidOperation, ValueError):
        raise ValueError(f"not a quantity: {value!r}") from None
    if exp is not None:
        e = int(exp)
        if abs(e) > _MAX_EXP:
            raise ValueError(f"quantity out of range: {value!r}")
        amount *= Fraction(10) ** e
    elif suffix:
        amount *= _BINARY.get(suffix) or _DECIMAL[suffix]
    if sign == "-" and amount != 0:
        raise ValueError(f"negative quantity: {value!r}")
    if amount > MAX_QUANTITY:
        raise ValueError(f"quantity out of range: {value[:40]!r}")
    return math.ceil(amount)


def format_quantity(nbytes: int) -> str:
    """Bytes as an exact quantity: '2Gi', '1536Mi', '100Ki', or plain bytes."""
    n = int(nbytes)
    if n == 0:
        return "0"
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)
