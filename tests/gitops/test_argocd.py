"""The argocd/ folder: what a user copies into their Argo CD to get one Application per cluster.

Every Argo CD object is validated against the upstream CRD schemas in
../shared/crds (skipped with the reason when the folder is absent, a failure
under .ci/run). The Applications are made the way the ApplicationSet
controller makes them: the git generator's directories over the sample repository
(tests/fixtures/sample-repo, whose argocd/base holds the AppProject), substituted into the template.
"""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml
from conftest import OVERLAYS, REPO, SAMPLE, kubectl
from gitops_support import committed_rendered, crd_dir, load_objects

from tfjobgen.gitops import crds, object_meta, policy

ARGOCD = REPO / "argocd"
MODES = ("rendered", "plugin")


@pytest.fixture(scope="module")
def schemas():
    return crds.load(crd_dir())


@pytest.fixture(scope="module")
def built(sample_tree):
    """`kubectl kustomize argocd/<mode>`: what `kubectl apply -k` would apply, per mode (the sample's project)."""
    result = {}
    for mode in MODES:
        proc = subprocess.run([kubectl(), "kustomize", str(sample_tree / "argocd" / mode)], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        result[mode] = load_objects(proc.stdout)
    return result


def one(objects, kind):
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def applications(appset: dict) -> list[dict]:
    """What the ApplicationSet controller makes: one Application per element of its list generator.

    Its go template's parameters are the element's keys (Generators-List.md); the template is
    filled in the way the controller does, and any parameter left over is a failure.
    """
    [generator] = appset["spec"]["generators"]
    assert appset["spec"]["goTemplate"] is True and "missingkey=error" in appset["spec"]["goTemplateOptions"]
    made = []
    for element in generator["list"]["elements"]:
        params = {f".{key}": value for key, value in element.items()}
        text = yaml.safe_dump(appset["spec"]["template"])
        text = re.sub(r"\{\{\s*(\.[\w.]+)\s*\}\}", lambda m, p=params: p[m.group(1)], text)
        assert "{{" not in text, f"template parameter left unexpanded: {text}"
        made.append({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **yaml.safe_load(text)})
    return made


def teams() -> set[tuple[str, str]]:
    """(cluster, namespace) of every job of every cluster, from the sample's committed rendered/ tree."""
    return {(overlay, o["metadata"]["namespace"]) for overlay in OVERLAYS for o in committed_rendered(overlay)}


@pytest.mark.parametrize("mode", MODES)
def test_every_argocd_object_matches_its_upstream_crd(built, schemas, mode):
    objects = built[mode]
    assert sorted(o["kind"] for o in objects) == ["AppProject", "ApplicationSet"], "settings are local-config"
    for obj in objects + applications(one(objects, "ApplicationSet")):
        errors = crds.crd_errors(obj, schemas)
        assert errors is not None, f"no CRD for {obj['kind']}"
        assert errors == [], f"{obj['kind']} {obj['metadata']['name']}: {errors}"


def test_the_crd_check_catches_a_misspelt_field(built, schemas):
    appset = yaml.safe_load(yaml.safe_dump(one(built["plugin"], "ApplicationSet")))
    appset["spec"]["template"]["spec"]["syncPolicy"]["automated"]["prunee"] = True
    appset["spec"]["template"]["spec"]["source"]["path"] = 7
    errors = crds.crd_errors(appset, schemas)
    assert any("'prunee' was unexpected" in e for e in errors), errors
    assert any("7 is not of type 'string'" in e for e in errors), errors


@pytest.mark.parametrize("mode", MODES)
def test_one_application_per_cluster_and_team_synced_safely(built, mode):
    appset = one(built[mode], "ApplicationSet")
    apps = applications(appset)
    assert sorted(a["metadata"]["name"] for a in apps) == sorted(f"tfjobgen-{c}-{n}" for c, n in teams()), \
        "one Application for each cluster and namespace jobs run in, from the AppProject's destinations"
    project = one(built[mode], "AppProject")
    for app in apps:
        name = app["metadata"]["name"]
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name) and len(name) <= 63, \
            f"{name}: Argo CD labels and annotates objects with the Application's name"
        spec = app["spec"]
        cluster, namespace = spec["destination"]["name"], spec["destination"]["namespace"]
        assert {"name": cluster, "namespace": namespace} in project["spec"]["destinations"]
        assert spec["project"] == "tfjobgen"
        source = spec["source"]
        assert source["path"] == (f"rendered/{cluster}/{namespace}" if mode == "rendered" else f"overlays/{cluster}")
        assert (SAMPLE / source["path"]).is_dir()
        if mode == "plugin":
            assert source["plugin"]["env"] == [{"name": "NAMESPACE", "value": namespace}]
        assert source["repoURL"] == "https://github.com/example-org/tfjobgen.git"  # from settings.yaml
        sync = spec["syncPolicy"]
        assert sync["automated"] == {"prune": True, "selfHeal": True, "allowEmpty": False}
        assert "ApplyOutOfSyncOnly=true" in sync["syncOptions"], "unchanged running jobs must never be replaced"
        assert "FailOnSharedResource=true" in sync["syncOptions"], "no object belongs to two teams' Applications"
        assert not any(o.startswith(("PruneLast", "Replace", "Force")) for o in sync["syncOptions"]), \
            "app-wide PruneLast waits for running jobs to finish; Replace/Force belong on Jobs only"
        assert sync["retry"]["limit"] >= 1 and sync["retry"]["backoff"]["factor"] >= 2
    assert appset["spec"]["syncPolicy"] == {"applicationsSync": "create-update", "preserveResourcesOnDeletion": True}


