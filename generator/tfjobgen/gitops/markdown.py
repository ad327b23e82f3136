"""The diff report as Markdown: the comment the pull-request workflow posts, found again by MARKER."""

from __future__ import annotations

from ..expand import summary
from ..shared import contract
from .changes import JobChange, Report

MARKER = "<!-- tfjobgen-diff -->"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ") or "-"


def _change(old: str, new: str) -> str:
    return new if old == new else f"{old} → **{new}**"


def _row(change: JobChange) -> list[str]:
    old, new = change.old, change.new
    now = new or old
    cells = []
    for role in contract.TABLE_ROLES:
        before = summary.role_text(old.roles.get(role)) if old else "-"
        after = summary.role_text(new.roles.get(role)) if new else "-"
        cells.append(_change(before, after) if old and new else (after if new else before))
    for attribute in ("topology", "qos"):
        before, after = (getattr(old, attribute) if old else ""), (getattr(new, attribute) if new else "")
        cells.append(_change(before, after) if old and new else (after or before))
    protocol = [f"{s.protocol} ({s.api})" if s else "" for s in (old, new)]
    cells.append(_change(*protocol) if old and new else (protocol[1] or protocol[0]))
    counts = [str(sum(s.objects.values())) if s else "" for s in (old, new)]
    cells.append(_change(*counts) if old and new else (counts[1] or counts[0]))
    if change.change == "added":
        rollout = "starts"
    elif change.change == "removed":
        rollout = "**stops**: pruned, its pods are deleted"
    elif change.restarts:
        counts = [f"{change.runs[what]} Job(s) {what}" for what in ("recreated", "created", "deleted")
                  if change.runs[what]]
        rollout = "**restarts**: " + ", ".join(counts)
    else:
        rollout = "updated in place"
    return [change.change, f"`{now.key if now else change.key}`", *cells, rollout]


def to_markdown(report: Report) -> str:
    out = [MARKER, "## tfjobgen: what this change does to the clusters", "",
           f"Base `{report.base}` → head `{report.head}`.", ""]
    if report.errors:
        out.append(f"**{report.errors} error(s)** must be fixed before merging"
                   + (f"; {report.warnings} warning(s)." if report.warnings else "."))
    elif report.warnings:
        out.append(f"No errors; {report.warnings} warning(s).")
    else:
        out.append("No problems found.")
    out += ["", "| cluster | added | changed | removed | unchanged |", "|---|---|---|---|---|"]
    for cluster in report.clusters:
        count = {c: sum(1 for x in cluster.changes if x.change == c) for c in ("added", "changed", "removed")}
        out.append(f"| {cluster.overlay} | {count['added']} | {count['changed']} | {count['removed']} | "
                   f"{cluster.unchanged} |")
    if report.problems:
        out += ["", "### Problems", "", "| | where | field | problem |", "|---|---|---|---|"]
        for p in report.problems:
            where = f"{p.file}:{p.line}" if p.file and p.line else p.file
            out.append(f"| {'error' if p.is_error else 'warning'} | {_cell(f'`{where}`' if where else '')} | "
                       f"{_cell(f'`{p.field}`' if p.field else '')} | {_cell(p.message)} |")
    headers = ["change", "job", "PS", "workers", "chief", "evaluator", "topology", "QoS", "protocol", "objects",
               "rollout"]
    for cluster in report.clusters:
        out += ["", f"### Cluster `{cluster.overlay}`", ""]
        if cluster.note:
            out += [f"_{cluster.note}_", ""]
        if not cluster.changes:
            out.append("No job changes.")
            continue
        out += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        out += ["| " + " | ".join(_cell(c) for c in _row(change)) + " |" for change in cluster.changes]
        detailed = [c for c in cluster.changes if c.details]
        if detailed:
            out += ["", f"<details><summary>Object changes in {cluster.overlay}</summary>", ""]
            for change in detailed:
                out.append(f"- `{change.key}`")
                out += [f"  - {line}" for line in change.details]
            out += ["", "</details>"]
        if cluster.placement:
            out += ["", f"<details><summary>Placement of the added and changed jobs in {cluster.overlay} on the "
                        "real kube-scheduler (<code>tfjobgen place</code>)</summary>", "", cluster.placement, "",
                    "</details>"]
        if cluster.plans:
            out += ["", f"<details><summary>Plans of the added and changed jobs in {cluster.overlay} "
                        "(<code>tfjobgen plan</code>)</summary>", ""]
            out += [plan for plan in cluster.plans] + ["</details>"]
    if any(c.restarts for cluster in report.clusters for c in cluster.changes):
        out += ["", "A job that **restarts** loses the progress since its last checkpoint: Argo CD deletes and "
                    "recreates all its Jobs together (docs/gitops.md, \"Changing a running job\")."]
    return "\n".join(out) + "\n"
