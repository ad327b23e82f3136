"""Clusters that run jobs on their real controllers, one at a time for a whole test module.

A cell is a job of jobs/ on a backend under a profile, with or without a gang scheduler. Cells of
one profile and gang setting share a cluster: `Clusters.get` starts it the first time (stopping
the one before), applies every cell of that setting at once, each in a namespace of its own
labelled Pod Security "restricted", and the tests then look at their cell. A gang setting whose
controller is not built (or has no module yet) skips its cells, saying which.
"""

from __future__ import annotations

import contextlib
import importlib
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from cluster_support import LocalCluster, local_cluster, need_cluster_tools
from conftest import JOBS, SAMPLE, crd_dir, need, uses

from tfjobgen.backends.base import DecodedJob
from tfjobgen.artifacts import programs
from tfjobgen.harness import conformance
from tfjobgen.expand import pipeline
from tfjobgen.place import place

PROFILES = {name: SAMPLE / "overlays" / name / "cluster-profile.yaml" for name in ("seed-80c", "prod-96c")}
# spec.gang of each gang setting (a cell's profile is the base profile with it).
GANGS = conformance.GANG_SETTINGS  # spec.gang of each gang setting
CONTROLLERS = ("jobset-controller", "training-operator")  # every cell needs both (and the Job controller)
_VARIANTS = Path(tempfile.mkdtemp(prefix="tfjobgen-gang-profiles-"))


@dataclass(frozen=True)
class Cell:
    job: str  # a job file's stem in jobs/
    backend: str
    profile: str  # a key of PROFILES
    gang: str = "none"  # a key of GANGS
    scenario: str = ""  # what a test does to it, when several tests run the same job on one cluster
    suspend: bool = False  # applied suspended (spec.suspend, runPolicy.suspend), as Kueue holds a job

    @property
    def namespace(self) -> str:
        return "-".join(filter(None, (self.scenario, self.job, self.backend)))[:63]

    @property
    def setting(self) -> tuple[str, str]:
        return (self.profile, self.gang)

    def __str__(self) -> str:
        return "-".join(filter(None, (self.scenario, self.job, self.backend, self.profile,
                                      "" if self.gang == "none" else self.gang)))


@dataclass
class Applied:
    rendered: list[dict]
    decoded: DecodedJob
    applied_at: float


@dataclass
class Running:
    cluster: LocalCluster
    cells: dict[Cell, Applied] = field(default_factory=dict)


def profile_file(profile: str, gang: str) -> Path:
    """The profile of a setting: the overlay's own, or a copy of it with spec.gang set."""
    return conformance.profile_variant(PROFILES[profile], gang, _VARIANTS)


def skip_unless_gang_runs(gang: str, profile: str) -> None:
    """Skip a gang setting whose scheduler is not built (a failure under CI); the profile variant must run it."""
    if GANGS[gang] is None:
        return
    module_name = gang.replace("-", "_")
    module = importlib.import_module(f"tfjobgen.cluster.controllers.{module_name}")
    assert module.wanted(pipeline.load_profile(str(profile_file(profile, gang)))), \
        f"a {profile} profile with spec.gang {gang} does not start {gang}: controllers/{module_name}.py"
    lacking = programs.missing(module.PROGRAMS)
    need(gang, None if lacking else "built", f"{', '.join(lacking)} not built: run `make cluster-tools`")


def suspended(obj: dict) -> dict:
    """A JobSet or TFJob as Kueue holds it before admission: suspended (other objects unchanged)."""
    if obj["kind"] == "JobSet":
        return {**obj, "spec": {**obj["spec"], "suspend": True}}
    if obj["kind"] == "TFJob":
        return {**obj, "spec": {**obj["spec"], "runPolicy": {**obj["spec"]["runPolicy"], "suspend": True}}}
    return obj


@uses("cluster")  # tests that use it are marked as starting a local cluster (tests/conftest.py)
class Clusters:
    """One cluster at a time, for the cells of one setting."""

    def __init__(self, cells: list[Cell], nodes: dict[str, int]):
        self.cells, self.nodes = cells, nodes
        self.stack = contextlib.ExitStack()
        self.current: tuple[tuple[str, str], Running] | None = None

    def get(self, setting: tuple[str, str]) -> Running:
        if self.current and self.current[0] == setting:
            return self.current[1]
        self.close()
        need_cluster_tools(*CONTROLLERS)
        profile, gang = setting
        skip_unless_gang_runs(gang, profile)
        self.stack = contextlib.ExitStack()
        cluster = self.stack.enter_context(local_cluster(profile_file(profile, gang), self.nodes[profile]))
        assert "jobset" in cluster.state()["components"] and "training-operator" in cluster.state()["components"], \
            cluster.up_stderr
        conformance.install_addon_crds(cluster.objects, crd_dir())
        running = Running(cluster)
        self.current = (setting, running)
        for cell in (c for c in self.cells if c.setting == setting):
            rendered = conformance.render(JOBS / f"{cell.job}.yaml", profile_file(profile, gang), cell.backend,
                                          cell.namespace)
            if cell.suspend:
                rendered = [suspended(o) for o in rendered]
            self.namespace(cluster, cell.namespace)
            conformance.apply(cluster.objects, rendered)
            running.cells[cell] = Applied(rendered, conformance.decoded_job(rendered), time.monotonic())
        return running

    @staticmethod
    def namespace(cluster: LocalCluster, name: str) -> None:
        """A restricted namespace, with what the cluster's gang admission needs in it (Kueue's LocalQueue)."""
        place.job_namespace(cluster.objects, name, pipeline.load_profile(cluster.state()["profile"]))

    def any(self) -> Running:
        """The cluster running now, else the first setting's."""
        return self.current[1] if self.current else self.get(self.cells[0].setting)

    def close(self) -> None:
        self.current = None
        self.stack.close()
