"""Where a command's CPU goes on the whole machine: run it, read /proc once a second, and print CPU seconds per program.

/usr/bin/time counts only the command's reaped children: a cluster's daemons and the containers of real nodes
are not among them (they are started in sessions of their own), so it under-counts `make test` by more than half.
This reads every process of the machine once a second instead, by the program it runs (for Python, its first
arguments: the TensorFlow runtime, a tfjobgen command, a pytest worker); what ran before the command is the
baseline. A process's last second is missed, and one that lives less than a second entirely: kubectl, git and
short tfjobgen commands count for less than they cost.

    .venv/bin/python benchmarks/suite_cpu.py [--top 30] -- make test
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time

CLOCK = os.sysconf("SC_CLK_TCK")


def _program(pid: str) -> tuple[tuple[str, str], str, int] | None:
    """((pid, start time), the program's name, CPU ticks so far), None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            argv = [a.decode(errors="replace") for a in cmdline.read().split(b"\0") if a]
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    name = comm
    if comm.startswith("python") and len(argv) > 1:  # which Python program: its first arguments
        name = "python " + " ".join(a.rsplit("/", 1)[-1] for a in argv[1:4])[:60]
    return (pid, fields[19]), name, int(fields[11]) + int(fields[12])


def _read() -> list[tuple[tuple[str, str], str, int]]:
    return [found for pid in os.listdir("/proc") if pid.isdigit() and (found := _program(pid))]


def sample(stop: threading.Event, totals: dict[str, int], interval: float = 1.0) -> None:
    """Add to `totals` the CPU each program spends from now until `stop`: what ran before is the baseline. A
    process's CPU since the last read is lost when it ends before the next."""
    last = {key: ticks for key, _, ticks in _read()}
    while True:
        stopped = stop.wait(interval)
        for key, name, ticks in _read():
            totals[name] = totals.get(name, 0) + ticks - last.get(key, 0)
            last[key] = ticks
        if stopped:
            return


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    totals: dict[str, int] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=sample, args=(stop, totals), daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        code = subprocess.run(args.command).returncode
    finally:
        stop.set()
        sampler.join()
    wall = time.monotonic() - started
    total = sum(totals.values()) / CLOCK
    print(f"\n{args.command}: exit {code}, {wall:.0f} s wall, {total:.0f} CPU s on the machine "
          f"({total / wall / os.cpu_count():.0%} of {os.cpu_count()} cores)")
    print("| CPU s | share | program |\n| ---: | ---: | --- |")
    for name, ticks in sorted(totals.items(), key=lambda item: -item[1])[:args.top]:
        print(f"| {ticks / CLOCK:.1f} | {ticks / CLOCK / total:.1%} | `{name}` |")
    return code


if __name__ == "__main__":
    sys.exit(main())
