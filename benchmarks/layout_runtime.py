"""The layout pass under each layout runtime configuration (issue #41): CPU, wall and its output.

Each configuration runs in its own process (the ONNX sessions are configured when the model loads)
over the given PDFs; the script prints CPU and wall seconds of the layout pass (``_layout_pages``,
model load excluded), the prefetch hits/misses, and a digest of every page's layout boxes (class,
box, table cells), so that configurations that must not change the output are shown to agree::

    python benchmarks/layout_runtime.py ../shared/data/long/*.pdf
    python benchmarks/layout_runtime.py --configs stock arena ../shared/data/long/*.pdf

Configurations: ``stock`` (as pymupdf-layout creates its sessions, arena off, no spinning as
grounded loads it), ``arena`` (memory arena for the image-feature net), ``prefetch`` (the
image-feature net of the next page on a second thread), ``arena+prefetch`` (grounded's default).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

CONFIGS = {
    "stock": (False, False, None),
    "arena": (True, False, None),
    "prefetch": (False, True, None),
    "arena+prefetch": (True, True, None),
    "arena+prefetch-1t": (True, True, 1),  # the prefetched image net on one ORT thread
}


def _digest(layouts: list) -> str:
    h = hashlib.sha256()
    for lay in layouts:
        for b in lay.boxes:
            h.update(json.dumps([b.boxclass, b.x0, b.y0, b.x1, b.y1, b.table], default=str).encode())
    return h.hexdigest()[:16]


def child(config: str, pdfs: list[str], threads: int | None) -> dict:
    from grounded.parsers.backends.pymupdf import layout as L
    from grounded.parsers.backends.pymupdf import layout_runtime as R

    R.IMF_ARENA, R.IMF_PREFETCH, R.IMF_PREFETCH_THREADS = CONFIGS[config]
    L._load_layout(threads)
    import pymupdf

    out: dict = {"config": config, "setting": R.runtime_setting(), "pdfs": {}}
    cpu = wall = 0.0
    pages = 0
    for p in pdfs:
        n = pymupdf.open(p).page_count
        c0, w0 = time.process_time(), time.perf_counter()
        layouts = L._layout_pages(p, list(range(n)))
        cpu += time.process_time() - c0
        wall += time.perf_counter() - w0
        pages += n
        out["pdfs"][Path(p).name] = _digest(layouts)
    out.update(cpu=round(cpu, 2), wall=round(wall, 2), pages=pages)
    if R.prefetcher is not None:
        out.update(hits=R.prefetcher.hits, misses=R.prefetcher.misses)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pdfs", nargs="+")
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--threads", type=int, default=None, help="ORT intra-op threads (default: ORT's)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.pdfs, args.threads)))
        return 0
    results = []
    for r in range(args.rounds):
        for config in args.configs:
            cmd = [sys.executable, __file__, "--child", config, *args.pdfs]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            line = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
            res = json.loads(line)
            results.append(res)
            extra = f" prefetch hits {res['hits']} misses {res['misses']}" if "hits" in res else ""
            print(f"round {r + 1} {config:15s} pages {res['pages']} CPU {res['cpu']:6.2f} s wall {res['wall']:6.2f} s"
                  f"{extra}  [{res['setting']}]", flush=True)
    digests = {json.dumps(r["pdfs"], sort_keys=True) for r in results}
    print("layout boxes identical across configurations:", len(digests) == 1)
    if len(digests) > 1:
        for r in results:
            print(r["config"], r["pdfs"])
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
