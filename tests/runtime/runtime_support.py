"""Helpers for the runtime and run-local tests: jobs, the real TensorFlow check, and a harnessed run-local.

`run_local` runs `tfjobgen run-local` as a user would, in its own session,
with a hard deadline. Whatever happens, it then looks for processes that still
carry the run's id (TFJOBGEN_LOCAL_RUN) and kills them, so a failing test
never leaves TensorFlow processes behind; tests assert that there were none.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO, SAMPLE, need, tfjobgen_command, uses

from tfjobgen.local import processes, wire

JOBS = Path(__file__).resolve().parent / "jobs"
RUN_DEADLINE = 150  # seconds: a backstop far above the 10-25 s these runs take


@uses("tensorflow")
def need_tensorflow() -> None:
    need("tensorflow", "tensorflow" if importlib.util.find_spec("tensorflow") else None,
         "install the runtime extra: pip install -e '.[runtime]'")


@dataclass
class LocalRun:
    returncode: int
    output: str  # stdout and stderr together
    report: dict  # --report JSON ({} when the run did not get that far)
    run_id: str
    leftovers: list[int]  # processes of the run found (and killed) after it ended
    seconds: float
    wire: dict | None = None  # with count_bytes: bytes sent between its tasks, {(from, to): bytes}


@uses("tensorflow")  # run-local starts its tasks as processes (TensorFlow, or the job's command)
def run_local(job: Path | str, tmp_path: Path, *args: str, deadline: float = RUN_DEADLINE,
              count_bytes: bool = False, python_path: str = "") -> LocalRun:
    """count_bytes: also read the bytes between its tasks while it runs (tfjobgen/local/wire.py). python_path: a
    folder put first on the PYTHONPATH of run-local and its tasks (a package this venv lacks)."""
    work_dir = tmp_path / f"run-{time.time_ns()}"
    sampler = wire.Sampler(str(work_dir)) if count_bytes else contextlib.nullcontext()
    report = tmp_path / f"{work_dir.name}.json"
    command = tfjobgen_command() + ["run-local", str(job), "--work-dir", str(work_dir), "--report", str(report), *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [python_path, str(REPO / "generator")]))}
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=SAMPLE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    with sampler:
        try:
            output, _ = proc.communicate(timeout=deadline)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)  # run-local tears its tasks down on SIGTERM
            try:
                output, _ = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                output, _ = proc.communicate()
            output += f"\n[harness] run-local exceeded its {deadline} s deadline"
    seconds = time.monotonic() - started
    found = processes.sweep(str(work_dir))  # the run's id is its directory
    data = json.loads(report.read_text()) if report.exists() else {}
    return LocalRun(proc.returncode, output, data, str(work_dir), found, seconds,
                    sampler.bytes() if count_bytes else None)


def task_env(job_path: Path, role: str, index: int) -> dict[str, str]:
    """The env a cluster would give that task of the job (rendered, then resolved like the kubelet)."""
    from tfjobgen import backends
    from tfjobgen.expand import pipeline

    intents, problems = pipeline.load_intents([str(job_path)])
    expansion = pipeline.expand(intents, pipeline.load_profile(None))
    assert expansion.ok, [p.format() for p in expansion.problems]
    for pod in backends.pods_of(expansion.objects[0]):
        if pod.role == role and pod.index == index:
            return dict(pod.env)
    raise AssertionError(f"no {role}:{index} in {job_path}")


def passed(run: LocalRun, may_be_stopped: frozenset[str] = frozenset()) -> dict:
    """The report of a run-local run that passed: exit 0, every task done with exit 0, nothing left running.

    `may_be_stopped`: tasks that may instead have been stopped when the JobSet or TFJob completed, as
    its controller deletes the pods still running (a task waiting for its new pod then, say).
    """
    assert run.returncode == 0, run.output
    assert run.report["passed"] and run.leftovers == [], run.output
    for name, task in run.report["tasks"].items():
        if name in may_be_stopped and task["state"] == "stopped":
            assert "completed and its controller stopped" in run.output, run.output
            continue
        assert task["state"] == "done" and task["exit_code"] == 0, run.output
    return run.report
