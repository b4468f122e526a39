#!/usr/bin/env python3
"""Plots bench_score_functions.py results as an SVG (no plotting library
needed): per dataset, one group of bars per score function and
(length, batch), the speedup of KGE over PyTorch eager and over
torch.compile on a log scale, with the targets of the benchmark (3x over
torch.compile for vector models, 20x over both for matrix models) drawn as
lines.

    python3 bench/plot.py bench/results/<run>/fb15k.json bench/results/<run>/wn18.json \\
        --out bench/results/<run>/speedups.svg
"""

import argparse
import json
import math
import pathlib

COLORS = {"speedup_vs_eager": "#4c78a8", "speedup_vs_compile": "#f58518"}
LABELS = {"speedup_vs_eager": "vs PyTorch eager", "speedup_vs_compile": "vs torch.compile"}
MATRIX_MODELS = {"transr", "rescal"}


def panel(results, top, width):
    entries = results["entries"]
    bar, gap = 7, 10
    left, height = 60, 260
    lo, hi = 0.5, 64.0
    y = lambda v: top + height - height * (math.log(max(v, lo)) - math.log(lo)) / (math.log(hi) - math.log(lo))  # noqa: E731
    out = [f'<text x="{left}" y="{top - 12}" font-size="14" font-weight="bold">'
           f'{results["dataset"]}: {results["entities"]} entities, {results["relations"]} relations '
           f'({results["device"]}, time per call incl. host overhead)</text>']
    for tick in (0.5, 1, 2, 3, 5, 10, 20, 50):
        out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                   f'stroke="#ddd"/><text x="{left - 6}" y="{y(tick) + 4:.1f}" font-size="10" '
                   f'text-anchor="end">{tick}x</text>')
    x = left + 6
    for e in entries:
        for key in ("speedup_vs_eager", "speedup_vs_compile"):
            if key in e:
                v = e[key]
                out.append(f'<rect x="{x}" y="{min(y(v), y(1)):.1f}" width="{bar}" '
                           f'height="{abs(y(1) - y(v)):.1f}" fill="{COLORS[key]}">'
                           f'<title>{e["model"]} D{e["length"]} B{e["batch"]} {LABELS[key]}: {v:.2f}x</title></rect>')
            x += bar
        target = 20 if e["model"] in MATRIX_MODELS else 3
        out.append(f'<line x1="{x - 2 * bar - 1}" x2="{x + 1}" y1="{y(target):.1f}" y2="{y(target):.1f}" '
                   f'stroke="#c00" stroke-width="1.5"/>')
        if e["length"] == 512 and e["batch"] == 16384:
            out.append(f'<text x="{x - bar}" y="{top + height + 14}" font-size="10" text-anchor="middle" '
                       f'transform="rotate(45 {x - bar} {top + height + 14})">{e["model"]}</text>')
        x += gap
    out.append(f'<text x="{left}" y="{top + height + 62}" font-size="10">groups per model: '
               f'D128 B4096, D128 B16384, D512 B4096, D512 B16384 (labelled); red: target</text>')
    return out, x


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=pathlib.Path, nargs="+")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    runs = [json.loads(p.read_text()) for p in args.results]
    width = 60 + max(len(r["entries"]) for r in runs) * 24 + 40
    body, top = [], 40
    for run in runs:
        lines, _ = panel(run, top, width)
        body += lines
        top += 360
    legend = [f'<rect x="{70 + 170 * i}" y="{top - 20}" width="10" height="10" fill="{COLORS[k]}"/>'
              f'<text x="{84 + 170 * i}" y="{top - 11}" font-size="11">KGE speedup {LABELS[k]}</text>'
              for i, k in enumerate(COLORS)]
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top}" '
           f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>'
           + "".join(body + legend) + "</svg>\n")
    args.out.write_text(svg)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
