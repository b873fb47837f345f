"""The evaluation runs behind ``grounded eval``: data sets + parser/chunkers -> results.

Parses are cached on disk (``<cache>/parses/<parser>-<grounded version>-<tool version + parser
code hash>/<stem>-<sha256[:16]>.json|.md``, keyed by the PDF's bytes, the parser, the grounded
version, the backend tool's version and the source of grounded's parsing code, so an edit to a
parser never serves a stale parse) and re-running an evaluation does not re-parse. The embedding cache lives beside it
(:mod:`.embeddings`). The default cache root is ``$GROUNDED_CACHE_DIR`` or ``~/.cache/grounded``.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import GroundedError, InputNotFoundError, SchemaError, escape_controls
from ..io.codec import load_parse_pair, save_parse_pair
from ..model.elements import ParsingResult
from .dla import DLAResult, Layout, evaluate_layout, require_alignment
from .errors import EvaluationError

__all__ = [
    "data_dir",
    "cache_root",
    "ParsedDocument",
    "parse_cached",
    "run_dla_icdar",
    "run_dla_docling",
    "run_dla_publaynet",
    "run_content",
    "run_chunking",
    "reproduction_chunkers",
    "grid_chunkers",
    "GRID_STRATEGIES",
    "GRID_SIZES",
    "GRID_OVERLAPS",
    "GRID_PERCENTILES",
    "Progress",
    "no_progress",
    "tqdm_progress",
    "chroma_row",
]

log = logging.getLogger(__name__)

GRID_STRATEGIES = ("fixed", "recursive", "semantic", "hierarchical")
GRID_SIZES = (128, 256, 512, 1024)
GRID_OVERLAPS = (0.0, 0.2)
GRID_PERCENTILES = (0.7, 0.9)
Progress = Callable[[Iterable[Any], str, int], Iterable[Any]]


def no_progress(items: Iterable[Any], desc: str, total: int) -> Iterable[Any]:
    return items


def tqdm_progress(items: Iterable[Any], desc: str, total: int) -> Iterable[Any]:
    from tqdm import tqdm

    return tqdm(items, desc=desc, total=total, unit="doc", leave=False)


def data_dir(data: str | Path | None = None) -> Path:
    """The evaluation data folder: ``data`` if given, else ``$GROUNDED_EVAL_DATA``; there is no
    default (the product never guesses a data location), so neither raises :class:`EvaluationError`."""
    if data is not None:
        return Path(data).expanduser()
    env = os.environ.get("GROUNDED_EVAL_DATA")
    if env:
        return Path(env).expanduser()
    raise EvaluationError("no evaluation data folder: pass --data DIR or set GROUNDED_EVAL_DATA")


def cache_root(cache_dir: str | Path | None = None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    base = os.environ.get("GROUNDED_CACHE_DIR")
    return Path(base).expanduser() if base else Path.home() / ".cache" / "grounded"


def _require_dir(path: Path, what: str) -> Path:
    if not path.is_dir():
        raise InputNotFoundError(path, f"{what} not found (pass --data DIR or set GROUNDED_EVAL_DATA)")
    return path


# -- parsing with a disk cache ---------------------------------------------------------------------
@dataclass
class ParsedDocument:
    name: str
    root: ParsingResult | None
    markdown: str
    error: str | None = None


def parse_cached(pdf: Path, parser_name: str = "pymupdf", cache_dir: str | Path | None = None,
                 use_cache: bool = True, parser: Any = None) -> ParsedDocument:
    """Parse ``pdf`` (or load the cached parse). A parser failure is returned as ``error`` (logged),
    so one bad file cannot stop a benchmark; callers score it as an empty prediction."""
    from ..parsers.cache import file_sha256
    from ..runtime.code_version import parser_code_version
    from ..runtime.version import __version__

    if parser is None:
        parser = _parser(parser_name)
    tool = hashlib.sha256(f"{parser.version()}|{parser_code_version()}".encode()).hexdigest()[:8]
    digest = file_sha256(pdf)[:16]
    folder = cache_root(cache_dir) / "parses" / f"{parser_name}-{__version__}-{tool}"
    stem = f"{pdf.stem}-{digest}"
    json_path, md_path = folder / f"{stem}.json", folder / f"{stem}.md"
    if use_cache and json_path.is_file() and md_path.is_file():
        try:
            root, markdown = load_parse_pair(json_path, md_path)
            return ParsedDocument(pdf.stem, root, markdown)
        except SchemaError as exc:  # a damaged or mixed cache entry is parsed again, not trusted
            log.warning("ignoring the cached parse of %s: %s", escape_controls(str(pdf)), exc)
    try:
        out = parser.run(pdf)
    except GroundedError as exc:
        log.warning("parsing %s failed: %s", escape_controls(str(pdf)), exc)
        return ParsedDocument(pdf.stem, None, "", error=str(exc))
    if use_cache:
        save_parse_pair(out.root, out.markdown, json_path, md_path)
    return ParsedDocument(pdf.stem, out.root, out.markdown)


def _parser(name: str) -> Any:
    from ..parsers import get_parser

    try:
        return get_parser(name)
    except ValueError as exc:  # unknown registry name
        raise EvaluationError(str(exc)) from exc


# -- DLA -----------------------------------------------------------------------------------------------
def _merge(layouts: Iterable[Layout]) -> Layout:
    out = Layout()
    for lay in layouts:
        out.pages.update(lay.pages)
        out.boxes.extend(lay.boxes)
    return out


def run_dla_icdar(data_dir: Path, parser_name: str = "pymupdf", *, limit: int | None = None,
                  cache_dir: str | Path | None = None, use_cache: bool = True,
                  progress: Progress = no_progress) -> DLAResult:
    """Table detection F1 of ``parser_name`` on the ICDAR-2013 PDFs (TABLE -> "table")."""
    from .dla_data import ICDAR_TYPES, icdar_documents, layout_from_tree, read_icdar_regions

    docs = icdar_documents(_require_dir(data_dir / "pdfs" / "icdar2013_tables", "ICDAR-2013 folder"))[:limit]
    gts, preds, failed = [], [], []
    parser = _parser(parser_name)
    for name, pdf, reg in progress(docs, "ICDAR-2013", len(docs)):
        gts.append(read_icdar_regions(reg, pdf, name))
        doc = parse_cached(pdf, parser_name, cache_dir, use_cache, parser)
        if doc.root is None:
            failed.append(name)
            continue
        preds.append(layout_from_tree(doc.root, ICDAR_TYPES, name))
    meta = {"dataset": "ICDAR-2013 table regions", "parser": parser_name, "documents": len(docs),
            "failed": failed, "class_map": {"TABLE": "table"}}
    return evaluate_layout(_merge(gts), _merge(preds), ["table"], meta=meta)


def run_dla_docling(data_dir: Path, parser_name: str = "pymupdf", *, cache_dir: str | Path | None = None,
                    use_cache: bool = True, progress: Progress = no_progress) -> DLAResult:
    """Layout agreement of ``parser_name`` with Docling's reference output (model output, not human GT)."""
    from .dla_data import (
        DOCLING_CLASSES,
        DOCLING_TEXT_CLASSES,
        DOCLING_TYPES,
        layout_from_tree,
        read_docling_layout,
    )

    folder = _require_dir(data_dir / "pdfs" / "docling_groundtruth", "Docling reference folder")
    pdfs = sorted(p for p in folder.glob("*.pdf") if (folder / f"{p.stem}.json").is_file())
    gts, preds, failed = [], [], []
    parser = _parser(parser_name)
    for pdf in progress(pdfs, "Docling refs", len(pdfs)):
        ref = folder / f"{pdf.stem}.json"
        gts.append(read_docling_layout(ref, pdf.stem, pdf=pdf))
        doc = parse_cached(pdf, parser_name, cache_dir, use_cache, parser)
        if doc.root is None:
            failed.append(pdf.stem)
            continue
        preds.append(layout_from_tree(doc.root, DOCLING_TYPES, pdf.stem))
        # a text page on which nothing matches means the two sides are in different coordinates
        require_alignment(gts[-1], preds[-1], f"{ref} vs the {parser_name} parse of {pdf.name}", DOCLING_TEXT_CLASSES)
    meta = {"dataset": "Docling reference layouts", "parser": parser_name, "documents": len(pdfs), "failed": failed,
            "class_map": {t.value: c for t, c in DOCLING_TYPES.items()}}
    return evaluate_layout(_merge(gts), _merge(preds), DOCLING_CLASSES, meta=meta)


