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
from conftest import OVERLAYS, REPO, SAMPLE, kubectl, need, uses
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

def test_the_sidecar_dockerfile_is_the_recipe_make_images_builds():
    """One recipe: argocd/plugin/Dockerfile (and its build context) are written from artifacts/images/recipe.py,
    whose data `make images` builds tfjobgen-argocd-plugin from (issue 33: they had drifted apart, Python 3.12
    with PyYAML 6.0.3 against 3.11 with 6.0.4)."""
    from tfjobgen.artifacts import programs
    from tfjobgen.artifacts.images import dockerfile, recipe

    again = "run .venv/bin/python docs/generate/plugin_dockerfile.py and commit argocd/plugin/"
    text = (ARGOCD / "plugin" / "Dockerfile").read_text()
    assert text == dockerfile.plugin(programs.family_of("argocd").version), f"stale Dockerfile: {again}"
    assert (ARGOCD / "plugin" / "Dockerfile.dockerignore").read_text() == dockerfile.dockerignore(), again
    # what the generated text must say, read back from it
    pinned = dict(line.split("==") for line in (REPO / "constraints.txt").read_text().splitlines()
                  if "==" in line and not line.startswith("#"))
    assert f"FROM debian:{recipe.SUITES[0]}-slim" in text and f"python3 ({recipe.PYTHON})" in text
    assert "-c /src/constraints.txt" in text and "PyYAML" in pinned and "jsonschema" in pinned
    for source in re.findall(r"^COPY (?!--from)(?:--chown=\S+ )?(.+) \S+$", text, re.MULTILINE):
        for path in source.split():
            assert (REPO / path).exists(), f"the Dockerfile copies {path}, which does not exist"
    assert "USER 999" in text and f"COPY --chown=999:999 argocd/plugin/plugin.yaml {dockerfile.PLUGIN_CONFIG}" in text


def test_the_sidecar_patch_matches_the_plugin():
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
    assert (patch["kind"], patch["metadata"]) == ("ConfigMap", {"name": "argocd-cm"}), \
        "no namespace: under kustomize patches the upstream install's argocd-cm has none yet"
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


@uses("slow")
def upstream_install(tmp_path):
    """Argo CD's own manifests/install.yaml (namespace-less, as released), from the Go module cache of the
    release cluster-tools/versions.yaml pins, and the kustomize of the kustomize family (`make cluster-tools`)."""
    import os
    import shutil

    from tfjobgen.artifacts import go_build, programs

    need("go", shutil.which("go"), "the argocd module is read from Go's module cache")
    kustomize = programs.family_of("kustomize")
    need("the kustomize family's kustomize", str(kustomize.installed_in / "kustomize") if kustomize.is_built()
         else None, "make cluster-tools builds it")
    module = go_build.module_dir(programs.family_of("argocd"), {**os.environ, "GOFLAGS": "-mod=readonly"})
    shutil.copyfile(module / "manifests" / "install.yaml", tmp_path / "install.yaml")
    return kustomize.installed_in / "kustomize"


def test_the_sidecar_patch_applies_under_kustomize_patches_to_the_upstream_install(tmp_path):
    """The way docs/gitops.md says an Argo CD installed by kustomize takes the sidecar: `patches:` beside
    `namespace: argocd` on the upstream install, whose Deployments have no namespace (a namespace in the
    patch matched nothing: "no resource matches strategic merge patch"), built by the real kustomize."""
    kustomize = upstream_install(tmp_path)
    (tmp_path / "repo-server-patch.yaml").write_text((ARGOCD / "plugin" / "repo-server-patch.yaml").read_text())
    (tmp_path / "argocd-cm-patch.yaml").write_text((ARGOCD / "argocd-cm-patch.yaml").read_text())
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: argocd\n"
        "resources: [install.yaml]\npatches:\n- path: repo-server-patch.yaml\n- path: argocd-cm-patch.yaml\n")
    proc = subprocess.run([str(kustomize), "build", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    objects = {(o["kind"], o["metadata"]["name"]): o for o in load_objects(proc.stdout)}
    repo_server = objects[("Deployment", "argocd-repo-server")]
    assert repo_server["metadata"]["namespace"] == "argocd"
    pod = repo_server["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    assert sorted(containers) == ["argocd-repo-server", "tfjobgen-cmp"], "the sidecar beside Argo CD's own"
    assert containers["argocd-repo-server"]["image"].startswith("quay.io/argoproj/argocd:"), "which keeps its own"
    assert {"var-files", "plugins", "tfjobgen-cmp-tmp"} <= {v["name"] for v in pod["volumes"]}
    assert any(c["name"] == "copyutil" for c in pod["initContainers"]), "the cmp-server binary's copy stays"
    assert "resource.customizations.health.kubeflow.org_TFJob" in objects[("ConfigMap", "argocd-cm")]["data"]


def test_the_sidecar_patch_applies_with_kubectl_patch_too(tmp_path):
    """The other documented way: `kubectl -n argocd patch deployment argocd-repo-server --patch-file`, here
    with --local on the upstream Deployment (no API server needed for a strategic merge)."""
    upstream_install(tmp_path)
    [deployment] = [o for o in load_objects((tmp_path / "install.yaml").read_text())
                    if o["kind"] == "Deployment" and o["metadata"]["name"] == "argocd-repo-server"]
    (tmp_path / "deployment.yaml").write_text(yaml.safe_dump(deployment))
    proc = subprocess.run([kubectl(), "-n", "argocd", "patch", "--local", "-f", str(tmp_path / "deployment.yaml"),
                           "--patch-file", str(ARGOCD / "plugin" / "repo-server-patch.yaml"), "-o", "yaml"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    pod = yaml.safe_load(proc.stdout)["spec"]["template"]["spec"]
    assert sorted(c["name"] for c in pod["containers"]) == ["argocd-repo-server", "tfjobgen-cmp"]
