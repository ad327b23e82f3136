"""The own-code examples (examples/, docs/own-code.md): each validates as written and trains under run-local.

Each example is a team's program (train.py, at /app/train.py in the team's image) and its TrainingJob. run-local
runs a command on this machine, so the run uses a copy of the job whose command names train.py here; every other
field is the example's. A run passes only when the chief trained, its loss fell (train.py exits non-zero
otherwise) and every task ended with nothing left behind. The tf_keras example runs with tf-keras on its
PYTHONPATH, installed into a folder of its own: tf-keras cannot join the project's venv (it requires the
`tensorflow` distribution, and the runtime extra pins tensorflow-cpu; docs/own-code.md).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from conftest import REPO, need, run_tfjobgen
from runtime_support import need_tensorflow, run_local

from tfjobgen.artifacts.images.recipe import TF_KERAS  # the team fixture's too: one pin
from tfjobgen.kit import caches

EXAMPLES = REPO / "examples"
STEPS = 120


def test_every_example_validates_with_no_error_and_no_warning():
    assert len(list(EXAMPLES.glob("*/job.yaml"))) == 2
    checked = run_tfjobgen("validate", str(EXAMPLES))  # the folder, as a team would: the rendered expected.yaml
    # beside each job is no TrainingJob and is left alone
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "2 TrainingJob(s) checked: 0 error(s), 0 warning(s)" in checked.stdout + checked.stderr


def _local_copy(example: str, tmp_path: Path) -> Path:
    document = yaml.safe_load((EXAMPLES / example / "job.yaml").read_text())
    assert document["spec"]["command"] == ["python", "/app/train.py"]  # what the image runs
    document["spec"]["command"] = ["python", str(EXAMPLES / example / "train.py")]
    document["spec"]["args"] = ["--steps", str(STEPS), "--model-dir", str(tmp_path / "model")]
    path = tmp_path / f"{example}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _trained(run) -> str:
    """The chief's log of a run that passed: the chief exited 0, and run-local stopped the PS and workers, which
    serve until something ends them (in a cluster, the injected entrypoint or the job's deadline)."""
    assert run.returncode == 0 and run.report["passed"] and run.leftovers == [], run.output
    assert "PASS: the chief's program exited 0; the remaining tasks were stopped" in run.output, run.output
    states = {name: (task["state"], task["exit_code"]) for name, task in run.report["tasks"].items()}
    assert states.pop("chief:0") == ("done", 0) and len(states) == 4, run.output
    assert {state for state, _ in states.values()} == {"stopped"}, run.output
    return (Path(run.run_id) / "logs" / "chief-0.log").read_text(errors="replace")


def test_the_custom_loop_example_trains_under_run_local(tmp_path):
    need_tensorflow()
    run = run_local(_local_copy("custom-loop", tmp_path), tmp_path, "--restarts", "0")
    chief = _trained(run)
    assert f"trained {STEPS} steps" in chief and "checkpoint " in chief, chief[-2000:]
    assert list((tmp_path / "model").glob("ckpt-1.index")), "the chief wrote no checkpoint"
    assert run.seconds < 60, run.seconds


def _tf_keras_folder() -> str:
    """A folder holding tf_keras, for the run's PYTHONPATH ("" when this Python has it already). Installed once per
    machine, outside the clone (~/.cache/tfjobgen/tf-keras/<release>): a venv of its own and pip on every run took
    most of the test's minute."""
    if importlib.util.find_spec("tf_keras"):
        return ""
    target = caches.folder("tf-keras", "TFJOBGEN_TF_KERAS_CACHE") / TF_KERAS.replace("==", "-")
    if (target / "tf_keras").is_dir():
        return str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))  # whole, then renamed into place
    try:
        installed = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                    "--no-deps", "--target", str(staging), TF_KERAS],
                                   capture_output=True, text=True, timeout=300)
        need("tf_keras", "installed" if installed.returncode == 0 else None,
             f"pip install --no-deps {TF_KERAS} failed: {installed.stderr.strip()[-300:]}")
        try:
            staging.rename(target)
        except OSError:  # another process put it there first
            pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return str(target)


def test_the_keras_fit_example_trains_under_run_local_with_tf_keras(tmp_path):
    need_tensorflow()
    run = run_local(_local_copy("keras-fit", tmp_path), tmp_path, "--restarts", "0", python_path=_tf_keras_folder())
    chief = _trained(run)
    assert "keras 2.21.0 (tf_keras" in chief and f"trained {STEPS} steps" in chief, chief[-2000:]
    assert run.seconds < 60, run.seconds
