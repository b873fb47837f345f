"""``grounded ground PDF|parsed.json CHUNKS.txt|CHUNKS.jsonl`` - boxes for chunks another tool made.

Chunk files:

* ``.jsonl``: one JSON object per line with a ``text`` field (other fields are ignored; blank lines
  are skipped). Every object gives one output chunk, in order: an empty or too long ``text`` is
  kept as a refused chunk with its reason. The lines are read by :func:`grounded.io.jsonl.iter_jsonl`:
  a line that is not UTF-8, not valid JSON, nested deeper than Python's JSON reader allows, not an
  object, or whose ``text`` holds a lone surrogate (``\\ud800``) is a :class:`SchemaError` naming the
  file and the line;
* any other name (``.txt``, ``.md``): UTF-8 text. When it contains a line that is exactly ``---``
  (surrounding spaces allowed), the chunks are the pieces between such lines; otherwise every
  paragraph (text between blank lines) is one chunk. Empty pieces are skipped.

A text longer than :data:`~grounded.grounding.limits.MAX_TEXT_CHARS` characters (200 000) is
refused before any work (grounding memory is linear in the accepted text, ~500 bytes/character).

The output (``-o OUT.jsonl`` or ``.json``) has the schema of ``grounded chunk -o`` - so ``grounded
highlight PDF OUT.jsonl`` draws the chunks - with each chunk's text as given, ``start_char`` /
``end_char`` of its grounded span in the document text, its boxes and ``grounding_status`` /
``grounding_score`` / ``grounding_reason`` in its metadata. Chunks that cannot be grounded are
kept (in input order) with no boxes and ``grounding_status`` ``refused``; page text the parse tree
does not hold (running headers/footers) is in ``grounding_furniture_boxes`` (status ``furniture`` when
a chunk is nothing else).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from ..errors import InputError, InputNotFoundError, SchemaError, UsageError
from .options import (
    add_chunk_options,
    add_parse_cache_option,
    add_parser_options,
    given_parser_options,
    parser_options_given,
)
from .output import OUT_HELP, check_chunk_output, shown, summary_stream, write_chunk_output

__all__ = ["register", "read_chunk_texts", "run"]

_SEPARATOR = re.compile(r"^[ \t]*---[ \t]*$", re.MULTILINE)
_BLANK = re.compile(r"\n[ \t]*\n")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ground",
        help="find chunks made by another tool in a PDF: char offsets and source boxes",
        description=(
            "Ground chunk texts made by any splitter (LangChain, LlamaIndex, chonkie, docling, an LLM) in a PDF "
            "(parsed first with --parser) or a tree written by `grounded parse`. CHUNKS is a .jsonl file (one object "
            "with a 'text' field per line) or a text file: chunks separated by lines that are exactly '---', or - "
            "when there is no such line - by blank lines. Writes chunks in the format of `grounded chunk -o` "
            "(`grounded highlight` draws them) and prints how many were grounded, partial and refused."
        ),
    )
    p.add_argument("input", type=Path, help="a PDF file, or a .json parse tree written by `grounded parse`")
    p.add_argument("chunks", type=Path, help="CHUNKS.jsonl (objects with a 'text' field) or CHUNKS.txt ('---' lines or blank lines)")
    p.add_argument(
        "-o", "--out", type=Path, default=None,
        help=OUT_HELP + "; default: the summary only",
    )
    p.add_argument(
        "--min-score", type=_score, default=None, metavar="S",
        help="refuse chunks whose alignment score is below S in (0, 1] (default: the grounder's, 0.45)",
    )
    add_chunk_options(p)
    add_parser_options(p, default=None, pdf_only=True)
    add_parse_cache_option(p)
    p.set_defaults(func=run)


def _score(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1], got {value}")
    return value


def read_chunk_texts(path: Path) -> list[str]:
    """The chunk texts of a ``.jsonl`` or text file (see the module docstring)."""
    texts = _jsonl_texts(path) if path.suffix.lower() == ".jsonl" else _plain_texts(path)
    if not any(t.strip() for t in texts):
        raise InputError(path, "no chunks in the file (expected .jsonl objects with 'text', or text separated by '---' or blank lines)")
    return texts


def _jsonl_texts(path: Path) -> list[str]:
    from ..grounding.limits import lone_surrogate
    from ..io.jsonl import iter_jsonl, where

    texts: list[str] = []
    for n, obj in iter_jsonl(path):
        if not isinstance(obj.get("text"), str):
            raise SchemaError(f"{where(path, n)}: expected an object with a string 'text' field")
        surrogate = lone_surrogate(obj["text"])
        if surrogate is not None:
            raise SchemaError(f"{where(path, n)}: 'text' holds {surrogate}")
        texts.append(obj["text"])  # empty texts too: one output per line (refused with a reason)
    return texts


def _plain_texts(path: Path) -> list[str]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})") from exc
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text (byte {exc.start})") from exc
    content = content.replace("\r\n", "\n").replace("\r", "\n")
    pieces = _SEPARATOR.split(content) if _SEPARATOR.search(content) else _BLANK.split(content)
    return [p.strip("\n") for p in pieces if p.strip()]


def run(args: argparse.Namespace) -> int:
    from ..grounding.grounder import Grounder
    from ..grounding.wrappers import ground_chunks, status_counts
    from ..io.codec import load_parsing_result
    from ..model.chunk import ChunkingResult
    from ..parsers import get_parser
    from .chunk import _is_pdf, parse_pdf
    from .parse import password_kwargs

    path: Path = args.input
    for given in (path, args.chunks):
        if not given.is_file():
            raise InputNotFoundError(given, "no such file" if not given.exists() else "not a regular file")
    check_chunk_output(args.out, [path, args.chunks])
    texts = read_chunk_texts(args.chunks)
    options: dict[str, object] = {"tokenizer": args.tokenizer, "box_mode": args.box_mode}
    if _is_pdf(path):
        name = args.parser or "pymupdf"
        parser_options = given_parser_options(args, name)
        parser = get_parser(name, **parser_options)
        secret = password_kwargs(parser, args)
        root = parse_pdf(parser, path, parser_options, secret, args.parse_cache)
        options.update(secret)  # the page furniture index reads the same (encrypted) PDF
    else:
        given = [opt for opt, value in (("--parser", args.parser), ("--password", args.password)) if value is not None]
        given += parser_options_given(args)
        if given:
            raise UsageError(f"{' and '.join(given)}: PDF input only; {path} is a parse tree (parsed already)")
        root = load_parsing_result(path)
    if args.min_score is not None:
        options["min_score"] = args.min_score
    grounder = Grounder(root, **options)  # type: ignore[arg-type]
    chunks = ground_chunks(texts, grounder=grounder)
    counts = status_counts(chunks)
    if args.out is not None:
        result = ChunkingResult(
            chunks=chunks,
            metadata={
                "strategy": "grounding",
                "parameters": {"min_score": grounder.min_score, "chunks_file": args.chunks.name},
                "box_mode": args.box_mode,
                "tokenizer": grounder.stream.tokenizer.describe() if grounder.stream.tokenizer is not None else {},
                "chunk_count": len(chunks),
                "grounding": counts,
                "document": json.loads(json.dumps(root.metadata, default=str)),
            },
        )
        write_chunk_output(result, args.out)
    grounded = counts["exact"] + counts["fuzzy"]
    print(
        f"{shown(path.name)}: {len(chunks)} chunks: {grounded} grounded ({counts['exact']} exact, {counts['fuzzy']} fuzzy), "
        f"{counts['partial']} partial, "
        + (f"{counts['furniture']} page furniture only, " if counts["furniture"] else "")
        + f"{counts['refused']} refused"
        + (f" -> {shown(args.out)}" if args.out else ""),
        file=summary_stream(args.out),
    )
    return 0
