"""Bytes per PS before and after the advice, as a PNG (matplotlib, the `plot` extra).

Drawn from the plan's own predictions: one bar per PS, the job as written
beside the advised partitioner, the even share dashed.
"""

from __future__ import annotations

from ..shared import install
from .report import Plan
from .units import size

MAX_BARS = 64  # more PS than this are drawn as one bar per PS without labels


class ChartError(Exception):
    """The picture cannot be drawn: one line saying why and what to do."""


def draw(plans: list[Plan], path, title: str = "") -> None:
    """One panel per plan (a job), written to `path` (a file name or a binary file) as PNG with fixed metadata
    (same input, same bytes)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ChartError(f"--png needs matplotlib: {install.extra('plot')}") from None
    drawable = [p for p in plans if p.own]
    if not drawable:
        raise ChartError("nothing to draw: no job here has a variable list (spec.training or spec.model)")
    matplotlib.rcParams.update({"svg.hashsalt": "tfjobgen", "font.size": 9})
    figure, axes = plt.subplots(len(drawable), 1, figsize=(8, 2.6 * len(drawable)), squeeze=False)
    for plan, ax in zip(drawable, axes[:, 0]):
        _panel(ax, plan)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=110, metadata={"Software": None})
    plt.close(figure)


def _panel(ax, plan: Plan) -> None:
    before = plan.own.layout
    after = plan.after.layout if plan.after else None
    count = len(before.bytes_per_ps)
    positions = range(count)
    width = 0.4 if after else 0.7
    label = f"as written: {before.partitioner}, max/mean {before.max_over_mean:.2f}"
    ax.bar([i - (width / 2 if after else 0) for i in positions], [b / 1e6 for b in before.bytes_per_ps], width,
           color="#d9534f" if not before.balanced else "#3a7be8", label=label)
    if after:
        ax.bar([i + width / 2 for i in positions], [b / 1e6 for b in after.bytes_per_ps], width, color="#3a7be8",
               label=f"advised: {after.partitioner}, max/mean {after.max_over_mean:.2f}")
    ax.axhline(before.total / count / 1e6, color="#333", linestyle="--", linewidth=0.8, label="even share")
    tallest = max(before.bytes_per_ps + (after.bytes_per_ps if after else ()))
    ax.set_ylim(0, tallest / 1e6 * 1.45)  # room for the legend above the bars
    ax.set_ylabel("MB on the PS")
    ax.set_title(f"{plan.key}: {count} PS, {size(before.total)} of variables and slots", fontsize=9)
    if count <= MAX_BARS:
        ax.set_xticks(list(positions), [f"ps:{i}" for i in positions], rotation=90 if count > 12 else 0)
    ax.legend(loc="upper right", fontsize=8, frameon=False, ncol=3)
