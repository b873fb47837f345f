"""Full chunking grid on Chroma's evaluation data (thesis §3.5.3; not part of CI).

Scores all four strategies of this library (fixed, recursive, semantic, hierarchical) at
N ∈ {128, 256, 512, 1024} MiniLM tokens and O ∈ {0, 0.2·N} (semantic, which has no overlap: breakpoint
percentile Q ∈ {0.7, 0.9}) on Chroma's 5 corpora / 472 questions,
retrieving n ∈ {Min, 5, 10} chunks by cosine similarity of all-MiniLM-L6-v2 embeddings, and writes
``docs/results/chunking_grid.md|json|png``. Run from the repository root::

    python benchmarks/eval_chunking.py [--data DIR] [--sizes 128,256,512,1024] [--overlaps 0,0.2]

``--strategies`` takes any registered strategy: ``cluster`` and ``kamradt_mod`` (partitions) run once
per N without overlap; ``llm`` needs a language model and is listed as skipped, with the reason, in the
output. It is ``grounded eval chunking --suite grid`` with the thesis grid as defaults. Cold, the run embeds
roughly 45k chunks and the corpora's sentences (semantic) on CPU — expect 30-60 min on 2 cores;
vectors are cached (``~/.cache/grounded/embeddings``), so a re-run takes minutes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    from grounded.cli.main import main as grounded_main

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None,
                    help="evaluation data folder (default: $GROUNDED_EVAL_DATA, else ../shared/data)")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "results", help="output folder")
    ap.add_argument("--strategies", default="fixed,recursive,semantic,hierarchical")
    ap.add_argument("--sizes", default="128,256,512,1024")
    ap.add_argument("--overlaps", default="0,0.2")
    ap.add_argument("--percentiles", default="0.7,0.9")
    ap.add_argument("--n", default="min,5,10")
    args = ap.parse_args(argv)
    cmd = ["eval", "chunking", "--suite", "grid", "--strategies", args.strategies, "--sizes", args.sizes,
           "--overlaps", args.overlaps, "--percentiles", args.percentiles, "--n", args.n, "--out", str(args.out), "--name", "chunking_grid"]
    data = args.data or (None if os.environ.get("GROUNDED_EVAL_DATA") else REPO.parent / "shared" / "data")
    if data:
        cmd += ["--data", str(data)]
    print(f"$ grounded {' '.join(cmd)}", file=sys.stderr, flush=True)
    return grounded_main(cmd)


if __name__ == "__main__":
    sys.exit(main())