def run_dla_publaynet(gt_path: Path, predictions: Path | Sequence[ParsingResult]) -> DLAResult:
    """PubLayNet F1 of predictions given as a COCO detection JSON or as parse trees of the page
    images (one tree per image, its source file stem = the image's file stem)."""
    from .dla_data import PUBLAYNET_CLASSES, PUBLAYNET_TYPES, read_coco, read_coco_predictions

    gt, _ = read_coco(gt_path)
    if isinstance(predictions, (str, Path)):
        pred = read_coco_predictions(predictions, gt_path)
        source = str(predictions)
    else:
        trees = list(predictions)
        pred = _merge(_image_layout(t, gt) for t in trees)
        source = f"{len(trees)} parse trees"
    meta = {"dataset": "PubLayNet", "predictions": source,
            "class_map": {t.value: c for t, c in PUBLAYNET_TYPES.items()}}
    return evaluate_layout(gt, pred, PUBLAYNET_CLASSES, meta=meta)


def _image_layout(tree: ParsingResult, gt: Layout) -> Layout:
    """Page-1 boxes of a parsed page image, rescaled from the parse's page size to the image pixels
    and keyed by the image stem (the COCO ground truth's page key)."""
    from .dla import LayoutBox
    from .dla_data import PUBLAYNET_TYPES, layout_from_tree

    stem = Path(str((tree.info.source or {}).get("path", ""))).stem
    if stem not in gt.pages:
        log.warning("parse of %r matches no PubLayNet image; ignored", stem)
        return Layout()
    lay = layout_from_tree(tree, PUBLAYNET_TYPES, stem)
    pw, ph = lay.pages.get(f"{stem}#1", (1.0, 1.0))
    iw, ih = gt.pages[stem]
    sx, sy = iw / pw, ih / ph
    boxes = [LayoutBox(stem, b.label, b.x * sx, b.y * sy, b.w * sx, b.h * sy) for b in lay.boxes if b.page_key == f"{stem}#1"]
    return Layout({stem: (iw, ih)}, boxes)


