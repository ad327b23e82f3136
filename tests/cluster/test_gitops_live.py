"""Argo CD for real: the repository's argocd/ objects, its plugin and its Lua health checks, run by
Argo CD v3.2.6 (application-controller, repo-server, ApplicationSet controller, cmp-server, redis)
against a local cluster, syncing a temporary git repository cloned from this checkout.

One cluster and one Argo CD for the module (`tfjobgen cluster up --argocd REPO`, plugin mode); the
tests run in order, each commit building on the last: a job is added, changed, broken, fixed,
watched through its life, refused by the AppProject and retired; then the same Argo CD switches to
rendered mode. demos/gitops_loop.py (make demo-gitops) drives the same Repo and ArgoCD (harness/argocd_loop.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from kubernetes.dynamic.exceptions import NotFoundError
from cluster_support import SESSION_HOME, cluster_processes, leftovers, local_cluster, need_cluster_tools, tfjobgen
from conftest import REPO, SAMPLE, need, sample_repo

from tfjobgen.cluster import home as cluster_home
from tfjobgen.harness.argocd_loop import ArgoCD, Repo, Seen, job_objects, job_pods, located, small_job

SEED_PROFILE = SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml"

pytestmark = [pytest.mark.cluster, pytest.mark.git, pytest.mark.kubectl]  # hydrate builds with kubectl

CLUSTER, TEAM, OTHER_TEAM = "seed-80c", "ml-training", "placement-experiments"
APP, OTHER_APP = f"tfjobgen-{CLUSTER}-{TEAM}", f"tfjobgen-{CLUSTER}-{OTHER_TEAM}"
JOB, JOBSET_JOB = "live-small", "live-jobset"
# A sample of the sample repository's jobs, one per kind of thing they exercise: a JobSet (the Lua health check),
# cpuset and pools (wide-deep, deeprec-starserver), each team. The rest of the overlay's 400 Jobs would only
# make each of Argo CD's comparisons (every 5 s) take 15 s of CPU here; make demo-gitops syncs them all.
SAMPLE_JOBS = ["ctr-jobset", "deeprec-starserver", "wide-deep", "scene1-case1", "scene2-case1"]
NODES = 24  # every pod of the sample placed (1,254 CPUs on 79-CPU nodes): no pending PS preempts a watched job
# Seconds from a commit to Argo CD's answer: a reconciliation period (5 s), a build, a sync, on 2 busy cores.
ANSWER = 90


def sample_clone(path: Path) -> Repo:
    """A git clone of this checkout with the sample repository's jobs, overlays and project in place of its own."""
    repo = Repo.clone(REPO, path)
    sample_repo(repo.path)
    if repo.git("status", "--porcelain"):
        repo.commit("The sample repository's data")
    return repo


