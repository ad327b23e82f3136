"""Colocated beside other jobs: PriorityClasses and pod affinity on kube-scheduler, against Volcano
placing each group whole (spec.gang.colocatedGroups: scheduler), on real schedulers.

    .venv/bin/python benchmarks/colocated_gang.py [--nodes 12] [--runs 3]

A cluster of the seed's 80-core servers (overlays/seed-80c). Other jobs run first: wide-deep
(spread) and ctr-jobset (spread, JobSet), about 220 CPUs over ~50 pods. Then scene1-case2 (5
colocated groups of a PS and 10 workers, 68 CPUs and 192 GiB each: a server each) is applied.
Measured until every pod of every job is Running, or the time limit:

- groups whole: groups whose PS's server runs exactly its own workers of the job (and of them, how
  many have the server to themselves: no pod of another job, as colocated's affinity promises);
- pods preempted: pods of the other jobs that a scheduler preempted (their Job controllers make
  them again, and they are scheduled anew);
- time to place: from the colocated job's apply until all 55 of its pods are Running.

Ways compared:
- `priority`: spec.gang none, the profile's PriorityClasses (PS 2000, preempting; workers 1000),
  colocated by affinity. kube-scheduler spreads the other jobs over every server, so each PS
  preempts workers to free a server.
- `volcano`: spec.gang volcano for every job, colocatedGroups: scheduler. Volcano packs the other
  jobs (its binpack plugin) and places each group on one server; its configuration has no preempt
  action.
- `volcano-late`: the other jobs on kube-scheduler (spread, as in `priority`), only the colocated
  job on Volcano: what happens when no server is free and nothing preempts.
- `kubernetes`: spec.gang kubernetes for every job, colocatedGroups: scheduler, on Kubernetes 1.37:
  kube-scheduler's own gang scheduling, a PodGroup per group held to one server by its topology
  constraint (TopologyAwareWorkloadScheduling); no group-level preemption either.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml
from gang_time import REPO, Cluster, expected_pods, profile_file, render, until_running  # noqa: E402
from tfjobgen.harness import gangs
from tfjobgen.kit import owned

OTHERS = ["wide-deep", "ctr-jobset"]
COLOCATED = "scene1-case2"
WAYS = ("priority", "volcano", "volcano-late", "kubernetes")


def groups_placed(pods: list[dict], job: str) -> tuple[int, int, int]:
    """(whole, exclusive, groups) of `job`'s colocated groups: whole, its PS's server runs exactly the
    group's workers of the job; exclusive, and no pod of another job either (what colocated's affinity
    rules promise)."""
    by_node: dict[str, list[dict]] = {}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") == "Running":
            by_node.setdefault(pod["spec"].get("nodeName"), []).append(pod)
    mine = [p for p in pods if (p["metadata"].get("labels") or {}).get("tfjobgen.dev/job") == job]
    groups = sorted({p["metadata"]["labels"]["tfjobgen.dev/group"] for p in mine})
    whole = exclusive = 0
    for group in groups:
        members = [p for p in mine if p["metadata"]["labels"]["tfjobgen.dev/group"] == group]
        ps = [p for p in members if p["metadata"]["labels"]["tfjobgen.dev/role"] == "ps"]
        if not ps or not ps[0]["spec"].get("nodeName"):
            continue
        there = by_node.get(ps[0]["spec"]["nodeName"], [])
        ours = [p for p in there if p["metadata"]["labels"].get("tfjobgen.dev/job") == job]
        if sorted(p["metadata"]["name"] for p in ours) == sorted(p["metadata"]["name"] for p in members):
            whole += 1
            exclusive += len(ours) == len(there)
    return whole, exclusive, len(groups)


def preempted(cluster: Cluster) -> int:
    """Pods a scheduler preempted: kube-scheduler's event on the victim (reason Preempted)."""
    return sum(1 for e in cluster.objects.list("v1", "Event") if e.get("reason") == "Preempted")


def run(way: str, nodes: int, folder: Path, timeout: float, index: int) -> dict:
    base = {"priorityClasses": {"ps": "tfjobgen-ps", "worker": "tfjobgen-worker"}}
    gang = {"priority": gangs.NONE, "kubernetes": "kubernetes"}.get(way, "volcano")
    profile = profile_file(gang, folder, base, **({} if gang == gangs.NONE else {"colocatedGroups": "scheduler"}))
    others_profile = profile if way in ("volcano", "kubernetes") else profile_file(gangs.NONE, folder, base)
    others = render(others_profile, [REPO / "jobs" / f"{j}.yaml" for j in OTHERS], None, folder)
    colocated = render(profile, [REPO / "jobs" / f"{COLOCATED}.yaml"], None, folder)
    with Cluster(profile, nodes, f"coloc-{way}-{index}", gangs.release_for(gang)) as cluster:
        namespaces = {o["metadata"]["namespace"] for o in yaml.safe_load_all(others + colocated) if o}
        cluster.namespaces(namespaces)
        wanted_others = expected_pods(others)
        began = time.monotonic()
        cluster.kubectl("apply", "--server-side", "-f", "-", stdin=others)
        until_running(cluster, wanted_others, began, timeout)
        began = time.monotonic()
        cluster.kubectl("apply", "--server-side", "-f", "-", stdin=colocated)
        wanted = expected_pods(colocated)
        placed = until_running(cluster, wanted, began, timeout)
        time.sleep(3)  # preempted workers come back: let them be scheduled before counting
        settled = until_running(cluster, {**wanted_others, **wanted}, time.monotonic(), 30)
        pods = cluster.pods()
        whole, exclusive, groups = groups_placed(pods, COLOCATED)
        return {"way": way, "whole": whole, "exclusive": exclusive, "groups": groups, "preempted": preempted(cluster),
                "placed": placed.get(COLOCATED), "all_running": len(settled) == len({**wanted_others, **wanted})}


def main() -> None:
    owned.unwind_on_sigterm()  # killed, it still stops the clusters it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=12)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=WAYS)
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="coloc-") as folder:
        folder = Path(folder)
        os.environ.setdefault("TFJOBGEN_CLUSTER_HOME", str(folder / "clusters"))
        for index in range(args.runs):
            for way in args.ways:
                result = run(way, args.nodes, folder, args.timeout, index)
                print(result, file=sys.stderr, flush=True)
                results.append(result)
    print(f"| way ({args.nodes} servers, {args.runs} runs) | groups whole | of them alone on their server | "
          "pods preempted | time to place | every pod Running after |")
    print("| --- | --- | --- | --- | --- | --- |")
    for way in args.ways:
        mine = [r for r in results if r["way"] == way]
        times = sorted(r["placed"] for r in mine if r["placed"] is not None)
        timing = (f"{times[len(times) // 2]:.1f} s (median), {times[0]:.1f}-{times[-1]:.1f} s" if times
                  else "never")
        if len(times) < len(mine):
            timing += f"; not placed in {len(mine) - len(times)} of {len(mine)} runs within {args.timeout:.0f} s"
        print(f"| {way} | {sum(r['whole'] for r in mine)}/{sum(r['groups'] for r in mine)} | "
              f"{sum(r['exclusive'] for r in mine)} | "
              f"{sum(r['preempted'] for r in mine)} | {timing} | {sum(r['all_running'] for r in mine)}/{len(mine)} |")


if __name__ == "__main__":
    main()
