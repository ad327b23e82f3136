"""What the benchmarks share: tfjobgen run as a command, from this checkout's sources."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def tfjobgen(*args: str, check: bool = False, timeout: float = 600, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`python -m tfjobgen ARGS` with this checkout's generator, its output captured. check: exit with its error
    output when it fails (a benchmark cannot go on without, say, its cluster)."""
    done = subprocess.run([sys.executable, "-m", "tfjobgen", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO / "generator")}, stdin=subprocess.DEVNULL,
                          timeout=timeout)
    if check and done.returncode:
        raise SystemExit(f"tfjobgen {' '.join(args)} failed:\n{done.stderr}")
    return done