class Live:
    def __init__(self, cluster, repo: Repo, argocd: ArgoCD):
        self.cluster, self.repo, self.argocd, self.objects = cluster, repo, argocd, cluster.objects

    def commit(self, message: str, change) -> tuple[str, float]:
        change()
        return self.repo.commit(message), time.monotonic()

    def synced(self, app: str, sha: str, by_operation: bool = True) -> Seen:
        """The Application Synced to `sha` (by a sync of that commit, unless it had nothing to apply)."""
        def check():
            seen = self.argocd.latest(app)
            return seen if seen and seen.settled_at(sha) and not seen.errors and (
                not by_operation or seen.operation_revision == sha) else None
        return self.argocd.wait(check, ANSWER, f"{app} Synced to {sha[:7]}")

    def refused(self, app: str, sha: str, *phrases: str) -> Seen:
        """The Application's answer to `sha`: an error that says all of `phrases`."""
        def check():
            seen = self.argocd.latest(app)
            text = "\n".join(seen.errors + (seen.operation_message,) + tuple(r[3] for r in seen.synced)) if seen else ""
            return seen if seen and all(p in text for p in phrases) else None
        return self.argocd.wait(check, ANSWER, f"{app} refusing {sha[:7]} with {phrases}")

    def applied(self, app: str, sha: str, since: float) -> set[tuple[str, str, str, str]]:
        return self.argocd.applied(app, sha, since)

    def tracked(self) -> dict[tuple[str, str, str], str]:
        """{(kind, namespace, name): uid} of every object the Applications track (tfjobgen's, pods aside)."""
        found = {}
        for namespace in (TEAM, OTHER_TEAM):
            for job in {o["metadata"]["labels"]["tfjobgen.dev/job"]
                        for o in self.objects.list("v1", "ConfigMap", namespace, label_selector="tfjobgen.dev/job")}:
                for (kind, name), uid in job_objects(self.objects, job, namespace, tracked_only=True).items():
                    found[(kind, namespace, name)] = uid
        return found

    def build(self, team: str = TEAM) -> list[dict]:
        """What the plugin hands Argo CD for `team` at the repository's HEAD, built here the same way."""
        proc = subprocess.run([sys.executable, "-m", "tfjobgen", "build", "--repo", str(self.repo.path),
                               f"overlays/{CLUSTER}", "--namespace", team], cwd=self.repo.path, capture_output=True,
                              text=True, timeout=120, env={"PYTHONPATH": str(self.repo.path / "generator"),
                                                           "PATH": "/usr/bin:/bin"})
        assert proc.returncode == 0, proc.stderr
        return [o for o in yaml.safe_load_all(proc.stdout) if o]

    def pods_running(self, job: str, count: int) -> list[dict]:
        def check():
            pods = job_pods(self.objects, job)
            return pods if len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods) else None
        return self.argocd.wait(check, ANSWER, f"{count} pods of {job} Running")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    need_cluster_tools("argocd", "kustomize")
    need("redis-server", shutil.which("redis-server"), "Argo CD's cache: apt-get install redis-server")
    repo = sample_clone(tmp_path_factory.mktemp("gitops") / "repo")
    repo.keep_jobs(SAMPLE_JOBS)
    with local_cluster(SEED_PROFILE, NODES, "--argocd", str(repo.path)) as cluster:
        argocd = ArgoCD(cluster.kubeconfig, cluster.state()["ports"]["argocd redis"])
        try:
            yield Live(cluster, repo, argocd)
        finally:
            argocd.close()


def _identities(objects: list[dict], job: str | None = None) -> set[tuple[str, str, str]]:
    return {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects
            if job is None or o["metadata"]["labels"].get("tfjobgen.dev/job") == job}


def test_the_first_sync_brings_in_every_job_of_the_overlay_as_the_plugin_builds_it(live):
    state = live.cluster.state()["argocd"]
    assert state["applications"] == [APP, OTHER_APP], "only this cluster's destinations get an Application"
    # The plugin server: the sidecar image's programs only, and no network (its own namespace: a loopback only).
    cmp_server = next(p.pid for p in cluster_processes(live.cluster.home)
                      if p.environment.get("ARGOCD_BINARY_NAME") == "argocd-cmp-server")
    assert os.readlink(f"/proc/{cmp_server}/ns/net") != os.readlink("/proc/self/ns/net")
    assert [line.split(":")[0].strip() for line in Path(f"/proc/{cmp_server}/net/dev").read_text().splitlines()[2:]] \
        == ["lo"]
    assert sorted(p.name for p in (live.cluster.home / "argocd" / "bin").iterdir()) == ["bash", "kustomize", "python3"]
    # redis keeps the cluster's mark in its environment (it would overwrite it with its title): down finds it.
    assert "redis-server" in {p.name for p in cluster_processes(live.cluster.home)}
    head = live.repo.head()
    for app in (APP, OTHER_APP):
        seen = live.synced(app, head)
        assert seen.health in ("Progressing", "Healthy"), seen
        application = live.objects.get("argoproj.io/v1alpha1", "Application", app, "argocd")
        assert application["status"]["sourceType"] == "Plugin"
        assert application["spec"]["source"]["plugin"]["name"] == "tfjobgen-v1"
        assert application["spec"]["source"]["repoURL"] == live.repo.path.as_uri()
    # Every object of every job of the overlay: what rendered/ holds for this cluster (the same build).
    expected = set()
    for path in sorted((live.repo.path / "rendered" / CLUSTER).glob("*/*.yaml")):
        expected |= _identities([o for o in yaml.safe_load_all(path.read_text()) if o])
    assert set(live.tracked()) == expected
    config_map = live.objects.list("v1", "ConfigMap", TEAM, label_selector="tfjobgen.dev/job=wide-deep")[0]
    tracking = config_map["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"]
    assert tracking.startswith(f"{APP}:/ConfigMap:{TEAM}/"), tracking


