#!/usr/bin/env python3
"""Reads each log bare and as launchers and log shippers pass it on, every line wrapped the same
way, and lists every wrapped copy whose answer (transport, fallback, verdict, ranks, nodes)
differs from the bare log's. A wrapper adds nothing NCCL said, so any difference is a fault.

Forms: `kubectl logs --timestamps`, `--prefix`, both; `srun --label` (`0: `); `mpirun
--tag-output` (`[1,0]<stdout>:`), with `--timestamp-output` too; SageMaker's MPI tag (`[1,mpirank:0,algo-1]<stdout>:`);
torchrun's `[default0]:`; Ray's `(RayTrainWorker pid=…, ip=…) `; pdsh's `host: `; journald's
`Mon DD HH:MM:SS host prog[pid]: `; ISO syslog; stern's `pod container `; a tab after an
ISO timestamp (CloudWatch exports); Loki's `ts<TAB>{labels}<TAB>`; Cloud Logging's JSON
(`textPayload`); `docker compose logs` (`worker-0  | `); a launcher relaying each line through
Python's logging (`2026-12-07 10:00:00,123 - INFO - `). Launcher tags number processes in order of their first line, as a launcher
numbers the ranks it starts (one tag per `host:pid`).

Usage: scripts/analyze-wrappers.py NETCHECK_BINARY LOG_OR_DIR... [--form NAME]...
"""

import json
import pathlib
import re
import subprocess
import sys
import tempfile

PREFIX = re.compile(rb"^([^ :\[]+):(\d+):\d+ \[")

FORMS = {
    "kubectl-timestamps": lambda host, i: b"2026-12-07T10:00:00.123456789Z ",
    "kubectl-prefix": lambda host, i: b"[pod/w-" + host + b"/main] ",
    "kubectl-prefix-timestamps": lambda host, i: b"[pod/w-" + host + b"/main] 2026-12-07T10:00:00.123456789Z ",
    "srun-label": lambda host, i: b"%d: " % i,
    "mpirun-tag-output": lambda host, i: b"[1,%d]<stdout>:" % i,
    "mpirun-timestamp-output": lambda host, i: b"Mon Dec  7 10:00:00 2026[1,%d]<stdout>:" % i,
    "sagemaker-mpi": lambda host, i: b"[1,mpirank:%d,algo-1]<stdout>:" % i,
    "torchrun": lambda host, i: b"[default%d]:" % i,
    "ray": lambda host, i: b"(RayTrainWorker pid=%d, ip=10.0.0.2) " % (1000 + i),
    "pdsh": lambda host, i: host + b": ",
    "journald": lambda host, i: b"Dec 07 10:00:00 " + host + b" python[%d]: " % (1000 + i),
    "syslog-iso": lambda host, i: b"2026-12-07T10:00:00.000000+00:00 " + host + b" python[%d]: " % (1000 + i),
    "stern": lambda host, i: b"w-" + host + b" main ",
    "tab-timestamp": lambda host, i: b"2026-12-07T10:00:00.000Z\t",
    "loki": lambda host, i: b'2026-12-07 10:00:00.000\t{pod="w-0"}\t',
    "docker-compose": lambda host, i: b"worker-%d  | " % i,
    "python-logging-relay": lambda host, i: b"2026-12-07 10:00:00,123 - INFO - ",
}


def answer(binary, data, scratch):
    scratch.write_bytes(data)
    run = subprocess.run([binary, "analyze", "--format", "json", str(scratch)], capture_output=True)
    try:
        a = json.loads(run.stdout)
        return (a["inter_node_transport"], a["socket_fallback"], a["verdict"], a["ranks"], a["nodes"])
    except (ValueError, KeyError):
        return ("error", run.returncode, run.stderr.decode(errors="replace")[:120])


def wrapped(lines, form):
    if form == "cloud-logging-json":
        return b"\n".join(
            json.dumps({"textPayload": line.decode("utf-8", "replace"), "resource": {"type": "k8s_container"}}).encode()
            for line in lines
            if line
        )
    order = {}
    out = []
    for line in lines:
        if not line:
            out.append(line)
            continue
        m = PREFIX.match(line)
        key = m.groups() if m else None
        if key is not None and key not in order:
            order[key] = len(order)
        out.append(FORMS[form](m.group(1) if m else b"node-a", order.get(key, 0)) + line)
    return b"\n".join(out)


def main():
    args = sys.argv[1:]
    forms = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--form"]
    args = [a for i, a in enumerate(args) if a != "--form" and (i == 0 or args[i - 1] != "--form")]
    if len(args) < 2:
        sys.exit(__doc__)
    forms = forms or [*FORMS, "cloud-logging-json"]
    binary = args[0]
    logs = []
    for arg in map(pathlib.Path, args[1:]):
        logs += sorted(arg.rglob("*.log")) if arg.is_dir() else [arg]
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        scratch = pathlib.Path(tmp) / "wrapped.log"
        for log in logs:
            raw = log.read_bytes()
            bare = answer(binary, raw, scratch)
            for form in forms:
                got = answer(binary, wrapped(raw.split(b"\n"), form), scratch)
                if got != bare:
                    differ += 1
                    print(f"{log}: {form}: bare {bare} -> wrapped {got}", flush=True)
    print(f"{differ} of {len(logs) * len(forms)} wrapped copies of {len(logs)} logs differ from the bare log")


if __name__ == "__main__":
    main()
