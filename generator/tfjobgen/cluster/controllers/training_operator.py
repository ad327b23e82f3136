"""The Kubeflow training-operator v1.9 (TFJob): not built into local clusters yet (a placeholder its module replaces)."""

from __future__ import annotations

NAME = "training-operator"
PROGRAMS: list[str] = []


def wanted(profile) -> bool:
    return False


def start(context) -> None:
    raise NotImplementedError(NAME)