def test_a_commit_adding_a_job_makes_its_objects_appear_and_its_pods_bound(live):
    before = live.tracked()
    sha, at = live.commit(f"Add {JOB}", lambda: live.repo.write_job(JOB, small_job(JOB)))
    seen = live.synced(APP, sha)
    to_synced = seen.at - at
    expected = _identities(live.build(), JOB)
    applied = live.applied(APP, sha, at)
    assert {(k, n, m) for k, n, m, _ in applied} == expected, "the sync touched exactly the new job's objects"
    assert all(message.endswith(" created") for *_, message in applied), applied
    pods = live.argocd.wait(lambda: (p := job_pods(live.objects, JOB)) and len(p) == 4
                            and all(x["spec"].get("nodeName") for x in p) and p, ANSWER, f"{JOB}'s 4 pods bound")
    to_bound = time.monotonic() - at
    after = live.tracked()
    assert {i for i in after if i not in before} == expected
    assert {i: after[i] for i in before} == before, "no other object was recreated"
    other = live.synced(OTHER_APP, sha, by_operation=False)
    assert other.operation_revision != sha, "the other team's Application had nothing to apply"
    assert to_synced < ANSWER and to_bound < ANSWER, (to_synced, to_bound)
    print(f"\n{JOB} added: {to_synced:.1f} s from commit to Synced, {to_bound:.1f} s to {len(pods)} pods bound")


def test_a_commit_changing_a_job_is_shown_as_argo_cds_diff_then_applied_to_that_job_only(live):
    old = {(o["kind"], o["metadata"]["name"]): o for o in live.build() if o["metadata"]["labels"]
           .get("tfjobgen.dev/job") == JOB}
    before = live.tracked()
    sha, at = live.commit(f"{JOB}: 3 workers", lambda: live.repo.write_job(JOB, small_job(JOB, workers=3)))
    new = {(o["kind"], o["metadata"]["name"]): o for o in live.build() if o["metadata"]["labels"]
           .get("tfjobgen.dev/job") == JOB}
    changed = {(kind, TEAM, name) for (kind, name), obj in new.items() if old.get((kind, name)) != obj}
    seen = live.synced(APP, sha)
    # What Argo CD reported between the commit and the sync: OutOfSync, exactly the objects that changed.
    differ = [s for s in live.argocd.since(APP, at) if s.sync == "OutOfSync" and s.revision == sha]
    assert differ, "Argo CD never reported the commit as OutOfSync"
    assert set(differ[0].out_of_sync) == changed, (differ[0].out_of_sync, changed)
    caught = next((s.diff for s in differ if s.diff), ())
    assert caught, "Argo CD's diff was not in its cache while the Application was OutOfSync"
    worker = next(d for d in caught if d["kind"] == "Job" and d["name"] == f"{JOB}-worker")
    assert worker["fields"]["spec.parallelism"] == (2, 3) and worker["fields"]["spec.completions"] == (2, 3)
    revision = worker["fields"]["metadata.annotations.tfjobgen.dev/revision"]
    assert revision[0] != revision[1]
    # Applied: the job's Jobs replaced (their pod templates are immutable), nothing else touched.
    applied = live.applied(APP, sha, at)
    assert {(k, n, m) for k, n, m, _ in applied} == changed, applied
    after = live.tracked()
    replaced = {i for i in changed if i[0] == "Job"}
    assert all(after[i] != before[i] for i in replaced), "every Job of the job was recreated"
    assert {i: after[i] for i in before if i not in replaced} == {i: before[i] for i in before if i not in replaced}
    assert live.objects.get("batch/v1", "Job", f"{JOB}-worker", TEAM)["spec"]["parallelism"] == 3
    live.pods_running(JOB, 5)
    print(f"\n{JOB} changed: {differ[0].at - at:.1f} s to OutOfSync, {seen.at - at:.1f} s to Synced")


