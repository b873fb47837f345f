"""``grounded chunk PDF|parsed.json`` - chunk a PDF (parsing it first) or a stored parse tree."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import InputNotFoundError, UsageError
from ..llm.spec import strategy_options
from .llm_options import add_model_options, model_spec
from .main import pdf_password
from .options import (
    add_chunk_options,
    add_parse_cache_option,
    add_parser_options,
    add_strategy_options,
    given_parser_options,
    given_strategy_options,
    parser_options_given,
)
from .output import OUT_HELP, check_chunk_output, shown, summary_stream, write_chunk_output
from .parse import password_kwargs


def strategy_names() -> list[str]:
    """Every known strategy name (built-in, grounded's model-driven ones, entry points)."""
    from ..chunking.base import strategy_names as names

    return names()


def takes_password(strategy: str) -> bool:
    """Whether ``strategy`` declares a ``password`` option (it opens the PDF itself: ``vision``)."""
    from ..chunking.base import strategy_class

    return any(o.name == "password" for o in strategy_class(strategy).options or ())


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
    add_strategy_options(p)
    add_chunk_options(p)
    add_parser_options(p, default=None, pdf_only=True)
    add_parse_cache_option(p)
    add_model_options(p, vision_aliases=True)
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


def parse_pdf(parser: Any, path: Path, options: dict[str, Any], secret: dict[str, Any], use_cache: bool) -> Any:
    """The tree of the PDF at ``path``: from the parse cache when it holds this PDF under this parser
    configuration (``use_cache``; ``--no-parse-cache`` turns it off), else parsed (and stored)."""
    from ..parsers.cache import ParseCache, parse_once

    root, _ = parse_once(parser, path, cache=ParseCache() if use_cache else None, options=options, **secret)
    return root


def run(args: argparse.Namespace) -> int:
    from ..chunking.chunker import Chunker
    from ..io.codec import load_parsing_result
    from ..parsers import get_parser

    path: Path = args.input
    if not path.is_file():
        raise InputNotFoundError(path, "no such file" if not path.exists() else "not a regular file")
    check_chunk_output(args.out, [path])
    options = {**given_strategy_options(args, args.strategy), **strategy_options(args.strategy, model_spec(args))}
    if takes_password(args.strategy):  # a strategy that reads the PDF itself (vision renders its pages)
        options["password"] = pdf_password(args)
    overlap = int(args.overlap) if args.overlap >= 1 else float(args.overlap)
    # built before parsing: bad chunking options (a missing model, overlap on a partitioning
    # strategy, an unknown tokenizer) fail at once, not after a parse of the whole PDF
    chunker = Chunker(args.strategy, args.max_tokens, overlap, tokenizer=args.tokenizer, box_mode=args.box_mode, **options)
    if _is_pdf(path):
        name = args.parser or "pymupdf"
        parser_options = given_parser_options(args, name)
        parser = get_parser(name, **parser_options)
        root = parse_pdf(parser, path, parser_options, password_kwargs(parser, args), args.parse_cache)
    else:
        given = [opt for opt, value in (("--parser", args.parser), ("--password", args.password)) if value is not None]
        given += parser_options_given(args)
        if given:
            raise UsageError(
                f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} to PDF input only; "
                f"{path} is a parse tree (parsed already): drop {'them' if len(given) > 1 else 'it'}"
            )
        root = load_parsing_result(path)
    result = chunker.chunk(root)
    if args.out is not None:
        write_chunk_output(result, args.out)
    pages = {p for c in result.chunks for p in c.pages}
    multi = sum(1 for c in result.chunks if len(c.pages) > 1)
    sizes = [c.token_count for c in result.chunks]
    print(
        f"{shown(path.name)}: {len(result.chunks)} chunks ({args.strategy}, N={args.max_tokens}), "
        f"tokens max {max(sizes, default=0)} mean {sum(sizes) / max(1, len(sizes)):.0f}, "
        f"{len(pages)} pages covered, {multi} chunks cross a page break"
        + (f" -> {shown(args.out)}" if args.out else ""),
        file=summary_stream(args.out),
    )
    return 0
