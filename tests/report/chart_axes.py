#!/usr/bin/env python3
"""Checks the axes of every chart in a report page, for test_report.sh.

chart_axes.py FILE: each <svg> must title both its axes (<text class="axis-title x"> and
"axis-title y"), and each axis's tick labels (<text class="tick x"> or "tick y": 600k, 0.005,
1.5M) must be round: evenly spaced by 1, 2 or 5 times a power of ten, each a multiple of that
step (0, 200k, 400k; never 158, 317, 475). Prints one line per fault; exits 1 if any."""
import math
import re
import sys

SUFFIX = {"": 1, "k": 1e3, "M": 1e6}


def value(label):
    m = re.fullmatch(r"(-?[0-9.]+)([kM]?)", label.replace(",", ""))
    return float(m.group(1)) * SUFFIX[m.group(2)] if m else None


def round_ticks(values):
    """Why the ticks are not round, or None when they are."""
    if len(values) < 2:
        return f"{len(values)} tick(s): too few to read the scale"
    values = sorted(values)
    step = values[1] - values[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    if not any(math.isclose(mantissa, m, rel_tol=1e-6) for m in (1, 2, 5, 10)):
        return f"step {step:g} is not 1, 2 or 5 times a power of ten"
    for v in values:
        if not math.isclose(v / step, round(v / step), abs_tol=1e-6):
            return f"{v:g} is not a multiple of the step {step:g}"
    for a, b in zip(values, values[1:]):
        if not math.isclose(b - a, step, rel_tol=1e-6):
            return f"uneven ticks {a:g}, {b:g} (step {step:g})"
    return None


def main():
    page = open(sys.argv[1], encoding="utf-8").read()
    faults = []
    for n, svg in enumerate(re.findall(r"<svg .*?</svg>", page, re.S), 1):
        name = re.search(r'aria-label="([^"]*)"', svg).group(1)
        for axis in "xy":
            if f'class="axis-title {axis}"' not in svg:
                faults.append(f"chart {n} ({name}): no {axis} axis title")
            labels = re.findall(rf'<text class="tick {axis}"[^>]*>([^<]*)</text>', svg)
            if not labels:
                continue            # a category axis (the estimators' names): no scale
            values = [value(t) for t in labels]
            if None in values:
                faults.append(f"chart {n} ({name}): {axis} tick labels {labels} not numbers")
                continue
            why = round_ticks(values)
            if why:
                faults.append(f"chart {n} ({name}): {axis} ticks {labels}: {why}")
    for fault in faults:
        print(fault)
    sys.exit(1 if faults else 0)


main()
