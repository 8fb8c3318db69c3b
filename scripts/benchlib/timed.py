"""Times one external command for the benchmark's rows (`scripts/bench` runs each row in a
process and reads its JSON line): the command's wall time, and the peak anonymous memory
(RssAnon) of the command itself, polled every 2 ms, where the benchmark would otherwise see
only this wrapper's.

  python -m benchlib.timed [--env KEY=VALUE]... [--bytes N] -- COMMAND...

Prints {"seconds", "bytes" (N: what the row counts its rate by), "tensors": 0,
"child_peak_anon"}; fails with the command's own error output when it fails.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--bytes", type=int, default=0)
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    env = dict(os.environ, **dict(kv.split("=", 1) for kv in args.env))
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    status = Path(f"/proc/{proc.pid}/status")
    peak = 0
    while proc.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("RssAnon:"):
                    peak = max(peak, int(line.split()[1]) * 1024)
        except OSError:
            pass
        time.sleep(0.002)
    seconds = time.perf_counter() - start
    err = proc.stderr.read()
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({proc.returncode}):\n{err[-2000:]}")
    print(json.dumps({"seconds": seconds, "bytes": args.bytes, "tensors": 0, "child_peak_anon": peak}))


if __name__ == "__main__":
    main()