# -- content ---------------------------------------------------------------------------------------------
@dataclass
class ContentRun:
    docling: list[Any] = field(default_factory=list)  # DocumentScore per Docling reference document
    icdar: list[Any] = field(default_factory=list)  # DocumentScore (tables only) per ICDAR document
    failed: list[str] = field(default_factory=list)
    parser: str = "pymupdf"


def run_content(data_dir: Path, parser_name: str = "pymupdf", *, datasets: Sequence[str] = ("docling", "icdar"),
                limit: int | None = None, cache_dir: str | Path | None = None, use_cache: bool = True,
                progress: Progress = no_progress) -> ContentRun:
    """Score the parser's Markdown against Docling references (text, tables, reading order) and
    ICDAR-2013 cell structure (tables)."""
    from .content_data import DocumentContent, extract_markdown, read_docling_content, read_icdar_tables
    from .content_eval import score_document
    from .dla_data import icdar_documents

    run = ContentRun(parser=parser_name)
    parser = _parser(parser_name)
    if "docling" in datasets:
        folder = _require_dir(data_dir / "pdfs" / "docling_groundtruth", "Docling reference folder")
        pdfs = sorted(p for p in folder.glob("*.pdf") if (folder / f"{p.stem}.json").is_file())[:limit]
        for pdf in progress(pdfs, "content/Docling", len(pdfs)):
            doc = parse_cached(pdf, parser_name, cache_dir, use_cache, parser)
            if doc.error:
                run.failed.append(pdf.stem)
            ref = read_docling_content(folder / f"{pdf.stem}.json")
            run.docling.append(score_document(pdf.stem, ref, extract_markdown(doc.markdown)))
    if "icdar" in datasets:
        docs = icdar_documents(_require_dir(data_dir / "pdfs" / "icdar2013_tables", "ICDAR-2013 folder"))[:limit]
        for name, pdf, reg in progress(docs, "content/ICDAR", len(docs)):
            structure = reg.with_name(reg.name.replace("-reg.xml", "-str.xml"))
            if not structure.is_file():
                continue
            doc = parse_cached(pdf, parser_name, cache_dir, use_cache, parser)
            if doc.error:
                run.failed.append(name)
            ref = DocumentContent(tables=[t for _, t in read_icdar_tables(structure)])
            run.icdar.append(score_document(name, ref, extract_markdown(doc.markdown), text=False))
    return run


