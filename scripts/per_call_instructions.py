#!/usr/bin/env python3
"""Instructions per call from two callgrind runs of one loop (N1 and N2 calls).

    per_call_instructions.py RUN_N1 RUN_N2 N2_MINUS_N1 LABEL

A side's cost per call is the difference of the two runs' exclusive counts
over N2 - N1, so start-up and the end cancel. The work figure leaves out the
functions that only poll for what has not come (MPI's progress engine, our
transport's spin, wait and block, the mailbox's readiness poll, the clock,
sched_yield): how often a rank polls depends on who runs ahead, not on what
a call costs. Used by scripts/instructions.sh (threads) and
scripts/mpi/instructions.sh (processes).
"""
import re
import subprocess
import sys

# Polling only. Debian's Open MPI 4.1.4 has no symbols for vader's and
# opal's progress functions: named by address (vader 0x4d50, opal 0x2fcb0
# and 0x878b0, each found calling or called by opal_progress).
WAIT = ("opal_progress", "0x0000000000004d50", "0x000000000002fcb0", "0x00000000000878b0",
        "ompi_request_default_wait", "libnbc_progress", "NBC_Progress", "event_", "probe",
        "::spin", "::block", "Transport>::wait", "poll_ready", "mpi_in_use", "clock_gettime",
        "Instant", "Timespec", "sched_yield", "yield_now")


def counts(path):
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", "--auto=no", path],
                          capture_output=True, text=True, check=True).stdout
    c = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)$", line)
        if m and ":" in m.group(2):
            c[m.group(2)] = c.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
    return c


a, b, n = counts(sys.argv[1]), counts(sys.argv[2]), int(sys.argv[3])
total = work = 0.0
for fn in set(a) | set(b):
    d = (b.get(fn, 0) - a.get(fn, 0)) / n
    total += d
    if not any(w in fn for w in WAIT):
        work += d
print(f"  {sys.argv[4]}: {total:7.0f} in all, {work:7.0f} work")
