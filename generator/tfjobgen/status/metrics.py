"""What a running job's own metrics say: the chief's step and pace, each PS's bytes.

The runtime serves them on every task's `metrics` port (runtime/metrics.py names them); status.read
fetches the chief's and every PS's through the API server's pod proxy. Pure functions of the text
(the Prometheus exposition format's sample lines: `name{labels} value`); no client library, since
prometheus-client is the runtime's dependency, not the cluster extra's.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..shared.variable_placement import sharding

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
STEPS = "tfjobgen_steps_total"
LOSS = "tfjobgen_loss"
STEP_SECONDS = "tfjobgen_step_duration_seconds"
PS_BYTES = "tfjobgen_ps_variable_bytes"


def samples(text: str) -> dict[str, float]:
    """Sample name -> value (the first of each name: tfjobgen's series carry one task's labels)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and match.group(1) not in found:
            try:
                found[match.group(1)] = float(match.group(3))
            except ValueError:
                continue
    return found


@dataclass
class Training:
    """The job's progress and its PS's load, from what could be read."""

    chief: str = ""  # the task whose counters are the job's
    step: int | None = None
    steps_per_second: float | None = None  # over the run: 1 / the mean of the reported step times
    loss: float | None = None
    ps_bytes: dict[str, int] = field(default_factory=dict)  # ps:i -> bytes of variables and slots it holds
    unreachable: dict[str, str] = field(default_factory=dict)  # task -> why its metrics could not be read
    partitioner: str | None = None  # spec.training.partitioner, as the pods have it

    @property
    def max_over_mean(self) -> float | None:
        return sharding.Placement(tuple(self.ps_bytes.values())).max_over_mean if self.ps_bytes else None

    @property
    def reachable(self) -> bool:
        return self.step is not None or bool(self.ps_bytes)


def summarize(scrapes: dict, chief: str) -> Training:
    """`scrapes`: task -> read.Scrape; `chief`: the task that counts steps (chief:0, else worker:0)."""
    training = Training(chief=chief)
    for task, scrape in scrapes.items():  # in table order (read.metrics)
        if scrape.error:
            training.unreachable[task] = scrape.error
            continue
        found = samples(scrape.text)
        if task == chief and STEPS in found:
            training.step = int(found[STEPS])
            loss = found.get(LOSS)
            training.loss = None if loss is None or math.isnan(loss) else loss
            count, seconds = found.get(f"{STEP_SECONDS}_count", 0), found.get(f"{STEP_SECONDS}_sum", 0)
            training.steps_per_second = count / seconds if count and seconds else None
        elif task.startswith("ps:") and PS_BYTES in found:
            training.ps_bytes[task] = int(found[PS_BYTES])
        else:
            training.unreachable[task] = "it answered, but with no tfjobgen metrics (a program of your own?)"
    return training
