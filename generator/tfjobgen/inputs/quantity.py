"""Kubernetes resource quantities (`2`, `"300m"`, `4Gi`) as exact numbers.

Fractions, not floats: "is this a whole number of CPUs" and "does this group
fit on an 80-core node" must not depend on rounding.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_QUANTITY = re.compile(r"^\+?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:([eE][-+]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")
_SUFFIX = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}


def parse(value: int | float | str) -> Fraction | None:
    """The quantity's exact value, or None when `value` is not a quantity."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value) if value >= 0 else None
    if isinstance(value, float):
        return Fraction(str(value)) if math.isfinite(value) and value >= 0 else None
    match = _QUANTITY.match(value.strip()) if isinstance(value, str) else None
    if not match:
        return None
    number, exponent, suffix = match.groups()
    result = Fraction(number)
    if exponent:
        result *= Fraction(10) ** int(exponent[1:])
    return result * _SUFFIX[suffix or ""]


def cpu_text(cores: Fraction) -> str:
    """Canonical CPU text: whole cores as "4", otherwise millicores as "2500m"."""
    if cores.denominator == 1:
        return str(cores.numerator)
    return f"{math.ceil(cores * 1000)}m"


def memory_text(value: int | float | str) -> str:
    """Memory as the user wrote it (units are a reader's choice), as a string."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# Beyond these a quantity is shown by its order of magnitude: Kubernetes parses 1e1000 (no node holds it), and
# written out in full it would be a line of a thousand digits (past 4,300, Python refuses to write it at all).
_SHOWN_IN_FULL = {"bytes": Fraction(2**70), "cpu": Fraction(10**15)}


def magnitude(amount: Fraction) -> str:
    """A huge amount in three digits and a power of ten: 1e1000, 8.67e981."""
    whole = math.floor(amount)
    exponent = int(math.log10(whole))  # a float's rounding may be one off either way at a power of ten
    exponent += (10 ** (exponent + 1) <= whole) - (10 ** exponent > whole)
    digits = str(whole // 10 ** (exponent - 2)) if exponent >= 2 else str(whole).ljust(3, "0")
    mantissa = f"{digits[0]}.{digits[1:]}".rstrip("0").rstrip(".")
    return f"{mantissa}e{exponent}"


def describe_bytes(amount: Fraction) -> str:
    """4294967296 -> "4Gi", for messages."""
    if amount >= _SHOWN_IN_FULL["bytes"]:
        return f"about {magnitude(amount)} bytes"
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _SUFFIX[suffix]
        if amount >= unit and (amount / unit).denominator == 1:
            return f"{amount / unit}{suffix}"
    for suffix in ("Ti", "Gi", "Mi", "Ki"):
        if amount >= _SUFFIX[suffix]:
            return f"{float(amount / _SUFFIX[suffix]):.1f}{suffix}"
    return str(math.ceil(amount))


def describe_cpu(cores: Fraction) -> str:
    if cores >= _SHOWN_IN_FULL["cpu"]:
        return f"about {magnitude(cores)}"
    return cpu_text(cores) if cores.denominator == 1 else f"{float(cores):g}"
