"""cluster-tools/versions.yaml and the build of its families (programs.py), without building the big ones."""

from __future__ import annotations

import dataclasses
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from conftest import need

from tfjobgen.artifacts import go_build, programs


def _go() -> str:
    return need("go", shutil.which("go"), "the cluster-tools families are Go modules")


def _family(name: str) -> programs.Family:
    return next(f for f in programs.families() if f.name == name)


def test_every_family_pins_the_release_versions_yaml_names():
    """Each family's go.mod requires the version versions.yaml says (or is the program itself: `local`)."""
    _go()
    for family in programs.families():
        assert (family.folder / "go.mod").is_file() and (family.folder / "go.sum").is_file() \
            or family.version == programs.LOCAL, family.name
        go_build.check_pin(family)


def test_every_family_says_in_the_readme_what_the_proxy_served():
    headings = re.findall(r"^## (\S+)", (programs.TOOLS_DIR / "README.md").read_text(), re.MULTILINE)
    assert sorted(headings) == sorted(f.name for f in programs.families())


def test_a_local_version_is_only_for_a_program_of_our_own():
    """`version: local` with another module, or our own module with a release number, is refused."""
    _go()
    pause = _family("pause")
    assert pause.version == programs.LOCAL
    go_build.check_pin(pause)
    for wrong in (dataclasses.replace(pause, module="example.com/elsewhere"),
                  dataclasses.replace(pause, version="v1.0.0"),
                  dataclasses.replace(pause, assets=("main.go",))):
        with pytest.raises(go_build.BuildFailed, match="version local means a program of our own"):
            go_build.check_pin(wrong)
    with pytest.raises(go_build.BuildFailed, match="requires github.com/coredns/coredns v1.15.0, but versions.yaml"):
        go_build.check_pin(dataclasses.replace(_family("coredns"), version="v1.14.7"))


@pytest.mark.slow
def test_a_cluster_runs_the_newest_release_of_a_family_that_works_with_its_kubernetes(tmp_path, monkeypatch):
    """needs_kubernetes: the default release when the cluster meets it, else the newest other release that
    it meets, else TooOld naming what the default needs."""
    versions = tmp_path / "versions.yaml"
    versions.write_text(yaml.safe_dump({
        "ctl": {"module": "example.com/ctl", "version": "v0.12.0", "needs_kubernetes": "1.34", "programs": {"ctl": "x"}},
        "ctl-0.9": {"module": "example.com/ctl", "version": "v0.9.1", "release_of": "ctl", "needs_kubernetes": "1.31",
                    "programs": {"ctl": "x"}},
        "ctl-0.10": {"module": "example.com/ctl", "version": "v0.10.2", "release_of": "ctl", "needs_kubernetes": "1.32",
                     "programs": {"ctl": "x"}},
        "sched": {"module": "example.com/sched", "version": "v0.34.7", "needs_kubernetes": "1.34", "programs": {"sched": "x"}},
    }))
    monkeypatch.setattr(programs, "VERSIONS_FILE", versions)
    chosen = {k: programs.family_for("ctl", k).version for k in ("", "v1.37.2", "1.34", "v1.33.1", "1.32", "1.31")}
    assert chosen == {"": "v0.12.0", "v1.37.2": "v0.12.0", "1.34": "v0.12.0", "v1.33.1": "v0.10.2",
                      "1.32": "v0.10.2", "1.31": "v0.9.1"}
    assert programs.family_for("sched", "1.34").version == "v0.34.7"
    for program, kubernetes in (("ctl", "v1.30.14"), ("sched", "v1.33.0")):
        with pytest.raises(programs.TooOld) as refused:
            programs.family_for(program, kubernetes)
        assert f"needs Kubernetes 1.34 or newer, and this cluster runs {kubernetes}" in str(refused.value)


def test_pause_exits_0_when_stopped_and_leaves_no_zombie(tmp_path, monkeypatch):
    """The sandbox's process: a child it inherits and outlives is reaped; SIGHUP does not end it; SIGTERM
    and SIGINT end it with 0."""
    _go()
    monkeypatch.setenv(programs.CACHE_ENV, str(tmp_path / "tools"))
    pause = _family("pause")
    go_build.build(pause, tmp_path)
    binary = pause.installed_in / "pause"
    assert pause.is_built()
    for stop in (signal.SIGTERM, signal.SIGINT):
        # The shell starts a short child, then becomes pause: the child's parent is pause.
        process = subprocess.Popen(["sh", "-c", f"sleep 0.3 & echo $!; exec {binary}"], stdout=subprocess.PIPE,
                                   text=True)
        child = Path(f"/proc/{process.stdout.readline().strip()}/stat")
        reaped_by = time.monotonic() + 5  # the child ends after 0.3 s; a zombie would stay
        while child.exists() and time.monotonic() < reaped_by:
            time.sleep(0.05)
        assert not child.exists(), f"the exited child is left as a zombie: {child.read_text()[:80]}"
        process.send_signal(signal.SIGHUP)
        time.sleep(0.3)
        assert process.poll() is None, "SIGHUP ended pause"
        process.send_signal(stop)
        assert process.wait(timeout=5) == 0
