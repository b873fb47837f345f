"""``grounded parse``: PDFs -> ``<name>.json`` (lossless tree) + ``<name>.md`` in an output folder.

A multi-file run goes on after any per-file failure (input or output) and reports all failures at
the end (exit 1). Inputs are never overwritten; two inputs with the same name get distinct outputs
(``x.json``, ``x-2.json``, ...), announced on stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import GroundedError, UsageError, escape_controls
from ..io.atomic import InputFiles, check_output_name
from ..model.elements import ParsingResultType
from ..parsers import parser_class
from ..parsers.base import DEFAULT_DROP_TYPES
from .main import one_line, pdf_password
from .options import add_parser_options, given_parser_options

__all__ = ["register", "run_parse", "output_stems", "password_kwargs"]

log = logging.getLogger(__name__)

_TYPE_NAMES = ", ".join(t.value for t in sorted(DEFAULT_DROP_TYPES, key=lambda t: t.value))


class BatchError(GroundedError):
    """Some files of a multi-file run failed (each was reported on its own line)."""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "parse",
        help="parse PDFs into element trees (.json) and Markdown (.md)",
        description=(
            "Parse each PDF with a layout backend, post-process the tree (filtering, section "
            "hierarchy, line + character boxes from the PDF text layer) and write <name>.json "
            "(lossless, reloadable) and <name>.md (lossy) into the output folder."
        ),
    )
    p.add_argument(
        "pdfs", nargs="+", metavar="PDF", type=Path,
        help="input PDF file(s); inputs with the same name get distinct outputs (x.json, x-2.json, ...)",
    )
    add_parser_options(p)
    p.add_argument(
        "-o", "--out", type=Path, default=Path("."), metavar="DIR", help="output folder (default: current folder)"
    )
    p.add_argument(
        "--keep",
        default="",
        metavar="TYPES",
        help=(
            "comma-separated element types NOT to filter out (default filter: "
            f"{_TYPE_NAMES}); 'all' keeps everything"
        ),
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="processes for the layout pass (parsers that support it, e.g. pymupdf; default 1)",
    )
    p.add_argument(
        "--images",
        action="store_true",
        help="also write each figure as PNG into DIR/images/ (pymupdf parser)",
    )
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar on stderr")
    p.set_defaults(func=run_parse)


def password_kwargs(parser: Any, args: argparse.Namespace) -> dict[str, Any]:
    """``{"password": ...}`` for ``parser.run``/``parse`` when ``--password`` (or the environment)
    gives one; ``{}`` otherwise. A parser that cannot take a password is a usage error when
    ``--password`` was given explicitly."""
    password = pdf_password(args)
    if password is None:
        return {}
    if "password" not in {o.name for o in getattr(type(parser), "run_options", ())}:
        if args.password is None:  # from the environment: not for this parser
            return {}
        raise UsageError(f"--password: parser '{getattr(parser, 'name', parser)}' does not accept a password")
    return {"password": password}


def output_stems(pdfs: list[Path]) -> list[str]:
    """One output name per input: the file's stem, made distinct within the run (``x``, ``x-2``,
    ...; compared case-insensitively, as on macOS/Windows file systems)."""
    taken: set[str] = set()
    stems = []
    for pdf in pdfs:
        stem = pdf.stem or pdf.name or "document"
        candidate, n = stem, 1
        while candidate.casefold() in taken:
            n += 1
            candidate = f"{stem}-{n}"
        taken.add(candidate.casefold())
        stems.append(candidate)
    return stems


def _drop_types(keep: str) -> frozenset[ParsingResultType]:
    if not keep.strip():
        return DEFAULT_DROP_TYPES
    if keep.strip().lower() == "all":
        return frozenset()
    kept = set()
    for name in keep.split(","):
        name = name.strip().upper()
        if not name:
            continue
        try:
            kept.add(ParsingResultType(name))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--keep: unknown element type {name!r}; use names like {_TYPE_NAMES}"
            ) from None
    return frozenset(DEFAULT_DROP_TYPES - kept)


def _accepts(cls: Any, name: str) -> bool:
    """Whether the parser class declares the constructor option ``name``."""
    return name in {o.name for o in (cls.declared_options() or ())}


def _images_of(parser: Any, pdf: Path) -> dict[str, int] | None:
    """The figure PNGs of ``pdf`` already in the parser's image folder (name -> mtime in ns), or None
    when the parser writes no images."""
    folder = getattr(parser, "image_dir", None)
    if folder is None:
        return None
    prefix = f"{pdf.stem}-p"
    try:
        return {e.name: e.stat(follow_symlinks=False).st_mtime_ns for e in os.scandir(folder)
                if e.name.startswith(prefix) and e.name.endswith(".png")}
    except OSError:
        return {}


def _remove_new_images(parser: Any, pdf: Path, before: dict[str, int] | None) -> None:
    """After a failed parse: remove the PNGs it wrote (new, or rewritten since ``before``), so a
    failure leaves no images of a tree that was never saved."""
    if before is None:
        return
    folder = Path(parser.image_dir)
    for name, mtime in (_images_of(parser, pdf) or {}).items():
        if before.get(name) != mtime:
            try:
                (folder / name).unlink()
            except OSError as exc:
                log.warning("cannot remove %s left by the failed parse: %s", escape_controls(str(folder / name)), exc)


def _build_parser(args: argparse.Namespace, progress: Callable[[int, int], None] | None, image_dir: Path | None) -> Any:
    cls = parser_class(args.parser)
    kwargs: dict[str, Any] = {"drop_types": _drop_types(args.keep)}
    if args.workers != 1:
        if args.workers < 1:
            raise argparse.ArgumentTypeError("--workers must be >= 1")
        if _accepts(cls, "workers"):
            kwargs["workers"] = args.workers
    if progress is not None and _accepts(cls, "progress"):
        kwargs["progress"] = progress
    if image_dir is not None and _accepts(cls, "image_dir"):
        kwargs["image_dir"] = image_dir
    kwargs.update(given_parser_options(args, args.parser))  # --ocr, --ocr-dpi, ...: by the parser's declaration
    return cls(**cls.check_options(kwargs))


def run_parse(args: argparse.Namespace) -> int:
    """Parse every PDF; a failing file (input or output) does not stop the others (exit 1 at the end)."""
    from tqdm import tqdm

    show = not args.no_progress
    current: dict[str, Any] = {}

    def progress(done: int, count: int) -> None:
        bar = current.get("bar")
        if bar is None:
            return
        if bar.total != count:
            bar.total = count
        bar.n = done
        bar.refresh()

    try:
        parser = _build_parser(args, progress, args.out / "images" if args.images else None)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(str(exc)) from None
    failures: list[str] = []
    total = len(args.pdfs)
    stems = output_stems(args.pdfs)
    inputs = InputFiles(args.pdfs)
    try:
        extra = password_kwargs(parser, args)
        for n, (pdf, stem) in enumerate(zip(args.pdfs, stems), 1):
            if stem != (pdf.stem or pdf.name):
                print(f"grounded parse: note: {escape_controls(str(pdf))} -> {escape_controls(stem)}.json, "
                      f"{escape_controls(stem)}.md (the name {pdf.stem!r} is taken "
                      "by an earlier input of this run)", file=sys.stderr)
            bar = tqdm(
                total=None,
                unit="page",
                desc=f"[{n}/{total}] {escape_controls(pdf.name)}",
                file=sys.stderr,
                disable=None if show else True,
                leave=False,
            )
            current["bar"] = bar
            started = time.perf_counter()
            images_before = _images_of(parser, pdf)
            try:
                outputs = (args.out / f"{stem}.json", args.out / f"{stem}.md")
                inputs.refuse(outputs)
                for target in outputs:
                    check_output_name(target)
                output = parser.run(pdf, **extra)
                json_path, md_path = output.save(args.out, stem)
            except (GroundedError, OSError) as exc:
                failures.append(str(pdf))
                _remove_new_images(parser, pdf, images_before)
                print(f"grounded parse: error: {one_line(exc)}", file=sys.stderr)
                continue
            except Exception as exc:  # a bug: report it with its traceback, go on with the other files
                failures.append(str(pdf))
                _remove_new_images(parser, pdf, images_before)
                log.error("%s: unexpected %s (please report this bug)", escape_controls(str(pdf)), type(exc).__name__, exc_info=True)
                continue
            except BaseException:  # interrupted (Ctrl-C): no images of an unsaved tree either
                _remove_new_images(parser, pdf, images_before)
                raise
            finally:
                bar.close()
                current.pop("bar", None)
            root = output.root
            elements = sum(1 for _ in root.walk()) - 1
            print(
                f"{escape_controls(str(pdf))} -> {escape_controls(str(json_path))}, {escape_controls(str(md_path))} ({root.info.page_count} pages, "
                f"{elements} elements, {time.perf_counter() - started:.1f} s)"
            )
    finally:
        close = getattr(parser, "close", None)
        if callable(close):
            close()
    if failures and total > 1:
        raise BatchError(f"{len(failures)} of {total} file(s) failed: {', '.join(failures)}")
    return 1 if failures else 0
