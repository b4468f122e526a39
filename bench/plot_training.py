#!/usr/bin/env python3
"""Draws training logs (kge-train --log, one JSON per run) as an SVG: the
mean loss per epoch and, where it was measured, the filtered validation
MRR, one line per run (no plotting library needed).

    python3 bench/plot_training.py distmult.json complex.json --out curves.svg
"""

import argparse
import json
import math
import pathlib

COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2"]


def panel(runs, key, title, top, left=60, width=640, height=220, log=False):
    points = [[(r["epoch"] + 1, r[key] if key == "loss" else r.get("valid", {}).get("mrr"))
               for r in run["log"]] for run in runs]
    points = [[(x, y) for x, y in p if y is not None and (y > 0 or not log)] for p in points]
    values = [y for p in points for _, y in p]
    out = [f'<text x="{left}" y="{top - 10}" font-size="13" font-weight="bold">{title}</text>']
    if not values:
        return out + [f'<text x="{left}" y="{top + 20}" font-size="11">not measured</text>']
    epochs = max(x for p in points for x, _ in p)
    lo, hi = min(values), max(values)
    if log:
        lo, hi = math.log10(lo), math.log10(hi)
    hi = hi if hi > lo else lo + 1
    fx = lambda x: left + (width - left - 20) * (x - 1) / max(epochs - 1, 1)  # noqa: E731
    fy = lambda y: top + height - height * (((math.log10(y) if log else y) - lo) / (hi - lo))  # noqa: E731
    out.append(f'<rect x="{left}" y="{top}" width="{width - left - 20}" height="{height}" '
               'fill="none" stroke="#ccc"/>')
    for value in (lo, (lo + hi) / 2, hi):
        label = f"{10 ** value:.3g}" if log else f"{value:.3g}"
        y = top + height - height * (value - lo) / (hi - lo)
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="10" '
                   f'text-anchor="end">{label}</text>')
    out.append(f'<text x="{width - 20}" y="{top + height + 14}" font-size="10" '
               f'text-anchor="end">epoch {epochs}</text>')
    for i, p in enumerate(points):
        path = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in p)
        out.append(f'<polyline points="{path}" fill="none" stroke="{COLORS[i % len(COLORS)]}" '
                   'stroke-width="2"/>')
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("logs", nargs="+", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    runs = [json.loads(p.read_text()) for p in args.logs]
    body = panel(runs, "loss", "mean training loss per epoch (log scale)", 40, log=True)
    body += panel(runs, "mrr", "filtered validation MRR", 320)
    for i, (run, path) in enumerate(zip(runs, args.logs)):
        body.append(f'<text x="{60 + 150 * i}" y="580" font-size="11" '
                    f'fill="{COLORS[i % len(COLORS)]}">{run.get("model", path.stem)}</text>')
    args.out.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="660" height="600" '
                        'font-family="sans-serif">' + "".join(body) + "</svg>\n")


if __name__ == "__main__":
    main()
