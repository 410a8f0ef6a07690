#!/usr/bin/env python3
"""Renders the JSON lines of scripts/reproduce.sh as the markdown tables of
docs/reproduction.md. Aggregates over trees by pooling runs: means are
weighted by runs; percentiles of the pooled runs are bounded by the per-tree
ones, so the pooled column shows the largest per-tree percentile (an upper
bound) and the per-tree rows give the detail."""
import json
import sys
from collections import defaultdict
from pathlib import Path

# Table 1 of the paper: fault rate % -> (g99, g999, gmax, L99, L999, Lmax).
PAPER = {
    0.01: (1, 2, 3, 10, 12, 14),
    0.1: (2, 3, 6, 12, 13, 16),
    1: (5, 7, 19, 16, 19, 32),
    2: (8, 11, 35, 19, 24, 56),
    4: (13, 20, 55, 26, 34, 86),
}


def load(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def fmt(x):
    return f"{x:g}"


def table1(rows):
    by_rate = defaultdict(list)
    for r in rows:
        by_rate[round(r["fault_rate"] * 100, 4)].append(r)
    out = [
        "| F (%) | runs | g_max p99 | p99.9 | max | L_SCC p99 | p99.9 | max | paper g_max p99 / p99.9 / max | paper L_SCC p99 / p99.9 / max |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rate in sorted(by_rate):
        rs = by_rate[rate]
        runs = sum(r["runs"] for r in rs)
        g = [max(r["max_gap"][k] for r in rs) for k in ("p99", "p999", "max")]
        l = [max(r["correction_ticks"][k] for r in rs) for k in ("p99", "p999", "max")]
        p = PAPER.get(rate, ("?",) * 6)
        out.append(
            f"| {fmt(rate)} | {runs} | {' | '.join(fmt(x) for x in g)} | {' | '.join(fmt(x) for x in l)} "
            f"| {p[0]} / {p[1]} / {p[2]} | {p[3]} / {p[4]} / {p[5]} |"
        )
    out += ["", "Per tree:", "",
            "| F (%) | tree | runs | g_max mean | p99 | p99.9 | max | L_SCC mean | p99 | p99.9 | max | violations |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for rate in sorted(by_rate):
        for r in by_rate[rate]:
            g, l = r["max_gap"], r["correction_ticks"]
            out.append(
                f"| {fmt(rate)} | {r['tree']} | {r['runs']} | {g['mean']:.2f} | {fmt(g['p99'])} | {fmt(g['p999'])} "
                f"| {fmt(g['max'])} | {l['mean']:.2f} | {fmt(l['p99'])} | {fmt(l['p999'])} | {fmt(l['max'])} | {r['violations']} |"
            )
    return "\n".join(out)


def opportunistic(rows):
    out = [
        "| F (%) | correction | tree | runs | incomplete runs | uncolored live ranks | correction msgs/process (mean) |",
        "|---|---|---|---|---|---|---|",
    ]
    totals = defaultdict(lambda: [0, 0, 0])
    for r in rows:
        rate = round(r["fault_rate"] * 100, 4)
        out.append(
            f"| {fmt(rate)} | {r['correction']} | {r['tree']} | {r['runs']} | {r['incomplete_runs']} "
            f"| {r['uncolored_live_total']} | {r['correction_messages_per_process']['mean']:.3f} |"
        )
        t = totals[(rate, r["correction"])]
        t[0] += r["runs"]
        t[1] += r["incomplete_runs"]
        t[2] += r["uncolored_live_total"]
    out += ["", "| F (%) | correction | runs (all trees) | incomplete runs | rate |", "|---|---|---|---|---|"]
    for (rate, corr), (runs, inc, _) in sorted(totals.items()):
        out.append(f"| {fmt(rate)} | {corr} | {runs} | {inc} | {inc / runs:.2e} |")
    return "\n".join(out)


def figure6(rows):
    cols = ["none", "checked-sync", "optimized:4", "opportunistic:4"]
    cells = defaultdict(dict)
    for r in rows:
        cells[(r["procs"], r["tree"])][r["correction"]] = r["messages_per_process"]["mean"]
    out = ["| P | tree | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    for (procs, tree) in sorted(cells):
        out.append(f"| {procs} | {tree} | " + " | ".join(f"{cells[(procs, tree)].get(c, float('nan')):.3f}" for c in cols) + " |")
    return "\n".join(out)


def main():
    d = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
    print("## Table 1\n\n" + table1(load(d / "table1.jsonl")))
    print("\n## Opportunistic correction (Section 4.3)\n\n" + opportunistic(load(d / "opportunistic.jsonl")))
    print("\n## Figure 6: messages per process, fault-free\n\n" + figure6(load(d / "figure6.jsonl")))


if __name__ == "__main__":
    main()
