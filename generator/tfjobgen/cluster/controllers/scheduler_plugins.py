"""The scheduler-plugins scheduler with Coscheduling: not built into local clusters yet (a placeholder its module replaces)."""

from __future__ import annotations

NAME = "scheduler-plugins"
PROGRAMS: list[str] = []


def wanted(profile) -> bool:
    return False


def start(context) -> None:
    raise NotImplementedError(NAME)
