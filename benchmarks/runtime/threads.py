"""Thread pools: a worker confined to 1 or 2 CPUs, with the generated counts vs an 80-core host's defaults.

    .venv/bin/python benchmarks/runtime/threads.py [--repeats 3] [--steps 700]

The seed's finding: a container sees the host's 80 cores, TensorFlow sizes its
pools to them, and the oversubscribed pools cost context switches and speed.
Here a job of 1 PS + 1 worker + chief (tf2, the reference model) runs through
tfjobgen's own run-local code, the worker pinned to its CPUs (as the kubelet's
CPU manager would), with

    generated     the thread counts tfjobgen writes for that many CPUs
    oversubscribed  TF_NUM_INTRAOP_THREADS = TF_NUM_INTEROP_THREADS = 80 (TF's default on an
                  80-core host, set explicitly: this machine has 2 cores)

Between the chief's step 100 and 100 steps before the end it counts the worker's voluntary
and involuntary context switches (every thread's, from /proc, sampled at each
logged step) and the steps/s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from common import job_variant, machine, markdown, save

from tfjobgen import backends
from tfjobgen.concerns.lifecycle import Lifecycle
from tfjobgen.expand import pipeline
from tfjobgen.kit import owned
from tfjobgen.local import tasks
from tfjobgen.local.supervisor import Supervisor
from tfjobgen.shared.contract import PERMANENT_EXIT_CODES

WARM_UP = 100  # steps before the window: tracing, the first batches
TAIL = 100  # steps after it


def per_thread(pid: int) -> dict[int, tuple[int, int]]:
    """(voluntary, involuntary) context switches of each live thread of the process."""
    found = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status", encoding="ascii") as status:
                values = dict(line.split(":", 1) for line in status if "ctxt_switches" in line)
            found[int(tid)] = (int(values["voluntary_ctxt_switches"]), int(values["nonvoluntary_ctxt_switches"]))
        except (OSError, KeyError, ValueError):
            continue  # the thread ended meanwhile
    return found


class Switches:
    """Context switches of all a process's threads over a window, threads that start or end included.

    Sampled at every logged step: a thread that ends between two samples loses at most
    its switches since the last one (summing live threads only would even go negative).
    """

    def __init__(self, pid: int):
        self.pid, self.start = pid, per_thread(pid)
        self.last = dict(self.start)

    def sample(self) -> None:
        self.last.update(per_thread(self.pid))

    def totals(self) -> tuple[int, int, int]:
        """(voluntary, involuntary) switches since the start, and the threads alive at the start."""
        voluntary = sum(v - self.start.get(t, (0, 0))[0] for t, (v, _) in self.last.items())
        involuntary = sum(i - self.start.get(t, (0, 0))[1] for t, (_, i) in self.last.items())
        return voluntary, involuntary, len(self.start)


def one_run(worker_cpus: tuple[int, ...], oversubscribed: bool, steps: int) -> dict:
    roles = {"ps": {"replicas": 1, "cpu": 1, "memory": "2Gi"},
             "worker": {"replicas": 1, "cpu": len(worker_cpus), "memory": "2Gi"},
             "chief": {"cpu": 1, "memory": "2Gi"}}
    job = job_variant("threads", {"model": {"vocabularySize": 100000, "embeddingDim": 16, "hiddenUnits": [64, 32]}},
                      roles=roles)
    intents, _ = pipeline.load_intents([str(job)])
    expansion = pipeline.expand(intents, pipeline.load_profile(None))
    request = tasks.describe(backends.decode(expansion.objects[0]))
    counts = {"chief": 1, "ps": 1, "worker": 1}
    run_dir = tempfile.mkdtemp(prefix="tfjobgen-bench-threads-")
    local, _, _ = tasks.build(request, counts, owned.free_ports(tasks.ports_needed(request, counts)), run_dir,
                              tasks.Overrides(steps=steps), tuple(sorted(os.sched_getaffinity(0))))  # grpc: no files
    worker = next(t for t in local if t.role == "worker")
    generated = (worker.env["TF_NUM_INTRAOP_THREADS"], worker.env["TF_NUM_INTEROP_THREADS"])
    worker.cpus = worker_cpus
    if oversubscribed:
        worker.env.update(TF_NUM_INTRAOP_THREADS="80", TF_NUM_INTEROP_THREADS="80", OMP_NUM_THREADS="80")
    if len(worker_cpus) == 1:  # the others keep off the worker's CPU, as other pods would under cpuset
        others = tuple(c for c in sorted(os.sched_getaffinity(0)) if c not in worker_cpus)[:1]
        for task in local:
            if task is not worker:
                task.cpus = others
    marks = {}

    def on_event(name, event, fields):
        if name != "chief:0" or event != "step":
            return
        step = int(fields["step"])
        process = supervisor.states["worker:0"].process
        if step >= WARM_UP and "start" not in marks:
            marks["start"] = (step, time.monotonic())
            marks["switches"] = Switches(process.pid)
        elif "start" in marks and "end" not in marks:
            marks["switches"].sample()
            if step >= steps - TAIL:  # well before the end: the last steps overlap checkpointing and exit
                marks["end"] = (step, time.monotonic(), marks["switches"].totals())

    supervisor = Supervisor(local, run_dir, run_dir, uses_runtime=True, chief="chief:0", target_steps=steps,
                            lifecycle=Lifecycle(0, PERMANENT_EXIT_CODES, None), on_event=on_event)
    result = supervisor.run()
    if not result.ok or "end" not in marks:
        raise SystemExit(f"run failed: {result.message}")
    (s0, t0), (s1, t1, (voluntary, involuntary, threads)) = marks["start"], marks["end"]
    done = s1 - s0
    return {"steps_per_sec": done / (t1 - t0), "voluntary_per_step": voluntary / done,
            "involuntary_per_step": involuntary / done, "threads": threads,
            "pools": "80/80" if oversubscribed else "/".join(generated), "leftovers": result.leftovers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=700)
    args = parser.parse_args()
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    configs = [((cpus[-1],), False), ((cpus[-1],), True), (cpus[:2], False), (cpus[:2], True)]
    samples: dict[tuple, list[dict]] = {c: [] for c in configs}
    for repeat in range(args.repeats):
        for config in (configs if repeat % 2 == 0 else list(reversed(configs))):
            sample = one_run(config[0], config[1], args.steps)
            samples[config].append(sample)
            print(f"worker on {len(config[0])} CPU(s), pools {sample['pools']}: {sample['steps_per_sec']:.1f} steps/s, "
                  f"{sample['voluntary_per_step']:.0f} + {sample['involuntary_per_step']:.1f} switches/step", flush=True)
    rows, raw = [], []
    for (worker_cpus, oversubscribed), runs in samples.items():
        med = {key: statistics.median(r[key] for r in runs)
               for key in ("steps_per_sec", "voluntary_per_step", "involuntary_per_step", "threads")}
        spread = max(r["steps_per_sec"] for r in runs) - min(r["steps_per_sec"] for r in runs)
        rows.append([len(worker_cpus), runs[0]["pools"], f"{med['steps_per_sec']:.1f} (±{spread / 2:.1f})",
                     f"{med['voluntary_per_step']:.0f}", f"{med['involuntary_per_step']:.1f}", f"{med['threads']:.0f}"])
        raw.append({"worker_cpus": len(worker_cpus), "oversubscribed": oversubscribed, "runs": runs, "median": med})
    print(f"\n{machine()}; medians of {args.repeats} runs, steps {WARM_UP}-{args.steps - TAIL}\n")
    print(markdown(["worker CPUs", "intra/inter threads", "steps/s", "voluntary switches/step",
                    "involuntary switches/step", "worker threads"], rows))
    save("threads", {"machine": machine(), "steps": args.steps, "warm_up": WARM_UP, "configs": raw})


if __name__ == "__main__":
    main()
