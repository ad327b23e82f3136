"""`make dist`'s wheel, installed as a user installs it, runs through kustomize with the plugin it carries.

The wheel and sdist are built as `make dist` builds them (python -m build --no-isolation with the venv's pinned
hatchling, SOURCE_DATE_EPOCH set), checked with twine, and built twice to the same bytes. Then a fresh virtual
environment outside the repository installs the wheel with pip, offline: `--no-index`, the wheel's folder and
the wheels of the generator's dependencies `make venv` keeps in the venv (.venv/wheelhouse). kubectl's kustomize
builds a small overlay (one job, a ClusterProfile) with KUSTOMIZE_PLUGIN_HOME=$(tfjobgen plugin-home): the plugin
is the installed package's copy, and the tfjobgen it runs is that venv's, with no repository on the path; its
output must be what this checkout renders for the same job.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, kubectl, run_tfjobgen, uses

WHEELHOUSE = Path(sys.prefix) / "wheelhouse"  # the Makefile's venv rule fills it
JOB = "wide-deep.yaml"
PROFILE = REPO / "overlays" / "seed-80c" / "cluster-profile.yaml"


def _run(command: list, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=300, **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, command))} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc


def build_dist(out: Path) -> list[Path]:
    """The wheel and sdist of this checkout, as `make dist` builds them."""
    epoch = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%ct"], capture_output=True,
                           text=True).stdout.strip() or "315532800"
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, REPO],
         env={**os.environ, "SOURCE_DATE_EPOCH": epoch})
    return sorted(out.iterdir())


@pytest.fixture(scope="module")
@uses("slow")
def dist(tmp_path_factory) -> list[Path]:
    return build_dist(tmp_path_factory.mktemp("dist"))


def _wheel(files: list[Path]) -> Path:
    (wheel,) = [f for f in files if f.suffix == ".whl"]
    return wheel


def test_the_wheel_and_sdist_pass_twine_and_are_the_same_bytes_each_time(dist, tmp_path):
    assert [f.name for f in dist] == ["tfjobgen-0.1.0-py3-none-any.whl", "tfjobgen-0.1.0.tar.gz"]
    _run([sys.executable, "-m", "twine", "check", "--strict", *dist])
    again = build_dist(tmp_path / "again")
    assert [f.read_bytes() for f in again] == [f.read_bytes() for f in dist], "SOURCE_DATE_EPOCH: one commit, one wheel"


def test_the_wheel_carries_what_an_installed_tfjobgen_reads(dist):
    with zipfile.ZipFile(_wheel(dist)) as wheel:
        modes = {info.filename: info.external_attr >> 16 for info in wheel.infolist()}
        metadata = wheel.read("tfjobgen-0.1.0.dist-info/METADATA").decode()
    for schema in (REPO / "schemas").glob("*.json"):
        assert f"tfjobgen/schemas/{schema.name}" in modes
    assert modes["tfjobgen/plugins/tfjobgen.dev/v1alpha1/clusterprofile/ClusterProfile"] & 0o111, "executable"
    assert "tfjobgen/cluster-tools/versions.yaml" in modes and "tfjobgen/cluster/plane/kwok.yaml" in modes
    assert "tfjobgen/docs/priority-classes.yaml" in modes, "cluster up creates them, installed or not"
    assert not [n for n in modes if n.startswith(("jobs/", "tests/", "docs/", "rendered/"))]
    def name(requirement: str) -> str:
        return re.split(r"[<>=;\s\[]", requirement)[0].lower()

    required = {name(line.removeprefix("Requires-Dist: ")) for line in metadata.splitlines()
                if line.startswith("Requires-Dist: ") and "extra ==" not in line}
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert required == {name(d) for d in pyproject["project"]["dependencies"]}, "the generator's dependencies only"


def fresh_venv(folder: Path, wheel: Path) -> Path:
    """A virtual environment at `folder` with tfjobgen installed from `wheel`, offline; returns its bin/."""
    if not any(WHEELHOUSE.glob("*.whl")):
        pytest.fail(f"{WHEELHOUSE}: no wheels of tfjobgen's dependencies; run `make venv` (rm {sys.prefix}/.installed "
                    "first if the venv predates it)")
    _run([sys.executable, "-m", "venv", folder])  # its pip comes from ensurepip, offline
    _run([folder / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
          "--find-links", wheel.parent, "--find-links", WHEELHOUSE, "tfjobgen"])
    return folder / "bin"


def small_overlay(folder: Path) -> Path:
    """overlays/lab: one job of this repository and the seed's ClusterProfile, as a team's repository has them."""
    (folder / "jobs").mkdir(parents=True)
    shutil.copy(REPO / "jobs" / JOB, folder / "jobs" / JOB)
    (folder / "jobs" / "kustomization.yaml").write_text(f"resources:\n- {JOB}\n")
    overlay = folder / "overlays" / "lab"
    overlay.mkdir(parents=True)
    shutil.copy(PROFILE, overlay / "cluster-profile.yaml")
    (overlay / "kustomization.yaml").write_text("resources:\n- ../../jobs\ntransformers:\n- cluster-profile.yaml\n")
    return overlay


@uses("kubectl")
def test_a_fresh_venv_runs_the_installed_plugin_through_kustomize(dist, tmp_path):
    bin_dir = fresh_venv(tmp_path / "venv", _wheel(dist))
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not Path(p, "tfjobgen").exists())  # no other tfjobgen to fall back to
    home = _run([bin_dir / "tfjobgen", "plugin-home"], env=env, cwd=tmp_path).stdout.strip()
    site = _run([bin_dir / "python", "-c", "import tfjobgen, os; print(os.path.dirname(tfjobgen.__file__))"],
                env=env, cwd=tmp_path).stdout.strip()
    assert home == os.path.join(site, "plugins"), "the plugin comes from the installed package"
    assert not home.startswith(str(REPO))
    overlay = small_overlay(tmp_path / "team")
    built = _run([kubectl(), "kustomize", "--enable-alpha-plugins", overlay],
                 env={**env, "KUSTOMIZE_PLUGIN_HOME": home}, cwd=tmp_path).stdout
    rendered = run_tfjobgen("render", str(REPO / "jobs" / JOB), "--profile", str(PROFILE))
    assert rendered.returncode == 0, rendered.stderr
    assert built == rendered.stdout, "the installed plugin builds what this checkout renders"


@uses("kubectl")
def test_the_plugin_without_any_tfjobgen_says_how_to_install_it(tmp_path):
    home = tmp_path / "plugins"
    shutil.copytree(REPO / "plugins", home)  # a copy: no .venv four folders up, no package around it
    overlay = small_overlay(tmp_path / "team")
    env = {"PATH": os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                                   if not Path(p, "tfjobgen").exists()),
           "KUSTOMIZE_PLUGIN_HOME": str(home), "HOME": str(tmp_path)}
    proc = subprocess.run([kubectl(), "kustomize", "--enable-alpha-plugins", str(overlay)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode != 0
    assert "tfjobgen is not installed" in proc.stderr and "make dist" in proc.stderr and "pip install" in proc.stderr
    assert "'pip install tfjobgen'" not in proc.stderr, "no such package on PyPI"


# ---- the commands the docs name ----------------------------------------------------------------------------

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PLUGIN = REPO / "plugins" / "tfjobgen.dev" / "v1alpha1" / "clusterprofile" / "ClusterProfile"


def _make_targets() -> set[str]:
    targets = set()
    for line in (REPO / "Makefile").read_text().splitlines():
        match = re.match(r"^([A-Za-z][\w.-]*(?:\s+[A-Za-z][\w.-]*)*)\s*:(?!=)", line)
        if match:
            targets |= set(match[1].split())
    return targets


def _make_commands(text: str) -> list[str]:
    """The make targets in the page's code: `make a b` spans and lines of ``` blocks (prose "make it" is no command)."""
    code = re.findall(r"```[^\n]*\n(.*?)```", text, re.DOTALL)
    lines = [line.split(" #")[0] for block in code for line in block.splitlines()]  # not the comments
    lines += re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.DOTALL))
    found = []
    for line in lines:
        for command in re.findall(r"(?:^|[;&|(]\s*|\$ |time )make ([^#;&|)]*)", line.strip()):
            for word in command.split():
                if not re.fullmatch(r"[a-z][\w-]*", word):
                    break  # VAR=value, -C dir, a path: the targets are over
                found.append(word)
    return found


