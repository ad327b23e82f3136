"""The Hadoop client's CLASSPATH, for hdfs:// paths: what the seed's run.sh did with `hadoop classpath --glob`.

The generator sets HADOOP_HDFS_HOME, JAVA_HOME and LD_LIBRARY_PATH from spec.hadoop;
the JVM inside TensorFlow's HDFS filesystem also needs every Hadoop jar on CLASSPATH,
with wildcards expanded, which only the Hadoop client can list. We ask it once, at
start, as an argument list (no shell), and only when a path of this task is hdfs://.
"""

from __future__ import annotations

import os
import subprocess

from .errors import SetupError
from .settings import Task


def uses_hdfs(task: Task) -> bool:
    paths = (task.training.model_dir, *task.training.data_paths)
    return any(path.startswith("hdfs://") for path in paths)


def set_classpath(task: Task, env: dict) -> bool:
    """Fill env["CLASSPATH"] from `$HADOOP_HDFS_HOME/bin/hadoop classpath --glob`; True when it did."""
    if not uses_hdfs(task) or env.get("CLASSPATH") or not env.get("HADOOP_HDFS_HOME"):
        return False
    hadoop = os.path.join(env["HADOOP_HDFS_HOME"], "bin", "hadoop")
    try:
        proc = subprocess.run([hadoop, "classpath", "--glob"], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SetupError(f"hdfs:// needs the Hadoop client's classpath, but {hadoop} could not run ({err}): "
                         "check spec.hadoop.home against the image") from None
    if proc.returncode != 0 or not proc.stdout.strip():
        first = (proc.stderr.strip().splitlines() or ["no output"])[0]
        raise SetupError(f"{hadoop} classpath --glob failed (exit {proc.returncode}): {first}")
    env["CLASSPATH"] = proc.stdout.strip()
    return True
