"""A profile that puts the jobs' Grafana dashboards in the team's Grafana namespace, delivered both ways.

`spec.monitoring.dashboards.namespace` makes each job's `<job>-dashboard` ConfigMap live in that namespace,
apart from the job's other objects. It travels with its job: in the team's Application (plugin mode:
`tfjobgen build --namespace TEAM`; rendered mode: `rendered/<cluster>/<team>/<job>.yaml`), which may
write there because the AppProject has that destination; and the ApplicationSet, whose list is the
AppProject's destinations, makes no Application for it, because the AppProject's annotation
`tfjobgen.dev/dashboards-namespace` names it and the generator's selector leaves it out (issue 33: both
modes refused the build as "split across namespaces", and plugin mode dropped the ConfigMap).
"""

from __future__ import annotations

import subprocess

import pytest
from conftest import REPO, kubectl
from gitops_support import copy_repo, load_objects, tfjobgen

from tfjobgen.cluster.controllers import argocd

GRAFANA = "grafana"
TEAM = "ml-training"


def _with_dashboards_namespace(repo, destination: bool = True, annotation: bool = True):
    profile = repo / "overlays" / "prod-96c" / "cluster-profile.yaml"
    text = profile.read_text()
    assert "    dashboards: {enabled: true}\n" in text
    profile.write_text(text.replace("    dashboards: {enabled: true}\n",
                                    f"    dashboards: {{enabled: true, namespace: {GRAFANA}}}\n"))
    project = repo / "argocd" / "base" / "project.yaml"
    text = project.read_text()
    if destination:
        text = text.replace("  - {name: seed-80c, namespace: ml-training}\n",
                            f"  - {{name: prod-96c, namespace: {GRAFANA}}}\n  - {{name: seed-80c, namespace: ml-training}}\n")
    if annotation:
        text = text.replace('tfjobgen.dev/dashboards-namespace: ""', f"tfjobgen.dev/dashboards-namespace: {GRAFANA}")
    project.write_text(text)
    return repo


@pytest.fixture
def repo(tmp_path):
    return _with_dashboards_namespace(copy_repo(tmp_path / "repo"))


def _dashboards(objects):
    return [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-dashboard")]


def test_hydrate_puts_each_dashboard_in_its_teams_folder(repo):
    proc = tfjobgen(repo, "hydrate")
    assert proc.returncode == 0, proc.stderr
    assert not (repo / "rendered" / "prod-96c" / GRAFANA).exists(), "no folder, so no Application, for Grafana's"
    team = repo / "rendered" / "prod-96c" / TEAM
    dashboards = _dashboards(o for path in sorted(team.glob("*.yaml")) for o in load_objects(path.read_text()))
    assert dashboards and {d["metadata"]["namespace"] for d in dashboards} == {GRAFANA}


def test_the_plugin_gives_the_team_its_dashboards_and_the_same_objects_as_rendered(repo):
    assert tfjobgen(repo, "hydrate").returncode == 0
    proc = tfjobgen(repo, "build", "overlays/prod-96c", "--namespace", TEAM)
    assert proc.returncode == 0, proc.stderr
    built = load_objects(proc.stdout)
    assert _dashboards(built), "the team's Application carries its jobs' dashboards"
    rendered = [o for path in sorted((repo / "rendered" / "prod-96c" / TEAM).glob("*.yaml"))
                for o in load_objects(path.read_text())]
    key = lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, built)) == sorted(map(key, rendered))


def test_no_build_is_for_the_dashboards_namespace_itself(repo):
    proc = tfjobgen(repo, "build", "overlays/prod-96c", "--namespace", GRAFANA)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "grafana is where the AppProject's teams put their dashboards (tfjobgen.dev/dashboards-namespace), " \
           "not a team" in proc.stderr, proc.stderr


def test_the_applicationset_makes_no_application_for_the_dashboards_namespace(repo, tmp_path):
    """kustomize builds argocd/<mode> as the bootstrap does; the list generator's selector is applied the way
    the ApplicationSet controller applies a generator's selector (a label selector over each element)."""
    for mode in ("rendered", "plugin"):
        (repo / "argocd" / mode).mkdir(exist_ok=True)
        for name in ("kustomization.yaml", "applicationset.yaml"):
            (repo / "argocd" / mode / name).write_text((REPO / "argocd" / mode / name).read_text())
        proc = subprocess.run([kubectl(), "kustomize", str(repo / "argocd" / mode)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        [appset] = [o for o in load_objects(proc.stdout) if o["kind"] == "ApplicationSet"]
        [generator] = appset["spec"]["generators"]
        elements = generator["list"]["elements"]
        assert {"name": "prod-96c", "namespace": GRAFANA} in elements, "the list is the AppProject's destinations"
        assert generator["selector"]["matchExpressions"] == [
            {"key": "namespace", "operator": "NotIn", "values": [GRAFANA]}]
        made = argocd.selected(generator)  # the live tier's reading of it, which real Argo CD confirms there
        assert {e["namespace"] for e in made} == {TEAM, "placement-experiments"}, mode


def test_a_dashboards_namespace_the_appproject_does_not_permit_is_refused_at_the_profile(tmp_path):
    repo = _with_dashboards_namespace(copy_repo(tmp_path / "repo"), destination=False)
    proc = tfjobgen(repo, "hydrate")
    assert proc.returncode == 1
    assert ("overlays/prod-96c/cluster-profile.yaml:44: spec.monitoring.dashboards.namespace: cluster prod-96c "
            "puts dashboards in namespace grafana, but AppProject tfjobgen") in proc.stderr, proc.stderr
    assert "split across namespaces" not in proc.stderr


def test_a_dashboards_namespace_the_applicationset_would_make_an_application_for_is_refused(tmp_path):
    repo = _with_dashboards_namespace(copy_repo(tmp_path / "repo"), annotation=False)
    proc = tfjobgen(repo, "hydrate")
    assert proc.returncode == 1
    assert "tfjobgen.dev/dashboards-namespace: grafana" in proc.stderr, proc.stderr
