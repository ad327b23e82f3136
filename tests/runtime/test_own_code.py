"""The own-code examples (examples/, docs/own-code.md): each validates as written and trains under run-local.

Each example is a team's program (train.py, at /app/train.py in the team's image) and its TrainingJob. run-local
runs a command on this machine, so the run uses a copy of the job whose command names train.py here; every other
field is the example's. A run passes only when the chief trained, its loss fell (train.py exits non-zero
otherwise) and every task ended with nothing left behind. The tf_keras example runs in a venv made for the test
beside this one's packages: tf-keras cannot join the project's venv (it requires the `tensorflow` distribution,
and the runtime extra pins tensorflow-cpu; docs/own-code.md).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
from pathlib import Path

import yaml
from conftest import REPO, need, run_tfjobgen
from runtime_support import need_tensorflow, run_local

from tfjobgen.artifacts.images.recipe import TF_KERAS  # the team fixture's too: one pin

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


def _tf_keras_python(tmp_path: Path) -> str:
    """This Python if it has tf_keras; else a venv beside it, seeing its packages, with tf_keras added."""
    if importlib.util.find_spec("tf_keras"):
        return sys.executable
    venv = tmp_path / "tf-keras-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "project-venv.pth").write_text(sysconfig.get_path("purelib") + "\n")  # TensorFlow and the rest
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                "--no-deps", TF_KERAS], capture_output=True, text=True, timeout=300)
    return need("tf_keras", str(python) if installed.returncode == 0 else None,
                f"pip install --no-deps {TF_KERAS} failed: {installed.stderr.strip()[-300:]}")


def test_the_keras_fit_example_trains_under_run_local_with_tf_keras(tmp_path):
    need_tensorflow()
    python = _tf_keras_python(tmp_path)
    run = run_local(_local_copy("keras-fit", tmp_path), tmp_path, "--restarts", "0", python=python)
    chief = _trained(run)
    assert "keras 2.21.0 (tf_keras" in chief and f"trained {STEPS} steps" in chief, chief[-2000:]
    assert run.seconds < 60, run.seconds
