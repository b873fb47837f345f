"""MiniLM embedding cost of a document's chunks by batching (issue 24: length-bucketed batches).

Run: ``python benchmarks/embed_batches.py [--rounds 2] [--save docs/results/embed_batches.md]``
(~3 min on 2 cores).

The chunks: ``Chunker("recursive", 256)`` over the three shared long PDFs (213 chunks). Each way of
batching embeds every document's chunks with all-MiniLM-L6-v2 on one torch thread (as an ingest
worker does); CPU seconds of this process, the best of ``--rounds``. The reference is ingest's old
way (fixed slices of 64 chunks in document order, one call each); every other row prints the
smallest cosine of its vectors to the reference ones (the issue's bar: >= 0.999).

* ``fixed slices of B``: consecutive slices of B chunks in document order, one call each;
* ``length-ordered slices of B``: the document's chunks longest first, slices of B, one call each
  (``grounded.ingest.worker.embed_slices``; B = ``EMBED_BATCH`` is what ingest does).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
LONG = REPO.parent / "shared" / "data" / "long"


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def _documents() -> list[list[str]]:
    from grounded.chunking import Chunker
    from grounded.parsers import get_parser

    parser, chunker = get_parser("pymupdf"), Chunker("recursive", 256)
    return [[c.content for c in chunker.chunk(parser.parse(pdf)).chunks] for pdf in sorted(LONG.glob("*.pdf"))]


def _fixed(batch: int) -> Callable[[Sequence[str], Callable], np.ndarray]:
    def run(texts: Sequence[str], embed: Callable) -> np.ndarray:
        return np.concatenate([embed(list(texts[i : i + batch])) for i in range(0, len(texts), batch)])

    return run


def _ordered(batch: int) -> Callable[[Sequence[str], Callable], np.ndarray]:
    from grounded.ingest.worker import embed_document

    def run(texts: Sequence[str], embed: Callable) -> np.ndarray:
        return embed_document(texts, lambda slices: map(embed, slices), batch)

    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--save", type=Path, default=None)
    args = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    from grounded.chunking.strategies.semantic import minilm_embedder
    from grounded.ingest.worker import EMBED_BATCH

    torch.set_num_threads(1)
    documents = _documents()
    ways = [("fixed slices of 64 (reference)", 64, _fixed(64))]
    ways += [(f"length-ordered slices of {b}" + (" (ingest)" if b == EMBED_BATCH else ""), b, _ordered(b)) for b in (64, 32, 16, 8)]
    embedders = {b: minilm_embedder(batch_size=b, device="cpu") for b in (64, 32, 16, 8)}
    embedders[64](["warm up"])
    reference: list[np.ndarray] = []
    lines = [
        "# MiniLM embedding by batching",
        "",
        f"Command: `python benchmarks/embed_batches.py --rounds {args.rounds}`; {sum(map(len, documents))} chunks of "
        f"{len(documents)} documents (the shared long PDFs, recursive N=256), torch 1 thread, CPU s the best of "
        f"{args.rounds} rounds; load average at the start {os.getloadavg()[0]:.1f}.",
        "",
        "| batching | CPU s | vs reference | min cosine to reference |",
        "| --- | ---: | ---: | ---: |",
    ]
    base_cpu = 0.0
    for name, batch, way in ways:
        embed = embedders[batch]
        best, vectors = float("inf"), []
        for _ in range(args.rounds):
            started = _cpu()
            vectors = [way(texts, embed) for texts in documents]
            best = min(best, _cpu() - started)
        if not reference:
            reference, base_cpu = vectors, best
        cosine = min(float((a * b).sum(axis=1).min()) for a, b in zip(vectors, reference, strict=True))
        lines.append(f"| {name} | {best:.2f} | {best / base_cpu:.2f}x | {cosine:.7f} |")
        print(lines[-1], flush=True)
    lines.append("")
    if args.save:
        args.save.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
