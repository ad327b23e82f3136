"""Time from `kubectl apply` to every pod Running, per gang scheduler, on a local cluster.

    .venv/bin/python benchmarks/gang_time.py [--nodes 100] [--gang none volcano scheduler-plugins kueue kubernetes]

For each gang setting: `tfjobgen cluster up` with the seed's 80-core servers (overlays/seed-80c) and
spec.gang set, then the repository's jobs that the jobset backend carries (every example but the
colocated ones: jobset is what Kueue admits whole) rendered with `tfjobgen render` and applied in one
`kubectl apply --server-side`, as Argo CD syncs. Reported per job: seconds from the apply until
every pod of the job is Running (KWOK starts a bound pod at once, so this is admission, scheduling
and the controllers); and for all jobs together. The cluster is stopped after each setting.
Gang `kubernetes` (kube-scheduler's own) runs on Kubernetes 1.37 (`cluster up --kubernetes 1.37`), the
others on the default release. Prints a Markdown table; needs `make cluster-tools`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]

from tfjobgen.harness import gangs
from tfjobgen.kit import owned
from tfjobgen.kube import api

SEED = REPO / "overlays" / "seed-80c" / "cluster-profile.yaml"
JOBS = ["ctr-jobset", "deeprec-starserver", "scene2-case1", "scene2-case2", "scene2-case3", "wide-deep"]
GANGS = (gangs.NONE, *gangs.SCHEDULERS)
TFJOBGEN = [str(REPO / ".venv" / "bin" / "tfjobgen")]


def profile_file(gang: str, folder: Path, extra: dict | None = None, **more) -> Path:
    """The seed's profile under `gang` (gangs.SCHEDULERS, given `more` spec.gang fields; "none": no gang),
    with `extra` merged into spec."""
    document = yaml.safe_load(SEED.read_text())
    document["metadata"]["name"] = f"seed-80c-{gang}"
    if gang != gangs.NONE:
        document = gangs.SCHEDULERS[gang].with_settings(**more).given_to(document)
    document["spec"].update(extra or {})
    path = folder / f"profile-{gang}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def render(profile: Path, jobs: list[Path], backend: str | None, folder: Path) -> str:
    sources = []
    for job in jobs:
        document = yaml.safe_load(job.read_text())
        if backend:
            document["spec"]["backend"] = backend
        source = folder / job.name
        source.write_text(yaml.safe_dump(document))
        sources.append(str(source))
    done = subprocess.run(TFJOBGEN + ["render", "--profile", str(profile), *sources], capture_output=True,
                          text=True, check=True)
    return done.stdout


class Cluster:
    """`tfjobgen cluster up` / `down` around a block, as a user runs them."""

    def __init__(self, profile: Path, nodes: int, name: str, release: str = ""):
        self.profile, self.nodes, self.name, self.release = profile, nodes, name, release

    def __enter__(self):
        began = time.monotonic()
        up = subprocess.run(TFJOBGEN + ["cluster", "up", "--profile", str(self.profile), "--nodes", str(self.nodes),
                                        "--name", self.name, *(["--kubernetes", self.release] if self.release else [])],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if up.returncode != 0:
            raise SystemExit(f"cluster up failed:\n{up.stderr}")
        self.up_seconds = time.monotonic() - began
        self.up_log = up.stderr
        self.kubeconfig = up.stdout.strip().splitlines()[-1]
        self.objects = api.Objects(api.connect(self.kubeconfig))
        return self

    def __exit__(self, *exc):
        subprocess.run(TFJOBGEN + ["cluster", "down", "--name", self.name], capture_output=True)

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run(["kubectl", f"--kubeconfig={self.kubeconfig}", *args], input=stdin, capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(args)}: {done.stderr}")
        return done.stdout

    def namespaces(self, names: set[str]) -> None:
        from tfjobgen.expand import pipeline
        from tfjobgen.place import place

        profile = pipeline.load_profile(str(self.profile))
        for name in sorted(names):
            place.job_namespace(self.objects, name, profile, restricted=False)

    def pods(self) -> list[dict]:
        return self.objects.list("v1", "Pod")


def expected_pods(rendered: str) -> dict[str, int]:
    """job -> how many pods its controllers create, from tfjobgen's own decode of the rendered objects."""
    from tfjobgen import backends

    objects = [o for o in yaml.safe_load_all(rendered) if o]
    return {decoded.name: len(decoded.pods) for decoded in backends.decode(objects)}


def until_running(cluster: Cluster, wanted: dict[str, int], began: float, timeout: float) -> dict[str, float]:
    """job -> seconds after `began` when all its pods were Running (missing: not within `timeout`)."""
    done: dict[str, float] = {}
    deadline = began + timeout
    while len(done) < len(wanted) and time.monotonic() < deadline:
        counts: dict[str, int] = {}
        for pod in cluster.pods():
            job = (pod["metadata"].get("labels") or {}).get("tfjobgen.dev/job")
            if job in wanted and (pod.get("status") or {}).get("phase") == "Running":
                counts[job] = counts.get(job, 0) + 1
        now = time.monotonic() - began
        for job, count in counts.items():
            if job not in done and count >= wanted[job]:
                done[job] = now
        time.sleep(0.5)
    return done


def main() -> None:
    owned.unwind_on_sigterm()  # killed, it still stops the clusters it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--gang", nargs="+", default=list(GANGS), choices=GANGS)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="gang-time-") as folder:
        folder = Path(folder)
        os.environ.setdefault("TFJOBGEN_CLUSTER_HOME", str(folder / "clusters"))
        for gang in args.gang:
            profile = profile_file(gang, folder)
            rendered = render(profile, [REPO / "jobs" / f"{j}.yaml" for j in JOBS], "jobset", folder)
            wanted = expected_pods(rendered)
            namespaces = {o["metadata"]["namespace"] for o in yaml.safe_load_all(rendered) if o}
            with Cluster(profile, args.nodes, f"bench-{gang}", gangs.release_for(gang)) as cluster:
                cluster.namespaces(namespaces)
                began = time.monotonic()
                cluster.kubectl("apply", "--server-side", "-f", "-", stdin=rendered)
                applied = time.monotonic() - began
                done = until_running(cluster, wanted, began, args.timeout)
            for job in sorted(wanted):
                rows.append((gang, job, wanted[job], f"{done[job]:.1f} s" if job in done else "not all Running"))
            total = f"{max(done.values()):.1f} s" if len(done) == len(wanted) else "not all Running"
            rows.append((gang, "**all jobs**", sum(wanted.values()), f"{total} (apply {applied:.1f} s, "
                                                                      f"cluster up {cluster.up_seconds:.0f} s)"))
            print(f"{gang}: {total}", file=sys.stderr, flush=True)
    print(f"| spec.gang.scheduler ({args.nodes} nodes) | job | pods | apply to all Running |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")


if __name__ == "__main__":
    main()
