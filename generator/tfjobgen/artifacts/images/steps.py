"""Running a build's commands: each to the image's log, a line per stage with the seconds elapsed.

    images tfjobgen-runtime +0s: base: mmdebstrap bookworm minbase + python3 ...
    images tfjobgen-runtime +93s: base: tar the layer ...

A command that fails raises BuildFailed naming it; the caller prints the log's last lines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

# The Debian package of each program a build runs, for the one line that says what to install.
PACKAGES = {"mmdebstrap": "mmdebstrap", "umoci": "umoci", "unshare": "util-linux", "chroot": "coreutils",
            "tar": "tar", "mount": "mount", "git": "git"}


class BuildFailed(Exception):
    pass


class ToolMissing(Exception):
    """A program the build runs is not installed, or the build cannot run here (not root)."""


def need(programs: list[str]) -> None:
    """One line saying what to install when a program is missing; builds run as root (chroot, mount)."""
    for program in programs:
        if shutil.which(program) is None:
            package = PACKAGES.get(program, program)
            raise ToolMissing(f"{program} is not installed: install Debian's {package} "
                              f"(apt-get install --no-install-recommends {package}; .ci/run installs it)")
    if os.geteuid() != 0:
        raise ToolMissing("building images needs root (mmdebstrap --mode=root, chroot, mount): run it as root")


class Steps:
    def __init__(self, name: str, log: Path, quiet: bool = False):
        self.name, self.log, self.quiet = name, log, quiet
        self.started = time.monotonic()
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def stage(self, text: str) -> None:
        line = f"images {self.name} +{self.elapsed():.0f}s: {text}"
        self._write(f"== {line}\n")
        if not self.quiet:
            print(line, file=sys.stderr, flush=True)

    def run(self, argv: list[str], env: dict | None = None, cwd: Path | None = None) -> str:
        """Run a command, its output to the log; its stdout is returned too (small outputs only)."""
        self._write("+ " + " ".join(str(a) for a in argv) + "\n")
        with open(self.log, "a", encoding="utf-8") as log:
            done = subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE, stderr=log, text=True,
                                  env={**os.environ, **(env or {})}, cwd=cwd, stdin=subprocess.DEVNULL)
            log.write(done.stdout)
        if done.returncode != 0:
            raise BuildFailed(f"`{Path(str(argv[0])).name} {' '.join(str(a) for a in argv[1:3])} ...` exited "
                              f"{done.returncode}")
        return done.stdout

    def tail(self, lines: int = 15) -> list[str]:
        try:
            return self.log.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return []

    def _write(self, text: str) -> None:
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(text)