def test_the_two_modes_differ_only_in_where_the_yaml_comes_from(built):
    rendered, plugin = (one(built[m], "ApplicationSet") for m in MODES)
    assert rendered["metadata"] == plugin["metadata"], "same name: switching modes updates the Applications"
    assert rendered["spec"]["generators"] == plugin["spec"]["generators"]
    r_source = rendered["spec"]["template"]["spec"].pop("source")
    p_source = plugin["spec"]["template"]["spec"].pop("source")
    assert rendered["spec"]["template"] == plugin["spec"]["template"]
    assert r_source.pop("directory") == {"recurse": True}
    assert (r_source.pop("path"), p_source.pop("path")) == ("rendered/{{.name}}/{{.namespace}}", "overlays/{{.name}}")
    plugin_yaml = yaml.safe_load((ARGOCD / "plugin" / "plugin.yaml").read_text())
    assert p_source.pop("plugin") == {"name": f"{plugin_yaml['metadata']['name']}-{plugin_yaml['spec']['version']}",
                                      "env": [{"name": "NAMESPACE", "value": "{{.namespace}}"}]}
    assert r_source == p_source


@pytest.mark.slow  # reads every cluster's rendered manifests
def test_the_project_permits_what_every_cluster_renders_and_nothing_cluster_scoped():
    project = next(p for p in policy.projects(SAMPLE) if p.name == "tfjobgen")
    assert project.spec["clusterResourceWhitelist"] == []
    for overlay in OVERLAYS:
        objects = list(committed_rendered(overlay))
        assert objects, f"rendered/{overlay} is empty"
        assert policy.check(project, overlay, objects) == []
    kinds = {(e["group"], e["kind"]) for e in project.spec["namespaceResourceWhitelist"]}
    rendered = {object_meta.group_kind(o) for overlay in OVERLAYS for o in committed_rendered(overlay)}
    assert kinds == rendered, "the project permits exactly the kinds tfjobgen generates"


def test_the_project_refuses_other_namespaces_and_kinds():
    project = next(p for p in policy.projects(SAMPLE) if p.name == "tfjobgen")
    objects = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x", "namespace": "kube-system"}},
               {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "x"}}]
    messages = " ".join(p.message for p in policy.check(project, "seed-80c", objects))
    assert "namespace kube-system is not a destination" in messages
    assert "does not permit kind ClusterRole" in messages
    assert "no destination for cluster 'staging'" in policy.check(project, "staging", objects)[0].message


# ---- the plugin's sidecar ---------------------------------------------------------------------------

