"""A Prometheus scrape config for a local run's metrics endpoints (written to the run's directory).

    prometheus --config.file <run dir>/prometheus.yml --storage.tsdb.path <dir> --web.listen-address 127.0.0.1:9090

scrapes every task as the job's PodMonitor does in a cluster: the runtime's own labels are kept
(honor_labels), and each target gets the `namespace` label Prometheus Operator gives a pod's series,
so the job's alert rules and dashboard queries work unchanged on a local run.
"""

from __future__ import annotations

import os

import yaml

from ..shared import contract
from .tasks import LocalTask

FILE_NAME = "prometheus.yml"
INTERVAL = "1s"  # local runs last a minute or two: scrape often enough to see them


def config(tasks: list[LocalTask], namespace: str, rule_files: tuple[str, ...] = ()) -> dict:
    return {
        "global": {"evaluation_interval": INTERVAL, "scrape_interval": INTERVAL},
        "rule_files": list(rule_files),
        "scrape_configs": [{
            "honor_labels": True,
            "job_name": "tfjobgen",
            "metrics_path": contract.METRICS_PATH,
            "static_configs": [{"labels": {"namespace": namespace, "task": task.name}, "targets": [task.metrics]}
                               for task in tasks if task.metrics],
        }],
    }


def file(run_dir: str, tasks: list[LocalTask], namespace: str) -> tuple[str, str]:
    """The config's path (FILE_NAME in the run's directory) and its text, for run.write_files."""
    return os.path.join(run_dir, FILE_NAME), yaml.safe_dump(config(tasks, namespace), sort_keys=True)
