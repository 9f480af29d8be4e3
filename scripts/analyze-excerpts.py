#!/usr/bin/env python3
"""Reads each log whole and as the excerpts people paste (the first or last half or quarter,
the middle half, every other line, a random 70% of the lines) and lists every excerpt whose
answer contradicts the whole log's: another transport where neither says `unknown` (`ib` for
`roce` is only coarser), or the other fallback answer where both decide. An excerpt may know less than the whole log, so a
listed case is for a person to judge (docs/analyze.md, "Excerpts"); what it must never do is
invent evidence, as `GDR 1` once did (an excerpt of a TCP-provider log read as EFA).

Usage: scripts/analyze-excerpts.py NETCHECK_BINARY LOG_OR_DIR...
"""

import json
import pathlib
import random
import subprocess
import sys
import tempfile


def answer(binary, text, scratch):
    scratch.write_bytes(text)
    run = subprocess.run([binary, "analyze", "--format", "json", str(scratch)], capture_output=True)
    try:
        a = json.loads(run.stdout)
        return a["inter_node_transport"], a["socket_fallback"], a["verdict"]
    except (ValueError, KeyError):
        return "error", run.returncode, run.stderr.decode(errors="replace")[:120]


def excerpts(lines, seed):
    n = len(lines)
    rng = random.Random(seed)
    return {
        "first half": lines[: n // 2],
        "last half": lines[n // 2 :],
        "middle half": lines[n // 4 : 3 * n // 4],
        "first quarter": lines[: n // 4],
        "last quarter": lines[3 * n // 4 :],
        "every other line": lines[::2],
        "random 70%": [line for line in lines if rng.random() < 0.7],
    }


def contradicts(whole, part):
    if part[0] == "error":
        return True
    # `ib` is what IB verbs read as until a port's link layer says RoCE: a coarser answer.
    coarser = {whole[0], part[0]} == {"ib", "roce"}
    transport = "unknown" not in (whole[0], part[0]) and whole[0] != part[0] and not coarser
    fallback = None not in (whole[1], part[1]) and whole[1] != part[1]
    return transport or fallback


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary = sys.argv[1]
    logs = []
    for arg in map(pathlib.Path, sys.argv[2:]):
        logs += sorted(arg.rglob("*.log")) if arg.is_dir() else [arg]
    listed = checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        scratch = pathlib.Path(tmp) / "excerpt.log"
        for log in logs:
            lines = log.read_bytes().splitlines(keepends=True)
            if len(lines) < 12:
                continue
            whole = answer(binary, b"".join(lines), scratch)
            for name, part in excerpts(lines, str(log.name)).items():
                checked += 1
                got = answer(binary, b"".join(part), scratch)
                if contradicts(whole, got):
                    listed += 1
                    print(f"{log}: {name}: whole {whole} -> excerpt {got}", flush=True)
    print(f"{listed} of {checked} excerpts of {len(logs)} logs contradict their whole log")


if __name__ == "__main__":
    main()
