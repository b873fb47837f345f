"""``grounded highlight PDF CHUNKS -o OUT.pdf|OUT.png`` - show where chunks came from."""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

from ..attribution.geometry import (
    AttributionError,
    ChunkNotFoundError,
    ChunkPageError,
    chunk_boxes,
    parse_color,
)
from ..errors import InputNotFoundError
from ..io.atomic import refuse_overwriting_inputs
from ..model.chunk import Chunk
from .main import add_password_option, pdf_password
from .output import shown


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "highlight",
        help="highlight chunks in their PDF (annotated PDF) or render them as PNGs",
        description=(
            "Draw the source boxes of chunks (written by `grounded chunk`) onto their PDF. With -o OUT.pdf the "
            "result is a copy of the PDF with a highlight annotation per chunk and page (title = chunk id); with "
            "-o OUT.png every page the chunks touch is rendered with the line boxes drawn: the first page to OUT.png "
            "itself, each further page to OUT-p<page>.png (e.g. answer.png, answer-p8.png); the files written and their "
            "pages are printed on stdout. "
            "The PDF must be the one the chunks were made from (its sha256 is checked against the one the chunks "
            "file records; --force skips the check). Outputs never replace an input. The annotated PDF is "
            "sanitized by default: the source's JavaScript, launch and form actions, additional actions and "
            "embedded files are stripped (--keep-active-content keeps them)."
        ),
    )
    p.add_argument("pdf", type=Path, help="the PDF the chunks were made from")
    p.add_argument(
        "chunks", type=Path,
        help="chunks file: written by `grounded chunk -o` (.jsonl or .json), or an ingest Parquet part "
        "(OUT/chunks/part-*.parquet) or folder of parts (the rows of this PDF are used)",
    )
    p.add_argument(
        "-c", "--chunk", dest="chunk_ids", action="append", nargs="+", metavar="ID", default=None,
        help="only these chunk ids (repeatable; default: all chunks in the file)",
    )
    p.add_argument(
        "-o", "--out", type=Path, default=None,
        help="OUT.pdf (annotated PDF) or OUT.png (page images: the first page the chunks touch is OUT.png, each "
        "further page OUT-p<page>.png); default: <pdf stem>.highlighted.pdf",
    )
    p.add_argument("--dpi", type=_dpi, default=110, help="PNG resolution in dots per inch (default: 110)")
    p.add_argument("--crop", action="store_true", help="PNG: crop each page image to the chunks' region plus a margin")
    p.add_argument("--no-label", action="store_true", help="PDF: do not add the [n] tags in the page margin")
    p.add_argument(
        "--keep-active-content", action="store_true",
        help="PDF: keep the source's JavaScript, launch/form actions and embedded files in the annotated copy "
        "(default: sanitized - they are stripped; links to pages and web addresses stay)",
    )
    p.add_argument("--color", type=_color, default=None, help="highlight colour as #rrggbb (default: yellow; headings light blue)")
    p.add_argument("--query", "-q", default=None, metavar="QUESTION",
                   help="also draw each chunk's focus for QUESTION (the sentences, rows or items that answer it) in "
                   "orange over the lighter chunk, as its own annotation; the focus is printed")
    add_password_option(p)  # the annotated copy of an encrypted PDF is encrypted again with the password
    p.add_argument("--force", action="store_true",
                   help="draw even if the PDF is not the one the chunks file records (sha256 differs)")
    p.set_defaults(func=run)


