"""Dump what the framework adapters make of shared PDFs (node / Document text, ids, offsets and
metadata) as JSON Lines, so a refactoring of the adapters can be checked byte for byte:

    python benchmarks/adapter_dump.py -o /tmp/before.jsonl
    (change the code)
    python benchmarks/adapter_dump.py -o /tmp/after.jsonl && cmp /tmp/before.jsonl /tmp/after.jsonl
    python benchmarks/adapter_dump.py --compare /tmp/before.jsonl /tmp/after.jsonl   # which keys differ, per surface

Covers grounded's own paths (reader/loader -> node parser/splitter, re-split parts, the grounding
wrappers). Parses go through the parse cache (``GROUNDED_CACHE_DIR``), so a second run is quick.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
DEFAULT_PDFS = [DATA / "pdfs" / "cermine_medical" / "test2.pdf", DATA / "long" / "cermine_web_example3_clinsci.pdf"]


def _ids(i: int, doc: Any) -> str:
    """Deterministic node ids for LlamaIndex's own splitters (their default is uuid4)."""
    return f"{doc.node_id}-part-{i}"


def _llama(pdf: Path) -> list[dict[str, Any]]:
    from llama_index.core.node_parser import SentenceSplitter

    from llama_index_grounded import GroundedNodeParser, GroundedPDFReader, GroundingNodeParser, node_boxes
    from llama_index_grounded.parts import GroundedParts

    out: list[dict[str, Any]] = []
    for split_pages in (False, True):
        docs = GroundedPDFReader(split_pages=split_pages).load_data(str(pdf))
        out += [{"what": f"llama reader split_pages={split_pages}", "id": d.doc_id, "text": d.text, "metadata": d.metadata} for d in docs]
        for config in ({}, {"strategy": "hierarchical", "max_tokens": 128, "heading_context": "metadata"}, {"strategy": "fixed", "max_tokens": 64, "overlap": 8}):
            nodes = GroundedNodeParser(**config).get_nodes_from_documents(docs)
            out += [{"what": f"llama nodes {config} split_pages={split_pages}", "node": n.to_dict()} for n in nodes]
            parts = SentenceSplitter(chunk_size=80, chunk_overlap=10, id_func=_ids).get_nodes_from_documents(nodes[:20])
            out += [{"what": "llama sentence parts", "id": p.node_id, "boxes": [b.to_dict() for b in node_boxes(p)]} for p in parts]
            again = GroundedNodeParser(max_tokens=48).get_nodes_from_documents(parts)
            out += [{"what": "llama re-split", "node": n.to_dict()} for n in again]
            fixed = GroundedParts()(parts)
            out += [{"what": "llama GroundedParts", "node": n.to_dict()} for n in fixed]
        wrapped = GroundingNodeParser(SentenceSplitter(chunk_size=200, chunk_overlap=20, id_func=_ids)).get_nodes_from_documents(docs)
        out += [{"what": "llama GroundingNodeParser", "node": n.to_dict()} for n in wrapped]
    return out


def _langchain(pdf: Path) -> list[dict[str, Any]]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from langchain_grounded import GroundedParts, GroundedPDFLoader, GroundedTextSplitter, GroundingSplitter

    out: list[dict[str, Any]] = []
    for mode in ("chunks", "elements", "page", "single"):
        docs = GroundedPDFLoader(str(pdf), mode=mode).load()
        out += [{"what": f"lc loader {mode}", "id": d.id, "text": d.page_content, "metadata": d.metadata} for d in docs]
        for kwargs in ({"chunk_size": 64}, {"chunk_size": 128, "chunk_overlap": 16, "add_start_index": True}):
            parts = GroundedTextSplitter(**kwargs).split_documents(docs)
            out += [{"what": f"lc split {mode} {kwargs}", "id": d.id, "text": d.page_content, "metadata": d.metadata} for d in parts]
        rc = RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=30)
        grounded = GroundingSplitter(rc).split_documents(docs)
        out += [{"what": f"lc GroundingSplitter {mode}", "id": d.id, "text": d.page_content, "metadata": d.metadata} for d in grounded]
        plain_parts = rc.split_documents(docs)
        fixed = GroundedParts().transform_documents(plain_parts)
        out += [{"what": f"lc GroundedParts {mode}", "id": d.id, "text": d.page_content, "metadata": d.metadata} for d in fixed]
    return out


def _diff_paths(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for key in sorted(set(a) | set(b)) for p in _diff_paths(a.get(key), b.get(key), f"{path}.{key}")]
    return [] if a == b else [path or "."]


def compare(before: Path, after: Path) -> int:
    """Print, per surface (``what``), how many rows differ and in which keys; 0 when identical."""
    rows_a = before.read_text(encoding="utf-8").splitlines()
    rows_b = after.read_text(encoding="utf-8").splitlines()
    if len(rows_a) != len(rows_b):
        print(f"row counts differ: {len(rows_a)} vs {len(rows_b)}")
        return 1
    found: dict[str, dict[str, int]] = {}
    for x, y in zip(rows_a, rows_b, strict=True):
        if x != y:
            a, b = json.loads(x), json.loads(y)
            keys = found.setdefault(str(a.get("what"))[:70], {})
            for key in _diff_paths(a, b):
                keys[key] = keys.get(key, 0) + 1
    for what, keys in found.items():
        print(f"{what}: " + ", ".join(f"{k} ({n})" for k, n in sorted(keys.items())))
    print("identical" if not found else f"{len(found)} surfaces differ")
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pdfs", nargs="*", type=Path, default=DEFAULT_PDFS)
    ap.add_argument("-o", "--output", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.output is None:
        ap.error("-o is required (or --compare BEFORE AFTER)")
    warnings.simplefilter("ignore")
    rows = []
    for pdf in args.pdfs:
        for row in (*_llama(pdf), *_langchain(pdf)):
            rows.append({"pdf": pdf.name, **row})
    with args.output.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, sort_keys=True, ensure_ascii=False, default=repr) + "\n")
    print(f"{len(rows)} rows -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