def test_every_make_target_the_docs_name_exists():
    targets = _make_targets()
    assert {"dist", "venv", "test", "test-fast"} <= targets
    named = {(page.relative_to(REPO).as_posix(), target) for page in DOCS for target in _make_commands(page.read_text())}
    assert ("README.md", "dist") in named
    missing = sorted((page, target) for page, target in named if target not in targets)
    assert not missing, f"the docs name make targets the Makefile lacks: {missing}"


def test_no_page_or_message_tells_anyone_to_pip_install_a_package_pypi_does_not_have():
    bare = re.compile(r"""pip install ['"]?tfjobgen(\[[\w,]*\])?['"]?(?!\S*\s*@|-)""")
    pages = [*DOCS, PLUGIN, *sorted((REPO / "generator" / "tfjobgen").rglob("*.py"))]  # every module's messages
    found = [f"{p.relative_to(REPO)}:{n}" for p in pages for n, line in enumerate(p.read_text().splitlines(), 1)
             if bare.search(line)]
    assert not found, f"`pip install tfjobgen` finds nothing on PyPI; name the wheel or a pinned tag: {found}"
    readme = (REPO / "README.md").read_text()
    assert "make dist" in readme and re.search(r"tfjobgen @ git\+https://\S+@v\d", readme)
    assert "tfjobgen plugin-home" in readme


def test_an_extras_install_is_said_in_one_place_and_names_what_really_installs():
    """The messages that need an extra (the cluster client, matplotlib, TensorFlow) take it from one home."""
    from tfjobgen.shared import install

    said = install.extra("cluster")
    assert "tfjobgen[cluster] @ " in said and "make dist" in said and "git+https://" in said, said
    homes = [p.relative_to(REPO).as_posix() for p in sorted((REPO / "generator" / "tfjobgen").rglob("*.py"))
             if "tfjobgen[" in p.read_text()]
    assert homes == ["generator/tfjobgen/shared/install.py"], homes


def test_cluster_up_reads_the_priority_classes_the_package_carries():
    """An installed `cluster up` has no repository to read docs/ from: the wheel carries the file (force-include),
    found as every other packaged file is."""
    from tfjobgen.cluster import control
    from tfjobgen.shared import package_data

    assert str(control.PRIORITY_CLASSES_FILE) == package_data.find(control.PRIORITY_CLASSES)
    included = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert included["force-include"][control.PRIORITY_CLASSES] == f"tfjobgen/{control.PRIORITY_CLASSES}"


def test_the_venv_rule_says_what_it_is_doing_while_pip_runs():
    """`make demo` on a fresh clone spends minutes in pip: its progress shows, not three silent minutes."""
    makefile = (REPO / "Makefile").read_text()
    rule = makefile[makefile.index("$(VENV)/.installed:"):makefile.index("\nvenv:")]
    installs = [line for line in rule.splitlines() if "pip install" in line]
    assert installs and not [line for line in installs if "--quiet" in line], installs
