"""Does each topology hold beside other jobs under each gang scheduler? The real schedulers, shuffled orders.

    .venv/bin/python benchmarks/gang_topologies.py [--gangs none volcano scheduler-plugins kubernetes]
                                                   [--orders 3] [--nodes 18]

The seed's profile (overlays/seed-80c) with spec.gang set, and four of the repository's jobs sharing
one cluster of NODES servers: wide-deep and ctr-jobset (spread), scene1-case2 (colocated) and
scene2-case1 (isolated), 113 pods. For each gang setting and order, `tfjobgen place`'s machinery
(a fresh cluster, the objects created in a shuffled order, the scheduler left to settle) says per
job whether its topology's promise held (concerns/promises.py) and, when it did not, why. Volcano
runs with colocatedGroups: scheduler (its task-topology keeps each group on one server: the promise
checked is then the group's, not the server's exclusivity); the others keep groups by affinity.
`kubernetes` runs on Kubernetes 1.37 (`--kubernetes 1.37`), the rest on the default release.
Prints a Markdown table of topology x gang scheduler, then what broke.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "overlays" / "seed-80c" / "cluster-profile.yaml"
JOBS = ["wide-deep", "ctr-jobset", "scene1-case2", "scene2-case1"]
GANGS = ("none", "volcano", "scheduler-plugins", "kubernetes")


def profile_for(gang: str) -> dict:
    from tfjobgen.inputs.profile import WORKLOAD_API_SINCE

    document = yaml.safe_load(SEED.read_text())
    document["metadata"]["name"] = f"seed-80c-{gang}"
    if gang == "volcano":
        document["spec"]["gang"] = {"scheduler": gang, "colocatedGroups": "scheduler"}
    elif gang == "scheduler-plugins":
        document["spec"]["gang"] = {"scheduler": gang, "schedulerName": "coscheduler"}
    elif gang == "kubernetes":
        document["spec"]["gang"] = {"scheduler": gang}
        document["spec"]["kubernetesVersion"] = WORKLOAD_API_SINCE
    return document


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gangs", nargs="+", default=list(GANGS), choices=GANGS)
    parser.add_argument("--orders", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=18)
    args = parser.parse_args()
    from tfjobgen.cluster.measure import place
    from tfjobgen.expand import pipeline
    from tfjobgen.inputs.profile import WORKLOAD_API_SINCE

    held: dict[tuple[str, str], list[bool]] = {}
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="gang-topologies-") as folder:
        os.environ.setdefault("TFJOBGEN_CLUSTER_HOME", str(Path(folder) / "clusters"))
        for gang in args.gangs:
            profile = pipeline.profile_from(profile_for(gang))
            intents, problems = pipeline.load_intents([str(REPO / "jobs" / f"{job}.yaml") for job in JOBS])
            if problems:
                raise SystemExit("\n".join(str(p) for p in problems))
            expansion = pipeline.expand(intents, profile)
            objects = expansion.in_order()
            release = WORKLOAD_API_SINCE if gang == "kubernetes" else ""
            for seed in range(args.orders):
                print(f"{gang}: order {seed + 1} of {args.orders} ...", file=sys.stderr, flush=True)
                run = place.run_order(objects, profile, args.nodes, seed, False, f"gangtop-{gang}-{seed}",
                                      lambda line: None, kubernetes=release)
                for outcome in run.jobs.values():
                    held.setdefault((outcome.topology, gang), []).append(outcome.holds)
                    if not outcome.holds:
                        why = "; ".join(outcome.broken[:2]) or f"{len(outcome.pending)} pod(s) Pending"
                        notes.append(f"- {gang}, order {seed}: {outcome.job} ({outcome.topology}): {why}")
    topologies = sorted({t for t, _ in held})
    print("| topology | " + " | ".join(args.gangs) + " |")
    print("| --- |" + " --- |" * len(args.gangs))
    for topology in topologies:
        cells = []
        for gang in args.gangs:
            runs = held.get((topology, gang), [])
            cells.append(f"{sum(runs)}/{len(runs)} held" if runs else "-")
        print(f"| {topology} | " + " | ".join(cells) + " |")
    print()
    print("\n".join(notes) or "Every promise held.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
