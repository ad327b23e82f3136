"""Every example job on every backend, held to its real controller on a local cluster.

    .venv/bin/python benchmarks/real_controllers.py [--profiles seed-80c prod-96c] [--backends native jobset tfjob]
                                                   [--gangs none volcano scheduler-plugins kueue]
                                                   [--jobs wide-deep ...] [--nodes N] [--crds DIR]

For each profile and gang setting (conformance.GANG_SETTINGS: the profile with that spec.gang) a
cluster shaped as it (`tfjobgen cluster up --nodes N`, N per profile below unless given) runs the
Job controller, the JobSet controller, the training-operator and the gang scheduler. Each job
of jobs/ is rendered on each backend into a namespace of its own labelled Pod Security
"restricted", applied server-side, and once its pods are Running compared with what the
backend's decode predicts (tfjobgen.cluster.measure.conformance: pods and Services by name, labels,
every pod's environment as the kubelet expands it, TF_CONFIG byte for byte); then TensorFlow
reads every real pod's TF_CONFIG (tfjobgen/harness/tf_resolver.py). Prints a Markdown table; exits 1 when
any cell differs. The cluster tier (tests/cluster/test_backends_real.py) runs a sample of it.

--crds: where monitoring.coreos.com's CRDs are (prod-96c's jobs emit a PodMonitor and a
PrometheusRule); default $TFJOBGEN_CRD_DIR or ../shared/crds beside the repository.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import commands  # noqa: E402 - benchmarks/commands.py, beside this script
REPO = Path(__file__).resolve().parents[1]
from tfjobgen import backends
from tfjobgen.expand import pipeline
from tfjobgen.harness import conformance, tf_resolver
from tfjobgen.kit import owned
from tfjobgen.kube import api
from tfjobgen.place import place

BACKENDS = ("native", "jobset", "tfjob")
PROFILES = ("seed-80c", "prod-96c")
# Nodes for every job of jobs/ to fit alone (scene*-case4: 220 tasks; isolated PS each on a server
# of their own): seed-80c's one group, prod-96c's main group and each of its pools.
NODES = {"seed-80c": 44, "prod-96c": 24}
JOB_FILES = sorted(p for p in (REPO / "jobs").glob("*.yaml") if p.name != "kustomization.yaml")


def profile_file(name: str) -> Path:
    return REPO / "overlays" / name / "cluster-profile.yaml"



def tfjobgen(*args: str) -> subprocess.CompletedProcess:
    return commands.tfjobgen(*args, cwd=REPO)


def run_cell(objects: api.Objects, job_file: Path, profile: str, backend: str, gang: str, profile_path: Path) -> dict:
    namespace = f"{job_file.stem}-{backend}"[:63]
    row = {"profile": profile if gang == "none" else f"{profile}+{gang}", "job": job_file.stem, "backend": backend}
    try:
        rendered = conformance.render(job_file, profile_path, backend, namespace)
    except conformance.Refused as refusal:
        return {**row, "result": f"refused: {str(refusal).split(' (')[0]}"}
    decoded = conformance.decoded_job(rendered)
    place.job_namespace(objects, namespace, pipeline.load_profile(str(profile_path)))
    started = time.monotonic()
    conformance.apply(objects, rendered)
    try:
        conformance.wait_running(objects, namespace, len(decoded.pods), timeout=300)
    except TimeoutError as err:
        return {**row, "pods": len(decoded.pods), "result": f"not Running: {err}"}
    running = time.monotonic() - started
    found, observed = conformance.settled_differences(objects, namespace, decoded, gang=gang)
    roles = tf_resolver.cluster_roles({p.role for p in decoded.pods},
                                      backends.get(backend).naming.evaluator_in_cluster)
    by_host = {p.hostname: p for p in decoded.pods}
    cases = [tf_resolver.case(f"{row['profile']} {namespace} {pod['metadata']['name']}",
                              conformance.real_env(pod, observed.config_maps)[0]["TF_CONFIG"],
                              by_host[conformance.host_of(pod)].role, by_host[conformance.host_of(pod)].index,
                              conformance.host_of(pod), roles)
             for pod in observed.pods if conformance.host_of(pod) in by_host]
    conformance.remove(objects, rendered)
    return {**row, "pods": len(decoded.pods), "services": len(observed.services), "running": running,
            "differences": found, "cases": cases}


def main() -> int:
    owned.unwind_on_sigterm()  # killed, it still stops the clusters it started
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=list(PROFILES), choices=PROFILES)
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--gangs", nargs="+", default=list(conformance.GANG_SETTINGS),
                        choices=list(conformance.GANG_SETTINGS))
    parser.add_argument("--jobs", nargs="+", default=[p.stem for p in JOB_FILES])
    parser.add_argument("--nodes", type=int, help="nodes per group (default: enough for the largest job)")
    parser.add_argument("--crds", type=Path, default=Path(os.environ.get("TFJOBGEN_CRD_DIR")
                                                          or REPO.parent / "shared" / "crds"))
    args = parser.parse_args()
    rows = []
    variants = Path(tempfile.mkdtemp(prefix="tfjobgen-matrix-"))
    for profile, gang in ((p, g) for p in args.profiles for g in args.gangs):
        name = f"matrix-{profile}-{gang}"
        profile_path = conformance.profile_variant(profile_file(profile), gang, variants)
        up = tfjobgen("cluster", "up", "--name", name, "--profile", str(profile_path),
                      "--nodes", str(args.nodes or NODES[profile]), "--quiet")
        if up.returncode != 0:
            print(f"real_controllers: cluster up failed: {up.stderr.strip()}", file=sys.stderr)
            return 1
        try:
            objects = api.Objects(api.connect(up.stdout.strip().splitlines()[-1]))
            conformance.install_addon_crds(objects, args.crds)
            for job_file in (p for p in JOB_FILES if p.stem in args.jobs):
                for backend in args.backends:
                    rows.append(run_cell(objects, job_file, profile, backend, gang, profile_path))
                    print(f"{rows[-1]['profile']} {job_file.stem} {backend}: {rows[-1].get('result') or 'done'}",
                          file=sys.stderr)
        finally:
            tfjobgen("cluster", "down", "--name", name)
    cases = [c for row in rows for c in row.get("cases", [])]
    misread = {tuple(w[0].split()[:2]) for w in tf_resolver.misread(cases)} if cases else set()
    print("| profile | job | backend | pods | Services | apply to all Running | decode vs controller | TensorFlow reads |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    failed = False
    for row in rows:
        if "result" in row:
            failed |= not row["result"].startswith("refused")
            print(f"| {row['profile']} | {row['job']} | {row['backend']} | {row.get('pods', '-')} | - | - | "
                  f"{row['result']} | - |")
            continue
        wrong = (row["profile"], f"{row['job']}-{row['backend']}"[:63]) in misread
        failed |= bool(row["differences"]) or wrong
        verdict = "same" if not row["differences"] else f"{len(row['differences'])} differences: " + "; ".join(
            row["differences"][:3])
        print(f"| {row['profile']} | {row['job']} | {row['backend']} | {row['pods']} | {row['services']} | "
              f"{row['running']:.1f} s | {verdict} | {'misread' if wrong else 'as its pod'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
