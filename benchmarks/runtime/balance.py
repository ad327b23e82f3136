"""PS balance: bytes of variables per PS with partitioner none, fixed and auto, on 2 and 4 PS.

    .venv/bin/python benchmarks/runtime/balance.py [--steps 100] [--apis tf2,tf1] [--svg docs/runtime-balance.svg]

Runs the README's job (jobs/wide-deep.yaml) with `tfjobgen run-local`, its model
shrunk to the schema's default size (a 100k x 16 embedding and a 100k x 1 wide
table: one big variable, as in the seed) so each run takes seconds, with
--scale-ps 2 / 4 and one worker. Bytes per PS come from the chief's placement
event: every variable and optimizer slot (adagrad accumulators) on each PS.
Goal: auto <= 1.10 max/mean; none reproduces the seed's hot PS.
"""

from __future__ import annotations

import argparse

from common import job_variant, machine, markdown, run_local, save

MODEL = {"vocabularySize": 100000, "embeddingDim": 16, "hiddenUnits": [64, 32]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--apis", default="tf2,tf1")
    parser.add_argument("--svg", help="also draw the tf2 bytes per PS as an SVG bar chart")
    args = parser.parse_args()
    rows, results = [], []
    for api in args.apis.split(","):
        for num_ps in (2, 4):
            for partitioner in ("none", "fixed", "auto"):
                job = job_variant(f"balance-{api}-{num_ps}-{partitioner}",
                                  {"partitioner": partitioner, "model": MODEL}, api=api)
                run = run_local(job, "--steps", str(args.steps), "--scale-ps", str(num_ps), "--scale-workers", "1")
                if run.get("returncode") != 0:
                    raise SystemExit(f"{job.name} failed:\n{run['output']}")
                per_ps = run["bytes_per_ps"]
                total = sum(per_ps)
                results.append({"api": api, "ps": num_ps, "partitioner": partitioner, "bytes_per_ps": per_ps,
                                "max_over_mean": run["max_over_mean"], "survivors": run["survivors"]})
                rows.append([api, num_ps, partitioner, " / ".join(f"{b / 1e6:.2f}" for b in per_ps),
                             " / ".join(f"{100 * b / total:.1f}%" for b in per_ps), f"{run['max_over_mean']:.2f}"])
                print(f"{api} {num_ps} PS {partitioner}: max/mean {run['max_over_mean']:.2f}", flush=True)
    print(f"\n{machine()}; model {MODEL}, adagrad (one accumulator per variable)\n")
    print(markdown(["api", "PS", "partitioner", "MB per PS", "share", "max/mean"], rows))
    save("balance", {"machine": machine(), "model": MODEL, "runs": results})
    if args.svg:
        with open(args.svg, "w", encoding="utf-8") as out:
            out.write(svg([r for r in results if r["api"] == "tf2"]))
        print(f"\nwrote {args.svg}")


def svg(results: list[dict]) -> str:
    """Bars of each PS's share, one group per (PS count, partitioner), the 1/N line dashed."""
    bar, gap, group_gap, height, top, left = 16, 3, 26, 150, 34, 40
    colors = {"none": "#d9534f", "fixed": "#8a8a8a", "auto": "#3a7be8"}
    x, parts = left, []
    for result in results:
        per_ps = result["bytes_per_ps"]
        total = sum(per_ps)
        start = x
        for share in (b / total for b in per_ps):
            h = share * height
            parts.append(f'<rect x="{x}" y="{top + height - h:.1f}" width="{bar}" height="{h:.1f}" '
                         f'fill="{colors[result["partitioner"]]}"/>')
            x += bar + gap
        even = top + height - height / len(per_ps)
        parts.append(f'<line x1="{start - 2}" x2="{x}" y1="{even:.1f}" y2="{even:.1f}" stroke="#333" '
                     'stroke-dasharray="3,2"/>')
        middle = (start + x - gap) / 2
        parts.append(f'<text x="{middle:.1f}" y="{top + height + 14}" font-size="10" text-anchor="middle">'
                     f'{result["ps"]} PS, {result["partitioner"]}</text>')
        parts.append(f'<text x="{middle:.1f}" y="{top + height + 27}" font-size="10" text-anchor="middle" '
                     f'fill="#555">max/mean {result["max_over_mean"]:.2f}</text>')
        x += group_gap
    width = x + 10
    axis = [f'<line x1="{left - 6}" x2="{left - 6}" y1="{top}" y2="{top + height}" stroke="#999"/>',
            f'<text x="{left - 10}" y="{top + 4}" font-size="9" text-anchor="end">100%</text>',
            f'<text x="{left - 10}" y="{top + height}" font-size="9" text-anchor="end">0%</text>',
            f'<text x="{left}" y="18" font-size="12">Share of variable bytes per PS (tf2, the reference model; '
            'dashed: an even share)</text>']
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + 40}" '
            f'font-family="sans-serif">\n' + "\n".join(axis + parts) + "\n</svg>\n")


if __name__ == "__main__":
    main()