# -- chunking ---------------------------------------------------------------------------------------------
def reproduction_chunkers(cluster: bool = True) -> list[Any]:
    """Chroma's all-MiniLM-L6-v2 rows: Recursive and TokenText at 250/125, 250/0, 200/0 and (with
    ``cluster``) ClusterSemanticChunker at 250 and 200 = grounded's ``cluster`` strategy counting
    cl100k tokens with 50-token pieces, as Chroma ran it."""
    from .baseline_splitters import Cl100k
    from .chunking_eval import LangChainRecursive, LangChainTokenText

    enc = Cl100k()
    rows: list[Any] = [cls(size, overlap, enc) for size, overlap in ((250, 125), (250, 0), (200, 0))
                       for cls in (LangChainRecursive, LangChainTokenText)]
    if cluster:
        rows += [chroma_row("cluster", size, tokenizer="cl100k_base") for size in (250, 200)]
    return rows


def _chroma_row_class() -> type:
    """A grounded strategy as one row of Chroma's table (``splitter`` / ``chunk_size`` /
    ``chunk_overlap`` params like the LangChain baselines); embedding strategies get the run's cached
    embedder from :meth:`GroundedCorpusChunker.chunk_corpus`."""
    from .chunking_eval import GroundedCorpusChunker

    class ChromaRow(GroundedCorpusChunker):
        def params(self) -> dict[str, Any]:
            length = f"{self.options['tokenizer']} tokens" if "tokenizer" in self.options else None
            return {**super().params(), "splitter": self.strategy, "chunk_size": self.max_tokens,
                    "chunk_overlap": self.overlap, **({"length": length} if length else {})}

    return ChromaRow


def chroma_row(strategy: str, max_tokens: int, overlap: int = 0, **options: Any) -> Any:
    return _chroma_row_class()(strategy, max_tokens, overlap, **options)


def grid_chunkers(strategies: Sequence[str] = GRID_STRATEGIES, sizes: Sequence[int] = GRID_SIZES,
                  overlaps: Sequence[float] = GRID_OVERLAPS,
                  percentiles: Sequence[float] = GRID_PERCENTILES) -> list[Any]:
    """This library's strategies at N in ``sizes`` and O in ``overlaps`` (a fraction of N if < 1).

    The semantic strategy has no overlap (its chunks are sentence groups), so it runs at the
    breakpoint percentiles Q in ``percentiles`` instead (thesis grid: Q in {0.7, 0.9}). Other
    parameters are the strategies' thesis defaults (semantic M = 0.5N; hierarchical B_h = 0.4N)."""
    from ..chunking.base import strategy_class
    from .chunking_eval import GroundedCorpusChunker

    out: list[GroundedCorpusChunker] = []
    for strategy in strategies:
        for n in sizes:
            if strategy == "semantic":
                out.extend(GroundedCorpusChunker(strategy, n, 0, percentile=q) for q in percentiles)
                continue
            if not strategy_class(strategy).supports_overlap:  # partitions (cluster, kamradt_mod): no overlap
                out.append(chroma_row(strategy, n))
                continue
            seen = set()
            for o in overlaps:
                ov = int(round(o * n)) if o < 1 else int(o)
                if ov not in seen:
                    seen.add(ov)
                    out.append(GroundedCorpusChunker(strategy, n, ov))
    return out


def run_chunking(data_dir: Path, chunkers: Sequence[Any], *, n_values: Sequence[int | str] = ("min", 5, 10),
                 corpora: Sequence[str] | None = None, limit: int | None = None, cache_dir: str | Path | None = None,
                 use_cache: bool = True, chroma_compat: bool = True, progress: Progress = no_progress) -> list[Any]:
    """Chroma evaluation of each chunker (shared MiniLM embedding cache)."""
    from .chroma_data import load_chroma_dataset
    from .chunking_eval import evaluate_chunker
    from .embeddings import minilm_embedder

    dataset = load_chroma_dataset(_require_dir(data_dir / "chroma", "Chroma data folder"))
    if corpora or limit:
        dataset = dataset.subset(list(corpora) if corpora else None, limit)
    embedder = minilm_embedder(cache_dir=cache_root(cache_dir) / "embeddings", use_cache=use_cache)
    results = []
    for chunker in progress(chunkers, "chunkers", len(chunkers)):
        if hasattr(chunker, "sentence_embedder") and chunker.sentence_embedder is None:
            chunker.sentence_embedder = embedder.embed  # semantic: sentence vectors cached like chunks
        log.info("evaluating %s %s", chunker.name, chunker.params())
        results.append(evaluate_chunker(dataset, chunker, embedder, n_values=n_values, chroma_compat=chroma_compat))
    return results
