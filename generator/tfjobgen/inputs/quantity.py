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


def describe_bytes(amount: Fraction) -> str:
    """4294967296 -> "4Gi", for messages."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _SUFFIX[suffix]
        if amount >= unit and (amount / unit).denominator == 1:
            return f"{amount / unit}{suffix}"
    for suffix in ("Ti", "Gi", "Mi", "Ki"):
        if amount >= _SUFFIX[suffix]:
            return f"{float(amount / _SUFFIX[suffix]):.1f}{suffix}"
    return str(math.ceil(amount))


def describe_cpu(cores: Fraction) -> str:
    return cpu_text(cores) if cores.denominator == 1 else f"{float(cores):g}"
