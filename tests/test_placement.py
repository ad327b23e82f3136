"""Placement that holds on a busy cluster: every example job, under many arrival orders, after a PS
is evicted and a server lost, and beside the other jobs of its overlay, on the scheduler model of
tests/simulation.

The figures these tests assert are the table of docs/design.md ("What each topology
guarantees"); a test checks the committed table is the one they produce. Every run is
seeded: a failure names its seed, and the same seed replays the same run.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys

import pytest

from conftest import REPO
from simulation import cases, scenarios
from simulation.objects import nodes
from tfjobgen.pods import Pod

DESIGN = REPO / "docs" / "design.md"
TABLE_START, TABLE_END = "<!-- placement table: start -->", "<!-- placement table: end -->"


@pytest.fixture(scope="module")
def figures(overlay_objects) -> dict:
    """Every cell of the table, computed once: (row, column) -> Figure."""
    return cases.figures(overlay_objects)


@pytest.mark.parametrize("row, column", [cell for cell, claim in cases.CLAIMS.items() if claim == cases.GUARANTEED])
def test_the_layout_holds_where_it_is_guaranteed(figures, row, column):
    figure = figures[row, column]
    assert figure.all_good, f"{row}, {column}: {figure.report()}"


@pytest.mark.parametrize("row, column", [cell for cell, claim in cases.CLAIMS.items() if claim == cases.NOT_GUARANTEED])
def test_the_layout_breaks_where_it_is_not(figures, row, column):
    """Negative control: without PriorityClasses a colocated PS waits for a server other jobs' pods never leave."""
    figure = figures[row, column]
    assert figure.runs > 0 and figure.good <= figure.runs // 4, figure.report()
    assert all("placed" in failure for failure in figure.failures)


def test_the_design_notes_show_these_figures(figures):
    text = DESIGN.read_text()
    committed = text[text.index(TABLE_START) + len(TABLE_START):text.index(TABLE_END)].strip("\n") + "\n"
    assert committed == cases.table(figures), \
        "docs/design.md's placement table is stale: run .venv/bin/python docs/placement.py"


def test_before_packing_a_late_ps_found_no_server():
    """The reported failure, reproduced: isolated workers that do not pack spread over every server,
    and a PS that comes after them has nowhere to go (scene 2 case 2 on 25 servers)."""
    workload = scenarios.Workload.of(cases.render("scene2-case2"))
    unpacked = []
    for pod in workload.pods:
        spec = copy.deepcopy(pod.spec)
        if pod.role == "worker":  # the rules as they were: workers only repel PS
            spec["affinity"].pop("podAffinity")
            spec.pop("topologySpreadConstraints")
        unpacked.append(Pod(pod.owner, pod.namespace, pod.hostname, pod.subdomain, pod.labels, pod.annotations,
                            spec, pod.env, pod.unresolved, pod.index))
    late = [p for p in unpacked if p.role == "worker"] + [p for p in unpacked if p.role == "ps"]
    old = scenarios.Workload(workload.objects, late, workload.topology, workload.namespaces)
    new = scenarios.Workload(workload.objects, [p for p in workload.pods if p.role == "worker"]
                             + [p for p in workload.pods if p.role == "ps"], workload.topology, workload.namespaces)
    for seed in range(5):
        assert scenarios.arrive(old, nodes(25), seed, shuffle=False).pending, f"seed {seed}: the old rules held"
        assert scenarios.arrive(new, nodes(25), seed, shuffle=False).pending == [], f"seed {seed}"


@pytest.mark.scheduler  # in a fresh process, out of the marker finder's sight
def test_the_same_seed_replays_the_same_run():
    """Reproducible under any hash seed: the placement of one run, in this process and in a fresh one."""
    code = ("import sys; sys.path[:0] = [sys.argv[1] + '/generator', sys.argv[1] + '/tests']\n"
            "from simulation import cases, scenarios\n"
            "w = scenarios.Workload.of(cases.render('scene1-case2'))\n"
            "run = scenarios.arrive(w, cases.seed_cluster(6), 7)\n"
            "print(sorted((p.task, p.node) for p in run.state.bound()))\n")
    outputs = {subprocess.run([sys.executable, "-c", code, str(REPO)], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("0", "4242")}
    assert len(outputs) == 1 and "scene1-case2/ps:0" in outputs.pop()


@pytest.mark.parametrize("version", ["1.30", "1.33", "1.37"])
def test_the_documented_priority_classes_are_valid(version):
    from test_kustomize_e2e import _validator

    import yaml
    kv = _validator()
    classes = list(yaml.safe_load_all(cases.PRIORITY_CLASSES_FILE.read_text()))
    assert [c["metadata"]["name"] for c in classes] == ["tfjobgen-ps", "tfjobgen-worker"]
    for obj in classes:
        kv.validate(obj, version, strict=True)
    profiles = [REPO / "overlays" / o / "cluster-profile.yaml" for o in ("seed-80c", "prod-96c")]
    for profile in profiles:
        named = yaml.safe_load(profile.read_text())["spec"]["priorityClasses"]
        assert set(named.values()) == {"tfjobgen-ps", "tfjobgen-worker"}, f"{profile} names classes docs do not show"


# ---- the same scenarios on the jobset and tfjob backends -----------------------------------------

@pytest.mark.parametrize("backend", ["jobset", "tfjob"])
@pytest.mark.parametrize("row, job", [("isolated, with pools", "scene2-case2"), ("spread (preferred)", "wide-deep"),
                                      ("spread (required)", "wide-deep")])
def test_the_layout_holds_on_the_other_backends(backend, row, job):
    """The pods JobSet's child Jobs and the TFJob operator create carry the same placement rules: arrival
    orders and a PS evicted then a node lost hold as on native (fewer seeds: the rules are the same dicts)."""
    def patch(intent: dict) -> None:
        intent["spec"]["backend"] = backend
        if row == "spread (required)":
            cases.required_spread(intent)

    need = cases.NEEDS[job]
    if row == "isolated, with pools":
        objects, cluster = cases.render(job, cases.POOLS_PROFILE, patch), lambda spare: cases.pools_cluster(need, spare)
    else:
        objects, cluster = cases.render(job, patch=patch), lambda spare: cases.seed_cluster(need.servers + spare)
    workload = scenarios.Workload.of(objects)
    assert {pod.owner.startswith(job) for pod in workload.pods} == {True} and len(workload.pods) > 0
    arrival = cases.arrival(workload, lambda: cluster(0), seeds=range(10))
    assert arrival.all_good, arrival.report()
    replacement = cases.replacement(workload, job, lambda: cluster(1), seeds=range(5))
    assert replacement.all_good, replacement.report()
