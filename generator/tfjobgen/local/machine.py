"""What this machine offers a local run: the CPUs this process may use, and free memory."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Machine:
    cpus: tuple[int, ...]  # CPU numbers this process may run on (its affinity)
    memory_available: int  # bytes, MemAvailable of /proc/meminfo

    @property
    def cores(self) -> int:
        return len(self.cpus)


def detect() -> Machine:
    return Machine(tuple(sorted(os.sched_getaffinity(0))), _memory_available())


def _memory_available() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
