"""The refusal catalogue: every input tfjobgen must refuse, one folder per case under tests/refusals/.

A case is what a tired person could write, and what tfjobgen must answer (one clear line per
problem, `file:line: field: message`, never a traceback, nothing half-written):

    tests/refusals/<case>/
        job.yaml               the input named on the command line (job.yaml.gz: an input too big
                               to keep as text, written out as job.yaml before the run)
        cluster-profile.yaml   optional: passed as --profile
        args                   optional: the command line after `tfjobgen` (default: validate job.yaml,
                               with --profile cluster-profile.yaml when the case has one)
        stdin                  optional: the command's standard input (the KRM function's objects)
        expected.txt           lines, or fragments of lines, that stderr must contain, one per line
        exit-code              the exit code

Any other file or folder in a case is input too (a case may name a folder in its args). The
catalogue is counted in docs/refusals.md (docs/generate/refusals.py writes it; tests/test_docs.py keeps it true).
"""

from __future__ import annotations

import gzip
import shlex
import shutil
from pathlib import Path

import pytest
from conftest import TESTS, run_tfjobgen

CASES = TESTS / "refusals"
PROFILE = "cluster-profile.yaml"


def case_names() -> list[str]:
    return sorted(p.name for p in CASES.iterdir() if p.is_dir())


def args_of(case: Path) -> list[str]:
    """The command line a case runs, after `tfjobgen`."""
    if (case / "args").is_file():
        return shlex.split((case / "args").read_text())
    return ["validate", "job.yaml"] + (["--profile", PROFILE] if (case / PROFILE).is_file() else [])


def expected_of(case: Path) -> tuple[int, list[str]]:
    """The exit code and the stderr fragments of a case."""
    fragments = [line for line in (case / "expected.txt").read_text().split("\n") if line]
    return int((case / "exit-code").read_text()), fragments


def prepared(case: Path, into: Path) -> Path:
    """A copy of the case's inputs in `into`, compressed inputs written out."""
    shutil.copytree(case, into, ignore=shutil.ignore_patterns("expected.txt", "exit-code", "args", "stdin"))
    for packed in into.rglob("*.gz"):
        packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
        packed.unlink()
    return into


@pytest.mark.parametrize("name", case_names())
def test_refused_in_one_clear_line(name, tmp_path):
    case = CASES / name
    code, fragments = expected_of(case)
    assert fragments, f"{case}/expected.txt says nothing stderr must contain"
    stdin = (case / "stdin").read_text() if (case / "stdin").is_file() else None
    proc = run_tfjobgen(*args_of(case), stdin=stdin, cwd=prepared(case, tmp_path / name))
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.stdout == "", "nothing half-written"
    for fragment in fragments:
        assert fragment in proc.stderr, f"{fragment!r} not in:\n{proc.stderr}"


def test_every_case_is_complete():
    """A case without its expectations, or with a misnamed one, would silently test less."""
    for name in case_names():
        case = CASES / name
        assert (case / "expected.txt").is_file() and (case / "exit-code").is_file(), f"{case}: incomplete"
        assert int((case / "exit-code").read_text()) != 0, f"{case}: a refusal exits non-zero"
        inputs = {p.name for p in case.iterdir()} - {"expected.txt", "exit-code", "args"}  # stdin is input
        assert inputs, f"{case}: no input"
