"""Placement figures and picture, measured on the real kube-scheduler of a local cluster.

    .venv/bin/python docs/generate/placement.py                 # both tables in docs/schedulers.md (placement, gang),
                                                       # docs/placement-runs.json and docs/placement.svg
                                                       # (2 orders per job and cell: about 45 minutes)
    .venv/bin/python docs/generate/placement.py --column "shared cluster"   # one column again, the rest as recorded
    .venv/bin/python docs/generate/placement.py --gang kubernetes           # one gang table column again
    .venv/bin/python docs/generate/placement.py --picture       # docs/placement.svg only

Every run is `tfjobgen place` (generator/tfjobgen/place/place.py): a fresh local cluster of
the job's profile, the objects created in a shuffled order, the real scheduler settled, the
topology's layout checked on the real bindings. What each row and column measures:
generator/tfjobgen/harness/guarantees.py. Needs `make cluster-tools`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

from tfjobgen.expand import pipeline
from tfjobgen.gitops.build import build_overlays, intents_as_built
from tfjobgen.gitops.tree import overlay_names
from tfjobgen.harness import guarantees
from tfjobgen.kit import owned
from tfjobgen.place import place

SCHEDULERS = REPO / "docs" / "schedulers.md"
RUNS = REPO / "docs" / "placement-runs.json"
TABLES = {"placement": guarantees.table, "gang": guarantees.gang_table}  # marked in schedulers.md as <!-- NAME table: ... -->
COLORS = {"ps": "#e8833a", "worker": "#3a7be8", "chief": "#3aa65a", "evaluator": "#8a5ad6"}
CELL, GAP, SERVER_W, SERVER_H = 18, 3, 130, 86


def overlays() -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """Each overlay's objects as built, and its intents as the ClusterProfile transformer gets them."""
    builds = build_overlays(REPO, overlay_names(REPO))
    failed = [f"{name}: " + "; ".join(p.format() for p in b.problems) for name, b in builds.items() if not b.ok]
    if failed:
        sys.exit("overlays failed to build:\n" + "\n".join(failed))
    intents = {name: b.intents if b.intents is not None else intents_as_built(REPO, name) for name, b in builds.items()}
    return {name: b.objects for name, b in builds.items()}, intents


def write_tables(orders: int, columns: tuple[str, ...], gangs: tuple[str, ...]) -> None:
    started = time.monotonic()

    def progress(line: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {line}", flush=True)

    objects, intents = overlays()
    found = guarantees.figures(objects, range(orders), columns=columns, progress=progress, gangs=gangs,
                               intents=intents)
    if RUNS.exists() and (set(columns) != set(guarantees.COLUMNS) or set(gangs) != set(guarantees.GANGS)):
        found = {**guarantees.load(RUNS), **found}  # re-measured columns replace theirs only
    guarantees.save(found, RUNS)
    text = SCHEDULERS.read_text()
    for name, table in TABLES.items():
        text = replace_table(text, name, table(found))
    SCHEDULERS.write_text(text)
    for (row, column), figure in sorted(found.items()):
        for failure in figure.failures[:3]:
            print(f"{row}, {column}: {failure}")
    print("".join(table(found) + "\n" for table in TABLES.values()) + f"wrote the tables in docs/schedulers.md and {RUNS.name}")


def replace_table(text: str, name: str, table: str) -> str:
    start, end = f"<!-- {name} table: start -->", f"<!-- {name} table: end -->"
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}\n{table}{end}{tail}"


def placed(job: str, servers: int) -> list[tuple[str, list]]:
    """(server, its pods) after the job's objects are created in a shuffled order (seed 0)."""
    objects = guarantees.render(job, guarantees.SEED_PROFILE)
    run = place.run_order(objects, pipeline.profile_from(guarantees.SEED_PROFILE), servers, 0, False,
                          "placement-picture", lambda line: None)
    assert run.good, f"{job}: {place.details([run])}"
    by_node: dict[str, list] = {}
    for task in run.tasks:
        by_node.setdefault(task.node, []).append(task)
    return sorted(by_node.items())


def server_box(x: int, y: int, pods: list, label: str) -> list[str]:
    out = [f'<rect x="{x}" y="{y}" width="{SERVER_W}" height="{SERVER_H}" rx="6" fill="#f6f6f6" stroke="#999"/>',
           f'<text x="{x + 6}" y="{y + 14}" font-size="11" fill="#444">{label}</text>']
    ordered = sorted(pods, key=lambda p: (p.role != "ps", p.role, p.index))
    for n, pod in enumerate(ordered):
        cx, cy = x + 6 + (n % 6) * (CELL + GAP), y + 22 + (n // 6) * (CELL + GAP)
        out.append(f'<rect x="{cx}" y="{cy}" width="{CELL}" height="{CELL}" rx="3" fill="{COLORS[pod.role]}">'
                   f'<title>{pod.name}</title></rect>')
        out.append(f'<text x="{cx + CELL / 2}" y="{cy + 12.5}" font-size="9" fill="white" '
                   f'text-anchor="middle">{pod.index}</text>')
    return out


def panel(title: str, subtitle: str, servers: list[tuple[str, list]], top: int, per_row: int) -> tuple[list[str], int]:
    out = [f'<text x="10" y="{top + 16}" font-size="14" font-weight="bold">{title}</text>',
           f'<text x="10" y="{top + 32}" font-size="11" fill="#555">{subtitle}</text>']
    for i, (node, pods) in enumerate(servers):
        x, y = 10 + (i % per_row) * (SERVER_W + 10), top + 42 + (i // per_row) * (SERVER_H + 10)
        out += server_box(x, y, pods, node)
    rows = (len(servers) + per_row - 1) // per_row
    return out, top + 42 + rows * (SERVER_H + 10) + 10


def draw_picture() -> None:
    parts, top = [], 0
    section, top = panel("colocated: seed scene 1, case 2 (5 PS, 50 workers, 5 servers)",
                         "the real kube-scheduler: each server runs PS i (orange) and workers 10i..10i+9 (blue); "
                         "no node was labelled", placed("scene1-case2", 5), top, 5)
    parts += section
    section, top = panel("isolated: seed scene 2, case 2 (5 PS, 50 workers, 10 servers)",
                         "PS alone on their servers, workers packed ten to a server, never mixed",
                         placed("scene2-case2", 10), top, 5)
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


def main() -> None:
    owned.unwind_on_sigterm()  # killed, it still stops the clusters it started
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--picture", action="store_true", help="draw docs/placement.svg only")
    parser.add_argument("--orders", type=int, default=2, help="creation orders per job and cell (default 2)")
    parser.add_argument("--column", action="append", choices=guarantees.COLUMNS,
                        help="measure only this placement table column (repeatable); the others keep their recorded runs")
    parser.add_argument("--gang", action="append", choices=list(guarantees.GANGS),
                        help="measure only this gang table column (repeatable); the others keep their recorded runs")
    args = parser.parse_args()
    draw_picture()
    if not args.picture:
        everything = not args.column and not args.gang
        write_tables(args.orders, tuple(args.column or (guarantees.COLUMNS if everything else ())),
                     tuple(args.gang or (guarantees.GANGS if everything else ())))


if __name__ == "__main__":
    main()
