"""Write docs/reference.md: every field of the intent and the profile, from the JSON Schemas, and the
fields `tfjobgen status --format json` prints.

    .venv/bin/python docs/generate/reference.py

The schemas are the single source of truth; this page is derived from them and
tests/test_docs.py fails when it is out of date.
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

from tfjobgen.inputs import schema


def _type(node: dict) -> str:
    if "x-hint" in node and "pattern" in node:
        return node["x-hint"]
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    kind = node.get("type", "")
    kind = " or ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and isinstance(node.get("items"), dict):
        kind = f"list of {_type(schema._resolve(node['items'], ROOT)) or 'object'}"
    return kind


def _rows(node: dict, path: str, required: set[str], rows: list) -> None:
    node = schema._resolve(node, ROOT)
    for key, raw in node.get("properties", {}).items():
        prop = schema._resolve(raw, ROOT)
        here = f"{path}.{key}" if path else key
        if raw.get("$ref") == "#/$defs/role":  # four roles share one shape: list it once, below
            replicas = raw.get("properties", {}).get("replicas", {})
            note = f"replicas fixed at {replicas['const']}" if "const" in replicas else "replicas required"
            rows.append(f"| `{here}` | a role (see [Role](#role)) | {'required' if key in required else ''} | "
                        f"{raw.get('description', '')} ({note}) |")
            continue
        default = json.dumps(prop["default"]) if "default" in prop else ("required" if key in required else "")
        description = prop.get("description", "")
        for example in prop.get("examples", []):
            description += f" Example: `{json.dumps(example, separators=(', ', ': '))}`"
        description = description.replace("|", "\\|").replace("\n", " ")
        rows.append(f"| `{here}` | {_type(prop)} | {default} | {description} |")
        if prop.get("type") == "object" or "properties" in prop:
            _rows(prop, here, set(prop.get("required", [])), rows)
        items = schema._resolve(prop.get("items", {}), ROOT) if isinstance(prop.get("items"), dict) else {}
        if "properties" in items:  # a list of objects: each item's fields, as <field>[]
            _rows(items, f"{here}[]", set(items.get("required", [])), rows)
        extra = prop.get("additionalProperties")
        if isinstance(extra, dict) and "properties" in schema._resolve(extra, ROOT):
            _rows(extra, f"{here}.<name>", set(schema._resolve(extra, ROOT).get("required", [])), rows)


def page() -> str:
    global ROOT
    out = ["# Field reference", "",
           "Generated from [schemas/](../schemas/), and the last section from `tfjobgen status`'s code, by "
           "`docs/generate/reference.py`; do not edit by hand.", ""]
    for name, title in ((schema.TRAINING_JOB, "TrainingJob (`jobs/*.yaml`)"),
                        (schema.CLUSTER_PROFILE, "ClusterProfile (`overlays/<cluster>/cluster-profile.yaml`)")):
        ROOT = schema.load(name)
        out += [f"## {title}", "", ROOT.get("description", ""), "",
                "| field | type | default | meaning |", "| --- | --- | --- | --- |"]
        rows: list[str] = []
        _rows(ROOT, "", set(ROOT.get("required", [])), rows)
        out += rows + [""]
        if "role" in ROOT.get("$defs", {}):
            role = ROOT["$defs"]["role"]
            out += ["### Role", "", "`spec.roles.ps`, `.worker`, `.chief` and `.evaluator` each take these fields.", "",
                    "| field | type | default | meaning |", "| --- | --- | --- | --- |"]
            rows = []
            _rows(role, "", set(role.get("required", [])), rows)
            out += rows + [""]
    return "\n".join(out + _status())


def _status() -> list[str]:
    """What `tfjobgen status --format json` prints: the states from status/derive.py, the exit meanings from
    contract.py (their one homes), the fields as status/render.py writes them."""
    from tfjobgen.shared import contract
    from tfjobgen.status import derive

    states = [derive.FAILED, derive.SUCCEEDED, derive.WAITING, derive.SUSPENDED, derive.STARTING, derive.RUNNING]
    exits = [f"**{code}** {meaning}" for code, meaning in sorted(contract.EXIT_MEANINGS.items())]
    exits += [f"**{contract.SIGNAL_EXIT_BASE + n}** {name}: {why}" for n, (name, why) in sorted(contract.SIGNALS.items())]
    return ["## `tfjobgen status --format json`", "",
            "What a job is doing on a cluster ([status.md](status.md) says how each field is read, per backend).", "",
            "| field | meaning |", "| --- | --- |",
            f"| `job.state` | {', '.join(f'`{s}`' for s in states)}: the first that applies |",
            "| `job.reason` | one line: why the job is in that state (the task that failed it, the scheduler's reason, "
            "Kueue's or a PodGroup's words) |",
            "| `job.cause` | the task (`role:index`) whose failure ended the job, or null |",
            "| `job.conditions[]` | `object`, `type`, `reason`, `message` of every true condition behind the state |",
            "| `job.placement` | `topology`, `holds`, `placed`, `tasks`, `broken[]`: the topology's promise on the real "
            "bindings, or null when it cannot be judged |",
            "| `job.metrics` | `step`, `stepsPerSecond`, `loss`, `psBytes`, `psMaxOverMean`, `partitioner`, "
            "`unreachable` (task: why): the runtime's metrics through the API server's pod proxy |",
            "| `job.phases`, `job.roles`, `job.notes` | tasks per phase and per role; what could not be read |",
            f"| `tasks[].phase` | `Pending`, `Running`, `Succeeded`, `Failed`, `Terminating`, or `{derive.NO_POD}` |",
            "| `tasks[].restarts`, `tasks[].failures` | new pods it got after failures; `counted` and `notCounted` "
            "(taken away by the cluster) failures, as its controller counts them |",
            "| `tasks[].exitCode`, `tasks[].meaning` | the ended container's code and what it means: "
            + " · ".join(exits).replace("|", "\\|") + " |",
            "| `tasks[].reason` | one line: why the task is in that phase |",
            "| `tasks[].lastFailure` | `pod`, `exitCode`, `reason`, `meaning`, `disruption` of the pod before, when the "
            "task was replaced |", ""]


ROOT: dict = {}

if __name__ == "__main__":
    (REPO / "docs" / "reference.md").write_text(page())
    print("wrote docs/reference.md")
