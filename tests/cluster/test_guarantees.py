"""docs/schedulers.md's table of what each topology guarantees, and a sample of it on the real scheduler.

The table is measured by `.venv/bin/python docs/generate/placement.py` (every row, column and order: tens
of minutes) and recorded in docs/placement-runs.json. Here: the table in the docs is the one the
recorded runs give; each row's first job, one order, arrival and replacement, holds now wherever
the recorded runs say it always held; and the picture shows layouts that hold.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

import pytest
import yaml
from cluster_support import need_cluster_tools
from conftest import REPO, SAMPLE
from tfjobgen.harness import guarantees
from tfjobgen.place import place

SCHEDULERS = REPO / "docs" / "schedulers.md"
RUNS = REPO / "docs" / "placement-runs.json"


@pytest.mark.parametrize("name, table", [("placement", guarantees.table), ("gang", guarantees.gang_table)])
def test_the_tables_in_the_schedulers_page_are_the_recorded_runs(name, table):
    text = SCHEDULERS.read_text()
    start, end = f"<!-- {name} table: start -->", f"<!-- {name} table: end -->"
    committed = text[text.index(start) + len(start):text.index(end)].strip("\n") + "\n"
    assert committed == table(guarantees.load(RUNS)), \
        f"docs/schedulers.md's {name} table is not docs/placement-runs.json: run .venv/bin/python docs/generate/placement.py"


def test_the_recorded_runs_cover_every_cell_that_can_be_measured():
    recorded = guarantees.load(RUNS)
    columns = [*guarantees.COLUMNS, *(guarantees.gang_column(g) for g in guarantees.GANGS)]
    for row, jobs in guarantees.ROWS.items():
        for column in columns:
            measurable = column in (guarantees.ARRIVAL, guarantees.REPLACEMENT) or guarantees.SHARED_IN[row]
            assert not measurable or recorded[row, column].runs > 0, (row, column)


def _always_held(row: str, column: str) -> bool:
    figure = guarantees.load(RUNS)[row, column]
    return figure.runs > 0 and figure.good == figure.runs


@pytest.mark.parametrize("row", list(guarantees.ROWS))
@pytest.mark.parametrize("column", [guarantees.ARRIVAL, guarantees.REPLACEMENT])
def test_a_sample_holds_where_the_recorded_runs_always_held(row, column):
    need_cluster_tools()
    if not _always_held(row, column):
        pytest.skip(f"{row}, {column}: not every recorded run held (the docs say so), nothing to hold it to")
    found = guarantees.figures({}, range(7, 8), rows=(row,), columns=(column,), jobs_per_row=1)
    figure = found[row, column]
    assert figure.good == figure.runs == 1, figure.failures


def test_the_picture_shows_layouts_that_hold():
    """docs/placement.svg: colocated servers hold one PS and exactly its ten workers; isolated PS are alone."""
    svg = ElementTree.parse(REPO / "docs" / "placement.svg").getroot()
    namespace = {"svg": "http://www.w3.org/2000/svg"}
    tasks = [(float(rect.get("x")), float(rect.get("y")), rect.find("svg:title", namespace).text)
             for rect in svg.iter("{http://www.w3.org/2000/svg}rect") if rect.find("svg:title", namespace) is not None]
    boxes = [(float(r.get("x")), float(r.get("y"))) for r in svg.iter("{http://www.w3.org/2000/svg}rect")
             if r.get("width") == "130"]
    by_box: dict[tuple, list[str]] = {}
    for x, y, title in tasks:
        box = max(b for b in boxes if b[0] <= x and b[1] <= y)
        by_box.setdefault(box, []).append(title)
    assert len(by_box) == 15, "5 colocated servers and 10 isolated ones"
    for titles in by_box.values():
        ps = [int(re.match(r"ps:(\d+)", t)[1]) for t in titles if t.startswith("ps:")]
        workers = sorted(int(t.split(":")[1]) for t in titles if t.startswith("worker:"))
        if ps and workers:  # colocated: PS i beside workers 10i..10i+9
            assert len(ps) == 1 and workers == list(range(10 * ps[0], 10 * ps[0] + 10)), titles
        elif ps:  # isolated: a PS alone
            assert len(ps) == 1, titles
        else:
            assert len(workers) == 10, titles


def test_a_profile_that_queues_with_kueue_gets_its_jobs_placed(monkeypatch):
    """Kueue admits nothing from a namespace without the profile's LocalQueue: `place` (and so the gang
    table's kueue column) creates it beside each namespace, and the jobs Kueue held suspended are placed."""
    need_cluster_tools("kueue")
    intent = yaml.safe_load((SAMPLE / "jobs" / "wide-deep.yaml").read_text())
    profile, objects = guarantees.under_gang(guarantees.shared_cluster("seed-80c")[0], [intent],
                                             guarantees.GANGS["kueue"])
    run = guarantees._run(objects, profile, 4, 3, False, lambda line: None)
    [outcome] = run.jobs.values()
    assert outcome.placed == outcome.tasks > 0 and outcome.holds, place.details([run])
