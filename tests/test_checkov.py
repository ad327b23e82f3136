"""checkov's Kubernetes checks over rendered examples, with a documented allow-list (tests/checkov-allowlist.yaml).

checkov runs from its own virtualenv (`make checkov`: its pinned dependencies do not mix with
TensorFlow's), offline (--skip-download), over the golden examples, a sample of rendered/ and one
job whose image is pinned by digest.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import yaml
from conftest import REPO, SAMPLE, need, render, uses

from tfjobgen.expand import emit, summary

ALLOWLIST = REPO / "tests" / "checkov-allowlist.yaml"
GOLDEN = REPO / "tests" / "golden"
RENDERED_SAMPLE = ["*/ml-training/*.yaml", "*/placement-experiments/scene1-case1.yaml",
                   "*/placement-experiments/scene2-case1.yaml"]
DIGEST = "registry.example.com/ml/tfjobgen-runtime@sha256:" + "0123456789abcdef" * 4


@uses("checkov")
def checkov() -> str:
    found = shutil.which("checkov", path=str(REPO / ".venv-checkov" / "bin")) or shutil.which("checkov")
    return need("checkov", found, "make checkov installs it into .venv-checkov")


def _examples(folder) -> dict[str, list[dict]]:
    """File name -> objects, written into `folder` for checkov."""
    examples = {}
    for case in sorted(p for p in GOLDEN.iterdir() if (p / "expected.yaml").exists()):
        examples[f"golden-{case.name}.yaml"] = (case / "expected.yaml").read_text()
    for pattern in RENDERED_SAMPLE:
        for path in sorted((SAMPLE / "rendered").glob(pattern)):
            examples["rendered-" + "-".join(path.relative_to(SAMPLE / "rendered").parts)] = path.read_text()
    pinned = yaml.safe_load((GOLDEN / "spread-tf2" / "job.yaml").read_text())
    pinned["metadata"]["name"] = "pinned"
    pinned["spec"]["image"] = DIGEST
    (folder / "pinned-job.yaml").write_text(yaml.safe_dump(pinned))
    examples["pinned.yaml"] = emit.to_yaml(render(folder / "pinned-job.yaml"))
    (folder / "pinned-job.yaml").unlink()
    objects = {}
    for name, text in examples.items():
        (folder / name).write_text(text)
        objects[name] = [d for d in yaml.safe_load_all(text) if d]
    return objects


def _failures(folder) -> list[dict]:
    proc = subprocess.run([checkov(), "--directory", str(folder), "--framework", "kubernetes", "--skip-download",
                           "--quiet", "--compact", "--output", "json"], capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # 1: some check failed
    reports = json.loads(proc.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    assert all(r["summary"]["parsing_errors"] == 0 for r in reports), proc.stdout[-2000:]
    assert sum(r["summary"]["passed"] for r in reports) > 0, "checkov checked nothing"
    return [f for r in reports for f in r["results"]["failed_checks"]]


def test_every_checkov_finding_is_allowed_and_every_allowance_is_needed(tmp_path):
    objects = _examples(tmp_path)
    allowed = yaml.safe_load(ALLOWLIST.read_text())
    assert all(entry.get("why") and entry.get("check") for entry in allowed), "each entry says which check and why"
    by_resource, qos = {}, {}
    for group in objects.values():
        for obj in group:
            meta = obj["metadata"]
            by_resource[f"{obj['kind']}.{meta.get('namespace', 'default')}.{meta['name']}"] = obj
        qos.update({job.name: job.qos for job in summary.jobs(group)})
    unexpected, used = [], set()
    for failure in _failures(tmp_path):
        obj = by_resource[failure["resource"]]
        job = obj["metadata"]["labels"]["tfjobgen.dev/job"]
        matches = [i for i, entry in enumerate(allowed) if entry["id"] == failure["check_id"]
                   and (not entry.get("jobs") or job in entry["jobs"])
                   and (not entry.get("qos") or qos[job] == entry["qos"])]
        if not matches:
            unexpected.append(f"{failure['check_id']} ({failure['check_name']}) on {failure['resource']} "
                              f"in {failure['file_path'].lstrip('/')}")
        used.update(matches)
        if job == "pinned":
            assert failure["check_id"] != "CKV_K8S_43", "an image pinned by digest passes the digest check"
    assert not unexpected, "checkov findings the allow-list does not cover:\n" + "\n".join(unexpected)
    stale = [entry["id"] for i, entry in enumerate(allowed) if i not in used]
    assert not stale, f"allow-list entries no finding needs any more (remove them): {stale}"
