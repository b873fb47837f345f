"""``grounded search OUT "QUESTION" -k K [--mode hybrid|vector|text] [--pages 3-5] [--json] [--render DIR]``."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from .output import shown


def register(sub: argparse._SubParsersAction) -> None:
    from ..search.engine import DEFAULT_MODE, MODES

    p = sub.add_parser(
        "search",
        help="search an ingest output (BM25, vector or hybrid) and print the hits with their boxes",
        description=(
            "Search the LanceDB table of `grounded ingest --sink lancedb` (OUT/lancedb). hybrid (default when OUT "
            "has embeddings, else text; best on Chroma's corpora and the PDF question set, docs/results/search_modes.md) "
            "fuses the BM25 and the vector list by their normalised scores (full-text 0.7, vector 0.3); text ranks by "
            "BM25 over the full-text index (heading path + chunk body); vector by all-MiniLM-L6-v2 cosine similarity "
            "(offline; needs --embed minilm at ingest). Each hit: rank, score, chunk id, source PDF + sha256, configuration "
            "fingerprint, pages, line boxes, heading path, text. Nothing is written into OUT."
        ),
    )
    p.add_argument("out", type=Path, metavar="OUT", help="output folder of `grounded ingest ... --sink lancedb`")
    p.add_argument("question", help="the question (quote it); its words are searched as plain words: quotes, "
                   "AND/OR/NOT, * and field: are no operators")
    p.add_argument("-k", type=int, default=5, help="number of hits (default: 5; at most the rows of the index)")
    p.add_argument("--mode", choices=MODES, default=None,
                   help=f"retrieval mode (default: {DEFAULT_MODE}, or text when OUT has no embeddings)")
    p.add_argument("--pages", type=_page_range, default=None, metavar="FIRST-LAST",
                   help="only chunks touching these 1-based pages, inclusive: 3-5, or one page: 4 (as the "
                   "retrievers' page_range); filtered before the ranking's cut")
    p.add_argument("--config", default=None, metavar="FINGERPRINT",
                   help="the ingest configuration to search when OUT holds several (a fingerprint or a unique prefix)")
    p.add_argument("--json", action="store_true", help="one JSON object per hit per line (with all boxes and spans)")
    p.add_argument("--render", type=Path, default=None, metavar="DIR",
                   help="also write DIR/<rank>-<chunk id>-p<page>.png: each hit's pages with its line boxes drawn")
    p.add_argument("--dpi", type=int, default=110, help="resolution of --render images (default: 110)")
    p.add_argument("--no-focus", dest="focus", action="store_false",
                   help="do not mark each hit's focus (the sentences, rows or items that answer the question)")
    p.set_defaults(func=run)


def _focus_lines(hit: Any) -> list[tuple[str, str]]:
    """``(text, pages)`` of each focus span of ``hit`` (a table row, sentence or item; long ones cut
    at 300 characters), the pages being those of the focus boxes (one span each in reading order,
    so the pages are those of all of them when there are several spans)."""
    pages = ",".join(str(p) for p in dict.fromkeys(b.page for b in hit.focus_boxes))
    lines = []
    for text in hit.focus_text:
        flat = " ".join(text.split())
        lines.append((flat[:300] + ("..." if len(flat) > 300 else ""), pages))
    return lines


def _page_range(text: str) -> tuple[int, int]:
    """``--pages``: :func:`grounded.search.engine.parse_page_range`, its refusal as argparse's one-line usage error."""
    from ..search.engine import parse_page_range
    from ..search.errors import PageFilterError

    try:
        return parse_page_range(text)
    except PageFilterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..search.engine import query_operators, search
    from ..search.light_import import import_lancedb

    with contextlib.suppress(ImportError):  # a missing lancedb is reported by search(), typed
        import_lancedb(without_pandas=True)  # this process never converts to pandas: ~1 s less per query
    from ..search.sources import render_hits

    if args.k < 1:
        raise UsageError(f"-k must be >= 1, got {args.k}")
    if not 1 <= args.dpi <= 600:
        raise UsageError(f"--dpi must be in 1..600, got {args.dpi}")
    hits = search(args.out, args.question, args.k, mode=args.mode, config=args.config, page_range=args.pages,
                  focus=args.focus)
    operators = query_operators(args.question) if args.mode != "vector" else []
    if operators and not args.json:
        print(f"grounded search: note: {' '.join(operators)} searched as plain words (phrases in quotes, "
              "AND/OR/NOT, * and field: are not supported)", file=sys.stderr)
    images = render_hits(hits, args.render, dpi=args.dpi, keep_out_of=args.out) if args.render is not None else []
    out = sys.stdout
    for hit in hits:
        if args.json:
            out.write(json.dumps(hit.to_dict(), ensure_ascii=False) + "\n")
            continue
        where = " > ".join(hit.heading_path)
        pages = ",".join(map(str, hit.pages))
        out.write(f"{hit.rank}. {hit.score:.4f}  {shown(Path(hit.source_path).name)} p.{pages}  {hit.chunk_id}\n")
        if where:
            out.write(f"   {shown(' '.join(where.split()))}\n")
        preview = " ".join(hit.body.split())
        out.write(f"   {shown(preview[:200])}{'...' if len(preview) > 200 else ''}\n")
        for text, pages in _focus_lines(hit):
            out.write(f"   \u00bb {shown(text)}{f'  (p.{pages})' if pages else ''}\n")
    if not hits:
        print(f"grounded search: no hits in {shown(args.out)}", file=sys.stderr)
    if images:
        print(f"grounded search: {len(images)} image(s) -> {shown(args.render)}", file=sys.stderr)
    return 0
