#!/usr/bin/env python3
"""Markdown tables of the Corrected Gossip paper's Figure 1, the table of
Figure 7 and Figures 7a/7b from the results files that
scripts/reproduce-gossip-fig7.sh writes (Hoefler et al., IPDPS 2017).

    python3 scripts/gossip_tables.py [FIG1 TABLE SCALING]
"""
import json
import os
import sys

args = sys.argv[1:] or [
    "results/gossip-fig1.jsonl",
    "results/gossip-fig7-table.jsonl",
    "results/gossip-fig7-scaling.jsonl",
]
fig1_path, table_path, scaling_path = args


def rows(path):
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.strip()]


def name(r):
    """GOS, OCG, CCG, FCG, BIG or opt."""
    if r["algorithm"] == "big":
        return "BIG"
    if r["algorithm"] == "opt":
        return "opt"
    c = r["correction"].split(":")[0]
    return {"none": "GOS", "ocg": "OCG", "ccg": "CCG", "fcg": "FCG"}.get(c, c.upper())


def pct(a, b):
    """a against b: "41 % fewer/lower" or "8 % more/higher"."""
    if not b:
        return "-"
    d = 100 * (1 - a / b)
    return f"{d:.0f} % below" if d >= 0 else f"{-d:.0f} % above"


fig1 = rows(fig1_path)
if fig1:
    print("### Figure 1: expected g-nodes and the 99 %-probable longest uncolored chain")
    print()
    print(f"N = n = 1024, L = O = 1, {fig1[0]['runs']} runs of GOS (T = 40).")
    print()
    print("| t | Lemma 1 c(t) | simulated mean | Eq. 2 K (99 %) at c(t) | simulated longest chain, p99 |")
    print("| --- | --- | --- | --- | --- |")
    for r in fig1:
        print(f"| {r['t']} | {r['lemma1']:.1f} | {r['colored_mean']:.1f} | {r['eq2_k99']} | {r['longest_gap_p99']:.0f} |")
    print()

