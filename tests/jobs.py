"""Jobs for tests: one builder with keyword overrides, and the example jobs, so that a test says only what differs.

    job_yaml("spread", ps=4, workers=8, topology={"mode": "spread"})       a TrainingJob, as YAML text
    job_yaml("gpu", roles={"worker": {"gpu": 2}})                           a role's fields merged over the defaults
    job_yaml(evaluator=True, backend="jobset", qos="cpuset")                any other spec field by keyword
    write_job(tmp_path, job_yaml(...))                                      in a file: its path, as a string
    example(JOBS / "ctr-jobset.yaml", backend="tfjob")                      an example job's intent, with spec fields set

The YAML is laid out one line per field in a fixed order (image, backend, topology, the other spec fields,
then roles: chief, evaluator, ps, worker), so a test may assert the line a problem is reported at.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from conftest import JOBS

from tfjobgen.inputs import source
from tfjobgen.inputs.intents import Intent
from tfjobgen.shared import contract

# Every example job file of the sample repository's jobs/ (tests/fixtures/sample-repo; its kustomization lists them).
JOB_FILES = sorted(p for p in JOBS.glob("*.yaml") if p.name != "kustomization.yaml")

# The smallest valid job, written out line by line: tests that assert the line of a problem edit it.
SMALL_JOB = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata:
  name: ok
  namespace: ml
spec:
  image: registry.example.com/x:1
  roles:
    ps: {replicas: 2, cpu: 4, memory: 8Gi}
    worker: {replicas: 4, cpu: 2, memory: 4Gi}
    chief: {cpu: 1, memory: 2Gi}
"""

IMAGE = "registry.example.com/x/y:1"
ROLES = {"chief": {"cpu": 1, "memory": "1Gi"},
         "ps": {"replicas": 2, "cpu": 4, "memory": "8Gi"},
         "worker": {"replicas": 4, "cpu": 2, "memory": "4Gi"}}
EVALUATOR = {"cpu": 1, "memory": "1Gi"}


def job(name: str = "job", *, namespace: str = "t", ps: int | None = None, workers: int | None = None,
        evaluator: bool = False, topology: str | dict | None = None, backend: str | None = None,
        roles: dict[str, dict | None] | None = None, image: str = IMAGE, **spec: Any) -> dict:
    """A TrainingJob as a dict: a chief, 2 PS and 4 workers unless told otherwise.

    ps, workers: replicas; evaluator: add one; topology: a mode ("spread") or the whole mapping;
    roles: fields merged into a role ({"worker": {"gpu": 1}}), None removes the role; any other
    keyword is a spec field (qos="cpuset", protocol="star_server").
    """
    chosen = {role: dict(fields) for role, fields in ROLES.items()}
    if evaluator:
        chosen["evaluator"] = dict(EVALUATOR)
    for role, replicas in (("ps", ps), ("worker", workers)):
        if replicas is not None:
            chosen[role]["replicas"] = replicas
    for role, fields in (roles or {}).items():
        if fields is None:
            chosen.pop(role, None)
        else:
            chosen[role] = {**chosen.get(role, {}), **fields}
    body: dict[str, Any] = {"image": image}
    if backend is not None:
        body["backend"] = backend
    if topology is not None:
        body["topology"] = {"mode": topology} if isinstance(topology, str) else topology
    body.update(spec)
    body["roles"] = {role: chosen[role] for role in contract.ROLES if role in chosen}
    return {"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "TrainingJob",
            "metadata": {"name": name, "namespace": namespace}, "spec": body}


def job_yaml(name: str = "job", **overrides: Any) -> str:
    """`job(name, **overrides)` as YAML, one line per spec field and per role."""
    data = job(name, **overrides)
    lines = ["apiVersion: " + data["apiVersion"], "kind: " + data["kind"], "metadata: " + _flow(data["metadata"]),
             "spec:"]
    for key, value in data["spec"].items():
        if key == "roles":
            lines.append("  roles:")
            lines += [f"    {role}: {_flow(fields)}" for role, fields in value.items()]
        else:
            lines.append(f"  {key}: {_flow(value)}")
    return "\n".join(lines) + "\n"


def _flow(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=1 << 16).strip().removesuffix(
        "\n...").strip()


def write_job(folder: Path, text: str, name: str | None = None) -> str:
    """`text` in `<folder>/<name>.yaml` (name: the job's own), as a string path."""
    path = Path(folder) / f"{name or yaml.safe_load(text)['metadata']['name']}.yaml"
    path.write_text(text)
    return str(path)


def example(path: Path, *, name: str | None = None, **spec: Any) -> Intent:
    """The intent of an example job file, its lines kept, with spec fields set (and metadata.name, with name)."""
    document = source.parse_documents(source.read_text(str(path)), str(path))[0]
    data = json.loads(json.dumps(document.data))  # a copy: the document stays as read
    if name is not None:
        data["metadata"]["name"] = name
    data["spec"].update(spec)
    return Intent(data, str(path), document)