def test_the_sidecar_image_and_patch_match_the_plugin():
    dockerfile = (ARGOCD / "plugin" / "Dockerfile").read_text()
    instructions = [line for line in dockerfile.splitlines() if line and not line.startswith("#")]
    text = "\n".join(instructions)
    # the repository is installed: its package, its schemas and the metadata hatchling needs
    # (everything the wheel is made of: pyproject.toml's sdist list, whose force-include needs plugins/ and more)
    import tomllib

    sdist = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["sdist"]
    folders = {path.split("/")[0] for path in sdist["only-include"] if (REPO / path).is_dir()}
    assert "COPY pyproject.toml README.md /src/" in text
    for folder in folders:
        assert f"COPY {folder} /src/{folder}" in text
    assert re.search(r"pip install --no-cache-dir .*/src", text)
    assert re.search(r"^FROM python:\d+\.\d+\.\d+-slim-\w+$", text, re.MULTILINE), "pin the Python image"
    assert re.search(r"^ARG ARGOCD_IMAGE=quay.io/argoproj/argocd:v\d+\.\d+\.\d+$", text, re.MULTILINE)
    assert "COPY --from=argocd /usr/local/bin/kustomize /usr/local/bin/kustomize" in text
    assert "COPY argocd/plugin/plugin.yaml /home/argocd/cmp-server/config/plugin.yaml" in text
    assert "USER 999" in text
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.MULTILINE):
        for path in source.split():
            assert (REPO / path).exists(), f"the Dockerfile copies {path}, which does not exist"
    ignore = (ARGOCD / "plugin" / "Dockerfile.dockerignore").read_text()
    for path in ("pyproject.toml", "README.md", *(f"{f}/" for f in folders), "argocd/plugin/plugin.yaml"):
        assert f"!{path}" in ignore, f"the build context excludes {path}"

    patch = yaml.safe_load((ARGOCD / "plugin" / "repo-server-patch.yaml").read_text())
    sidecar = one([{"kind": c["name"], **c} for c in patch["spec"]["template"]["spec"]["containers"]], "tfjobgen-cmp")
    assert sidecar["command"] == ["/var/run/argocd/argocd-cmp-server"]
    assert sidecar["securityContext"]["runAsUser"] == 999
    mounts = {m["mountPath"]: m["name"] for m in sidecar["volumeMounts"]}
    assert mounts["/var/run/argocd"] == "var-files"
    assert mounts["/home/argocd/cmp-server/plugins"] == "plugins"
    assert mounts["/tmp"] in {v["name"] for v in patch["spec"]["template"]["spec"]["volumes"]}, \
        "the sidecar needs its own /tmp (generate's scratch folder)"


def test_the_sidecar_patch_is_a_valid_deployment_container():
    """kubernetes-validate --strict on a Deployment made of the patch plus Argo CD's own volumes."""
    import kubernetes_validate

    patch = yaml.safe_load((ARGOCD / "plugin" / "repo-server-patch.yaml").read_text())
    pod = patch["spec"]["template"]["spec"]
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": patch["metadata"],
        "spec": {"selector": {"matchLabels": {"app": "argocd-repo-server"}},
                 "template": {"metadata": {"labels": {"app": "argocd-repo-server"}},
                              "spec": {"containers": pod["containers"],
                                       "volumes": pod["volumes"] + [{"name": "var-files", "emptyDir": {}},
                                                                    {"name": "plugins", "emptyDir": {}}]}}}}
    kubernetes_validate.validate(deployment, crds.KUBERNETES_VERSION, strict=True)


def test_the_health_patch_is_a_configmap_patch_for_argocd_cm():
    patch = yaml.safe_load((ARGOCD / "argocd-cm-patch.yaml").read_text())
    assert (patch["kind"], patch["metadata"]["name"], patch["metadata"]["namespace"]) == \
        ("ConfigMap", "argocd-cm", "argocd")
    assert sorted(patch["data"]) == ["resource.customizations.health.jobset.x-k8s.io_JobSet",
                                     "resource.customizations.health.kubeflow.org_TFJob"]


@pytest.mark.slow  # loads the upstream CRDs
def test_custom_resources_are_validated_against_their_crd(schemas):
    """What `tfjobgen diff --crds` does for the jobset and tfjob backends' kinds: a misplaced field is an error
    (kubeflow/trainer#1241: cleanPodPolicy under spec instead of spec.runPolicy did nothing, silently)."""
    tfjob = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "wide-deep"},
             "spec": {"runPolicy": {"cleanPodPolicy": "Running"},
                      "tfReplicaSpecs": {"PS": {"replicas": 2, "template": {"spec": {"containers": [
                          {"name": "tensorflow", "image": "registry.example.com/ml/wide-deep:1.4"}]}}}}}}
    assert crds.crd_errors(tfjob, schemas) == []
    tfjob["spec"]["cleanPodPolicy"] = tfjob["spec"].pop("runPolicy")["cleanPodPolicy"]
    assert any("'cleanPodPolicy' was unexpected" in e for e in crds.crd_errors(tfjob, schemas))
    found = crds.validate([tfjob, {"apiVersion": "example.com/v1", "kind": "Unknown", "metadata": {"name": "x"}}],
                          schemas)
    assert [severity for _, severity, _ in found] == ["error", "warning"]
