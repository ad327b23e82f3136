#!/usr/bin/env python3
"""Fetch the upstream CRDs that rendered objects and the Argo CD objects are validated against.

Every URL is derived from cluster-tools/versions.yaml, the one place the controllers' releases are
named (tests/gitops/test_ci_and_hooks.py holds the two equal): the CRDs are those of the releases the
local cluster runs. One file per CRD, named as the tests' CRD folder names them (tests/conftest.py).

    python .github/scripts/fetch_crds.py DIR          fetch into DIR
    python .github/scripts/fetch_crds.py --list       print "file url", one a line

With TFJOBGEN_CRD_MIRROR=FOLDER each file is copied from FOLDER/<file> instead of downloaded: the
stand-in for raw.githubusercontent.com under act (tests/act), where nothing leaves the machine.
Standard library and PyYAML only. Errors are one line and exit 1; DIR is written whole or not at all.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def _versions() -> Path:
    """This repository's cluster-tools/versions.yaml; in a team's jobs repository (`tfjobgen init`), which
    has none, the one the installed tfjobgen carries: the CRDs of the releases that tfjobgen was tested with."""
    own = REPO / "cluster-tools" / "versions.yaml"
    if own.is_file():
        return own
    from tfjobgen.shared import package_data

    return Path(package_data.find("cluster-tools/versions.yaml"))


VERSIONS = _versions()
RAW = "https://raw.githubusercontent.com"

# (family of versions.yaml, file, path in the family's repository at its release tag)
CRDS = [
    ("argocd", "argoproj.io_application-crd.yaml", "argoproj/argo-cd/{version}/manifests/crds/application-crd.yaml"),
    ("argocd", "argoproj.io_applicationset-crd.yaml",
     "argoproj/argo-cd/{version}/manifests/crds/applicationset-crd.yaml"),
    ("argocd", "argoproj.io_appproject-crd.yaml", "argoproj/argo-cd/{version}/manifests/crds/appproject-crd.yaml"),
    ("training-operator", "kubeflow.org_tfjobs.yaml",
     "kubeflow/training-operator/{version}/manifests/base/crds/kubeflow.org_tfjobs.yaml"),
    ("jobset", "jobset.x-k8s.io_jobsets.yaml",
     "kubernetes-sigs/jobset/{version}/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"),
    ("kueue", "kueue.x-k8s.io_localqueues.yaml",
     "kubernetes-sigs/kueue/{version}/config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml"),
    ("kueue", "kueue.x-k8s.io_workloads.yaml",
     "kubernetes-sigs/kueue/{version}/config/components/crd/bases/kueue.x-k8s.io_workloads.yaml"),
    ("volcano", "scheduling.volcano.sh_podgroups.yaml",
     "volcano-sh/volcano/{version}/config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml"),
    ("volcano", "batch.volcano.sh_jobs.yaml",
     "volcano-sh/volcano/{version}/config/crd/volcano/bases/batch.volcano.sh_jobs.yaml"),
    ("scheduler-plugins", "scheduling.x-k8s.io_podgroups.yaml",
     "kubernetes-sigs/scheduler-plugins/{version}/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"),
    # The operator `cluster up --monitoring` runs (versions.yaml's prometheus-operator family).
    ("prometheus-operator", "monitoring.coreos.com_podmonitors.yaml",
     "prometheus-operator/prometheus-operator/{version}/example/prometheus-operator-crd/"
     "monitoring.coreos.com_podmonitors.yaml"),
    ("prometheus-operator", "monitoring.coreos.com_prometheusrules.yaml",
     "prometheus-operator/prometheus-operator/{version}/example/prometheus-operator-crd/"
     "monitoring.coreos.com_prometheusrules.yaml"),
]
NOT_IN_VERSIONS: dict[str, str] = {}  # a family whose CRDs are fetched but that versions.yaml does not build


class Failed(Exception):
    pass


def urls() -> list[tuple[str, str]]:
    """(file, url) of every CRD, at the releases versions.yaml names."""
    with open(VERSIONS, encoding="utf-8") as handle:
        families = yaml.safe_load(handle)
    found = []
    for family, name, path in CRDS:
        version = NOT_IN_VERSIONS.get(family) or (families.get(family) or {}).get("version")
        if not version:
            raise Failed(f"{VERSIONS}: {family}.version: missing (the CRD {name} is fetched at it)")
        found.append((name, f"{RAW}/{path.format(version=version)}"))
    return found


def _download(url: str, target: Path) -> None:
    for attempt in range(3):
        try:
            with urllib.request.urlopen(url, timeout=60) as response, open(target, "wb") as out:
                shutil.copyfileobj(response, out)
            return
        except (urllib.error.URLError, OSError) as err:
            if attempt == 2:
                raise Failed(f"{url}: {err}") from None
            time.sleep(2 ** attempt)


def fetch(directory: Path) -> int:
    mirror = os.environ.get("TFJOBGEN_CRD_MIRROR")
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        for name, url in urls():
            if mirror:
                source = Path(mirror) / name
                if not source.is_file():
                    raise Failed(f"{source}: missing (TFJOBGEN_CRD_MIRROR stands in for {url})")
                shutil.copyfile(source, staging / name)
            else:
                _download(url, staging / name)
        if directory.exists():
            shutil.rmtree(directory)
        staging.rename(directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f"{len(CRDS)} CRDs in {directory}" + (f" (copied from {mirror})" if mirror else ""))
    return 0


def main(argv: list[str]) -> int:
    try:
        if argv == ["--list"]:
            for name, url in urls():
                print(name, url)
            return 0
        if len(argv) != 1 or argv[0].startswith("-"):
            print("usage: fetch_crds.py DIR | --list", file=sys.stderr)
            return 2
        return fetch(Path(argv[0]))
    except Failed as err:
        print(f"fetch_crds: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
