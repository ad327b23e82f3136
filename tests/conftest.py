"""Shared test helpers: the repository, the real tools, and ways to run tfjobgen.

Tests use the real kubectl (its embedded kustomize), kpt, kubernetes-validate
and the upstream CRDs. A missing tool skips its tests with the reason, except
under `.ci/run` (TFJOBGEN_REQUIRE_TOOLS=1), where a missing tool is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
JOBS = REPO / "jobs"
OVERLAYS = sorted(p.parent.name for p in (REPO / "overlays").glob("*/kustomization.yaml"))
PLUGIN_HOME = REPO / "plugins"
REQUIRE_TOOLS = os.environ.get("TFJOBGEN_REQUIRE_TOOLS") == "1"

sys.path.insert(0, str(REPO / "generator"))  # the package, even without an install


def need(tool: str, found: str | None, why: str = "") -> str:
    """The tool's path, or skip (fail under .ci/run) when it is missing."""
    if found:
        return found
    message = f"{tool} is not available{': ' + why if why else ''}"
    if REQUIRE_TOOLS:
        pytest.fail(message + " (TFJOBGEN_REQUIRE_TOOLS=1)")
    pytest.skip(message)


CRD_DIR = REPO.parent / "shared" / "crds"


def crd_dir() -> Path:
    """../shared/crds (the upstream CRDs), or skip (fail under .ci/run) when it is absent."""
    return Path(need("upstream CRDs", str(CRD_DIR) if CRD_DIR.is_dir() else None,
                     f"expected the upstream CRD folder at {CRD_DIR} (../shared/crds from the repository root)"))


def kubectl() -> str:
    return need("kubectl", shutil.which("kubectl"))


def kpt() -> str:
    candidates = [shutil.which("kpt"), "/usr/lib/google-cloud-sdk/bin/kpt"]
    return need("kpt", next((c for c in candidates if c and os.access(c, os.X_OK)), None),
                "it comes with the google-cloud-cli-kpt package (dpkg -L google-cloud-cli-kpt)")


def tfjobgen_command() -> list[str]:
    return [sys.executable, "-m", "tfjobgen"]


def run_tfjobgen(*args: str, stdin: str | None = None, cwd: Path | None = None, env: dict | None = None):
    """Run the CLI as a user would, in its own process."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO / "generator"), **(env or {})}
    return subprocess.run(tfjobgen_command() + list(args), input=stdin, capture_output=True, text=True,
                          cwd=cwd or REPO, env=full_env, timeout=120)


def kustomize_build(directory: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`kubectl kustomize --enable-alpha-plugins` with the repository's plugin home."""
    full_env = {**os.environ, "KUSTOMIZE_PLUGIN_HOME": str(PLUGIN_HOME), **(env or {})}
    venv_bin = str(Path(sys.executable).parent)
    full_env["PATH"] = venv_bin + os.pathsep + full_env.get("PATH", "")
    return subprocess.run([kubectl(), "kustomize", "--enable-alpha-plugins", *extra, str(directory)],
                          capture_output=True, text=True, env=full_env, timeout=300)


def load_yaml_stream(text: str) -> list[dict]:
    import yaml

    from tfjobgen.yamlstyle import Loader

    return [d for d in yaml.load_all(text, Loader=Loader) if d is not None]


@pytest.fixture(scope="session")
def built_overlays() -> dict[str, str]:
    """Every overlay built once with kubectl kustomize: name -> output text."""
    result = {}
    for overlay in OVERLAYS:
        proc = kustomize_build(REPO / "overlays" / overlay)
        assert proc.returncode == 0, f"overlays/{overlay} failed to build:\n{proc.stderr}"
        result[overlay] = proc.stdout
    return result


def render(*paths, profile: str | None = None) -> list[dict]:
    """Objects the job files become (in-process, the same pipeline kustomize runs)."""
    from tfjobgen import emit, pipeline

    intents, problems = pipeline.load_intents([str(p) for p in paths])
    expansion = pipeline.expand(intents, pipeline.load_profile(str(profile) if profile else None))
    errors = [p.format() for p in problems + expansion.problems if p.is_error]
    assert not errors, "\n".join(errors)
    return emit.kustomize_order([obj for group in expansion.objects for obj in group])


def problems_of(text: str, tmp_path, profile: str | None = None, name: str = "job.yaml"):
    """Every problem `tfjobgen validate` finds in a job file with this text (in-process)."""
    from tfjobgen import pipeline

    path = tmp_path / name
    path.write_text(text)
    intents, problems = pipeline.load_intents([str(path)])
    loaded = pipeline.load_profile(str(profile) if profile else None)
    for intent in intents:
        problems += pipeline.validate(intent, loaded)[1]
    return problems


@pytest.fixture(scope="session")
def overlay_objects(built_overlays) -> dict[str, list[dict]]:
    """The built overlays, parsed once: name -> objects (treat as read-only)."""
    return {name: load_yaml_stream(text) for name, text in built_overlays.items()}
