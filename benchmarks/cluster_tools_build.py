"""The first build of the local cluster's programs on a fresh machine: time, disk, peak memory.

    .venv/bin/python benchmarks/cluster_tools_build.py [--work DIR] [--keep]

Runs `tfjobgen cluster tools` (what `make cluster-tools` runs) with empty Go caches and an empty
binary cache, all under --work (default: a temporary folder, removed after unless --keep):
GOMODCACHE (every module downloaded from the proxy), GOCACHE (every package compiled) and
TFJOBGEN_TOOLS_CACHE (the binaries). Measures, with GNU time: wall seconds, the CPU seconds of
every process, the largest resident set of any one process (a link of kube-apiserver is the
peak); then the size of each folder. Prints a Markdown table, and the per-family times that
`tfjobgen cluster tools` printed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="where the fresh caches go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the caches (default: remove them after)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="tfjobgen-cold-build-"))
    folders = {"GOMODCACHE": work / "gomodcache", "GOCACHE": work / "gocache", "TFJOBGEN_TOOLS_CACHE": work / "tools"}
    for folder in folders.values():
        if folder.exists() and any(folder.iterdir()):
            sys.exit(f"{folder} is not empty: a cold build needs empty caches")
        folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **{k: str(v) for k, v in folders.items()}, "PYTHONPATH": str(REPO / "generator")}
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "tfjobgen", "cluster", "tools"]
    try:
        proc = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
        report = proc.stderr
        wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", report)[1]
        user = float(re.search(r"User time \(seconds\): (\S+)", report)[1])
        system = float(re.search(r"System time \(seconds\): (\S+)", report)[1])
        peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)[1]) * 1024
        print(proc.stdout)
        print(f"exit {proc.returncode}\n")
        if proc.returncode:  # what tfjobgen said, before GNU time's report
            print(report[:report.find("\tCommand being timed")].strip() + "\n")
        print("| what | figure |\n| --- | ---: |")
        print(f"| wall time (h:mm:ss) | {wall} |")
        print(f"| CPU time, every process (s) | {user + system:,.0f} |")
        print(f"| largest resident set of one process (GiB) | {peak / 2**30:.1f} |")
        for name, folder in folders.items():
            print(f"| {name} (GiB) | {size(folder) / 2**30:.1f} |")
        return proc.returncode
    finally:
        if not args.keep and not args.work:
            subprocess.run(["chmod", "-R", "u+w", str(work)], check=False)  # the module cache is read-only
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
