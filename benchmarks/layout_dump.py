"""Dump what a user gets from every shared PDF and the sample guideline, to compare two trees.

For each PDF: ``document_text``, the Markdown, and for every deterministic strategy the chunk ids,
chunk text, metadata and boxes (line spans included). Written as one JSON file per PDF so two dumps
(before and after a refactor that must not change behaviour) compare with ``--compare``::

    python benchmarks/layout_dump.py --data ../shared/data --out /tmp/before
    # ... change the code ...
    python benchmarks/layout_dump.py --data ../shared/data --out /tmp/after
    python benchmarks/layout_dump.py --compare /tmp/before /tmp/after

Only public import paths are used (``grounded.get_parser``, ``grounded.to_markdown``,
``grounded.chunking``), so the script runs unchanged on both sides of a move of modules.
Parse options are fixed (``ocr="never"``, no cache) so the dump measures the code, not the machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STRATEGIES: dict[str, dict[str, Any]] = {
    "fixed": {"overlap": 0.2},
    "recursive": {"overlap": 0.2},
    "hierarchical": {},
    "semantic": {},
    "cluster": {},
    "kamradt_mod": {},
    "kamradt": {},
}
SIZES = (128, 512)


def _box(box: Any) -> dict[str, Any]:
    return {
        "page": box.page,
        "ltrb": [box.left, box.top, box.right, box.bottom],
        "mode": str(getattr(box, "mode", "")),
        "spans": [_box(s) for s in getattr(box, "spans", None) or []],
    }


def _pdfs(data: Path) -> list[Path]:
    found = sorted(p for p in data.rglob("*.pdf") if p.is_file())
    sample = Path(tempfile.gettempdir()) / "grounded_layout_dump_sample.pdf"
    from grounded.samples import write_sample_pdf

    write_sample_pdf(sample)
    return [sample, *found]


def dump(data: Path, out: Path, strategies: list[str]) -> None:
    import grounded
    from grounded.chunking import Chunker, document_text

    out.mkdir(parents=True, exist_ok=True)
    parser = grounded.get_parser("pymupdf", ocr="never")
    chunkers = {(s, n): Chunker(s, max_tokens=n, **STRATEGIES[s]) for s in strategies for n in SIZES}
    for pdf in _pdfs(data):
        t0 = time.perf_counter()
        rel = pdf.name if pdf.parent == Path(tempfile.gettempdir()) else str(pdf.relative_to(data))
        record: dict[str, Any] = {"pdf": rel}
        try:
            root = parser.parse(pdf)
        except grounded.GroundedError as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"
        else:
            record["document_text"] = document_text(root).text
            record["markdown"] = grounded.to_markdown(root)
            record["chunks"] = {}
            for (s, n), chunker in chunkers.items():
                result = chunker.chunk(root)
                record["chunks"][f"{s}/{n}"] = [
                    {"id": c.id, "content": c.content, "metadata": c.metadata, "geom": [_box(b) for b in c.geom]}
                    for c in result.chunks
                ]
        name = hashlib.sha256(rel.encode()).hexdigest()[:12] + ".json"
        (out / name).write_text(json.dumps(record, sort_keys=True, default=str, ensure_ascii=False))
        print(f"{rel}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    parser.close()


def compare(a: Path, b: Path) -> int:
    left = {p.name: p.read_bytes() for p in a.glob("*.json")}
    right = {p.name: p.read_bytes() for p in b.glob("*.json")}
    differ = sorted(n for n in left.keys() & right.keys() if left[n] != right[n])
    only = sorted(left.keys() ^ right.keys())
    for n in differ:
        print(f"DIFFERS {json.loads(left[n])['pdf']}")
    for n in only:
        print(f"ONLY ON ONE SIDE {n}")
    print(f"{len(left)} vs {len(right)} documents; {len(differ)} differ; {len(only)} on one side only")
    return 1 if differ or only else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=list(STRATEGIES))
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        ap.error("--out is required unless --compare is given")
    dump(args.data, args.out, args.strategies)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
