"""``grounded ingest DIR|GLOB|LIST -o OUT`` - a corpus of PDFs -> Parquet chunk rows (resumable)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..llm.spec import check_model
from .llm_options import add_model_options, model_spec
from .main import one_line, pdf_password
from .options import (
    add_chunk_options,
    add_parse_cache_option,
    add_parser_options,
    add_strategy_options,
    given_parser_options,
    given_strategy_options,
)
from .output import shown


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ingest",
        help="parse + chunk (+ embed) a folder, glob or list of PDFs into Parquet (resumable)",
        description=(
            "Ingest many PDFs: parse, chunk with exact boxes, optionally embed, and write one Parquet part per "
            "document under OUT/chunks plus OUT/documents.parquet and OUT/errors.parquet; OUT/manifest.json names "
            "what is served (readers: grounded.ingest.open_chunks / open_lancedb). A re-run skips documents already "
            "done and tries the inputs that failed again (--skip-errors: not); a new version of a file replaces its rows. OUT holds one configuration: a run with other "
            "settings is refused (use another -o, or --replace). One run at a time per OUT. A file that fails is "
            "recorded in errors.parquet and never stops the run (exit code 1 when any input failed)."
        ),
    )
    p.add_argument(
        "inputs", nargs="+", metavar="DIR|GLOB|LIST",
        help="a folder (its *.pdf, recursively), a glob pattern (quote it), a PDF, or a text file listing one PDF per line",
    )
    p.add_argument("-o", "--out", type=Path, required=True, help="output folder (created; re-used for resume)")
    add_parser_options(p)
    add_parse_cache_option(p)
    add_strategy_options(p, max_tokens_help="(default: 256; with --embed minilm and its tokenizer, the model's window, 254, so every "
                         "chunk is embedded whole)")
    add_chunk_options(p)
    add_model_options(p)
    p.add_argument("--embed", choices=("minilm", "none"), default="none",
                   help="embed every chunk with all-MiniLM-L6-v2 (384-d, unit norm) or not (default: none)")
    p.add_argument("--device", default="auto", metavar="auto|cpu|cuda[:N]",
                   help="where --embed runs: auto (default: the GPU when torch sees one), cpu, cuda or cuda:N")
    p.add_argument("--workers", type=int, default=None, metavar="K", help="worker processes (default: the number of cores; 0: none, in this process -- "
                   "a document embeds while the next one parses)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: a process pool on this machine (default); ray: Ray Data actors (pip install 'ray[data]')")
    p.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="Ray cluster to join (default: $RAY_ADDRESS, else a local Ray runtime with --workers CPUs)")
    p.add_argument("--sink", choices=("parquet", "lancedb"), default="parquet",
                   help="parquet (default); lancedb: also a searchable LanceDB table OUT/lancedb "
                   "(pip install 'grounded[lancedb]')")
    p.add_argument("--replace", action="store_true",
                   help="this run's inputs, under this run's configuration, become the whole index of OUT "
                   "(switched when the run completes; needed when OUT holds another configuration)")
    retry = p.add_mutually_exclusive_group()
    retry.add_argument("--skip-errors", action="store_true",
                       help="keep the failures of an earlier run as they are (same bytes: not tried again); by "
                       "default a re-run tries every input that failed again (a password, an extra or OCR data may "
                       "have been added since)")
    retry.add_argument("--retry-errors", action="store_true",
                       help="try the inputs that failed in an earlier run again (the default; kept for old scripts)")
    p.add_argument("--prune", action="store_true",
                   help="remove the rows of indexed PDFs that no longer exist (deleted or moved away); without it they "
                   "are kept (a drive that is not mounted must not empty the index) and the run says how many there are")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it is shown only on a terminal anyway)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line (failures are still listed)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..ingest.job import ingest

    least = 1 if args.engine == "ray" else 0
    if args.workers is not None and args.workers < least:
        raise UsageError(f"--workers must be >= {least}{' with --engine ray' if least else ''}, got {args.workers}")
    overlap: int | float = int(args.overlap) if float(args.overlap).is_integer() else float(args.overlap)
    spec = model_spec(args)
    check_model(args.strategy, spec)  # a model-driven strategy without a model (or a model it cannot use) fails at once
    report = ingest(
        args.inputs,
        args.out,
        parser=args.parser,
        strategy=args.strategy,
        max_tokens=args.max_tokens,
        overlap=overlap,
        embed=args.embed,
        workers=args.workers,
        progress=not (args.no_progress or args.quiet),
        retry_errors=not args.skip_errors,
        prune=args.prune,
        engine=args.engine,
        ray_address=args.ray_address,
        sink=args.sink,
        model=spec or None,
        replace=args.replace,
        parser_options=given_parser_options(args, args.parser),
        strategy_options=given_strategy_options(args, args.strategy),
        tokenizer=args.tokenizer,
        box_mode=args.box_mode,
        password=pdf_password(args),
        device=args.device,
        parse_cache=args.parse_cache,
    )
    for path, error_type, message in report.errors[:20]:
        print(f"grounded ingest: failed: {shown(path)}: {error_type}: {one_line(message)}", file=sys.stderr)
    if len(report.errors) > 20:
        print(f"grounded ingest: ... {len(report.errors) - 20} more in {shown(args.out / 'errors.parquet')}", file=sys.stderr)
    if report.gone and not report.pruned and not args.quiet:
        print(f"grounded ingest: {len(report.gone)} input(s) are gone since the last run; their rows are kept; "
              "--prune removes them", file=sys.stderr)
    if not args.quiet:
        print(f"grounded ingest: {one_line(report.summary())}", file=sys.stderr)
    return 0 if report.ok else 1
