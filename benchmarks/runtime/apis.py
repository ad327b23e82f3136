"""Which TensorFlow APIs a team's own program can train with under tfjobgen's TF_CONFIG (docs/own-code.md).

Each case is a real run: `tfjobgen run-local` of an example job under examples/ (2 PS, 2 workers and a chief
as local processes, every env var as the pods get it), its command pointed at the example's train.py here
instead of the image's /app/train.py. A case passes when the chief trained, its loss fell and it exited 0.
Two cases need no cluster: the Estimator API and DeepRec's StarServer protocol, asked of this TensorFlow.

    .venv/bin/python benchmarks/runtime/apis.py [--tf-keras-python /tmp/venv/bin/python]

--tf-keras-python: a Python with tf_keras 2.21.0 beside this TensorFlow, for the tf_keras case (not in the
project's venv: tf-keras requires the `tensorflow` distribution, and the runtime extra pins tensorflow-cpu;
docs/own-code.md says how the measured one was made). Without it that case is "not measured".
Writes benchmarks/runtime/results/apis.json and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, RESULTS, machine, markdown, save, stop_on_sigterm  # noqa: E402

from tfjobgen.local import processes  # noqa: E402

EXAMPLES = REPO / "examples"
STEPS = 200
_ERROR = re.compile(r"^(\w+(Error|Exception)|error): .+")


def local_copy(example: str, folder: Path, drop_env: bool = False) -> Path:
    """The example's job with its command naming train.py here (run-local runs it on this machine)."""
    document = yaml.safe_load((EXAMPLES / example / "job.yaml").read_text())
    spec = document["spec"]
    spec["command"] = ["python", str(EXAMPLES / example / "train.py")]
    spec["args"] = ["--steps", str(STEPS), "--model-dir", str(folder / "model")]
    if drop_env:
        spec.pop("env", None)
    path = folder / f"{example}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def train(job: Path, python: str, work: Path) -> dict:
    """run-local of the job with that Python (its tasks run it too); what the chief said."""
    run_dir = work / "run"
    command = [python, "-m", "tfjobgen", "run-local", str(job), "--restarts", "0", "--work-dir", str(run_dir)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "generator")}
    started = time.monotonic()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, start_new_session=True)
    seconds = round(time.monotonic() - started, 1)
    chief_log = run_dir / "logs" / "chief-0.log"
    lines = chief_log.read_text(errors="replace").splitlines() if chief_log.exists() else []
    said = [line for line in lines if line.startswith(("keras ", "trained ", "checkpoint ", "weights "))]
    errors = [line.strip() for line in lines if _ERROR.match(line.strip())]
    survivors = processes.sweep(str(run_dir))
    return {"returncode": proc.returncode, "seconds": seconds, "chief": said, "error": errors[-1] if errors else "",
            "verdict": next((line for line in proc.stdout.splitlines() if line.startswith(("PASS", "FAIL"))), ""),
            "survivors": survivors}


def ask(python: str, code: str) -> str:
    """What this TensorFlow answers to one line of Python: what it printed, or its error's message."""
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if proc.returncode == 0:
        return proc.stdout.strip()
    lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if re.match(r"^[\w.]+(Error|Exception): ", line)]
    if not starts:
        return lines[-1] if lines else ""
    first, last = lines[starts[-1]], lines[-1]  # a message over several lines: its first and its last
    return first if first == last else f"{first} ... {last}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-keras-python", help="a Python with tf_keras 2.21.0 (see the docstring)")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="run only the training cases whose name contains TEXT, keeping the others' last results")
    args = parser.parse_args()
    stop_on_sigterm()
    saved = RESULTS / "apis.json"
    results = {"machine": machine(), "steps": STEPS,
               "cases": json.loads(saved.read_text())["cases"] if args.only and saved.exists() else {}}
    cases = [("ParameterServerStrategy + ClusterCoordinator, custom loop", "custom-loop", sys.executable, False),
             ("Keras 3 model.fit under ParameterServerStrategy", "keras-fit", sys.executable, True),
             ("tf_keras model.fit, TF_USE_LEGACY_KERAS=1", "keras-fit", args.tf_keras_python, False)]
    for name, example, python, drop_env in cases:
        if args.only and not any(text in name for text in args.only):
            continue
        if not python:
            results["cases"][name] = {"verdict": "not measured: no --tf-keras-python"}
            continue
        work = Path(tempfile.mkdtemp(prefix="tfjobgen-apis-"))
        try:
            results["cases"][name] = {"command": f"{example}/train.py", **train(local_copy(example, work, drop_env),
                                                                               python, work)}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(name, json.dumps(results["cases"][name]), flush=True)
    keras3 = results["cases"].setdefault("Keras 3 model.fit under ParameterServerStrategy", {})
    keras3["datasetcreator"] = ask(sys.executable, "import tensorflow as tf; tf.keras.utils.experimental.DatasetCreator")
    results["cases"]["Estimator (tf.estimator)"] = {
        "verdict": ask(sys.executable, "import tensorflow as tf; tf.estimator"),
        "package": ask(sys.executable, "import tensorflow_estimator")}
    results["cases"]["DeepRec StarServer (protocol star_server)"] = {"verdict": ask(
        sys.executable, "import tensorflow as tf; tf.distribute.Server({'ps': ['127.0.0.1:0']}, 'ps', 0, "
                        "protocol='star_server')")}
    results["schemes"] = ask(sys.executable, "import tensorflow as tf; print(tf.io.gfile.get_registered_schemes())")
    save("apis", results)
    rows = []
    for name, case in results["cases"].items():
        trained = next((line for line in case.get("chief", []) if line.startswith("trained")), "")
        rows.append([name, case.get("verdict", ""), trained or case.get("error", "") or case.get("package", ""),
                     case.get("seconds", "-")])
    print(f"\n{results['machine']}; tf.io.gfile schemes: {results['schemes']}\n")
    print(markdown(["API", "result", "what the chief said", "run s"], rows))


if __name__ == "__main__":
    main()