@pytest.mark.parametrize("worker, phrase", [
    ("{replicas: lots, cpu: 2, memory: 4Gi}", "spec.roles.worker.replicas"),
    ("{replicas: 3, cpu: 1.5, memory: 4Gi}", "qos cpuset needs whole CPUs"),
], ids=["schema-error", "fractional-cpu-under-cpuset"])
def test_a_commit_breaking_a_job_fails_with_the_plugins_file_and_line_and_prunes_nothing(live, worker, phrase):
    before = live.tracked()
    pods = {p["metadata"]["name"] for p in job_pods(live.objects, JOB)}
    lines = small_job(JOB, workers=3).splitlines(keepends=True)
    line = next(n for n, text in enumerate(lines, 1) if text.startswith("    worker: "))
    lines[line - 1] = f"    worker: {worker}\n"
    broken = "".join(lines)
    sha, at = live.commit(f"{JOB}: worker {worker}", lambda: live.repo.write_job(JOB, broken))
    seen = live.refused(APP, sha, f"jobs/{JOB}.yaml:{line}:", phrase)
    # Argo CD keeps the Application at the last commit it could build, and says why it cannot go further.
    assert seen.revision != sha and seen.operation_revision != sha, "nothing of the broken commit was synced"
    assert any(e.startswith("ComparisonError: ") for e in seen.errors), seen.errors
    message = located(seen.errors, f"jobs/{JOB}.yaml")
    assert message.startswith(f"jobs/{JOB}.yaml:{line}: spec.roles.worker.") and phrase in message, message
    time.sleep(6)  # a reconciliation period more: still nothing pruned, nothing replaced
    assert live.tracked() == before
    assert {p["metadata"]["name"] for p in job_pods(live.objects, JOB)} == pods
    fixed, _ = live.commit(f"{JOB}: fixed", lambda: live.repo.write_job(JOB, small_job(JOB, workers=3)))
    live.synced(APP, fixed, by_operation=False)
    assert live.tracked() == before, "the fix had nothing to apply: the running job was never touched"
    print(f"\nworker {worker}: {seen.at - at:.1f} s from commit to the error in the Application's status")


