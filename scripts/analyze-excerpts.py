#!/usr/bin/env python3
"""Reads each log whole and as the excerpts people paste (the first or last half or quarter,
the middle half, every other line, a random 70% of the lines, `grep NET/`, `grep -E "via
|Using network"`) and, with `--strings DIR`, as NCCL would have printed it under common
`NCCL_DEBUG_SUBSYS` settings, and lists every excerpt whose answer contradicts the whole log's: another transport where neither says `unknown` (`ib` for
`roce` is only coarser), or the other fallback answer where both decide. An excerpt may know less than the whole log, so a
listed case is for a person to judge (docs/analyze.md, "Excerpts"); what it must never do is
invent evidence, as `GDR 1` once did (an excerpt of a TCP-provider log read as EFA).

Usage: scripts/analyze-excerpts.py [--strings DIR] NETCHECK_BINARY LOG_OR_DIR...

`--strings DIR`: a folder with the NCCL and aws-ofi-nccl log-string reference (`nccl.md`,
`aws-ofi-nccl.md`: tables of format strings with their logging macro and subsystem flags,
`INFO [INIT|NET]`). Each `NCCL INFO` message is matched against those format strings; an
excerpt `NCCL_DEBUG_SUBSYS=S` keeps the lines NCCL prints under S: WARN lines and lines that
are no INFO record always, INFO records whose flags meet S (or `ALL`), and messages that match
no format string (kept: the filter never invents a gap).
"""

import json
import pathlib
import random
import re
import subprocess
import sys
import tempfile

# The `NCCL_DEBUG_SUBSYS` settings people use (NCCL's docs and troubleshooting guides).
SUBSYS = ["NET", "INIT", "INIT,NET", "NET,ENV", "INIT,ENV", "INIT,GRAPH,ENV", "ENV", "GRAPH"]


def answer(binary, text, scratch):
    scratch.write_bytes(text)
    run = subprocess.run([binary, "analyze", "--format", "json", str(scratch)], capture_output=True)
    try:
        a = json.loads(run.stdout)
        return a["inter_node_transport"], a["socket_fallback"], a["verdict"]
    except (ValueError, KeyError):
        return "error", run.returncode, run.stderr.decode(errors="replace")[:120]


def format_regex(fmt):
    """A printf format string as a regex over the message it prints."""
    fmt = fmt.replace('\\"', '"').replace("\\n", "").replace("\\t", "\t")
    conv = re.compile(r"%[-+ #0]*(\d+|\*)?(\.\d+|\.\*)?(hh|h|ll|l|z|j|t|L)?([diouxXeEfgGcsp%])")
    pattern, pos = "", 0
    for m in conv.finditer(fmt):
        pattern += re.escape(fmt[pos : m.start()])
        pattern += {
            "%": "%",
            "d": r"\s*-?\d+",
            "i": r"\s*-?\d+",
            "p": r"(0x[0-9a-fA-F]+|\(nil\))",
            "c": ".",
            "s": ".*?",
        }.get(m.group(4), r"\s*[-+0-9a-fA-FxX.naif]+")
        pos = m.end()
    return re.compile(pattern + re.escape(fmt[pos:]) + r"\s*$")


def load_strings(folder):
    """(regex, flags) of every INFO format string in the reference's tables."""
    row = re.compile(r"^\| \S+ \| `(.*)` \| (?:OFI_)?INFO \[([^\]]*)\]")
    found = []
    for name in ("nccl.md", "aws-ofi-nccl.md"):
        for line in (pathlib.Path(folder) / name).read_text(encoding="utf-8").splitlines():
            m = row.match(line)
            # A bare `%s` (a line built elsewhere) matches everything: no flags from it.
            if m and m.group(1).strip() not in ("%s", "%s\\n"):
                flags = re.split(r"\\?\||/", m.group(2))
                found.append((format_regex(m.group(1)), {f.strip() for f in flags}))
    return found


class Subsystems:
    """Which NCCL_DEBUG_SUBSYS flags each INFO message was printed under."""

    def __init__(self, folder):
        self.strings = load_strings(folder)
        self.cache = {}

    def flags(self, msg):
        if msg not in self.cache:
            flags = set()
            for candidates in (msg, msg[8:] if msg.startswith("NET/OFI ") else None):
                if candidates is not None and not flags:
                    flags = set().union(*(f for r, f in self.strings if r.match(candidates)))
            # Printed through `%s` or a macro the tables list without flags.
            if not flags and msg.startswith("NCCL version"):
                flags = {"ALL"}
            elif not flags and " set by environment to " in msg:
                flags = {"ENV"}
            elif not flags and re.match(r"(Channel|Ring) \d+(/\d+)? :( +\d+)+$", msg):
                flags = {"INIT"}
            self.cache[msg] = flags
        return self.cache[msg]

    def keeps(self, line, subsys):
        text = line.decode("utf-8", "replace")
        at = text.find("NCCL INFO ")
        if at < 0:
            return True
        flags = self.flags(text[at + 10 :].rstrip())
        return not flags or "ALL" in flags or bool(flags & subsys)


def excerpts(lines, seed, subsystems):
    n = len(lines)
    rng = random.Random(seed)
    parts = {
        "first half": lines[: n // 2],
        "last half": lines[n // 2 :],
        "middle half": lines[n // 4 : 3 * n // 4],
        "first quarter": lines[: n // 4],
        "last quarter": lines[3 * n // 4 :],
        "every other line": lines[::2],
        "random 70%": [line for line in lines if rng.random() < 0.7],
        "grep NET/": [line for line in lines if b"NET/" in line],
        "grep via|Using network": [line for line in lines if re.search(rb"via|Using network", line)],
    }
    for setting in SUBSYS if subsystems else []:
        wanted = set(setting.split(","))
        kept = [line for line in lines if subsystems.keeps(line, wanted)]
        parts[f"NCCL_DEBUG_SUBSYS={setting}"] = kept
    # An excerpt the same as the log, or empty, says nothing new.
    return {name: part for name, part in parts.items() if part and len(part) < n}


def contradicts(whole, part):
    if part[0] == "error":
        return True
    # `ib` is what IB verbs read as until a port's link layer says RoCE: a coarser answer.
    coarser = {whole[0], part[0]} == {"ib", "roce"}
    transport = "unknown" not in (whole[0], part[0]) and whole[0] != part[0] and not coarser
    fallback = None not in (whole[1], part[1]) and whole[1] != part[1]
    return transport or fallback


def main():
    args = sys.argv[1:]
    subsystems = None
    if args[:1] == ["--strings"] and len(args) > 1:
        subsystems = Subsystems(args[1])
        args = args[2:]
    if len(args) < 2:
        sys.exit(__doc__)
    binary = args[0]
    logs = []
    for arg in map(pathlib.Path, args[1:]):
        logs += sorted(arg.rglob("*.log")) if arg.is_dir() else [arg]
    listed = checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        scratch = pathlib.Path(tmp) / "excerpt.log"
        for log in logs:
            lines = log.read_bytes().splitlines(keepends=True)
            if len(lines) < 12:
                continue
            whole = answer(binary, b"".join(lines), scratch)
            for name, part in excerpts(lines, str(log.name), subsystems).items():
                checked += 1
                got = answer(binary, b"".join(part), scratch)
                if contradicts(whole, got):
                    listed += 1
                    print(f"{log}: {name}: whole {whole} -> excerpt {got}", flush=True)
    print(f"{listed} of {checked} excerpts of {len(logs)} logs contradict their whole log")


if __name__ == "__main__":
    main()
