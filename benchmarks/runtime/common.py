"""Shared by the runtime benchmarks: write a variant of a job, run it with `tfjobgen run-local`, read the result.

Benchmarks are measurements, not tests: they print Markdown tables (docs/runtime.md
records a run) and keep the raw numbers in benchmarks/runtime/results/.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"
README_JOB = REPO / "jobs" / "wide-deep.yaml"

from tfjobgen.local import processes, wire


def job_variant(name: str, training: dict, api: str | None = None, base: Path = README_JOB,
                roles: dict | None = None) -> Path:
    """The README's job with other training settings (and api, roles), as a file in a temporary folder."""
    document = yaml.safe_load(base.read_text())
    document = copy.deepcopy(document)
    document["metadata"]["name"] = name
    document["spec"]["training"] = {**document["spec"].get("training", {}), **training}
    if api:
        document["spec"]["api"] = api
    if roles:
        document["spec"]["roles"] = roles
    folder = Path(tempfile.mkdtemp(prefix="tfjobgen-bench-"))
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def run_local(job: Path, *args: str, interrupt_at_step: int | None = None, deadline: float = 300,
              count_bytes: bool = False) -> dict:
    """`tfjobgen run-local JOB ARGS --report`, as a user runs it; the report, plus what survived it.
    count_bytes: also the bytes between its tasks (local/wire.py), as result["wire"] {(from, to): bytes}."""
    work = Path(tempfile.mkdtemp(prefix="tfjobgen-bench-run-"))
    sampler = wire.Sampler(str(work / "run")) if count_bytes else None
    report = work / "report.json"
    command = [sys.executable, "-m", "tfjobgen", "run-local", str(job), "--work-dir", str(work / "run"),
               "--report", str(report), *args]
    env = {**os.environ, "PYTHONPATH": str(REPO / "generator")}
    started = time.monotonic()
    # A shell that starts this script in the background ignores SIGINT, and its children would
    # inherit that: give run-local the default handling back, or Ctrl-C could not be measured.
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines, interrupted_after = [], None
    try:
        with sampler or contextlib.nullcontext():
            for line in proc.stdout:
                lines.append(line)
                if interrupt_at_step and line.startswith("step ") and interrupted_after is None \
                        and int(line.split()[1].split("/")[0]) >= interrupt_at_step:
                    proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
                    interrupted_after = time.monotonic()
                if time.monotonic() - started > deadline:
                    proc.send_signal(signal.SIGTERM)
            proc.wait()
    except BaseException:  # this script was interrupted: run-local tears its tasks down on SIGTERM
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        processes.sweep(str(work / "run"))
        shutil.rmtree(work, ignore_errors=True)
        raise
    result = json.loads(report.read_text()) if report.exists() else {}
    result["returncode"] = proc.returncode
    if sampler:
        result["wire"] = sampler.bytes()
    result["wall_seconds"] = round(time.monotonic() - started, 2)
    if interrupted_after is not None:
        result["stop_seconds"] = round(time.monotonic() - interrupted_after, 2)
    # Anything that still carries the run's id: there should be nothing (and nothing is left either way).
    result["survivors"] = processes.sweep(str(work / "run"))  # the run's id is its directory
    result["output"] = "".join(lines)
    shutil.rmtree(work, ignore_errors=True)  # the run's checkpoints and logs: the report holds what counts
    return result


def stop_on_sigterm() -> None:
    """SIGTERM ends the benchmark as Ctrl-C does, so the run-local it waits for is stopped too."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupt)


def save(name: str, data) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return path


def markdown(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    cpus = len(os.sched_getaffinity(0))
    import platform

    return f"{cpus} CPUs, Python {platform.python_version()}, {_tensorflow_version()}"


def _tensorflow_version() -> str:
    import importlib.metadata

    for name in ("tensorflow-cpu", "tensorflow"):
        try:
            return f"{name} {importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "no TensorFlow"
