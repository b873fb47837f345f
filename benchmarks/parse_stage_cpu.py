"""Where a page's CPU goes: grounded's parse + chunk vs pymupdf4llm + LangChain, per stage.

Run: ``python benchmarks/parse_stage_cpu.py [ours|baseline] [--rounds R]`` (default: both, each in a
fresh process; about 2 min per side on 2 quiet cores). Over the three shared long PDFs (44 pages),
after one warm-up pass, each named function is wrapped by a CPU timer (process CPU time: ONNX
Runtime's threads included) and the table prints inclusive CPU ms per page and calls -- nested
stages are part of their callers (``parse_document`` holds ``get_layout``; ``_transform`` holds
``tree.add_page`` holds ``build_lines``). The layout model runs with each library's own thread
settings (printed). The wrappers add a little time of their own to the many small calls.
"""

from __future__ import annotations

import collections
import functools
import importlib
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FILES = sorted((REPO.parent / "shared" / "data" / "long").glob("*.pdf"))
ACC: collections.Counter[str] = collections.Counter()
CALLS: collections.Counter[str] = collections.Counter()

SHARED = [  # (module, function, label): the layout pass both sides run
    ("pymupdf4llm.helpers.document_layout", "parse_document", "pymupdf4llm parse_document (layout pass)"),
    ("pymupdf4llm.helpers.document_layout", "get_layout_locked", "  of it: layout model (get_layout)"),
    ("pymupdf4llm.helpers.document_layout", "ParsedDocument.to_markdown", "ParsedDocument.to_markdown"),
]
OURS = [
    ("grounded.runtime.memory", "_text_page_fonts", "  of the layout model: font walk (font-ref balance)"),
    ("grounded.parsers.source", "inspect_pdf", "inspect_pdf (input check)"),
    ("grounded.parsers.backends.pymupdf.parser", "PyMuPDFParser._parse", "_parse (views + layout pass)"),
    ("grounded.parsers.backends.pymupdf.layout", "_prepare_views", "  _prepare_views (turn, scale, budget)"),
    ("grounded.parsers.backends.pymupdf.parser", "PyMuPDFParser._transform", "_transform (tree from the text layer)"),
    ("grounded.parsers.textlayer", "PageChars.from_page", "  PageChars.from_page (rawdict)"),
    ("grounded.parsers.backends.pymupdf.tree", "_TreeBuilder.add_page", "  tree.add_page"),
    ("grounded.parsers.textlayer", "build_lines", "    build_lines"),
    ("grounded.parsers.textlayer", "lines_to_spans", "    lines_to_spans"),
    ("grounded.parsers.column_split", "split_columns", "    split_columns"),
    ("grounded.parsers.backends.pymupdf.tree", "_TreeBuilder.finish", "  tree.finish (hyphens, headings)"),
    ("grounded.parsers.base", "BaseParser.finish", "finish (post-processing)"),
    ("grounded.chunking", "Chunker.chunk", "chunk (recursive, 256)"),
]


def _patch(module: str, qualname: str, label: str) -> None:
    """Wrap ``module.qualname`` (and every loaded module's binding of a module-level function)."""
    owner: Any = importlib.import_module(module)
    *path, name = qualname.split(".")
    for part in path:
        owner = getattr(owner, part)
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            ACC[label] += time.process_time() - started
            CALLS[label] += 1

    setattr(owner, name, timed)
    if not path:
        for mod in list(sys.modules.values()):
            if getattr(mod, name, None) is fn:
                setattr(mod, name, timed)


def side(which: str, rounds: int) -> None:
    if which == "ours":
        from grounded.chunking import Chunker
        from grounded.parsers import get_parser
        from grounded.parsers.backends.pymupdf import parser as _parser  # noqa: F401  (bindings to patch)
        from grounded.parsers.backends.pymupdf import tree as _tree  # noqa: F401
        from grounded.parsers.backends.pymupdf.layout import layout_threads_setting

        parser = get_parser("pymupdf", ocr="never")
        chunker = Chunker("recursive", 256)
        for spec in SHARED + OURS:
            _patch(*spec)

        def work() -> int:
            pages = 0
            for pdf in FILES:
                root = parser.parse(pdf)
                chunker.chunk(root)
                pages += int(root.metadata["page_count"])
            return pages
    else:
        import pymupdf
        import pymupdf4llm
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        from grounded.parsers.backends.pymupdf.layout import layout_threads_setting
        from grounded.text.tokenizer import minilm_tokenizer

        splitter = RecursiveCharacterTextSplitter(chunk_size=256, chunk_overlap=0, length_function=minilm_tokenizer().count)
        for spec in SHARED:
            _patch(*spec)

        def work() -> int:
            pages = 0
            for pdf in FILES:
                c0 = time.process_time()
                markdown = pymupdf4llm.to_markdown(str(pdf), show_progress=False, use_ocr=False)
                c1 = time.process_time()
                splitter.split_text(markdown)
                ACC["pymupdf4llm.to_markdown (all)"] += c1 - c0
                ACC["RecursiveCharacterTextSplitter (256 MiniLM tokens)"] += time.process_time() - c1
                with pymupdf.open(pdf) as doc:
                    pages += doc.page_count
            return pages

    work()  # warm-up
    ACC.clear()
    CALLS.clear()
    c0, w0 = time.process_time(), time.perf_counter()
    pages = sum(work() for _ in range(rounds))
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    label = "grounded parse + chunk" if which == "ours" else "pymupdf4llm + LangChain"
    print(f"### {label} ({layout_threads_setting()}; {pages} pages; load {_load()})\n")
    print("| stage | CPU ms / page | calls |\n| --- | ---: | ---: |")
    print(f"| **total** | **{1000 * cpu / pages:.1f}** (wall {1000 * wall / pages:.0f}) | |")
    for name, seconds in sorted(ACC.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {1000 * seconds / pages:.1f} | {CALLS[name] or ''} |")
    print()


def _load() -> str:
    import os

    one, five, _ = os.getloadavg()
    return f"{one:.1f}/{five:.1f} on {os.cpu_count()} cores"


def main() -> int:
    args = sys.argv[1:]
    rounds = 1
    if "--rounds" in args:
        k = args.index("--rounds")
        rounds, args = int(args[k + 1]), args[:k] + args[k + 2:]
    if args:
        side(args[0], rounds)
        return 0
    for which in ("ours", "baseline"):
        done = subprocess.run([sys.executable, __file__, which, "--rounds", str(rounds)], capture_output=True, text=True, check=False)
        print(done.stdout, end="")
        if done.returncode:
            print(done.stderr[-2000:], file=sys.stderr)
            return done.returncode
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
