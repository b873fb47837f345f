"""``grounded view`` under a burst of clients (issue #34.16): N clients connect at once over loopback.

Run: ``python benchmarks/viewer_load.py [--out OUT] [-n 200] [--rounds 3] [--silent 0] [--label TEXT]``

Starts ``grounded view OUT --port 0`` in a subprocess; each round, ``-n`` threads released together
each open a connection and GET one of ``/``, ``/static/app.js``, ``/static/app.css``, ``/api/info``
(round robin); ``--silent S`` first opens S connections that never send a byte (half-open
clients). Prints one Markdown table row per round: requests, errors (resets, timeouts, non-200),
p50 / p99 / max latency, and the machine load. OUT defaults to the one
``benchmarks/viewer_memory.py`` builds. ``PYTHONPATH=DIR`` (``DIR/grounded`` = another checkout's
``core``) measures another checkout.
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from viewer_memory import ENV, build  # noqa: E402 - the benchmark's sibling

TARGETS = ["/", "/static/app.js", "/static/app.css", "/api/info"]


def burst(port: int, n: int) -> tuple[list[float], list[str]]:
    barrier = threading.Barrier(n)
    latencies: list[float] = []
    errors: list[str] = []

    def client(i: int) -> None:
        barrier.wait()
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.request("GET", TARGETS[i % len(TARGETS)])
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                latencies.append(time.monotonic() - started)
            else:
                errors.append(str(response.status))
        except OSError as exc:
            errors.append(type(exc).__name__)
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(latencies), errors


def quantile(values: list[float], q: float) -> float:
    return values[int(q * (len(values) - 1))] if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path)
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--silent", type=int, default=0, help="connections opened first that never send a byte")
    ap.add_argument("--label", default="this checkout")
    args = ap.parse_args()
    out = args.out or build(Path(tempfile.gettempdir()) / "grounded-viewer-memory" / "out")
    proc = subprocess.Popen([sys.executable, "-m", "grounded.cli", "view", str(out), "--port", "0"], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    silent: list[socket.socket] = []
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        port = int(line.split(" at ", 1)[1].split()[0].rstrip("/").rsplit(":", 1)[1])
        for target in TARGETS:  # warm
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request("GET", target)
            conn.getresponse().read()
            conn.close()
        silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(args.silent)]
        print("| checkout | silent connections | requests | errors | p50 | p99 | max | load (1 min) |")
        print("|---|--:|--:|--:|--:|--:|--:|--:|")
        for _ in range(args.rounds):
            latencies, errors = burst(port, args.n)
            kinds = ", ".join(f"{errors.count(e)} {e}" for e in sorted(set(errors))) or "0"
            print(f"| {args.label} | {args.silent} | {args.n} | {kinds} | {quantile(latencies, 0.5):.3f} s | "
                  f"{quantile(latencies, 0.99):.3f} s | {quantile(latencies, 1.0):.3f} s | {os.getloadavg()[0]:.2f} |",
                  flush=True)
    finally:
        for sock in silent:
            sock.close()
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
