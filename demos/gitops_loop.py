"""The GitOps loop on one machine, measured: commits to a git repository, Argo CD's answers on a local cluster.

    make demo-gitops        (.venv/bin/python demos/gitops_loop.py [--mode plugin|rendered] [--nodes N])

It clones this checkout into a temporary git repository (the working tree's uncommitted changes
committed on top), starts `tfjobgen cluster up --profile overlays/seed-80c/cluster-profile.yaml
--argocd <clone>` (Argo CD's application-controller, repo-server, ApplicationSet controller and the
repository's own plugin, with redis), waits for the first sync, then commits one change at a time:

    add a job        its objects appear           (commit -> Synced, -> every pod bound)
    change it        OutOfSync with Argo CD's diff, then applied (its Jobs replaced, no other job's)
    break it         the manifests fail with the plugin's file:line; nothing is pruned
    fix it           Synced again
    remove it        exactly its objects pruned

A live line shows where Argo CD is; a table ends it: commit, what Argo CD did, how long it took.
tests/cluster/test_gitops_live.py drives the same Repo and ArgoCD (tfjobgen/harness/argocd_loop.py) with assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from tfjobgen.harness.argocd_loop import (
    NODES,
    REPO,
    SEED_PROFILE,
    ArgoCD,
    Repo,
    Seen,
    Step,
    did,
    job_objects,
    job_pods,
    located,
    small_job,
    sync_state,
)


class Progress:
    """One line rewritten in place on a terminal; a line every few seconds otherwise."""

    def __init__(self):
        self.interactive = sys.stderr.isatty()
        self.last = 0.0

    def show(self, text: str) -> None:
        if self.interactive:
            print("\r\033[K" + text[:shutil.get_terminal_size().columns - 1], end="", file=sys.stderr, flush=True)
        elif time.monotonic() - self.last > 5:
            self.last = time.monotonic()
            print(text, file=sys.stderr, flush=True)

    def done(self, text: str) -> None:
        print(("\r\033[K" if self.interactive else "") + text, file=sys.stderr, flush=True)


def demo(mode: str, nodes: int) -> int:
    from tfjobgen.kit import table

    work = Path(tempfile.mkdtemp(prefix="tfjobgen-gitops-"))
    env = {**os.environ, "PYTHONPATH": str(REPO / "generator"), "TFJOBGEN_CLUSTER_HOME": str(work / "clusters")}
    name = "gitops-demo"
    progress = Progress()
    steps: list[Step] = []
    argocd = None
    try:
        repo = Repo.clone(REPO, work / "repo")
        progress.done(f"git repository {repo.path} (a clone of this checkout), branch {repo.git('branch', '--show-current')}")
        begun = time.monotonic()
        up = subprocess.Popen([sys.executable, "-m", "tfjobgen", "cluster", "up", "--name", name, "--profile",
                               str(SEED_PROFILE), "--nodes", str(nodes), "--argocd", str(repo.path), "--argocd-mode",
                               mode], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in up.stderr:
            progress.show(line.rstrip())
        if up.wait() != 0:
            progress.done("tfjobgen cluster up failed (see above)")
            return 1
        kubeconfig = Path(up.stdout.read().strip().splitlines()[-1])
        state = json.loads((kubeconfig.parent / "state.json").read_text())
        progress.done(f"cluster and Argo CD up in {time.monotonic() - begun:.0f} s: "
                      f"{', '.join(state['argocd']['applications'])}")
        argocd = ArgoCD(kubeconfig, state["ports"]["argocd redis"])
        apps = state["argocd"]["applications"]
        team_prefix = f"-{state['profile_name']}-"  # tfjobgen-<cluster>-<team>: the team is enough on one line
        job, app = "gitops-demo", next(a for a in apps if a.endswith("-ml-training"))

        def watch(sha: str, label: str) -> Callable[[], None]:
            started = time.monotonic()

            def show() -> None:
                states = "  ".join(f"{a.split(team_prefix, 1)[-1]}: {sync_state(argocd.latest(a))}" for a in apps)
                progress.show(f"[{time.monotonic() - started:5.1f}s] {label} @{sha[:7]}: {states}")
            return show

        def timed(sha: str, label: str, check: Callable[[], object], timeout: float = 180) -> float:
            started = time.monotonic()
            argocd.wait(check, timeout, label, watch(sha, label))
            return time.monotonic() - started

        head = repo.head()
        took = timed(head, "first sync", lambda: all((argocd.latest(a) or Seen.of({"metadata": {"name": a}}, 0))
                                                     .settled_at(head) for a in apps), timeout=900)
        steps.append(Step(head[:7], "the clone's HEAD", f"{len(apps)} Applications Synced",
                          [f"{took:.1f} s to Synced (after cluster up)"]))

        def commit(message: str, change: Callable[[], None]) -> tuple[str, float]:
            change()
            if mode == "rendered":
                repo.hydrate()
            return repo.commit(message), time.monotonic()

        def synced(sha: str) -> Seen | None:
            seen = argocd.latest(app)
            return seen if seen and seen.settled_at(sha) and seen.operation_revision == sha else None

        sha, at = commit(f"Add job {job}", lambda: repo.write_job(job, small_job(job)))
        seen = argocd.wait(lambda: synced(sha), 180, "add", watch(sha, "add"))
        to_synced = seen.at - at
        pods = argocd.wait(lambda: (p := job_pods(argocd.objects, job)) and all(x["spec"].get("nodeName") for x in p)
                           and p, 120, "pods bound", watch(sha, "pods"))
        steps.append(Step(sha[:7], f"add job {job}", did(argocd.applied(app, sha, at)),
                          [f"{to_synced:.1f} s to Synced", f"{time.monotonic() - at:.1f} s to {len(pods)} pods bound"]))

        sha, at = commit(f"{job}: 3 workers", lambda: repo.write_job(job, small_job(job, workers=3)))
        seen = argocd.wait(lambda: synced(sha), 180, "change", watch(sha, "change"))
        differ = next((s for s in argocd.since(app, at) if s.out_of_sync), None)
        steps.append(Step(sha[:7], f"{job}: 2 -> 3 workers",
                          f"OutOfSync ({len(differ.out_of_sync) if differ else '?'} objects differ); "
                          f"{did(argocd.applied(app, sha, at))}",
                          [f"{(differ.at - at) if differ else 0:.1f} s to OutOfSync", f"{seen.at - at:.1f} s to Synced"]))

        running = job_objects(argocd.objects, job, "ml-training")
        sha, at = commit(f"{job}: a fractional CPU under qos cpuset",
                         lambda: repo.write_job(job, small_job(job, workers=3, worker_cpu="1.5")))
        # Argo CD keeps the Application at the last commit it could build and says why in a condition.
        seen = argocd.wait(lambda: (s := argocd.latest(app)) and any(f"jobs/{job}.yaml:" in e for e in s.errors) and s,
                           180, "break", watch(sha, "break"))
        kept = "nothing synced or pruned" if not argocd.applied(app, sha, at) and \
            job_objects(argocd.objects, job, "ml-training") == running else "its objects CHANGED"
        steps.append(Step(sha[:7], f"{job}: worker cpu 1.5 under qos cpuset",
                          f"ComparisonError, {kept}: {located(seen.errors, f'jobs/{job}.yaml')}",
                          [f"{seen.at - at:.1f} s to the error"]))

        sha, at = commit(f"{job}: whole cores again", lambda: repo.write_job(job, small_job(job, workers=3)))
        seen = argocd.wait(lambda: (s := argocd.latest(app)) and s.settled_at(sha) and not s.errors and s,
                           180, "fix", watch(sha, "fix"))
        steps.append(Step(sha[:7], f"{job}: fixed", f"Synced; {did(argocd.applied(app, sha, at))}",
                          [f"{seen.at - at:.1f} s to Synced"]))

        sha, at = commit(f"Remove job {job}", lambda: repo.remove_job(job))
        seen = argocd.wait(lambda: synced(sha), 180, "remove", watch(sha, "remove"))
        gone = argocd.wait(lambda: not job_objects(argocd.objects, job, "ml-training")
                           and not job_pods(argocd.objects, job), 120, "pruned", watch(sha, "pruned"))
        steps.append(Step(sha[:7], f"remove job {job}", did(argocd.applied(app, sha, at)),
                          [f"{seen.at - at:.1f} s to Synced", f"{time.monotonic() - at:.1f} s to no pod left"]))
        progress.done(f"done: Argo CD v3.2.6, {mode} mode, {state['nodes']} KWOK nodes")
        print(table.render(["COMMIT", "CHANGE", "WHAT ARGO CD DID", "HOW LONG"],
                           [[s.commit, s.message, s.did, "; ".join(s.took)] for s in steps]))
        return 0
    except (TimeoutError, RuntimeError) as err:
        progress.done(f"gitops demo: {err}")
        return 1
    finally:
        if argocd:
            argocd.close()
        subprocess.run([sys.executable, "-m", "tfjobgen", "cluster", "down", "--name", name], env=env,
                       capture_output=True, timeout=120)
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["plugin", "rendered"], default="plugin")
    parser.add_argument("--nodes", type=int, default=NODES)
    args = parser.parse_args(argv)
    return demo(args.mode, args.nodes)


if __name__ == "__main__":
    sys.exit(main())
