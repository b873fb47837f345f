"""Chunking throughput and peak memory: grounded's strategies (boxes included) vs. other chunkers.

Run: ``python benchmarks/chunk_speed.py`` (parses ../shared/data/long once, cached under
``~/.cache/grounded/bench``). Every measurement runs in a fresh subprocess so peak RSS is its own.
All chunkers use the same all-MiniLM-L6-v2 tokenizer and N=256 tokens, no overlap, on the same
document text (``document_text`` of the parse tree; the 16x document concatenates the trees, each
copy's element texts tagged `` [c]`` so no chunker can reuse per-text caches across copies).
Each measurement is one cold run after building the chunker, in a fresh process; the fastest of
``--repeat`` (default 3) such processes is reported.

Printed: tokens/s (document tokens by the bare tokenizer / wall time), ratio to the bare
``tokenizers`` batch encode (the floor of any token-exact chunker) and to LangChain, and peak RSS.
Targets (issue 6): fixed/recursive/hierarchical >= 0.5x bare, linear in length (1x vs 16x),
peak RSS for the 16x document < 1 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _measure import peak_rss_mb  # benchmarks/ is sys.path[0] when run as a script

REPO = Path(__file__).resolve().parent.parent
LONG = REPO.parent / "shared" / "data" / "long"
CACHE = Path(os.environ.get("GROUNDED_BENCH_CACHE", Path.home() / ".cache" / "grounded" / "bench"))
N = 256
SCRIPT = "benchmarks/chunk_speed.py"

METHODS = [
    "bare_tokenizer",
    "grounded:fixed",
    "grounded:recursive",
    "grounded:hierarchical",
    "grounded:semantic",
    "langchain_recursive",
    "llamaindex_sentence",
    "chonkie_recursive",
    "chonkie_token",
    "docling_hybrid",
]


def parsed_trees() -> list[Path]:
    """Parse the shared long PDFs once (cached JSON)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    out = []
    for pdf in sorted(LONG.glob("*.pdf")):
        target = CACHE / f"{pdf.stem}.json"
        if not target.exists():
            from grounded.parsers import get_parser

            get_parser("pymupdf").save(pdf, CACHE)
        out.append(target)
    return out


def load_document(copies: int):
    """One ROOT whose children are ``copies`` x the shared documents' trees (ids made unique)."""
    from grounded.model import ParsingResult, ParsingResultType
    from grounded.serialization import load_parsing_result

    trees = [load_parsing_result(p) for p in parsed_trees()]
    pages = []
    root = ParsingResult("root", ParsingResultType.ROOT)
    offset = 0
    for c in range(copies):
        for t_index, tree in enumerate(trees):
            data = tree.to_dict()
            prefix = f"c{c}t{t_index}-"

            _rename(data, prefix, offset, f" [{c}]" if c else "")
            sub = ParsingResult.from_dict(data)
            for child in sub.children:
                root.add_child(child)
            pages += [{**p, "page": p["page"] + offset} for p in tree.metadata["pages"]]
            offset += tree.metadata["page_count"]
    root.metadata = {"pages": pages, "page_count": offset}
    return root


def _rename(d: dict, prefix: str, offset: int, tag: str = "") -> None:
    d["id"] = prefix + d["id"]
    if tag and d.get("content"):
        d["content"] += tag  # copies differ, so chunkers that cache per text cannot skip work
    for g in d.get("geom", ()):
        _shift(g, offset)
    for ch in d.get("children", ()):
        _rename(ch, prefix, offset, tag)


def _shift(box: dict, offset: int) -> None:
    box["page"] += offset
    for s in box.get("spans", ()):
        _shift(s, offset)


def worker(method: str, copies: int) -> dict:
    """Run one method on the document once (after a warm-up on the 1x text) and report."""
    from grounded.chunking import Chunker, document_text
    from grounded.text.tokenizer import minilm_tokenizer

    root = load_document(copies)
    text = document_text(root).text
    hf = minilm_tokenizer()._tok  # the same tokenizers.Tokenizer for everyone
    total_tokens = sum(len(e.ids) for e in hf.encode_batch(text.split("\n\n"), add_special_tokens=False))
    blocks = text.split("\n\n")

    def setup():
        """Build the chunker outside the timed region; return the call that chunks the document."""
        if method == "bare_tokenizer":
            return lambda: len(hf.encode_batch(blocks, add_special_tokens=False))
        if method.startswith("grounded:"):
            chunker = Chunker(method.split(":")[1], N)
            return lambda: len(chunker.chunk(root).chunks)
        if method == "langchain_recursive":
            from langchain_text_splitters import RecursiveCharacterTextSplitter
            from transformers import PreTrainedTokenizerFast

            tok = PreTrainedTokenizerFast(tokenizer_object=hf)
            splitter = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(tok, chunk_size=N, chunk_overlap=0)
            return lambda: len(splitter.split_text(text))
        if method == "llamaindex_sentence":
            from llama_index.core import Document
            from llama_index.core.node_parser import SentenceSplitter

            def tokenize(t: str) -> list[int]:
                return hf.encode(t, add_special_tokens=False).ids

            splitter = SentenceSplitter(chunk_size=N, chunk_overlap=0, tokenizer=tokenize)
            return lambda: len(splitter.get_nodes_from_documents([Document(text=text)]))
        if method.startswith("chonkie_"):
            from chonkie import RecursiveChunker, TokenChunker
            from tokenizers import Tokenizer as _T

            tok = _T.from_str(hf.to_str())
            if method == "chonkie_token":
                token_chunker = TokenChunker(tokenizer=tok, chunk_size=N, chunk_overlap=0)
                return lambda: len(token_chunker(text))
            recursive_chunker = RecursiveChunker(tokenizer=tok, chunk_size=N)
            return lambda: len(recursive_chunker(text))
        if method == "docling_hybrid":
            from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
            from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
            from transformers import PreTrainedTokenizerFast

            ddoc = to_docling_document(root)
            tok = HuggingFaceTokenizer(tokenizer=PreTrainedTokenizerFast(tokenizer_object=hf), max_tokens=N)
            hybrid = HybridChunker(tokenizer=tok, merge_peers=True)
            return lambda: len(list(hybrid.chunk(ddoc)))
        raise ValueError(method)

    run = setup()
    # one cold run per process: some chunkers cache token counts per text, so a repeat would
    # measure their cache, not their chunking
    t0 = time.perf_counter()
    n_chunks = run()
    elapsed = time.perf_counter() - t0
    return {
        "method": method,
        "copies": copies,
        "tokens": total_tokens,
        "chunks": n_chunks,
        "seconds": elapsed,
        "tokens_per_s": total_tokens / elapsed,
        "peak_rss_mb": peak_rss_mb(),
    }