table = rows(table_path)
if table:
    n = table[0]["procs"]
    print(f"### The table of Figure 7: N = {n}, L = 2, O = 1")
    print()
    print(f"{table[0]['runs']} runs per simulated row. latency: the last live node has the value (mean);")
    print("completion: the last message handled (mean); work: messages in all (mean);")
    print("inconsistency: expected share of live nodes not reached; misses: runs that left one.")
    print()
    print("| f | algorithm | T | latency | completion | work | inconsistency | misses |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    by = {}
    for r in table:
        f = r["f"]
        a = name(r)
        by[(f, a)] = r
        work = r["messages_per_process"]["mean"] * r["procs"]
        t = r["gossip_time"] if r["gossip_time"] is not None else "-"
        print(f"| {f} | {a} (simulated) | {t} | {r['latency_ticks']['mean']:.2f} | {r['quiescence_ticks']['mean']:.2f} "
              f"| {work:.0f} | {1 - r['consistency']['mean']:.2e} | {r['incomplete_runs']} |")
        if a == "BIG":
            print(f"| {f} | BIG (analytic) | - | {r['estimated_latency_ticks']} | {r['estimated_latency_ticks']} "
                  f"| {r['estimated_messages_per_process'] * r['procs']:.0f} | 0 | - |")
            bfb = r["bfb_latency_ticks"] if f == 0 else r["bfb_expected_latency_ticks"]
            print(f"| {f} | BFB (analytic) | - | {bfb:.1f} | {bfb:.1f} "
                  f"| {r['bfb_messages_per_process'] * r['procs']:.0f} | 0 | - |")
    print()
    print("The paper's claims (its table is unreadable in our copy) against ours, f = 0 and f = 3:")
    print()
    print("| claim (paper) | ours, f = 0 (latency / completion) | ours, f = 3 (latency / completion) |")
    print("| --- | --- | --- |")

    def claim(text, fn):
        cells = []
        for f in (0, 3):
            try:
                cells.append(fn(f))
            except KeyError as e:
                cells.append(f"{e.args[0][1]} not run")
        print(f"| {text} | {cells[0]} | {cells[1]} |")

    def lat(f, a):
        return by[(f, a)]["latency_ticks"]["mean"]

    def done(f, a):
        return by[(f, a)]["quiescence_ticks"]["mean"]

    def work(f, a):
        return by[(f, a)]["messages_per_process"]["mean"]

    claim("OCG: 99.999 % consistency", lambda f: f"{100 * by[(f, 'OCG')]['consistency']['mean']:.5f} %")
    claim("OCG: 60 % fewer messages than GOS", lambda f: pct(work(f, "OCG"), work(f, "GOS")))
    claim("OCG: 20 % lower latency than GOS",
          lambda f: f"{pct(lat(f, 'OCG'), lat(f, 'GOS'))} / {pct(done(f, 'OCG'), done(f, 'GOS'))}")
    claim("FCG: over 50 % less work than BIG", lambda f: pct(work(f, "FCG"), work(f, "BIG")))
    claim("FCG: 15 % lower latency than BIG (analytic)",
          lambda f: f"{pct(lat(f, 'FCG'), by[(f, 'BIG')]['estimated_latency_ticks'])} / {pct(done(f, 'FCG'), by[(f, 'BIG')]['estimated_latency_ticks'])}")
    claim("FCG: latency nearly 3 times below BFB's",
          lambda f: f"{(by[(f, 'BIG')]['bfb_latency_ticks'] if f == 0 else by[(f, 'BIG')]['bfb_expected_latency_ticks']) / lat(f, 'FCG'):.2f}x")
    claim("(not a claim) CCG against BIG (analytic): work, latency",
          lambda f: f"{pct(work(f, 'CCG'), work(f, 'BIG'))}, {pct(lat(f, 'CCG'), by[(f, 'BIG')]['estimated_latency_ticks'])} / {pct(done(f, 'CCG'), by[(f, 'BIG')]['estimated_latency_ticks'])}")
    print()

scaling = rows(scaling_path)
for fig, title in (("7a", "fault-free"), ("7b", "N/64 nodes dead")):
    sel = [r for r in scaling if r["figure"] == fig]
    if not sel:
        continue
    algos = [a for a in ("OCG", "CCG", "FCG", "BIG") if any(name(r) == a for r in sel)]
    has_opt = any(name(r) == "opt" for r in sel)
    print(f"### Figure {fig}: median latency, {title}, L = 2, O = 1")
    print()
    print("Simulated medians of the last live node's delivery (completion in brackets);")
    print("BIG and BFB analytic (BFB in 7b: best case, and in brackets with 20 % of the")
    print("failures during the operation, each a restart); opt: the optimal tree without correction.")
    print()
    head = ["N", "runs"] + algos + ["BIG (analytic)", "BFB (analytic)"] + (["opt"] if has_opt else [])
    if fig == "7b":
        head += ["dead", "OCG / BIG runs with a miss"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for n in sorted({r["procs"] for r in sel}):
        at = {name(r): r for r in sel if r["procs"] == n}
        cells = [str(n), str(at.get("OCG", at.get("BIG", {})).get("runs", "-"))]
        for a in algos:
            r = at.get(a)
            cells.append(f"{r['latency_ticks']['p50']:.0f} ({r['quiescence_ticks']['p50']:.0f})" if r else "-")
        big = at.get("BIG")
        cells.append(str(big["estimated_latency_ticks"]) if big else "-")
        if big:
            cells.append(str(big["bfb_latency_ticks"]) if fig == "7a"
                         else f"{big['bfb_latency_ticks']} ({big['bfb_expected_latency_ticks']:.0f})")
        else:
            cells.append("-")
        if has_opt:
            o = at.get("opt")
            cells.append(f"{o['latency_ticks']['p50']:.0f}" if o else "-")
        if fig == "7b":
            cells.append(str(n // 64))
            cells.append(" / ".join(str(at[a]["incomplete_runs"]) if a in at else "-" for a in ("OCG", "BIG")))
        print("| " + " | ".join(cells) + " |")
    print()