def _dpi(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= value <= 2400:
        raise argparse.ArgumentTypeError(f"dpi must be in 1..2400, got {value}")
    return value


def _color(text: str) -> tuple[float, float, float]:
    try:
        return parse_color(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def select_chunks(chunks: list[Chunk], ids: list[str] | None, source: Path) -> list[Chunk]:
    """The chunks named by ``ids`` in the order given (all chunks when ``ids`` is None)."""
    if not ids:
        return chunks
    by_id = {c.id: c for c in chunks}
    missing = [i for i in ids if i not in by_id]
    if missing:
        known = ", ".join(list(by_id)[:3]) + (", ..." if len(by_id) > 3 else "")
        raise ChunkNotFoundError(
            source, f"no chunk with id {', '.join(map(repr, missing))} ({len(by_id)} chunks in the file: {known})"
        )
    return [by_id[i] for i in dict.fromkeys(ids)]


def recorded_sha256(metadata: dict[str, Any]) -> str | None:
    """The source PDF's sha256 a chunks file records (``metadata.document.source.sha256``)."""
    document = metadata.get("document")
    source = document.get("source") if isinstance(document, dict) else None
    sha = source.get("sha256") if isinstance(source, dict) else None
    return sha if isinstance(sha, str) and sha else None


def _sha256(pdf: Path) -> str:
    return hashlib.sha256(pdf.read_bytes()).hexdigest()


def check_same_pdf(pdf: Path, chunks_file: Path, metadata: dict[str, Any]) -> None:
    """Refuse a PDF whose sha256 differs from the one recorded with the chunks."""
    expected = recorded_sha256(metadata)
    if expected is None:
        return
    actual = _sha256(pdf)
    if actual != expected.lower():
        document = metadata.get("document")
        source = document.get("source") if isinstance(document, dict) else None
        name = source.get("name") if isinstance(source, dict) else None
        made_from = f" (made from {name})" if isinstance(name, str) and name else ""
        raise AttributionError(
            pdf, f"not the PDF the chunks in {chunks_file} were made from{made_from}: sha256 {actual[:12]}... "
            f"differs from the recorded {expected[:12]}...; use --force to draw the boxes anyway"
        )


def run(args: argparse.Namespace) -> int:
    from ..attribution.highlight import DEFAULT_COLOR, highlight
    from ..attribution.render import render_pages
    from ..io.atomic import atomic_write_bytes
    from ..io.chunks_file import is_parquet, load_chunks_file

    if not args.pdf.is_file():
        raise InputNotFoundError(args.pdf, "no such file")
    if not (args.chunks.is_file() or (args.chunks.is_dir() and is_parquet(args.chunks))):
        raise InputNotFoundError(args.chunks, "no such file" if not args.chunks.exists() else "a folder without Parquet parts")
    out: Path = args.out or Path(f"{args.pdf.stem}.highlighted.pdf")
    kind = out.suffix.lower()
    if kind not in (".pdf", ".png"):
        raise AttributionError(out, "output must end in .pdf (annotated PDF) or .png (page images)")
    ids = [i for group in args.chunk_ids for i in group] if args.chunk_ids else None
    if is_parquet(args.chunks):  # an ingest part holds many PDFs' rows: the ones of this PDF
        result = load_chunks_file(args.chunks, source_sha256=None if args.force else _sha256(args.pdf))
    else:
        result = load_chunks_file(args.chunks)
    if not args.force:
        check_same_pdf(args.pdf, args.chunks, result.metadata)
    chunks = select_chunks(result.chunks, ids, args.chunks)
    if not chunks:
        of_pdf = f" of {args.pdf} (sha256 {_sha256(args.pdf)[:12]}...)" if is_parquet(args.chunks) and not args.force else ""
        raise AttributionError(args.chunks, f"the file holds no chunks{of_pdf}")
    pages = sorted({b.page for c in chunks for b in chunk_boxes(c, args.chunks)})
    names = {out: None} if kind == ".pdf" else page_image_names(out, pages)
    refuse_overwriting_inputs(list(names), [args.pdf, args.chunks])
    color = args.color or DEFAULT_COLOR
    password = pdf_password(args)
    focus = None
    if args.query is not None:
        from ..focus import focus_of

        focus = [focus_of(c, args.query, pdf=args.pdf) for c in chunks]
    try:
        if kind == ".pdf":
            highlight(args.pdf, chunks, out, color=color, label=not args.no_label, password=password,
                      sanitize=not args.keep_active_content, focus=focus)
        else:
            by_page = {page: path for path, page in names.items()}
            rendered = render_pages(args.pdf, chunks, args.dpi, crop=args.crop, color=color, password=password,
                                    focus=focus)
            if {page for page, _ in rendered} - set(by_page):  # both read the chunks' boxes: cannot happen
                raise AttributionError(args.chunks, "the pages rendered differ from the pages of the chunks' boxes")
            for page, png in rendered:
                atomic_write_bytes(by_page[page], png)
    except ChunkPageError as exc:  # the bad box is in the chunks file: name it
        raise exc.naming(args.chunks, args.pdf) from exc
    listed = ", ".join(shown(str(path)) if page is None else f"{shown(str(path))} (page {page})" for path, page in names.items())
    sys.stdout.write(f"{len(chunks)} chunk(s) on {len(pages)} page(s) -> {listed}\n")
    for chunk, f in zip(chunks, focus or ()):
        focus_pages = ",".join(str(p) for p in dict.fromkeys(b.page for b in f.boxes))
        for text in f.texts():
            flat = " ".join(text.split())
            sys.stdout.write(f"\u00bb {shown(chunk.id)}: {shown(flat[:300])}{'...' if len(flat) > 300 else ''}"
                             f"{f'  (p.{focus_pages})' if focus_pages else ''}\n")
    return 0


def page_image_names(out: Path, pages: list[int]) -> dict[Path, int | None]:
    """The PNG file of each page for ``-o OUT.png``: the first page is ``OUT.png`` itself, each
    further page ``OUT-p<page>.png`` (file -> page, in page order)."""
    stem = out.name[: -len(out.suffix)]
    return {(out if i == 0 else out.with_name(f"{stem}-p{page}.png")): page for i, page in enumerate(pages)}
