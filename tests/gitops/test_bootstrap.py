"""argocd/bootstrap: the one Application applied by hand, after which argocd/<mode> follows Git.

What it must hold: its objects match the upstream CRDs; it syncs the folder of the mode the settings
name, from the repository and revision they name; its project lets it keep exactly what that folder
renders (an AppProject and an ApplicationSet in the argocd namespace) and nothing else; and it never
prunes (deleting the ApplicationSet would delete every training Application with it).
"""

from __future__ import annotations

import subprocess
from fnmatch import fnmatchcase

import pytest
import yaml
from conftest import kubectl, sample_repo
from gitops_support import crd_dir, load_objects

from tfjobgen.gitops import crds

MODES = ("rendered", "plugin")


def build(folder) -> list[dict]:
    proc = subprocess.run([kubectl(), "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return load_objects(proc.stdout)


@pytest.fixture
def argocd(tmp_path):
    """The sample repository's argocd/ (the tool's folders, its base) whose settings a test may change (a team's own
    repository URL, its mode)."""
    return sample_repo(tmp_path / "repo") / "argocd"


def set_settings(argocd, **values) -> None:
    path = argocd / "base" / "settings.yaml"
    settings = yaml.safe_load(path.read_text())
    settings["data"].update(values)
    path.write_text(yaml.safe_dump(settings))


@pytest.mark.parametrize("mode", MODES)
def test_the_bootstrap_syncs_the_folder_of_the_mode_the_settings_name(argocd, mode):
    set_settings(argocd, mode=mode, repoURL="https://git.example.com/ranking/jobs.git", revision="release")
    objects = build(argocd / "bootstrap")
    assert sorted(o["kind"] for o in objects) == ["AppProject", "Application"]
    [app] = [o for o in objects if o["kind"] == "Application"]
    [project] = [o for o in objects if o["kind"] == "AppProject"]
    assert app["spec"]["source"] == {"repoURL": "https://git.example.com/ranking/jobs.git",
                                     "targetRevision": "release", "path": f"argocd/{mode}"}
    assert project["spec"]["sourceRepos"] == ["https://git.example.com/ranking/jobs.git"]
    assert app["spec"]["project"] == project["metadata"]["name"] != "tfjobgen"
    assert app["spec"]["syncPolicy"]["automated"] == {"prune": False, "selfHeal": True}


@pytest.mark.parametrize("mode", MODES)
def test_the_bootstrap_project_permits_what_its_folder_renders_and_nothing_more(argocd, mode):
    [project] = [o for o in build(argocd / "bootstrap") if o["kind"] == "AppProject"]
    synced = build(argocd / mode)
    allowed = project["spec"]["namespaceResourceWhitelist"]
    for obj in synced:
        group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
        assert any(fnmatchcase(group, a["group"]) and fnmatchcase(obj["kind"], a["kind"]) for a in allowed), obj
        assert obj["metadata"]["namespace"] == "argocd"
    assert {(a["group"], a["kind"]) for a in allowed} == {("argoproj.io", o["kind"]) for o in synced}
    assert project["spec"]["clusterResourceWhitelist"] == []
    assert project["spec"]["destinations"] == [{"server": "https://kubernetes.default.svc", "namespace": "argocd"}]


def test_the_bootstrap_objects_match_their_upstream_crds(sample_tree):
    schemas = crds.load(crd_dir())
    for obj in build(sample_tree / "argocd" / "bootstrap"):
        errors = crds.crd_errors(obj, schemas)
        assert errors is not None, f"no CRD for {obj['kind']}"
        assert errors == [], f"{obj['kind']} {obj['metadata']['name']}: {errors}"
