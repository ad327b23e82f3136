"""`validate jobs/` holds the folder's kustomization to its files both ways: a job file it does not list
(intents.unlisted) and an entry it lists that is not there (intents.missing_listed), which fails every
overlay's build while validate said nothing."""

from __future__ import annotations

from conftest import run_tfjobgen
from jobs import job_yaml

from tfjobgen.inputs import intents


def jobs_folder(tmp_path, listed: list[str]):
    folder = tmp_path / "jobs"
    folder.mkdir()
    (folder / "a.yaml").write_text(job_yaml("a"))
    lines = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization", "resources:"]
    (folder / "kustomization.yaml").write_text("\n".join(lines + [f"- {e}" for e in listed]) + "\n")
    return folder


def test_a_listed_file_that_is_not_there_is_an_error_at_its_line(tmp_path):
    folder = jobs_folder(tmp_path, ["a.yaml", "deleted.yaml"])
    problems = intents.missing_listed([str(folder)])
    assert [(p.file, p.line, p.field, p.is_error) for p in problems] == [
        (str(folder / "kustomization.yaml"), 5, "resources[1]", True)]
    assert "'deleted.yaml' is not there" in problems[0].message


def test_validate_fails_on_it_in_one_line(tmp_path):
    jobs_folder(tmp_path, ["a.yaml", "gone.yaml"])
    proc = run_tfjobgen("validate", "jobs", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "jobs/kustomization.yaml:5: resources[1]: 'gone.yaml' is not there" in proc.stderr, proc.stderr


def test_remote_and_present_entries_are_not_checked(tmp_path):
    folder = jobs_folder(tmp_path, ["a.yaml", "https://example.com/x.yaml", "github.com/org/repo//jobs?ref=v1"])
    assert intents.missing_listed([str(folder)]) == []