def test_health_as_argo_cd_computes_it_with_the_repositorys_lua_through_a_jobs_life(live):
    """JobSets (the repository's Lua check) and Jobs (Argo CD's own) on the real JobSet and Job controllers."""
    sha, _ = live.commit(f"Add {JOBSET_JOB}", lambda: live.repo.write_job(
        JOBSET_JOB, small_job(JOBSET_JOB).replace("  qos: cpuset\n", "  backend: jobset\n")))
    live.synced(APP, sha)
    live.pods_running("ctr-jobset", 9)
    live.pods_running(JOBSET_JOB, 4)

    def health(kind: str, name: str, status: str):
        def check():
            found = live.argocd.health_of(APP, kind, name)
            return found if found[0] == status else None
        return live.argocd.wait(check, ANSWER, f"{kind} {name} {status} in Argo CD")

    # Running: Progressing, with the Lua's own message (each replicated job's counts).
    _, message = health("JobSet", "ctr-jobset", "Progressing")
    assert "worker: " in message and "active" in message, message
    health("Job", f"{JOB}-worker", "Progressing")
    # Completed: every task of ctr-jobset exits 0 (KWOK ends the pods), the JobSet controller completes it.
    for pod in job_pods(live.objects, "ctr-jobset"):
        with contextlib.suppress(NotFoundError):  # a pod listed a moment ago may be gone: nothing to end
            live.cluster.succeed_pod(TEAM, pod["metadata"]["name"])
    health("JobSet", "ctr-jobset", "Healthy")
    # Failed for good: a worker exits 3 (a permanent exit code: podFailurePolicy FailJob, the JobSet fails).
    worker = next(p for p in job_pods(live.objects, JOBSET_JOB) if "worker" in p["metadata"]["name"])
    live.cluster.fail_pod(TEAM, worker["metadata"]["name"], 3)
    _, message = health("JobSet", JOBSET_JOB, "Degraded")
    assert message, "the Lua check says why"
    # Argo CD's built-in Job health on the same failure: the Job of a native job.
    native = next(p for p in job_pods(live.objects, JOB) if "chief" in p["metadata"]["name"])
    live.cluster.fail_pod(TEAM, native["metadata"]["name"], 3)
    health("Job", f"{JOB}-chief", "Degraded")
    assert live.argocd.wait(lambda: (s := live.argocd.latest(APP)) and s.health == "Degraded" and s, ANSWER,
                            f"{APP} Degraded"), "the Application is as healthy as its worst resource"


def test_the_appproject_refuses_a_kind_it_does_not_permit_and_a_fix_goes_through(live):
    """A TensorBoard is a Deployment, which the project permits no Application (argocd/base/project.yaml)."""
    before = live.tracked()
    with_board = small_job(JOB, workers=3) + "  tensorboard: {enabled: true}\n"
    sha, _ = live.commit(f"{JOB}: a TensorBoard", lambda: live.repo.write_job(JOB, with_board))
    seen = live.refused(APP, sha, "resource apps:Deployment is not permitted in project tfjobgen")
    assert ("Deployment", TEAM, f"{JOB}-tensorboard", "resource apps:Deployment is not permitted in project tfjobgen") \
        in seen.synced, seen.synced
    assert seen.operation_message.startswith("one or more synchronization tasks are not valid"), seen
    assert live.tracked() == before and not live.objects.list("apps/v1", "Deployment", TEAM), "nothing was applied"
    # The refused sync is being retried; the retry takes the fix (retry.refresh in the ApplicationSet).
    fixed, at = live.commit(f"{JOB}: no TensorBoard", lambda: live.repo.write_job(JOB, small_job(JOB, workers=3)))
    fix = live.synced(APP, fixed, by_operation=False)
    assert live.tracked() == before
    print(f"\nthe fix after a refused sync: {fix.at - at:.1f} s from commit to Synced (the next retry)")


def test_removing_a_job_file_prunes_exactly_that_jobs_objects(live):
    before = live.tracked()
    mine = {i for i in before if i[2].startswith(f"{JOB}-") or i[2] == JOB}
    assert mine
    sha, at = live.commit(f"Remove {JOB}", lambda: live.repo.remove_job(JOB))
    live.synced(APP, sha)
    applied = live.applied(APP, sha, at)
    assert {(k, n, m) for k, n, m, _ in applied} == mine and {m for *_, m in applied} == {"pruned"}, applied
    live.argocd.wait(lambda: not job_pods(live.objects, JOB), ANSWER, f"{JOB}'s pods gone")
    after = live.tracked()
    assert after == {i: uid for i, uid in before.items() if i not in mine}


