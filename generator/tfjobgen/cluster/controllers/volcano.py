"""The Volcano scheduler: not built into local clusters yet (a placeholder its module replaces)."""

from __future__ import annotations

NAME = "volcano"
PROGRAMS: list[str] = []


def wanted(profile) -> bool:
    return False


def start(context) -> None:
    raise NotImplementedError(NAME)
