"""Helpers for the GitOps tests: small throwaway repositories, git, the CMP plugin, upstream CRDs.

Most tests work on a copy of the tool with three small jobs of the sample repository
(tests/fixtures/sample-repo; builds take a fraction of a second); the tests of rendered/
and of the two modes' agreement use all of the sample. Tests never change /work/main's git
state: every git repository here is created under pytest's tmp_path.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
# crd_dir: the tests here import it from this module
from conftest import REPO, SAMPLE, crd_dir, need, sample_repo, uses  # noqa: F401

PLUGIN_YAML = REPO / "argocd" / "plugin" / "plugin.yaml"
# Small jobs that still cover the overlays' patches (prod-96c patches wide-deep) and pools (deeprec-ctr).
SMALL_JOBS = ("deeprec-starserver.yaml", "scene2-case1.yaml", "wide-deep.yaml")
PYTHON_BIN = str(Path(sys.executable).parent)


def copy_repo(destination: Path, jobs: tuple[str, ...] | None = SMALL_JOBS) -> Path:
    """A working tree of the tool and the sample's build inputs (no rendered/); `jobs` picks job files (None: all)."""
    sample_repo(destination, parts=("bases", "overlays", "argocd/base") + (("jobs",) if jobs is None else ()))
    if jobs is not None:
        (destination / "jobs").mkdir()
        for job in jobs:
            shutil.copy(SAMPLE / "jobs" / job, destination / "jobs" / job)
        write_job_list(destination)
    return destination


def write_job_list(repo: Path) -> None:
    """jobs/kustomization.yaml listing every job file in jobs/."""
    names = sorted(p.name for p in (repo / "jobs").glob("*.yaml") if p.name != "kustomization.yaml")
    (repo / "jobs" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        + "".join(f"- {n}\n" for n in names))


@uses("git")
def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.com",
           "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.com", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1"}
    proc = subprocess.run([need("git", shutil.which("git")), "-C", str(repo), *args], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, f"git {' '.join(args)} failed: {proc.stderr}"
    return proc.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    if not (repo / ".git").exists():
        git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@uses("kubectl")  # hydrate and diff build overlays
def tfjobgen(repo: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The installed CLI (the package under test), run in `repo` as a user would."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "generator"), "PATH": PYTHON_BIN + os.pathsep + os.environ["PATH"],
           **(env or {})}
    return subprocess.run([sys.executable, "-m", "tfjobgen", *args], capture_output=True, text=True, cwd=repo,
                          env=env, timeout=300)


@uses("kubectl")
def kustomize_shim(folder: Path) -> Path:
    """A folder with `kustomize`: a real one if on PATH, else one forwarding `build ARGS` to `kubectl kustomize ARGS`.

    Argo CD's sidecar runs a standalone kustomize (5.8); none is installable here, so the tests use
    kubectl's embedded kustomize (5.5, the same engine), exactly as the CMP's generate command calls it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    real = shutil.which("kustomize")
    if real:
        os.symlink(real, folder / "kustomize")
        return folder
    kubectl = need("kubectl", shutil.which("kubectl"))
    shim = folder / "kustomize"
    shim.write_text('#!/bin/sh\n# kustomize build ARGS -> kubectl kustomize ARGS\n'
                    'if [ "$1" != build ]; then echo "kustomize shim: only build is supported" >&2; exit 2; fi\n'
                    f'shift\nexec {kubectl} kustomize "$@"\n')
    shim.chmod(0o755)
    return folder


def strip_exec_bits(folder: Path) -> None:
    """What Argo CD does to a checkout without preserveFileMode: every file 0644."""
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            path.chmod(0o644)


@uses("kubectl")
def run_cmp_generate(app_dir: Path, repo_root: Path, shim: Path, env: dict | None = None):
    """plugin.yaml's generate command, run the way argocd-cmp-server runs it."""
    spec = yaml.safe_load(PLUGIN_YAML.read_text())["spec"]["generate"]
    relative = app_dir.relative_to(repo_root).as_posix()
    argocd_env = {
        "ARGOCD_APP_NAME": f"tfjobgen-{app_dir.name}",
        "ARGOCD_APP_NAMESPACE": "argocd",
        "ARGOCD_APP_REVISION": "0123456789abcdef0123456789abcdef01234567",
        "ARGOCD_APP_REVISION_SHORT": "0123456",
        "ARGOCD_APP_SOURCE_PATH": relative,
        "ARGOCD_APP_SOURCE_REPO_URL": "https://github.com/example-org/tfjobgen.git",
        "ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
        "KUBE_VERSION": "1.32.4",
        "KUBE_API_VERSIONS": "v1,apps/v1,batch/v1,networking.k8s.io/v1",
    }
    base_env = {"PATH": os.pathsep.join([str(shim), PYTHON_BIN, "/usr/local/bin", "/usr/bin", "/bin"]),
                "HOME": str(repo_root.parent), "LANG": "C.UTF-8"}
    return subprocess.run([*spec["command"], *spec.get("args", [])], cwd=app_dir, capture_output=True, text=True,
                          env={**base_env, **argocd_env, **(env or {})}, timeout=300)


def load_objects(text: str) -> list[dict]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: a rendered overlay is 1.5 MB
    return [d for d in yaml.load_all(text, Loader=loader) if isinstance(d, dict)]


def documents(text: str) -> list[str]:
    """The YAML documents of a stream, as text, without comment lines (both modes use one YAML writer)."""
    body = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))
    return [d for d in re.split(r"^---\n", body, flags=re.MULTILINE) if d.strip()]


@functools.cache
def committed_rendered_documents(overlay: str, namespace: str = "") -> tuple[str, ...]:
    """The YAML documents of the sample's rendered/<overlay>/[<namespace>/] (read once per test session)."""
    folder = SAMPLE / "rendered" / overlay / namespace if namespace else SAMPLE / "rendered" / overlay
    return tuple(d for path in sorted(folder.rglob("*.yaml")) for d in documents(path.read_text()))


@functools.cache
def committed_rendered(overlay: str) -> tuple[dict, ...]:
    """The objects of the sample's rendered/<overlay>/."""
    return tuple(o for d in committed_rendered_documents(overlay) for o in load_objects(d))
