"""What JobSet 0.12's RestartJob failure action would do to a tfjobgen job, on the real JobSet controller.

    .venv/bin/python benchmarks/jobset_restart_job.py [--max-restarts 2]

tfjobgen's JobSet fails at once when a child Job fails (FailJobSet; a task's own retries happen inside its
child Job). RestartJob, alpha in JobSet v0.12.0 behind its RestartJob gate, would recreate only the failed
child Job instead. This measures what that means for a parameter-server job:

- a local cluster of overlays/seed-80c's servers (`tfjobgen cluster up`), whose JobSet controller is then
  restarted with `featureGates: {RestartJob: true}` added to its Configuration (same program, same
  arguments, same cluster marker: `cluster down` stops it as it stops the first);
- jobs/ctr-jobset.yaml rendered as tfjobgen renders it, its failurePolicy given `maxRestarts` and, before
  tfjobgen's own rules, one rule: RestartJob for the `worker` replicatedJob;
- once every pod runs, worker 1 ends with exit code 3 (the runtime's "a restart will not help", which
  fails its child Job at once); the same again after each recreation, until the JobSet fails.

Printed per failure: which tasks got new pods (worker 1 alone, every worker, the PS?), how long until every
pod ran again, and the JobSet's restart counters. KWOK nodes run no container: the failure is the one each
step injects, so this shows what the controller does, not whether a program would fail again.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from gang_time import REPO, Cluster  # noqa: E402

from tfjobgen.kube import api
from tfjobgen.cluster import home, processes
from tfjobgen.cluster.controllers.base import wait_healthy
from tfjobgen.harness import conformance
from tfjobgen.place import place
from tfjobgen.harness import pods
from tfjobgen.concerns import promises
from tfjobgen.kit import owned

PROFILE = REPO / "overlays" / "seed-80c" / "cluster-profile.yaml"
JOB = REPO / "jobs" / "ctr-jobset.yaml"
NAMESPACE = "restart-job"
PERMANENT_EXIT = 3


def restart_with_gate(cluster_name: str) -> None:
    """Stop the cluster's JobSet controller and start it again with the RestartJob gate on."""
    folder = home.folder(cluster_name)
    for pid in processes.running(folder):
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
        if Path(argv[0]).name == "jobset-controller":
            break
    else:
        raise SystemExit("no JobSet controller runs in the cluster")
    config_file = Path(next(a.split("=", 1)[1] for a in argv if a.startswith("--config=")))
    config = json.loads(config_file.read_text())
    config["featureGates"] = {"RestartJob": True}
    config_file.write_text(json.dumps(config))
    os.kill(pid, signal.SIGTERM)
    api.wait_until(lambda: not Path(f"/proc/{pid}").exists(), 30, "the JobSet controller stopped")
    started = processes.start(processes.Component("jobset-restart-job", argv), folder)
    health_port = int(config["health"]["healthProbeBindAddress"].rsplit(":", 1)[1])
    wait_healthy(started, health_port, "/readyz")


def with_restart_job(rendered: list[dict], max_restarts: int) -> list[dict]:
    """The rendered objects with the JobSet given `max_restarts` and, first, a RestartJob rule on its workers."""
    for obj in rendered:
        if obj["kind"] == "JobSet":
            policy = obj["spec"]["failurePolicy"]
            policy["maxRestarts"] = max_restarts
            policy["rules"] = [{"name": "RestartWorkers", "action": "RestartJob",
                                "targetReplicatedJobs": ["worker"]}] + policy["rules"]
    return rendered


def running_tasks(objects: api.Objects) -> dict[str, str]:
    """task ("worker:1") -> the UID of its Running pod."""
    found = {}
    for pod in promises.live(objects.list("v1", "Pod", NAMESPACE)):
        if (pod.get("status") or {}).get("phase") == "Running":
            found[promises.task_of(pod).name] = pod["metadata"]["uid"]
    return found


def jobset_status(objects: api.Objects, name: str) -> dict:
    return (objects.get("jobset.x-k8s.io/v1alpha2", "JobSet", name, NAMESPACE) or {}).get("status") or {}


def failed_condition(status: dict) -> dict | None:
    """The JobSet's Failed condition, once it holds."""
    return next((c for c in status.get("conditions", []) if c["type"] == "Failed" and c["status"] == "True"), None)


def main() -> int:
    owned.unwind_on_sigterm()  # killed, it still stops the cluster it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-restarts", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="restart-job-") as folder:
        os.environ.setdefault(home.HOME_ENV, str(Path(folder) / "clusters"))
        with Cluster(PROFILE, 6, "bench-restart-job") as cluster:
            restart_with_gate("bench-restart-job")
            place.job_namespace(cluster.objects, NAMESPACE)
            rendered = with_restart_job(conformance.render(JOB, PROFILE, "jobset", NAMESPACE), args.max_restarts)
            name = next(o["metadata"]["name"] for o in rendered if o["kind"] == "JobSet")
            tasks = len(conformance.decoded_job(rendered).pods)
            conformance.apply(cluster.objects, rendered)
            conformance.wait_running(cluster.objects, NAMESPACE, tasks, timeout=args.timeout)
            before = running_tasks(cluster.objects)
            for attempt in range(1, args.max_restarts + 2):
                worker = next(p for p in cluster.objects.list("v1", "Pod", NAMESPACE)
                              if promises.task_of(p).name == "worker:1" and p["status"].get("phase") == "Running")
                failed_at = time.monotonic()
                pods.fail_pod(cluster.objects, NAMESPACE, worker["metadata"]["name"], PERMANENT_EXIT)

                def settled() -> bool:
                    now = running_tasks(cluster.objects)
                    return (failed_condition(jobset_status(cluster.objects, name)) is not None
                            or (len(now) == tasks and now.get("worker:1") != before.get("worker:1")))

                api.wait_until(settled, args.timeout, f"failure {attempt} handled")
                seconds = time.monotonic() - failed_at
                now = running_tasks(cluster.objects)
                status = jobset_status(cluster.objects, name)
                failed = failed_condition(status)
                replaced = sorted(t for t in before if now.get(t) != before[t])
                workers = [t for t in before if t.startswith("worker:")]
                kept = sorted(t for t in before if now.get(t) == before[t])
                restarts = [s.get("jobRestarts") for s in status.get("replicatedJobsStatus", []) if s["name"] == "worker"]
                what = (f"JobSet Failed ({failed.get('reason')})" if failed else
                        f"{len(replaced)} new pods: " + ("every worker" if set(replaced) == set(workers)
                                                          else ", ".join(replaced)))
                rows.append((attempt, what, ", ".join(kept) or "none", restarts[0] if restarts else "-",
                             f"{seconds:.1f} s"))
                print(f"failure {attempt}: {what}", file=sys.stderr, flush=True)
                if failed:
                    break
                before = now
    print(f"jobs/ctr-jobset.yaml on JobSet v0.12.0 with RestartJob on the worker replicatedJob, maxRestarts "
          f"{args.max_restarts}; worker 1 exits {PERMANENT_EXIT} each time\n")
    print("| failure | what the controller did | tasks whose pod was kept | the worker Job's jobRestarts | "
          "until settled |")
    print("| ---: | --- | --- | --- | ---: |")
    for row in rows:
        print("| " + " | ".join(str(v) for v in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
