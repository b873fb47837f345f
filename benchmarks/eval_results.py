"""Regenerate the evaluation result tables in ``docs/results/`` (one command).

Run from the repository root::

    python benchmarks/eval_results.py            # DLA, content, Chroma reproduction (~10 min cold)
    python benchmarks/eval_results.py --grid     # + this library's strategies on Chroma's data (long)

Each step is the ``grounded eval ...`` command printed before it runs, writing
``docs/results/<name>.md|json|png``. Parses and MiniLM embeddings are cached under
``$GROUNDED_CACHE_DIR`` (default ``~/.cache/grounded``), so a re-run only recomputes what changed.
Data: ``--data DIR`` or ``$GROUNDED_EVAL_DATA``, else ``../shared/data`` beside the repository (this
script's default; ``grounded eval`` itself has none). Not part of CI.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "results"
SHARED_DATA = REPO.parent / "shared" / "data"

STEPS = [
    ("dla", ["eval", "dla", "--dataset", "icdar", "docling"]),
    ("content", ["eval", "content", "--dataset", "docling", "icdar"]),
    ("chunking_reproduction", ["eval", "chunking", "--suite", "reproduce", "--n", "min,5,10"]),
]
GRID_STEP = ("chunking_grid", ["eval", "chunking", "--suite", "grid", "--sizes", "128,256,512,1024",
                               "--overlaps", "0,0.2", "--percentiles", "0.7,0.9", "--n", "min,5,10"])


def main(argv: list[str] | None = None) -> int:
    from grounded import __version__
    from grounded.cli.main import main as grounded_main
    from grounded.serialization import atomic_write_text

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None,
                    help="evaluation data folder (default: $GROUNDED_EVAL_DATA, else ../shared/data)")
    ap.add_argument("--out", type=Path, default=OUT, help=f"output folder (default: {OUT.relative_to(REPO)})")
    ap.add_argument("--grid", action="store_true", help="also run the full strategy grid (see eval_chunking.py)")
    ap.add_argument("--only", nargs="+", default=None, help="run only these steps (dla content chunking_reproduction "
                                                              "chunking_grid)")
    args = ap.parse_args(argv)
    steps = STEPS + ([GRID_STEP] if args.grid or (args.only and "chunking_grid" in args.only) else [])
    if args.only:
        steps = [s for s in steps if s[0] in args.only]
    data = args.data or (None if os.environ.get("GROUNDED_EVAL_DATA") else SHARED_DATA)
    extra = ["--data", str(data)] if data else []
    timings = {}
    for name, cmd in steps:
        full = [*cmd, *extra, "--out", str(args.out), "--name", name]
        print(f"$ grounded {' '.join(full)}", file=sys.stderr, flush=True)
        started = time.perf_counter()
        code = grounded_main(full)
        timings[name] = time.perf_counter() - started
        if code != 0:
            print(f"step {name} failed with exit code {code}", file=sys.stderr)
            return code
    lines = [f"- `{n}`: {t:.0f} s" for n, t in timings.items()]
    stamp = (f"grounded {__version__}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
             f"{platform.machine()} / Python {platform.python_version()}")
    atomic_write_text(args.out / "last_run.md", f"Last run: {stamp}\n\nWall time per step (caches warm or cold as "
                                                f"found):\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
