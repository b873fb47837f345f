"""Memory of a long-running ``grounded view``: 2,000 page renders of 46 distinct (chunk, page) pairs
(issue #34.11).

Run: ``python benchmarks/viewer_memory.py [--out OUT] [--renders 2000] [--pairs 46] [--clients 4]
[--cache-mb N] [--label TEXT]``

Starts ``grounded view OUT --port 0`` in a subprocess (the MiniLM query model is loaded: the first
request is a hybrid search), then requests ``/api/page.png`` for the pairs round robin from
``--clients`` threads, and prints one Markdown table row: the server's RSS (``VmRSS``) when ready,
after the first pass over the pairs, after 500, 1000 and all renders, its peak (``VmHWM``), the
time and the machine load. ``--cache-mb 0`` turns the render cache off (every request renders).
Without ``--out``, OUT is built once (``grounded ingest`` of the three shared long PDFs with
``--embed minilm --sink lancedb``) in ``$TMPDIR/grounded-viewer-memory`` and reused.
To measure another checkout, put its package first: ``PYTHONPATH=DIR`` where ``DIR/grounded`` is
that checkout's ``core`` folder.
"""

from __future__ import annotations

import argparse
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
LONG = REPO.parent / "shared" / "data" / "long"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def build(out: Path) -> Path:
    from grounded.ingest import ingest

    if not (out / "lancedb").is_dir():
        pdfs = sorted(str(p) for p in LONG.glob("*.pdf"))
        report = ingest(pdfs, out, embed="minilm", sink="lancedb", workers=1, progress=False)
        if not report.ok:
            raise SystemExit(report.summary())
    return out


def pairs(out: Path, n: int) -> list[tuple[str, int]]:
    """``n`` (chunk id, page) pairs spread evenly over every (chunk, page) of the table."""
    import lancedb

    rows = lancedb.connect(str(out / "lancedb")).open_table("chunks").to_arrow().select(["chunk_id", "pages", "source_path"])
    every = sorted((src, page, cid) for cid, pages, src in zip(*(rows.column(c).to_pylist() for c in ("chunk_id", "pages", "source_path")))
                   for page in pages)
    if len(every) < n:
        raise SystemExit(f"{out} has only {len(every)} (chunk, page) pairs, {n} asked")
    step = len(every) / n
    return [(every[int(i * step)][2], every[int(i * step)][1]) for i in range(n)]


def status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of ``pid`` in MB."""
    values = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    return values


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=300) as response:
        return bytes(response.read())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="an ingest output (default: built once from the shared long PDFs)")
    ap.add_argument("--renders", type=int, default=2000)
    ap.add_argument("--pairs", type=int, default=46)
    ap.add_argument("--clients", type=int, default=4, help="concurrent client threads (a browser uses up to 6)")
    ap.add_argument("--cache-mb", type=float, default=None, help="render cache of the server (default: its default)")
    ap.add_argument("--label", default="this checkout")
    args = ap.parse_args()

    out = args.out or build(Path(tempfile.gettempdir()) / "grounded-viewer-memory" / "out")
    chosen = pairs(out, args.pairs)
    command = [sys.executable, "-m", "grounded.cli", "view", str(out), "--port", "0"]
    if args.cache_mb is not None:
        command += ["--cache-mb", str(args.cache_mb)]
    proc = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 300)
        line = proc.stdout.readline() if ready else ""
        if " at " not in line:
            raise SystemExit(f"grounded view did not start: {line!r}")
        base = line.split(" at ", 1)[1].split()[0].rstrip("/")
        get(f"{base}/api/search?q={quote('results of the study')}&k=5&mode=hybrid")  # the query model is loaded
        rss = {"ready": status(proc.pid)["VmRSS"]}
        urls = [f"{base}/api/page.png?id={quote(cid, safe='')}&page={page}" for cid, page in chosen]
        marks = {len(urls): "first pass", 500: "500", 1000: "1000", args.renders: f"{args.renders}"}
        done = 0
        lock = threading.Lock()
        errors: list[str] = []

        def client(k: int) -> None:
            nonlocal done
            for i in range(k, args.renders, args.clients):
                try:
                    get(urls[i % len(urls)])
                except OSError as exc:
                    errors.append(str(exc))
                with lock:
                    done += 1

        started = time.perf_counter()
        threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            with lock:
                now = done
            for mark, name in marks.items():
                if now >= mark and name not in rss:
                    rss[name] = status(proc.pid)["VmRSS"]
            time.sleep(0.01)
        elapsed = time.perf_counter() - started
        final = status(proc.pid)
        for name in marks.values():
            rss.setdefault(name, final["VmRSS"])
        load = os.getloadavg()[0]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    cache = "default" if args.cache_mb is None else f"{args.cache_mb:g} MB"
    print("| checkout | render cache | RSS ready | after first pass | after 500 | after 1000 | "
          f"after {args.renders} | peak | time | errors | load (1 min) |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    print(f"| {args.label} | {cache} | {rss['ready']:.0f} MB | {rss['first pass']:.0f} MB | {rss['500']:.0f} MB | "
          f"{rss['1000']:.0f} MB | {rss[str(args.renders)]:.0f} MB | {final['VmHWM']:.0f} MB | {elapsed:.1f} s | "
          f"{len(errors)} | {load:.2f} |")


if __name__ == "__main__":
    main()
