"""The cluster tier's checks on every Kubernetes release tfjobgen builds: a table of release x check.

    .venv/bin/python benchmarks/release_checks.py [--releases 1.30 1.34 1.37] [--write docs/releases.md]
    make releases          # builds what is built on request first, then writes docs/releases.md

For each release (every family of cluster-tools/versions.yaml that builds kube-apiserver) it runs
the checks below with pytest, every local cluster started with `cluster up --kubernetes RELEASE`
(tests/cluster/cluster_support.py reads TFJOBGEN_TEST_KUBERNETES and checks the API server's
/version). The controllers keep their own releases (versions.yaml): the table's last lines say which.

- the overlays applied under Pod Security "restricted" (every object admitted, every pod created);
- the lifecycle rules on the real Job controller, and on the JobSet and TFJob controllers;
- a placement sample on the real kube-scheduler;
- gang admission on each gang scheduler (Kubernetes' own on the releases that have it).

Prints the table; --write replaces the table between the markers of docs/releases.md. Exit 1 when
a check failed on any release. It takes 6 to 8 minutes a release on 2 cores (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from xml.etree import ElementTree

REPO = Path(__file__).resolve().parents[1]
CHECKS = {  # test file -> what it checks, as the table's section names it
    "tests/cluster/test_overlays_admitted.py": "overlays under restricted Pod Security",
    "tests/cluster/test_job_lifecycle.py": "lifecycle on the Job controller",
    "tests/cluster/test_lifecycle_real.py": "lifecycle on the JobSet and TFJob controllers",
    "tests/cluster/test_topology_real.py": "placement on kube-scheduler",
    "tests/cluster/test_gang.py": "gang admission",
}
BEGIN, END = "<!-- release-checks: begin -->", "<!-- release-checks: end -->"
MARKS = {"passed": "pass", "failed": "**FAIL**", "skipped": "skip"}


def releases() -> list[str]:
    from tfjobgen.artifacts import programs

    return [f.release for f in programs.releases("kube-apiserver")]


def run(release: str, report: Path) -> int:
    """pytest on the checks against `release`; its output streams through (the progress)."""
    env = {**os.environ, "TFJOBGEN_TEST_KUBERNETES": release, "TFJOBGEN_REQUIRE_TOOLS": "1",
           "PYTHONPATH": str(REPO / "generator")}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "--dist", "loadfile",
               f"--junitxml={report}", *CHECKS]
    print(f"== Kubernetes {release}: {' '.join(command[2:])}", file=sys.stderr, flush=True)
    return subprocess.run(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, check=False).returncode


def outcomes(report: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """(file, test) -> (outcome, why) from a JUnit report."""
    found = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        file = "tests/cluster/" + case.get("classname", "").split(".")[-1] + ".py"
        outcome, why = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, why = "failed", (child.get("message") or "").splitlines()[0][:120] if child.get("message") else ""
            elif child.tag == "skipped":
                outcome, why = "skipped", (child.get("message") or "")[:120]
        found[(file, case.get("name", ""))] = (outcome, why)
    return found


def readable(test: str) -> str:
    """test_the_chiefs_success_completes_its_job[native] -> the chiefs success completes its job (native)"""
    name, _, params = test.partition("[")
    text = name.removeprefix("test_").replace("_", " ")
    return f"{text} ({params.rstrip(']')})" if params else text


def table(results: dict[str, dict], order: list[str]) -> str:
    """Release x check, a section per test file; a check skipped on every release (a case for another
    gang scheduler, say) is left out, and `skips` says why."""
    tests = sorted({key for found in results.values() for key in found},
                   key=lambda k: (list(CHECKS).index(k[0]) if k[0] in CHECKS else 99, k[1]))
    lines = ["| check | " + " | ".join(order) + " |", "| --- | " + " | ".join("---" for _ in order) + " |"]
    section = None
    for key in tests:
        outcomes = [results[r][key][0] if key in results[r] else "" for r in order]
        if all(o in ("skipped", "") for o in outcomes):
            continue
        if key[0] != section:
            section = key[0]
            lines.append(f"| **{CHECKS.get(section, section)}** |" + " |" * len(order))
        lines.append(f"| {readable(key[1])} | " + " | ".join(MARKS.get(o, "-") for o in outcomes) + " |")
    return "\n".join(lines)


def skips(results: dict[str, dict]) -> list[str]:
    """Why each skipped cell was skipped, once per reason."""
    seen = {}
    for release, found in results.items():
        for outcome, why in found.values():
            if outcome == "skipped":
                seen.setdefault(re.sub(r"^Skipped: ", "", why), set()).add(release)
    return [f"- {', '.join(sorted(r))}: {why}" for why, r in sorted(seen.items())]


def controllers(versions: list[str]) -> str:
    from tfjobgen.artifacts import programs

    names = ("etcd", "kwok", "training-operator", "kueue", "scheduler-plugins", "volcano")
    jobsets = {v: programs.family_for("jobset-controller", v).version for v in versions}
    named = [f"{f.name} {f.version}" for f in programs.families() if f.name in names]
    return ", ".join(named) + "; JobSet " + ", ".join(f"{j} on {v}" for v, j in jobsets.items())


def write(path: Path, text: str) -> None:
    document = path.read_text()
    start, end = document.index(BEGIN) + len(BEGIN), document.index(END)
    path.write_text(document[:start] + "\n" + text + "\n" + document[end:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", nargs="+", metavar="RELEASE", help="minor releases (default: every one built)")
    parser.add_argument("--write", type=Path, metavar="FILE", help="replace the table between the markers of FILE")
    args = parser.parse_args()
    from tfjobgen.artifacts import programs
    from tfjobgen.inputs import profile as profiles

    chosen = args.releases or releases()
    for release in chosen:
        try:
            for program in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
                programs.program(program, release)
        except (KeyError, programs.ToolsMissing) as err:
            print(f"release_checks: {err}", file=sys.stderr)
            return 2
    results, minutes, failed = {}, {}, False
    with tempfile.TemporaryDirectory(prefix="release-checks-") as scratch:
        for release in chosen:
            report = Path(scratch) / f"{release}.xml"
            started = time.monotonic()
            failed |= run(release, report) != 0
            minutes[release] = (time.monotonic() - started) / 60
            results[release] = outcomes(report) if report.exists() else {}
    versions = {r: programs.family_of("kube-apiserver", r).version for r in chosen}
    chosen = sorted(chosen, key=profiles.release)  # columns oldest first, whatever order they ran in
    order = [versions[r] for r in chosen]
    text = "\n".join([
        table({versions[r]: results[r] for r in chosen}, order), "",
        "Time per release: " + ", ".join(f"{versions[r]} {minutes[r]:.1f} min" for r in chosen) + ".",
        f"The controllers beside each release: {controllers(order)}.",
        *(["", "Skipped:", *skips({versions[r]: results[r] for r in chosen})] if any(
            o == "skipped" for found in results.values() for o, _ in found.values()) else []),
    ])
    print(text)
    if args.write:
        write(args.write, text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
