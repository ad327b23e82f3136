"""Plain-text tables for people: aligned columns, numbers right-aligned."""

from __future__ import annotations


def render(headers: list[str], rows: list[list[object]]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    numeric = [all(_is_number(row[i]) for row in cells) and bool(cells) for i in range(len(headers))]

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule] + [line(row) for row in cells])


def markdown(headers: list[str], rows: list[list[object]]) -> str:
    """The same table in GitHub Markdown, numbers right-aligned."""
    cells = [[markdown_cell(c) for c in row] for row in rows]
    numeric = [all(_is_number(str(row[i])) for row in rows) and bool(rows) for i in range(len(headers))]
    rule = "|" + "|".join("---:" if num else "---" for num in numeric) + "|"
    return "\n".join(["| " + " | ".join(headers) + " |", rule] + ["| " + " | ".join(row) + " |" for row in cells])


def markdown_cell(value: object) -> str:
    """Text safe inside a Markdown table cell."""
    return str(value).replace("|", "\\|").replace("\n", " ") or "-"


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True
