"""What the act tier rests on, checked without running act: every remote action of the workflows has a stand-in
that takes the inputs the workflows pass, and a missing act says which make target builds it, in one line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from act_support import ACTIONS, STAND_INS, act_binary, remote_actions
from conftest import REPO

from tfjobgen.artifacts import programs
from tfjobgen.harness import act

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_remote_action_has_a_stand_in_taking_the_inputs_the_workflow_passes(workflow):
    for action in remote_actions(workflow):
        name = action.partition("@")[0]
        assert name == "actions/checkout" or name in STAND_INS, f"{workflow.name}: no stand-in for {action}"
    for job in yaml.safe_load(workflow.read_text())["jobs"].values():
        for step in job["steps"]:
            uses = step.get("uses", "")
            if not uses or uses.startswith("actions/checkout@"):
                continue
            owner, repo, *sub = uses.partition("@")[0].split("/")
            stand_in = yaml.safe_load((ACTIONS / STAND_INS[f"{owner}/{repo}"] / "/".join(sub) / "action.yml")
                                      .read_text())
            assert stand_in["runs"]["using"] == "composite", "no Node needed"
            unknown = set(step.get("with", {})) - set(stand_in.get("inputs", {}))
            assert not unknown, f"{workflow.name}: {uses} is given {unknown}, which its stand-in does not take"


def test_a_missing_act_is_one_line_naming_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv(programs.CACHE_ENV, str(tmp_path / "empty-cache"))
    with pytest.raises(programs.ToolsMissing) as missing:
        programs.program("act")
    assert "\n" not in str(missing.value) and "run `make cluster-tools`" in str(missing.value), missing.value
    # a skip, or under TFJOBGEN_REQUIRE_TOOLS=1 a failure: with the same line
    with pytest.raises((pytest.skip.Exception, pytest.fail.Exception), match="act is not available: act .* is not built: run `make cluster-tools`"):
        act_binary()


@pytest.mark.parametrize("action", sorted(ACTIONS.rglob("action.yml")), ids=lambda p: str(p.parent.relative_to(ACTIONS)))
def test_every_stand_in_step_passes_shellcheck(action, tmp_path):
    shellcheck = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")
    if not shellcheck:
        pytest.skip("shellcheck is in the test extra: pip install -e '.[test]'")
    for number, step in enumerate(yaml.safe_load(action.read_text())["runs"]["steps"]):
        script = tmp_path / f"step-{number}.sh"
        script.write_text("#!/bin/bash\nset -eo pipefail\n" + re.sub(r"\$\{\{[^}]*\}\}", "GITHUB_EXPRESSION", step["run"]))
        proc = subprocess.run([shellcheck, "--severity=warning", str(script)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, f"{action}: step {number}:\n{proc.stdout}"


def test_a_kept_python_environment_is_moved_to_the_run_that_reuses_it_and_stays_as_it_was(tmp_path):
    """setup-python's environment kept between runs (harness/act.py): its interpreter's links, pyvenv.cfg and
    scripts name the run that made it; a copy names its own run, written anew (the kept files are hard links)."""
    made, reused, kept = tmp_path / "run-1", tmp_path / "run-2", tmp_path / "kept"
    (made / "python" / "bin").mkdir(parents=True)
    (made / "python" / "bin" / "python3").symlink_to(made / "act" / "tool_cache" / "bin" / "python3")
    (made / "python" / "pyvenv.cfg").write_text(f"home = {made}/act/tool_cache/bin\n")
    (made / "python" / "bin" / "tfjobgen").write_text(f"#!{made}/python/bin/python3\nimport tfjobgen\n")
    (made / "python" / "bin" / "python").symlink_to("python3")
    act._keep_python_env(made, kept)
    assert (kept / ".made-in").read_text().strip() == str(made)
    reused.mkdir()
    act._restore_python_env(kept, reused)
    copy = reused / "python"
    assert os.readlink(copy / "bin" / "python3") == f"{reused}/act/tool_cache/bin/python3"
    assert os.readlink(copy / "bin" / "python") == "python3"
    assert (copy / "pyvenv.cfg").read_text() == f"home = {reused}/act/tool_cache/bin\n"
    assert (copy / "bin" / "tfjobgen").read_text().startswith(f"#!{reused}/python/bin/python3\n")
    assert (kept / "bin" / "tfjobgen").read_text().startswith(f"#!{made}/python/bin/python3\n"), "kept as it was"
    assert (kept / "pyvenv.cfg").read_text() == f"home = {made}/act/tool_cache/bin\n"