def test_rendered_mode_does_the_same_from_rendered(live):
    from tfjobgen.cluster.controllers import argocd

    branch = live.repo.git("branch", "--show-current")
    sha, _ = live.commit("rendered/ for the jobs added here", live.repo.hydrate)
    live.synced(APP, sha, by_operation=False)
    before = live.tracked()
    argocd.apply(live.objects, argocd.Source(live.repo.path, branch, "rendered"), CLUSTER)
    for app in (APP, OTHER_APP):
        live.argocd.wait(lambda: (a := live.objects.get("argoproj.io/v1alpha1", "Application", app, "argocd"))
                         and (a.get("status") or {}).get("sourceType") == "Directory"
                         and a["status"]["sync"]["status"] == "Synced" and a, ANSWER, f"{app} on rendered/")
    assert live.tracked() == before, "switching modes restarted nothing: both modes give the same objects"

    def add():
        live.repo.write_job(JOB, small_job(JOB))
        live.repo.hydrate()
    sha, at = live.commit(f"Add {JOB} (rendered)", add)
    seen = live.synced(APP, sha)
    assert {(k, n, m) for k, n, m, _ in live.applied(APP, sha, at)} == _identities(live.build(), JOB)
    print(f"\nrendered mode, {JOB} added: {seen.at - at:.1f} s from commit to Synced")

    # A hand-edited rendered/ (what the required CI check keeps out) naming a namespace the project does not permit.
    rendered = live.repo.path / "rendered" / CLUSTER / TEAM / f"{JOB}.yaml"
    moved = rendered.with_name(f"{JOB}-elsewhere.yaml")
    before = live.tracked()
    sha, _ = live.commit("a namespace the AppProject does not permit", lambda: moved.write_text(
        rendered.read_text().replace(f"namespace: {TEAM}", "namespace: research")))
    seen = live.refused(APP, sha, "namespace research is not permitted in project 'tfjobgen'")
    print(f"\nArgo CD on a namespace the AppProject does not permit: {seen.errors or seen.synced[:1]}")
    assert live.tracked() == before and live.objects.get("v1", "Namespace", "research") is None, "nothing applied"

    def remove():
        moved.unlink()
        live.repo.remove_job(JOB)
        live.repo.hydrate()
    before = live.tracked()
    sha, at = live.commit(f"Remove {JOB} (rendered)", remove)
    live.synced(APP, sha)
    mine = {i for i in before if i[2].startswith(f"{JOB}-") or i[2] == JOB}
    applied = live.applied(APP, sha, at)
    assert {(k, n, m) for k, n, m, _ in applied} == mine and {m for *_, m in applied} == {"pruned"}, applied
    assert live.tracked() == {i: uid for i, uid in before.items() if i not in mine}


def test_dashboards_in_grafanas_namespace_go_with_each_teams_application_in_both_modes(live):
    """A team's way to its Grafana (issue 33): the profile puts the dashboards in namespace grafana, the AppProject
    permits {seed-80c, grafana} and names it with its tfjobgen.dev/dashboards-namespace annotation, hydrate, and the
    bootstrap applies argocd/<mode> again. Each team's Application syncs its jobs' dashboards into grafana, in
    rendered mode and then in plugin mode (no object restarts), and no Application is made for grafana."""
    from conftest import crd_dir

    from tfjobgen.cluster.controllers import argocd
    from tfjobgen.gitops import policy
    from tfjobgen.harness import conformance

    grafana = "grafana"
    branch = live.repo.git("branch", "--show-current")
    conformance.install_addon_crds(live.objects, crd_dir())  # the platform's Prometheus Operator
    profile = live.repo.path / "overlays" / CLUSTER / "cluster-profile.yaml"
    project = live.repo.path / "argocd" / "base" / "project.yaml"

    def change():
        profile.write_text(profile.read_text() + "  monitoring:\n    enabled: true\n    namespace: monitoring\n"
                           f"    dashboards: {{enabled: true, namespace: {grafana}}}\n")
        text = project.read_text().replace(f'{policy.DASHBOARDS_ANNOTATION}: ""',
                                           f"{policy.DASHBOARDS_ANNOTATION}: {grafana}")
        project.write_text(text.replace(f"  - {{name: {CLUSTER}, namespace: {TEAM}}}\n",
                                        f"  - {{name: {CLUSTER}, namespace: {TEAM}}}\n"
                                        f"  - {{name: {CLUSTER}, namespace: {grafana}}}\n", 1))
        live.repo.hydrate()
    sha, at = live.commit("Dashboards in Grafana's namespace", change)
    teams = {path.stem: path.parent.name for path in (live.repo.path / "rendered" / CLUSTER).glob("*/*.yaml")}
    uids = None
    for mode, source_type in (("rendered", "Directory"), ("plugin", "Plugin")):
        # what argocd/bootstrap's Application syncs on the merge: argocd/<mode>, the grafana destination in its list
        made = argocd.apply(live.objects, argocd.Source(live.repo.path, branch, mode), CLUSTER)
        assert made == [APP, OTHER_APP], f"{mode}: no Application for Grafana's namespace: {made}"
        for app in (APP, OTHER_APP):
            live.argocd.wait(lambda: (a := live.objects.get("argoproj.io/v1alpha1", "Application", app, "argocd"))
                             and (a.get("status") or {}).get("sourceType") == source_type
                             and a["status"]["sync"]["status"] == "Synced"
                             and a["status"]["sync"].get("revision") == sha and a, ANSWER, f"{app} on {mode}")
        dashboards = {c["metadata"]["name"]: c for c in live.objects.list("v1", "ConfigMap", grafana)
                      if c["metadata"]["name"].endswith("-dashboard")}
        assert set(dashboards) == {f"{job}-dashboard" for job in teams}, mode
        for job, team in teams.items():
            tracking = dashboards[f"{job}-dashboard"]["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"]
            assert tracking.startswith(f"tfjobgen-{CLUSTER}-{team}:/ConfigMap:{grafana}/"), tracking
        found = {name: c["metadata"]["uid"] for name, c in dashboards.items()}
        assert uids is None or found == uids, "switching modes recreated no dashboard"
        uids = found
    print(f"\ndashboards in {grafana}: {len(uids)} ConfigMaps, both modes, {time.monotonic() - at:.1f} s from commit")
    assert live.argocd.applications() == [APP, OTHER_APP]


