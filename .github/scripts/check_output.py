#!/usr/bin/env python3
"""Check every object of rendered/ against its schema: built-in kinds with kubernetes-validate --strict,
custom resources against their CRD (tfjobgen.gitops.crds, the check `tfjobgen diff --crds` runs on what a
change adds). Here it is every object, so a CRD bump in cluster-tools/versions.yaml re-checks the objects
a change did not touch, and a kind with no CRD in the folder is an error, not a warning.

    python .github/scripts/check_output.py CRD_DIR [RENDERED_DIR]

rendered/ is the build (`tfjobgen hydrate --check` holds the two equal, in the step after). One line per
problem, `rendered/<file>: <Kind> <namespace>/<name>: <field>: <message>`, and exit 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: check_output.py CRD_DIR [RENDERED_DIR]", file=sys.stderr)
        return 2
    from tfjobgen.gitops import crds

    crd_dir, rendered = Path(argv[0]), Path(argv[1] if len(argv) == 2 else "rendered")
    schemas = crds.load(crd_dir)
    if not schemas:
        print(f"check_output: {crd_dir}: no CustomResourceDefinition found", file=sys.stderr)
        return 1
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    objects, where = [], {}
    for path in sorted(rendered.rglob("*.yaml")):
        for obj in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader):
            if isinstance(obj, dict):
                objects.append(obj)
                where[id(obj)] = path
    problems = crds.validate(objects, schemas)
    for obj, severity, message in problems:
        meta = obj.get("metadata") or {}
        if severity == "warning" and message.startswith("no schema for"):
            message = f"no CRD in {crd_dir} for {obj.get('kind')} ({obj.get('apiVersion')}): fetch_crds.py lists it?"
        print(f"{where[id(obj)]}: {obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}: {message}",
              file=sys.stderr)
    print(f"{len(objects)} objects of {rendered} checked against {len(schemas)} CRD versions and Kubernetes' "
          f"schemas: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
