"""Drop-in where users arrive (issue 31.5): the frameworks' own readers, loaders and splitters feed
grounded's node parser / text splitter / grounding wrappers - what share of the chunks get boxes,
and do the boxes show the chunk's words?

Run: ``python benchmarks/dropin_boxes.py [--pdf X.pdf ...] [--size 256] [--save docs/results/dropin_boxes.md]``.
Default PDFs: the shared ``pdfs/cermine_medical/test2.pdf`` (2-column), ``test1.pdf``,
``web_example2.pdf`` and ``long/*.pdf`` (3-column Federal Register, 2-column Clinical Science,
1-column PeerJ). One temporary ``GROUNDED_CACHE_DIR`` for the whole run: each PDF is parsed once
(timed apart, first row) and every row finds the parse in the cache.

Printed per row (all PDFs pooled): chunks, share with boxes, mean and min word recall / precision of
the boxes (:func:`grounded.evaluation.box_words.box_word_scores`: the PDF's words whose centre lies
in a chunk's line boxes vs the chunk's words), seconds (reader + splitter + grounding, parse cached),
and the GroundingWarnings raised. ``chunk_size`` is ``--size`` tokens (MiniLM) for grounded's
splitters, ``--size`` * 4 characters for the frameworks' own splitters applied first.

Rows: the frameworks' readers -> GroundedNodeParser / GroundedTextSplitter (the reader's text is
chunked and each chunk grounded in the PDF), their splitters applied first, the grounding wrappers,
and grounded's own GroundedPDFReader(split_pages=True) / GroundedPDFLoader (chunk the parsed PDF per
page / per file) as the alternative.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"
DEFAULT_PDFS = [
    DATA / "pdfs" / "cermine_medical" / "test2.pdf",
    DATA / "pdfs" / "cermine_medical" / "test1.pdf",
    DATA / "pdfs" / "cermine_medical" / "web_example2.pdf",
    *sorted((DATA / "long").glob("*.pdf")),
]
SCRIPT = "benchmarks/dropin_boxes.py"

Items = list[tuple[str, list[Any]]]  # (chunk text, its boxes)


# -- readers -----------------------------------------------------------------------------------------
def sdr(pdf: Path) -> list:
    from llama_index.core import SimpleDirectoryReader

    return SimpleDirectoryReader(input_files=[str(pdf)]).load_data()


def pymupdf_reader(pdf: Path) -> list:
    from llama_index.readers.file import PyMuPDFReader

    return PyMuPDFReader().load_data(str(pdf))


def markdown_reader(pdf: Path) -> list:
    import pymupdf4llm

    return pymupdf4llm.LlamaMarkdownReader().load_data(str(pdf))


def pymupdf_loader(pdf: Path) -> list:
    from langchain_community.document_loaders import PyMuPDFLoader

    return PyMuPDFLoader(str(pdf)).load()


def pypdf_loader(pdf: Path) -> list:
    from langchain_community.document_loaders import PyPDFLoader

    return PyPDFLoader(str(pdf)).load()


def pymupdf4llm_loader(pdf: Path) -> list:
    from langchain_pymupdf4llm import PyMuPDF4LLMLoader

    return PyMuPDF4LLMLoader(str(pdf)).load()


# -- rows: pdf -> (chunk text, boxes) ------------------------------------------------------------------
def _shown(item: Any) -> list:
    """What ``grounded.attribution.highlight`` draws for a node/Document: its boxes (checked against
    its text), then the page furniture grounding found for it (running headers the parse drops)."""
    from grounded.attribution.geometry import chunk_boxes
    from grounded.metadata import chunk_of

    return chunk_boxes(chunk_of(item), "<benchmark>")


def _li_items(nodes: list) -> Items:
    return [(n.text, _shown(n)) for n in nodes]


def _lc_items(docs: list) -> Items:
    return [(d.page_content, _shown(d)) for d in docs]


def rows(size: int, cache: str) -> dict[str, tuple[str, Callable[[Path], Items]]]:
    chars = size * 4

    def node_parser() -> Any:
        from llama_index_grounded import GroundedNodeParser

        return GroundedNodeParser(max_tokens=size, cache_dir=cache)

    def text_splitter() -> Any:
        from langchain_grounded import GroundedTextSplitter

        return GroundedTextSplitter(chunk_size=size, chunk_overlap=0, cache=cache)

    def li(reader: Callable[[Path], list]) -> Callable[[Path], Items]:
        return lambda pdf: _li_items(node_parser().get_nodes_from_documents(reader(pdf)))

    def lc(loader: Callable[[Path], list]) -> Callable[[Path], Items]:
        return lambda pdf: _lc_items(text_splitter().split_documents(loader(pdf)))

    def sentence_first(pdf: Path) -> Items:
        from llama_index.core.node_parser import SentenceSplitter

        parts = SentenceSplitter(chunk_size=chars // 4, chunk_overlap=0).get_nodes_from_documents(sdr(pdf))
        return _li_items(node_parser().get_nodes_from_documents(parts))

    def grounding_node_parser(pdf: Path) -> Items:
        from llama_index.core.node_parser import SentenceSplitter

        from llama_index_grounded import GroundingNodeParser

        wrapped = GroundingNodeParser(SentenceSplitter(chunk_size=size, chunk_overlap=0), cache_dir=cache)
        return _li_items(wrapped.get_nodes_from_documents(sdr(pdf)))

    def recursive_first(pdf: Path) -> Items:
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        parts = RecursiveCharacterTextSplitter(chunk_size=chars, chunk_overlap=0).split_documents(pymupdf_loader(pdf))
        return _lc_items(text_splitter().split_documents(parts))

    def grounding_splitter(pdf: Path) -> Items:
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        from langchain_grounded import GroundingSplitter

        wrapped = GroundingSplitter(RecursiveCharacterTextSplitter(chunk_size=chars, chunk_overlap=0), cache=cache)
        return _lc_items(wrapped.split_documents(pymupdf_loader(pdf)))

    def grounded_pages(pdf: Path) -> Items:
        from llama_index_grounded import GroundedPDFReader

        docs = GroundedPDFReader(split_pages=True, cache_dir=cache).load_data(pdf)
        return _li_items(node_parser().get_nodes_from_documents(docs))

    def grounded_file(pdf: Path) -> Items:
        from llama_index_grounded import GroundedPDFReader

        docs = GroundedPDFReader(cache_dir=cache).load_data(pdf)
        return _li_items(node_parser().get_nodes_from_documents(docs))

    def grounded_loader(pdf: Path) -> Items:
        from langchain_grounded import GroundedPDFLoader

        return _lc_items(GroundedPDFLoader(pdf, max_tokens=size, cache=cache).load())

    return {
        "SimpleDirectoryReader (PDFReader) -> GroundedNodeParser": ("LlamaIndex", li(sdr)),
        "PyMuPDFReader -> GroundedNodeParser": ("LlamaIndex", li(pymupdf_reader)),
        "LlamaMarkdownReader -> GroundedNodeParser": ("LlamaIndex", li(markdown_reader)),
        f"SimpleDirectoryReader -> SentenceSplitter({size}) -> GroundedNodeParser": ("LlamaIndex", sentence_first),
        f"SimpleDirectoryReader -> GroundingNodeParser(SentenceSplitter({size}))": ("LlamaIndex", grounding_node_parser),
        "GroundedPDFReader(split_pages=True) -> GroundedNodeParser": ("LlamaIndex", grounded_pages),
        "GroundedPDFReader (one Document per PDF) -> GroundedNodeParser": ("LlamaIndex", grounded_file),
        "PyMuPDFLoader -> GroundedTextSplitter": ("LangChain", lc(pymupdf_loader)),
        "PyPDFLoader -> GroundedTextSplitter": ("LangChain", lc(pypdf_loader)),
        "PyMuPDF4LLMLoader -> GroundedTextSplitter": ("LangChain", lc(pymupdf4llm_loader)),
        f"PyMuPDFLoader -> RecursiveCharacterTextSplitter({chars} chars) -> GroundedTextSplitter": ("LangChain", recursive_first),
        f"PyMuPDFLoader -> GroundingSplitter(RecursiveCharacterTextSplitter({chars} chars))": ("LangChain", grounding_splitter),
        "GroundedPDFLoader (chunks of the parsed PDF)": ("LangChain", grounded_loader),
    }


def measure(name: str, run: Callable[[Path], Items], pdfs: list[Path]) -> dict[str, Any]:
    from grounded.evaluation.box_words import box_word_scores
    from grounded.metadata import GroundingWarning

    n = boxed = 0
    recall: list[float] = []
    precision: list[float] = []
    seconds = 0.0
    warned = 0
    for pdf in pdfs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            items = run(pdf)
            seconds += time.perf_counter() - t0
        warned += sum(1 for w in caught if issubclass(w.category, GroundingWarning))
        n += len(items)
        with_boxes = [(t, b) for t, b in items if b]
        boxed += len(with_boxes)
        for s in box_word_scores(pdf, with_boxes):
            if s.recall is not None and s.precision is not None:
                recall.append(s.recall)
                precision.append(s.precision)
    return {
        "name": name, "chunks": n, "boxed": boxed / n if n else 0.0,
        "recall": statistics.mean(recall) if recall else float("nan"), "min_recall": min(recall, default=float("nan")),
        "precision": statistics.mean(precision) if precision else float("nan"),
        "min_precision": min(precision, default=float("nan")), "seconds": seconds, "warnings": warned,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdf", action="append", type=Path, help="PDF (repeatable; default: the shared set)")
    ap.add_argument("--size", type=int, default=256, help="grounded chunk size in MiniLM tokens (default 256)")
    ap.add_argument("--only", default="", help="run only rows whose name contains this")
    ap.add_argument("--per-pdf", action="store_true", help="one row per reader/splitter and PDF")
    ap.add_argument("--cache-dir", type=Path, help="GROUNDED_CACHE_DIR to use and keep (default: a temporary one)")
    ap.add_argument("--save", type=Path, help="also write the Markdown table here")
    args = ap.parse_args(argv)
    pdfs = args.pdf or [p for p in DEFAULT_PDFS if p.exists()]
    warnings.filterwarnings("ignore", category=DeprecationWarning)

    with tempfile.TemporaryDirectory(prefix="dropin_boxes_") as tmp:
        cache = str(args.cache_dir or tmp)
        os.environ["GROUNDED_CACHE_DIR"] = cache
        from llama_index_grounded import GroundedPDFReader

        _warm_imports()
        cache_dir = str(Path(cache) / "parses")  # = the default parse cache under this GROUNDED_CACHE_DIR
        t0 = time.perf_counter()
        for pdf in pdfs:  # the default parse, once: every row below finds it in the cache
            GroundedPDFReader(cache_dir=cache_dir).load_data(pdf)
        parse_s = time.perf_counter() - t0
        results = []
        for name, (framework, run) in rows(args.size, cache_dir).items():
            if args.only and args.only not in name:
                continue
            for group in ([[p] for p in pdfs] if args.per_pdf else [pdfs]):
                r = measure(name + (f" [{group[0].name}]" if args.per_pdf else ""), run, group)
                r["framework"] = framework
                results.append(r)
                print(f"{framework:10} {r['name']}: {r['chunks']} chunks, {r['boxed']:.1%} boxed, "
                      f"R {r['recall']:.3f}/{r['min_recall']:.3f} P {r['precision']:.3f}/{r['min_precision']:.3f}, "
                      f"{r['seconds']:.1f} s, {r['warnings']} warnings", file=sys.stderr, flush=True)

    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    lines = [
        f"Command: `python {SCRIPT}{''.join(f' --pdf {p}' for p in (args.pdf or []))} --size {args.size}"
        f"{' --per-pdf' if args.per_pdf else ''}{f' --only {args.only!r}' if args.only else ''}"
        f"{f' --cache-dir {args.cache_dir}' if args.cache_dir else ''}`",
        "",
        f"PDFs ({len(pdfs)}, {sum(_pages(p) for p in pdfs)} pages): {', '.join(p.name for p in pdfs)}. "
        f"Default parse of all of them, once, into {'the' if args.cache_dir else 'a temporary'} GROUNDED_CACHE_DIR: "
        f"{parse_s:.1f} s (not in the rows' seconds).",
        "",
        f"Load: `{load}`",
        "",
        "| framework | reader / splitter | chunks | with boxes | recall mean | recall min | precision mean | precision min | s | GroundingWarnings |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['framework']} | {r['name']} | {r['chunks']} | {r['boxed']:.1%} | {r['recall']:.3f} | {r['min_recall']:.3f} "
            f"| {r['precision']:.3f} | {r['min_precision']:.3f} | {r['seconds']:.1f} | {r['warnings']} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.save:
        args.save.write_text(text, encoding="utf-8")
    return 0


def _warm_imports() -> None:
    """Import the frameworks before timing (a row's seconds are not its first import)."""
    import langchain_community.document_loaders  # noqa: F401
    import langchain_pymupdf4llm  # noqa: F401
    import langchain_text_splitters  # noqa: F401
    import llama_index.core  # noqa: F401
    import llama_index.readers.file  # noqa: F401
    import pymupdf4llm  # noqa: F401

    import langchain_grounded  # noqa: F401
    import llama_index_grounded  # noqa: F401


def _pages(pdf: Path) -> int:
    import pymupdf

    with pymupdf.open(str(pdf)) as doc:
        return doc.page_count


if __name__ == "__main__":
    raise SystemExit(main())
