"""A command that hands a shell a string to run is refused, however the shell is reached: by its path, through
env (with env's own options and VAR=value), through busybox, and with -c among combined short flags (-xc, -ec,
-lc). A shell that runs a script file, and a program that merely has -c, are not."""

from __future__ import annotations

import pytest
from conftest import problems_of
from jobs import job_yaml

RUNS_A_STRING = [
    (["sh", "-c", "python train.py"], "sh -c"),
    (["bash", "-xc", "python train.py"], "bash -xc"),
    (["bash", "-ec", "python train.py"], "bash -ec"),
    (["/bin/bash", "-lc", "python train.py"], "/bin/bash -lc"),
    (["bash", "-euxo", "pipefail", "-c", "python train.py"], "bash -euxo pipefail -c"),
    (["bash", "--norc", "-x", "-c", "python train.py"], "bash --norc -x -c"),
    (["/usr/bin/env", "sh", "-c", "python train.py"], "/usr/bin/env sh -c"),
    (["env", "-i", "PATH=/usr/bin", "dash", "-c", "python train.py"], "env -i PATH=/usr/bin dash -c"),
    (["env", "-u", "HOME", "--chdir=/tmp", "zsh", "-ec", "x"], "env -u HOME --chdir=/tmp zsh -ec"),
    (["env", "--", "ksh", "-c", "x"], "env -- ksh -c"),
    (["busybox", "ash", "-c", "x"], "busybox ash -c"),
    (["/usr/bin/env", "-S", "sh -c 'python train.py'"], "/usr/bin/env -S"),
]
RUNS_A_PROGRAM = [
    ["python", "train.py"],
    ["bash", "train.sh", "-c", "config.yaml"],  # -c after the script is the script's own argument
    ["env", "python", "-c", "print(1)"],
    ["/usr/bin/env", "FOO=1", "python", "train.py"],
    ["bash", "-x", "train.sh"],
    ["bashful", "-c", "x"],
]


def command_problems(command: list[str], tmp_path) -> list:
    """The errors about the command (warnings aside)."""
    return [p for p in problems_of(job_yaml(command=command), tmp_path)
            if p.field.startswith("spec.command") and p.is_error]


@pytest.mark.parametrize("command, shown", RUNS_A_STRING, ids=[" ".join(c) for c, _ in RUNS_A_STRING])
def test_a_shell_given_a_string_is_refused(command, shown, tmp_path):
    problems = command_problems(command, tmp_path)
    assert len(problems) == 1, [p.format() for p in problems]
    assert problems[0].message.startswith(f"'{shown}' runs "), problems[0].message


@pytest.mark.parametrize("command", RUNS_A_PROGRAM, ids=" ".join)
def test_a_program_and_a_script_are_not(command, tmp_path):
    assert command_problems(command, tmp_path) == []


def test_the_string_may_come_from_args(tmp_path):
    text = job_yaml(command=["/usr/bin/env", "bash", "-xc"], args=["python train.py"])
    problems = [p for p in problems_of(text, tmp_path) if p.field == "spec.command" and p.is_error]
    assert len(problems) == 1 and problems[0].line == 6, [p.format() for p in problems]
