"""Draw docs/placement.svg: where the seed's cases land, from the real generated objects.

    .venv/bin/python docs/placement.py

Renders jobs/scene1-case2.yaml (colocated) and jobs/scene2-case2.yaml (isolated)
with the default profile, places their pods with the scheduler model the tests
use (tests/scheduling.py) on unlabelled 80-core servers, and draws one box per
server with its pods inside.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "generator"), str(REPO / "tests")]

import scheduling  # noqa: E402
from tfjobgen import backends, emit, pipeline  # noqa: E402

COLORS = {"ps": "#e8833a", "worker": "#3a7be8", "chief": "#3aa65a", "evaluator": "#8a5ad6"}
CELL, GAP, SERVER_W, SERVER_H = 18, 3, 130, 86


def placed(job: str, servers: int) -> list[scheduling.Node]:
    intents, _ = pipeline.load_intents([str(REPO / "jobs" / job)])
    expansion = pipeline.expand(intents, pipeline.load_profile(None))
    task_pods = backends.pods_of(emit.kustomize_order(expansion.objects[0]))
    cluster = scheduling.nodes(servers)
    assert scheduling.schedule(task_pods, cluster) == [], f"{job}: pods left pending"
    return cluster


def server_box(x: int, y: int, node: scheduling.Node, label: str) -> list[str]:
    out = [f'<rect x="{x}" y="{y}" width="{SERVER_W}" height="{SERVER_H}" rx="6" fill="#f6f6f6" stroke="#999"/>',
           f'<text x="{x + 6}" y="{y + 14}" font-size="11" fill="#444">{label}</text>']
    ordered = sorted(node.pods, key=lambda p: (p.role != "ps", p.role, p.index))
    for n, pod in enumerate(ordered):
        cx, cy = x + 6 + (n % 6) * (CELL + GAP), y + 22 + (n // 6) * (CELL + GAP)
        out.append(f'<rect x="{cx}" y="{cy}" width="{CELL}" height="{CELL}" rx="3" fill="{COLORS[pod.role]}">'
                   f'<title>{pod.hostname}</title></rect>')
        out.append(f'<text x="{cx + CELL / 2}" y="{cy + 12.5}" font-size="9" fill="white" '
                   f'text-anchor="middle">{pod.index}</text>')
    return out


def panel(title: str, subtitle: str, cluster: list[scheduling.Node], top: int, per_row: int) -> tuple[list[str], int]:
    out = [f'<text x="10" y="{top + 16}" font-size="14" font-weight="bold">{title}</text>',
           f'<text x="10" y="{top + 32}" font-size="11" fill="#555">{subtitle}</text>']
    for i, node in enumerate(cluster):
        x, y = 10 + (i % per_row) * (SERVER_W + 10), top + 42 + (i // per_row) * (SERVER_H + 10)
        out += server_box(x, y, node, f"server {i}")
    rows = (len(cluster) + per_row - 1) // per_row
    return out, top + 42 + rows * (SERVER_H + 10) + 10


def main() -> None:
    parts, top = [], 0
    scene1 = placed("scene1-case2.yaml", 5)
    section, top = panel("colocated: seed scene 1, case 2 (5 PS, 50 workers, 5 servers)",
                         "each server runs PS i (orange) and workers 10i..10i+9 (blue); no node was labelled",
                         scene1, top, 5)
    parts += section
    scene2 = placed("scene2-case2.yaml", 10)
    section, top = panel("isolated: seed scene 2, case 2 (5 PS, 50 workers, 10 servers)",
                         "PS alone on their servers, workers on the others, never mixed",
                         scene2, top, 5)
    parts += section
    legend_y = top + 4
    for n, (role, color) in enumerate(COLORS.items()):
        parts.append(f'<rect x="{10 + n * 90}" y="{legend_y}" width="12" height="12" rx="2" fill="{color}"/>')
        parts.append(f'<text x="{26 + n * 90}" y="{legend_y + 10}" font-size="11">{role}</text>')
    width, height = 10 + 5 * (SERVER_W + 10), legend_y + 24
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="Helvetica, Arial, sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n'
           + "\n".join(parts) + "\n</svg>\n")
    (REPO / "docs" / "placement.svg").write_text(svg)
    print(f"wrote docs/placement.svg ({width}x{height})")


if __name__ == "__main__":
    main()
