"""``grounded demo``: the main job end to end on a sample guideline PDF the project writes itself.

Steps: write the sample PDF (or use ``--pdf``), parse it with the offline default parser, chunk it
(hierarchical, N=128 by default), pick the chunk that best answers a question (token overlap,
no model download needed), then write an annotated PDF with every chunk highlighted, PNGs of the
answer chunk's region and the chunks as JSONL.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model.chunk import Chunk

DEFAULT_QUESTION = "Which regimen is preferred for triple-negative breast cancer with residual disease after neoadjuvant therapy?"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="parse + chunk + highlight the bundled sample guideline PDF (offline)",
        description="Write the sample guideline PDF, parse it, chunk it and highlight the chunk answering a question.",
    )
    p.add_argument("-o", "--out", type=Path, default=Path("out"), help="output folder (default: ./out)")
    p.add_argument("--pdf", type=Path, default=None, help="use this PDF instead of the generated sample")
    p.add_argument("-q", "--question", default=DEFAULT_QUESTION, help="question whose best chunk is rendered as PNG")
    p.add_argument("-s", "--strategy", default="hierarchical", help="chunking strategy (default: hierarchical)")
    p.add_argument("-n", "--max-tokens", type=int, default=128, help="maximum tokens per chunk (default: 128)")
    p.add_argument("--dpi", type=int, default=110, help="resolution of the PNG renders (default: 110)")
    p.set_defaults(func=run)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


def _best_chunk(question: str, chunks: list[Chunk]) -> Chunk:
    """The chunk sharing the rarest words with the question (IDF-weighted overlap; no model needed)."""
    bags = [_words(c.content) for c in chunks]
    query = _words(question)
    df = {w: sum(1 for b in bags if w in b) for w in query}
    n = len(chunks)

    def score(i: int) -> float:
        return sum(math.log((n + 1) / (df[w] + 0.5)) for w in query & bags[i])

    return chunks[max(range(n), key=score)]


def run(args: argparse.Namespace) -> int:
    from ..attribution import highlight, render
    from ..chunking import Chunker
    from ..demo.samples import write_sample_pdf
    from ..io.atomic import atomic_write_bytes
    from ..io.codec import write_chunks_jsonl
    from ..parsers import get_parser
    from .output import shown

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    pdf = args.pdf or write_sample_pdf(out / "sample_guideline.pdf")
    parsed = get_parser("pymupdf").run(pdf)
    json_path, md_path = parsed.save(out)
    result = Chunker(args.strategy, args.max_tokens).chunk(parsed.root)
    chunks_path = write_chunks_jsonl(result, out / "chunks.jsonl")
    highlighted = highlight(pdf, result.chunks, out / f"{Path(pdf).stem}.highlighted.pdf")

    best = _best_chunk(args.question, result.chunks)
    pngs = []
    for i, png in enumerate(render(pdf, best, dpi=args.dpi)):
        pngs.append(atomic_write_bytes(out / f"answer-{i + 1}.png", png))

    multi = sum(1 for c in result.chunks if len(c.pages) > 1)
    print(f"parsed   {shown(pdf)} -> {shown(json_path)} + {shown(md_path)} ({parsed.root.info.page_count} pages)")
    print(f"chunked  {len(result.chunks)} chunks ({args.strategy}, N={args.max_tokens}; {multi} cross a page break) -> {shown(chunks_path)}")
    print(f"highlight all chunks -> {shown(highlighted)}")
    print(f"question {args.question!r}")
    print(f"answer   chunk {best.id} on page(s) {best.pages}: {shown(' / '.join(best.heading_path))}")
    print("         " + shown(" ".join(best.body.split())[:300]))
    for p in pngs:
        print(f"render   {shown(p)}")
    sys.stdout.flush()
    return 0