def to_docling_document(root):
    """The same tree as a DoclingDocument (headings, paragraphs, list items, table cell text)."""
    from docling_core.types.doc import DocItemLabel, DoclingDocument

    from grounded.model import ParsingResultType as T

    doc = DoclingDocument(name="bench")
    for node in root.walk():
        text = " ".join(node.content.split())
        if not text or node.type in (T.ROOT, T.TABLE, T.TABLE_ROW, T.LIST):
            continue
        if node.type in (T.SECTION_HEADER, T.TITLE):
            doc.add_heading(text=text, level=max(1, min(6, int(node.metadata.get("level") or 1))))
        elif node.type == T.LIST_ITEM:
            doc.add_text(label=DocItemLabel.LIST_ITEM, text=text)
        else:
            doc.add_text(label=DocItemLabel.TEXT, text=text)
    return doc


def measure(method: str, copies: int) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", method, "--copies", str(copies)],
        capture_output=True,
        text=True,
        env={**os.environ, "TOKENIZERS_PARALLELISM": "true", "HF_HUB_OFFLINE": "1"},
        check=False,
    )
    if proc.returncode != 0:
        return {"method": method, "copies": copies, "error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def best_of(method: str, copies: int, repeat: int) -> dict:
    """The fastest of ``repeat`` cold runs, each in its own process (the machine may be shared)."""
    runs = [measure(method, copies) for _ in range(max(1, repeat))]
    ok = [r for r in runs if "error" not in r]
    return min(ok, key=lambda r: r["seconds"]) if ok else runs[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--copies", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--methods", nargs="*", default=METHODS, help="subset of methods to run")
    ap.add_argument("--sizes", nargs="*", type=int, default=[1, 16], help="document sizes as copies of the shared PDFs")
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per measurement; the fastest is reported")
    ap.add_argument("--save", type=Path, help="also write the table as Markdown, e.g. docs/results/chunk_speed.md")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.copies)))
        return
    parsed_trees()
    rows = [best_of(m, c, args.repeat) for c in args.sizes for m in args.methods]
    lines = report(rows, args.sizes, args.methods)
    print("\n".join(lines))
    if args.save:
        from grounded.serialization import atomic_write_text

        atomic_write_text(args.save, "\n".join([f"# Chunking speed (`python {SCRIPT} --save {args.save}`)", "", *lines, ""]))
        print(f"\nwritten {args.save}")


def _per_copies(rows: list[dict], method: str) -> dict[int, float]:
    return {r["copies"]: r["tokens_per_s"] for r in rows if r["method"] == method and "error" not in r}


def report(rows: list[dict], sizes: list[int], methods: list[str]) -> list[str]:
    """The Markdown table (+ linearity lines) for measured rows."""
    bare = _per_copies(rows, "bare_tokenizer")
    lc = _per_copies(rows, "langchain_recursive")
    dl = _per_copies(rows, "docling_hybrid")
    nan = float("nan")
    out = [
        f"Chunking N={N}, no overlap, all-MiniLM-L6-v2 tokenizer; document = shared long PDFs x copies; "
        "best of fresh-process cold runs",
        "",
        "| method | copies | tokens | chunks | s | tokens/s | x bare | x LangChain | x docling | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['method']} | {r['copies']} | - | - | - | error: {r['error'][:60]} | | | | |")
            continue
        c, tps = r["copies"], r["tokens_per_s"]
        xb, xl, xd = (tps / ref[c] if c in ref else nan for ref in (bare, lc, dl))
        out.append(
            f"| {r['method']} | {c} | {r['tokens']} | {r['chunks']} | {r['seconds']:.2f} | {tps:,.0f} | "
            f"{xb:.2f} | {xl:.1f} | {xd:.1f} | {r['peak_rss_mb']:.0f} |"
        )
    if len(sizes) > 1:
        lo, hi = min(sizes), max(sizes)
        out += ["", f"Linearity (tokens/s at {hi}x / tokens/s at {lo}x; 1.0 = linear cost):", ""]
        for m in methods:
            a = next((r for r in rows if r["method"] == m and r["copies"] == lo and "error" not in r), None)
            b = next((r for r in rows if r["method"] == m and r["copies"] == hi and "error" not in r), None)
            if a and b:
                out.append(f"- {m}: {b['tokens_per_s'] / a['tokens_per_s']:.2f}")
    return out

if __name__ == "__main__":
    main()
