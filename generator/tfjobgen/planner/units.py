"""Numbers for people: byte sizes in decimal units (as network and memory figures are quoted)."""

from __future__ import annotations


def size(amount: float) -> str:
    """12886280 -> '12.9 MB'; under 1 kB as bytes."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if amount >= scale:
            return f"{amount / scale:.1f} {unit}"
    return f"{amount:.0f} B"


def percent(share: float) -> str:
    return f"{100 * share:.1f}%"
