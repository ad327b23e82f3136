"""Plugin mode, run the way Argo CD runs it: plugin.yaml's generate command in the app folder.

The command runs with the ARGOCD_APP_* variables set, on a copy of the repository
whose files lost their exec bits (what Argo CD does without preserveFileMode), with
`kustomize` on PATH: a real one when installed, else a shim that forwards
`kustomize build ARGS` to `kubectl kustomize ARGS` (the same kustomize engine,
v5.5; Argo CD's sidecar has 5.8). Every broken build must end with a non-zero
exit and nothing on stdout, so Argo CD syncs nothing and prunes nothing.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from conftest import OVERLAYS, REPO, SAMPLE, need
from gitops_support import (
    committed_rendered_documents,
    copy_repo,
    documents,
    kustomize_shim,
    load_objects,
    run_cmp_generate,
    strip_exec_bits,
    write_job_list,
)


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    return kustomize_shim(tmp_path_factory.mktemp("bin"))


@pytest.fixture
def checkout(tmp_path):
    """A small copy of the sample repository as Argo CD hands it to the sidecar: no exec bits anywhere."""
    repo = copy_repo(tmp_path / "repo")
    strip_exec_bits(repo)
    return repo


def test_generate_builds_an_overlay_from_a_checkout_without_exec_bits(checkout, shim):
    plugin = checkout / "plugins" / "tfjobgen.dev" / "v1alpha1" / "clusterprofile" / "ClusterProfile"
    assert not plugin.stat().st_mode & 0o111, "the copy should have lost its exec bits"
    proc = run_cmp_generate(checkout / "overlays" / "seed-80c", checkout, shim)
    assert proc.returncode == 0, proc.stderr
    objects = load_objects(proc.stdout)
    kinds = {o["kind"] for o in objects}
    assert kinds == {"ConfigMap", "Service", "NetworkPolicy", "Job"}, kinds
    jobs = {o["metadata"]["labels"]["tfjobgen.dev/job"] for o in objects}
    assert jobs == {"deeprec-ctr", "scene2-case1", "wide-deep"}
    for job in (o for o in objects if o["kind"] == "Job"):
        annotations = job["metadata"]["annotations"]
        assert annotations["argocd.argoproj.io/sync-options"] == "Force=true,Replace=true"
        assert len(annotations["tfjobgen.dev/revision"]) == 12


def test_a_plain_build_of_that_checkout_fails_loudly(checkout, shim):
    """Why generate copies the plugins: with exec bits stripped, kustomize refuses the plugin (non-zero exit)."""
    proc = subprocess.run([str(shim / "kustomize"), "build", "--enable-alpha-plugins", "."],
                          cwd=checkout / "overlays" / "seed-80c", capture_output=True, text=True,
                          env={"KUSTOMIZE_PLUGIN_HOME": str(checkout / "plugins"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0 and "TrainingJob" not in proc.stdout
    assert "unexecutable plugin" in proc.stderr or "permission denied" in proc.stderr, proc.stderr


def test_plugin_mode_and_rendered_mode_give_the_same_objects_for_the_same_commit(tmp_path, shim):
    """Every cluster and team of the sample repository: generate's output equals its committed rendered/ tree.

    (test_rendered_mode checks that rendered/ is what `tfjobgen hydrate` writes from these sources.)
    """
    repo = copy_repo(tmp_path / "repo", jobs=None)
    strip_exec_bits(repo)
    for overlay in OVERLAYS:
        teams = sorted(p.name for p in (SAMPLE / "rendered" / overlay).iterdir() if p.is_dir())
        assert teams, f"rendered/{overlay} has no namespace folder"
        for team in [*teams, ""]:  # each team's Application, and an Application without NAMESPACE: everything
            proc = run_cmp_generate(repo / "overlays" / overlay, repo, shim,
                                    env={"ARGOCD_ENV_NAMESPACE": team} if team else None)
            assert proc.returncode == 0, f"{overlay} {team}: {proc.stderr}"
            # Object by object, byte for byte (both modes write YAML with the same writer).
            assert sorted(documents(proc.stdout)) == sorted(committed_rendered_documents(overlay, team)), \
                f"{overlay} {team}: plugin mode and rendered/ differ; if rendered/ is stale, run `tfjobgen hydrate`"


def test_a_team_without_jobs_on_a_cluster_gets_nothing_and_a_reason(checkout, shim):
    """The AppProject sends team research to seed-80c (so the ApplicationSet makes its Application), but
    no job of research runs there."""
    project = checkout / "argocd" / "base" / "project.yaml"
    project.write_text(project.read_text().replace(
        "  - {name: seed-80c, namespace: ml-training}\n",
        "  - {name: seed-80c, namespace: ml-training}\n  - {name: seed-80c, namespace: research}\n"))
    proc = run_cmp_generate(checkout / "overlays" / "seed-80c", checkout, shim,
                            env={"ARGOCD_ENV_NAMESPACE": "research"})
    _refused(proc, "no job of namespace research runs on cluster seed-80c, but the AppProject still sends that team "
                   "there", "remove that destination", "argocd app delete tfjobgen-seed-80c-research --cascade")


def test_a_namespace_no_application_is_for_is_refused_with_the_closest_one(checkout, shim):
    """Neither the profile nor the AppProject has it: a typo, not a team without jobs."""
    proc = run_cmp_generate(checkout / "overlays" / "seed-80c", checkout, shim,
                            env={"ARGOCD_ENV_NAMESPACE": "ml-trainig"})
    _refused(proc, "tfjobgen build: --namespace: cluster seed-80c does not run namespace ml-trainig: did you mean "
                   "ml-training?")
    assert "no job of namespace" not in proc.stderr


# ---- fail loud: nothing on stdout, a non-zero exit, a message that says why -------------------------

def _refused(proc, *phrases: str) -> None:
    assert proc.returncode != 0, f"generate should have failed:\n{proc.stderr}"
    assert proc.stdout.strip() == "", "a failed generate must print no objects"
    for phrase in phrases:
        assert phrase in proc.stderr, f"expected {phrase!r} in:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr


def test_refuses_a_build_where_the_function_did_not_run(checkout, shim):
    """tfjobgen as an exec KRM function: kustomize without --enable-exec skips it silently (exit 0).

    The intents then come out unexpanded; generate refuses them instead of handing Argo CD
    a set without the jobs' objects.
    """
    overlay = checkout / "overlays" / "seed-80c"
    profile = yaml.safe_load((overlay / "cluster-profile.yaml").read_text())
    profile["metadata"]["annotations"] = {"config.kubernetes.io/function": "exec:\n  path: tfjobgen-krm\n"}
    (overlay / "cluster-profile.yaml").write_text(yaml.safe_dump(profile))
    proc = run_cmp_generate(overlay, checkout, shim)
    _refused(proc, "the tfjobgen function did not run", "TrainingJob ml-training/")


def test_refuses_a_build_where_the_profile_is_a_resource(checkout, shim):
    """The ClusterProfile listed under resources: instead of transformers: nothing expands the intents."""
    (checkout / "overlays" / "seed-80c" / "kustomization.yaml").write_text(
        "resources:\n- ../../bases\n- cluster-profile.yaml\n")
    proc = run_cmp_generate(checkout / "overlays" / "seed-80c", checkout, shim)
    _refused(proc, "the tfjobgen function did not run", "ClusterProfile")


def test_refuses_an_empty_build(checkout, shim):
    """An overlay that lost its resources and its transformer builds to nothing."""
    (checkout / "overlays" / "seed-80c" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
    proc = run_cmp_generate(checkout / "overlays" / "seed-80c", checkout, shim)
    _refused(proc, "kustomize build failed", "kustomization.yaml is empty", "refusing to hand this build to Argo CD")


def test_refuses_a_build_without_jobs_even_with_its_transformer(checkout, shim):
    """The function itself refuses a build with no TrainingJob (allowNoJobs is not set)."""
    kustomization = checkout / "overlays" / "seed-80c" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("- ../../bases", "[]").replace("resources:\n",
                                                                                             "resources: "))
    proc = run_cmp_generate(checkout / "overlays" / "seed-80c", checkout, shim)
    _refused(proc, "no TrainingJob")


def test_refuses_a_build_that_lost_a_job(checkout, shim):
    """A job file that jobs/kustomization.yaml no longer lists would be pruned: refused."""
    listing = checkout / "jobs" / "kustomization.yaml"
    listing.write_text(listing.read_text().replace("- wide-deep.yaml\n", ""))
    proc = run_cmp_generate(checkout / "overlays" / "prod-96c", checkout, shim)
    _refused(proc, "1 of the 3 job(s) in jobs/ are missing", "ml-training/wide-deep (jobs/wide-deep.yaml:")


def test_refuses_an_invalid_job_with_its_file_and_line(checkout, shim):
    job = checkout / "jobs" / "wide-deep.yaml"
    job.write_text(job.read_text().replace("ps: {replicas: 4, cpu: 8, memory: 32Gi}",
                                           "ps: {replicas: 4, cpu: 8, memory: 32Gb}"))
    proc = run_cmp_generate(checkout / "overlays" / "seed-80c", checkout, shim)
    _refused(proc, "jobs/wide-deep.yaml:15: spec.roles.ps.memory", "Kubernetes quantity")


@pytest.mark.parametrize("namespace", ["ml-training", "placement-experiments"])
def test_refuses_two_jobs_with_the_same_name(checkout, shim, namespace):
    """Same name, same namespace (kustomize itself refuses) or another namespace (only tfjobgen does)."""
    copy = yaml.safe_load((checkout / "jobs" / "scene2-case1.yaml").read_text())
    copy["metadata"].update(name="wide-deep", namespace=namespace)
    (checkout / "jobs" / "wide-deep-copy.yaml").write_text(yaml.safe_dump(copy))
    write_job_list(checkout)
    proc = run_cmp_generate(checkout / "overlays" / "seed-80c", checkout, shim)
    _refused(proc, "jobs/wide-deep.yaml:7: metadata.name: job name 'wide-deep' is already used by "
                   "jobs/wide-deep-copy.yaml:4")


def test_generate_needs_the_repository_layout(tmp_path, shim):
    lonely = tmp_path / "somewhere" / "overlays" / "x"
    lonely.mkdir(parents=True)
    proc = run_cmp_generate(lonely, tmp_path, shim)
    _refused(proc, "no overlays/ and jobs/ at or above")


def test_generate_runs_with_only_what_the_sidecar_provides(checkout, shim, tmp_path):
    """bash, python3 with tfjobgen's dependencies, and kustomize: nothing else on PATH (no kubectl, no coreutils)."""
    tools = tmp_path / "sidecar-bin"
    tools.mkdir()
    for name, target in (("bash", "/bin/bash"), ("python3", sys.executable), ("kustomize", shim / "kustomize")):
        (tools / name).symlink_to(target)
    for overlay in OVERLAYS:  # seed-80c needs no kustomize at all; prod-96c patches its jobs with kustomize
        proc = run_cmp_generate(checkout / "overlays" / overlay, checkout, shim, env={"PATH": str(tools)})
        assert proc.returncode == 0, proc.stderr
        monitoring = {"PodMonitor", "PrometheusRule"} if overlay == "prod-96c" else set()  # prod-96c turns it on
        assert {o["kind"] for o in load_objects(proc.stdout)} == {"ConfigMap", "Service", "NetworkPolicy", "Job"} | monitoring
    spec = yaml.safe_load((REPO / "argocd" / "plugin" / "plugin.yaml").read_text())["spec"]
    assert spec["preserveFileMode"] is True
    need("bash", "/bin/bash")
