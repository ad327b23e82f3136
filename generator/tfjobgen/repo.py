"""The repository's layout conventions: jobs/ and the kustomization that lists them."""

from __future__ import annotations

import os

from . import source
from .problems import InvalidInput, Problem


def unlisted_jobs(paths: list[str]) -> list[Problem]:
    """YAML files in a folder with a kustomization that does not list them: kustomize would never build them."""
    problems = []
    for folder in (p for p in paths if os.path.isdir(p)):
        kustomization = os.path.join(folder, "kustomization.yaml")
        if not os.path.isfile(kustomization):
            continue
        try:
            data = source.parse_documents(source.read_text(kustomization), kustomization)[0].data
        except (InvalidInput, IndexError):
            continue
        listed = {os.path.normpath(entry) for entry in (data or {}).get("resources") or [] if isinstance(entry, str)}
        for name in sorted(os.listdir(folder)):
            if name.endswith((".yaml", ".yml")) and not name.startswith("kustomization.") and name not in listed:
                problems.append(Problem(
                    f"not listed in {kustomization}, so no overlay builds it: add '- {name}' under resources",
                    file=os.path.join(folder, name), line=1))
    return problems