def test_the_plugin_images_own_cmp_server_serves_the_repo_server_as_its_sidecar(tmp_path):
    """`--argocd-plugin-image` (issue 33): argocd-cmp-server runs in the tfjobgen-argocd-plugin image of `make
    images`, under runc, as repo-server-patch.yaml makes the sidecar: the image's root file system read-only, its
    plugin.yaml, Python and packages, kustomize and bash; uid 999; Argo CD's binary mounted at
    /var/run/argocd/argocd-cmp-server; the socket folder shared with the repo-server; a network namespace of its
    own. Both teams' Applications sync what rendered/ holds. Two jobs on a few nodes: about a minute."""
    from tfjobgen.cluster.controllers import plugin_sidecar

    need_cluster_tools("argocd", "kustomize")
    need("redis-server", shutil.which("redis-server"), "Argo CD's cache: apt-get install redis-server")
    try:
        image = plugin_sidecar.image()
    except plugin_sidecar.SidecarError as err:
        need("the plugin image with runc, umoci and root", None, str(err))
    repo = sample_clone(tmp_path / "repo")
    repo.keep_jobs(["wide-deep", "scene2-case1"])  # one job per team: each Application has something to sync
    started = time.monotonic()
    with local_cluster(SEED_PROFILE, 8, "--argocd", str(repo.path), "--argocd-plugin-image") as cluster:
        argocd = ArgoCD(cluster.kubeconfig, cluster.state()["ports"]["argocd redis"])
        try:
            live = Live(cluster, repo, argocd)
            up = time.monotonic()
            for app in (APP, OTHER_APP):
                live.synced(app, repo.head())
            synced = time.monotonic()
            [cmp_server] = [p for p in cluster_processes(cluster.home) if p.name == "argocd-cmp-serv"]
            assert cmp_server.argv[0] == plugin_sidecar.BINARY
            server = cmp_server.pid
            inside = Path(f"/proc/{server}/root")
            assert os.stat(f"/proc/{server}").st_uid == plugin_sidecar.UID
            assert (inside / "home/argocd/cmp-server/config/plugin.yaml").read_bytes() == \
                (REPO / "argocd" / "plugin" / "plugin.yaml").read_bytes(), "the image's plugin.yaml serves"
            assert (inside / "usr/local/bin/kustomize").is_file() and (inside / "usr/bin/python3").exists()
            assert os.statvfs(inside / "etc").f_flag & os.ST_RDONLY, "a read-only root"
            assert os.readlink(f"/proc/{server}/ns/net") != os.readlink("/proc/self/ns/net")
            assert os.readlink(f"/proc/{server}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
            expected = set()
            for path in sorted((repo.path / "rendered" / CLUSTER).glob("*/*.yaml")):
                expected |= _identities([o for o in yaml.safe_load_all(path.read_text()) if o])
            assert set(live.tracked()) == expected
            print(f"\nplugin image {image.digest[:19]}: cluster up {up - started:.1f} s, both Applications Synced "
                  f"{synced - up:.1f} s later")
        finally:
            argocd.close()


def test_a_repository_argo_cd_cannot_follow_gets_one_line_and_starts_nothing(tmp_path):
    need_cluster_tools("argocd", "kustomize")
    plain = tmp_path / "plain"
    plain.mkdir()
    detached = sample_clone(tmp_path / "detached")
    detached.git("checkout", "--quiet", "--detach")
    clone = sample_clone(tmp_path / "clone")
    cases = {
        ("--argocd", str(tmp_path / "missing")): f"--argocd {tmp_path / 'missing'}: no such folder (a local git "
                                                 "repository: a path or a file:// URL)",
        ("--argocd", plain.as_uri()): f"--argocd {plain.as_uri()}: not the top folder of a git repository",
        ("--argocd", str(detached.path)): f"--argocd {detached.path}: HEAD is detached; check out a branch "
                                          "(Argo CD follows a branch)",
        ("--argocd-mode", "rendered"): "--argocd-mode needs --argocd REPO",
        # The embedded profile's cluster, "default", is none of the AppProject's destinations.
        ("--argocd", str(clone.path)): "argocd/base/project.yaml names no destination on cluster 'default' (the "
                                       "profile's name): no Application would run here",
    }
    for args, line in cases.items():
        proc = tfjobgen("cluster", "up", "--name", "refused", "--nodes", "1", *args)
        assert proc.returncode == 1 and proc.stderr.strip().splitlines() == [f"tfjobgen cluster up: {line}"], \
            proc.stderr
    assert not (SESSION_HOME / "refused").exists()


def test_a_failed_argo_cd_start_says_why_and_leaves_nothing_running(tmp_path):
    """A plugin.yaml the cmp-server refuses: every process `cluster up` started is stopped, its folder removed."""
    need_cluster_tools("argocd", "kustomize")
    repo = sample_clone(tmp_path / "repo")
    plugin = repo.path / "argocd" / "plugin" / "plugin.yaml"
    plugin.write_text(plugin.read_text().replace("kind: ConfigManagementPlugin\n", "kind: ConfigManagementPlugins\n"))
    repo.commit("a plugin.yaml Argo CD refuses")
    proc = tfjobgen("cluster", "up", "--name", "argocd-refused", "--profile", str(SEED_PROFILE), "--nodes", "1",
                    "--argocd", str(repo.path))
    assert proc.returncode == 1, proc.stderr
    assert "tfjobgen cluster up: argocd-cmp-server exited with code" in proc.stderr
    assert "kind should be ConfigManagementPlugin, found ConfigManagementPlugins" in proc.stderr
    assert "Traceback" not in proc.stderr
    # Nothing runs; only the logs stay, for the one the message points at, until the next up or down of the name.
    folder = SESSION_HOME / "argocd-refused"
    assert leftovers(folder) == [] and sorted(p.name for p in folder.iterdir()) == [cluster_home.MARKER_FILE, "logs"]
    assert f"(its log: {folder / 'logs'}" in proc.stderr, proc.stderr
    assert tfjobgen("cluster", "down", "--name", "argocd-refused").returncode == 0 and not folder.exists()
