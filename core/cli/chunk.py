"""``grounded chunk PDF|parsed.json`` - chunk a PDF (parsing it first) or a stored parse tree."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InputNotFoundError, UsageError
from ..llm.spec import strategy_options
from ..parsers import PARSERS
from .llm_options import add_model_options, model_spec
from .main import add_password_option
from .output import OUT_HELP, check_chunk_output, summary_stream, write_chunk_output
from .parse import password_kwargs


def strategy_names() -> list[str]:
    """The registered strategies (importing the strategies package registers the built-in ones)."""
    from ..chunking import strategies  # noqa: F401
    from ..chunking.base import load_strategies

    return sorted(load_strategies())



def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "chunk",
        help="chunk a PDF or a parsed .json tree into chunks with source boxes",
        description=(
            "Chunk a PDF (parsed first with --parser) or a tree written by `grounded parse` into retrieval chunks. "
            "Every chunk records its pages, char offsets in the document text and line boxes."
        ),
    )
    p.add_argument("input", type=Path, help="a PDF file, or a .json parse tree written by `grounded parse`")
    p.add_argument("-s", "--strategy", choices=strategy_names(), default="recursive", help="chunking strategy (default: recursive)")
    p.add_argument("-n", "--max-tokens", type=int, default=256, help="maximum tokens per chunk, headings included (default: 256)")
    p.add_argument(
        "--overlap",
        type=float,
        default=0,
        help="overlap between windows: tokens (e.g. 50) or a fraction of --max-tokens (e.g. 0.2); fixed/recursive/hierarchical",
    )
    p.add_argument("--percentile", type=float, default=0.9, help="semantic: breakpoint percentile Q in (0, 1) (default: 0.9)")
    p.add_argument("--min-tokens", type=int, default=None, help="semantic: minimum chunk size M (default: max-tokens / 2)")
    p.add_argument("--heading-budget", type=int, default=None, help="hierarchical: heading token budget B_h (default: 0.4 x max-tokens)")
    p.add_argument(
        "--box-mode",
        choices=("auto", "exact", "line", "element"),
        default="auto",
        help="auto/exact: character-exact boxes where the text aligns with the PDF text layer, else per-line; "
        "line: thesis line approximation; element: whole element boxes",
    )
    p.add_argument(
        "--tokenizer",
        default=None,
        help="tokenizer: default all-MiniLM-L6-v2; 'cl100k_base' or a tokenizer.json path/folder",
    )
    p.add_argument(
        "--parser",
        default=None,
        choices=sorted(PARSERS),
        metavar="NAME",
        help=f"parser for PDF input (default: pymupdf); one of: {', '.join(PARSERS)}. PDF input only: with a "
        ".json tree (already parsed) this option and --password are refused",
    )
    add_model_options(p, vision_aliases=True)
    p.add_argument("--batch-size", type=int, default=4, help="vision: pages per model request (default: 4)")
    add_password_option(p)
    p.add_argument(
        "-o", "--out", type=Path, default=None,
        help=OUT_HELP + "; default: the summary only",
    )
    p.set_defaults(func=run)


def _is_pdf(path: Path) -> bool:
    """PDF by content (a PDF named x.json is still a PDF); anything else ending in .json is a tree."""
    with open(path, "rb") as fh:
        head = fh.read(1024)
    if b"%PDF-" in head:
        return True
    return path.suffix.lower() != ".json" and not head.lstrip().startswith(b"{")


def run(args: argparse.Namespace) -> int:
    from ..chunking.chunker import Chunker
    from ..io.codec import load_parsing_result
    from ..parsers import get_parser

    path: Path = args.input
    if not path.is_file():
        raise InputNotFoundError(path, "no such file" if not path.exists() else "not a regular file")
    check_chunk_output(args.out, [path])
    model = strategy_options(args.strategy, model_spec(args))
    options: dict = dict(model)
    if args.strategy == "semantic":
        options = {"percentile": args.percentile, "min_tokens": args.min_tokens}
    elif args.strategy == "hierarchical":
        options = {"heading_budget": args.heading_budget}
    elif args.strategy == "vision":
        options.update(batch_size=args.batch_size, password=args.password)
    overlap = int(args.overlap) if args.overlap >= 1 else float(args.overlap)
    # built before parsing: bad chunking options (a missing model, overlap on a partitioning
    # strategy, an unknown tokenizer) fail at once, not after a parse of the whole PDF
    chunker = Chunker(args.strategy, args.max_tokens, overlap, tokenizer=args.tokenizer, box_mode=args.box_mode, **options)
    if _is_pdf(path):
        parser = get_parser(args.parser or "pymupdf")
        root = parser.parse(path, **password_kwargs(parser, args))
    else:
        given = [opt for opt, value in (("--parser", args.parser), ("--password", args.password)) if value is not None]
        if given:
            raise UsageError(
                f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} to PDF input only; "
                f"{path} is a parse tree (parsed already): drop {'them' if len(given) > 1 else 'it'}"
            )
        root = load_parsing_result(path)
    result = chunker.chunk(root)
    if args.out is not None:
        write_chunk_output(result, args.out)
    pages = {p for c in result.chunks for p in c.metadata["pages"]}
    multi = sum(1 for c in result.chunks if len(c.metadata["pages"]) > 1)
    sizes = [c.metadata["token_count"] for c in result.chunks]
    print(
        f"{path.name}: {len(result.chunks)} chunks ({args.strategy}, N={args.max_tokens}), "
        f"tokens max {max(sizes, default=0)} mean {sum(sizes) / max(1, len(sizes)):.0f}, "
        f"{len(pages)} pages covered, {multi} chunks cross a page break"
        + (f" -> {args.out}" if args.out else ""),
        file=summary_stream(args.out),
    )
    return 0
