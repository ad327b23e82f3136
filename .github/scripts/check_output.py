#!/usr/bin/env python3
"""Check every object of rendered/ against its schema: built-in kinds with kubernetes-validate --strict,
custom resources against their CRD (tfjobgen.gitops.crds, the check `tfjobgen diff --crds` runs on what a
change adds). Here it is every object, so a CRD bump in cluster-tools/versions.yaml re-checks the objects
a change did not touch, and a kind with no CRD in the folder is an error, not a warning.

    python .github/scripts/check_output.py CRD_DIR [RENDERED_DIR]

rendered/ is the build (`tfjobgen hydrate --check` holds the two equal, in the step after). One line per
problem, `rendered/<file>: <Kind> <namespace>/<name>: <field>: <message>`, and exit 1. One process per core.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import yaml


def check_files(crd_dir: str, paths: list[str]) -> tuple[int, list[str]]:
    """(objects checked, one line per problem) for these files of rendered/."""
    from tfjobgen.gitops import crds

    schemas = crds.load(Path(crd_dir))
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    count, lines = 0, []
    for path in paths:
        objects = [o for o in yaml.load_all(Path(path).read_text(encoding="utf-8"), Loader=loader)
                   if isinstance(o, dict)]
        count += len(objects)
        for obj, severity, message in crds.validate(objects, schemas):
            meta = obj.get("metadata") or {}
            if severity == "warning" and message.startswith("no schema for"):
                message = f"no CRD in {crd_dir} for {obj.get('kind')} ({obj.get('apiVersion')}): is it in fetch_crds.py?"
            lines.append(f"{path}: {obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}: {message}")
    return count, lines


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: check_output.py CRD_DIR [RENDERED_DIR]", file=sys.stderr)
        return 2
    from tfjobgen.gitops import crds
    from tfjobgen.inputs.problems import InvalidInput

    crd_dir, rendered = argv[0], Path(argv[1] if len(argv) == 2 else "rendered")
    try:
        schemas = crds.load(Path(crd_dir))
    except InvalidInput as refused:  # a folder that is not there, a broken CRD file: one line each
        for problem in refused.problems:
            print(f"check_output: {problem.format()}", file=sys.stderr)
        return 1
    if not schemas:
        print(f"check_output: {crd_dir}: no CustomResourceDefinition found", file=sys.stderr)
        return 1
    paths = [str(p) for p in sorted(rendered.rglob("*.yaml"))]
    # One share of the files per core: a core checks about 600 objects a second, and a thousand jobs make
    # twenty thousand objects (docs/benchmarks.md, "The jobs pipeline under act").
    workers = max(1, min(os.cpu_count() or 1, len(paths)))
    shares = [paths[n::workers] for n in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        results = list(pool.map(check_files, [crd_dir] * workers, shares))
    count = sum(n for n, _ in results)
    order = {path: n for n, path in enumerate(paths)}
    problems = sorted((line for _, lines in results for line in lines), key=lambda l: (order[l.split(": ")[0]], l))
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{count} objects of {rendered} checked against {len(schemas)} CRD versions and Kubernetes' "
          f"schemas: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
