"""Print docs/plan.md's summary of the seed's eight cases: `tfjobgen plan` of each, one row per case.

    .venv/bin/python docs/generate/plan_scenes.py

The same plans `tfjobgen plan jobs/scene*.yaml --profile overlays/seed-80c/cluster-profile.yaml`
prints in full, reduced to the nodes each topology needs and the job's traffic.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

from tfjobgen.concerns import workload
from tfjobgen.expand import pipeline
from tfjobgen.harness import sample
from tfjobgen.kit import table
from tfjobgen.planner import report
from tfjobgen.planner.units import percent, size


def main() -> None:
    profile = pipeline.load_profile(str(sample.OVERLAYS / "seed-80c" / "cluster-profile.yaml"))
    rows = []
    for scene in (1, 2):
        for case in (1, 2, 3, 4):
            intents, _ = pipeline.load_intents([str(sample.JOBS / f"scene{scene}-case{case}.yaml")])
            job, problems = pipeline.validate(intents[0], profile)
            assert job is not None, [p.format() for p in problems]
            plan = report.make(job, profile, workload.of_job(job))
            packings = {p.mode: p for p in plan.capacity.packings}

            def nodes(mode: str) -> str:
                packing = packings[mode]
                return str(sum(packing.nodes.values())) + (" (Pending)" if packing.pending else "")

            own = next(t for t in plan.own.topologies if t.mode == job.topology.mode)
            rows.append([f"scene {scene} case {case}", job.roles["ps"].replicas, job.roles["worker"].replicas,
                         job.topology.mode, " / ".join(nodes(m) for m in ("colocated", "isolated", "spread")),
                         size(own.cross), percent(own.local_share), f"{size(own.busiest_bytes)} ({own.busiest})"])
    print(table.markdown(["case", "PS", "workers", "topology", "nodes: colocated / isolated / spread",
                          "cross-server per round", "local", "busiest server's network"], rows))


if __name__ == "__main__":
    main()
