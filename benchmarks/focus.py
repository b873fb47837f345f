"""The focus of search hits on the development question set (issue 40 item 4).

For each strategy (default: recursive and hierarchical), the question set's PDFs are ingested as a
user does (``grounded ingest --embed minilm --sink lancedb``, the parse cache on), then each
question is searched in hybrid and in text mode (k = 5). The **top hit holding the answer** is the
best-ranked of the 5 that covers an answer (:func:`search_questions.covers`); over those hits:

* **token precision / recall**: the focus's words (the question set's word normaliser) against the
  answer excerpt's words (multiset overlap);
* **sentence ceiling**: the token precision of the smallest set of whole units (sentences, rows,
  items: :func:`grounded.focus.units.units`) that holds every excerpt word the hit holds - the best a
  focus made of whole sentences can reach (an excerpt is a clause: the 0.85 precision target of the
  issue lies above it);
* **box word precision**: of the PDF words inside the focus boxes' line spans, the share that are the
  excerpt's (:func:`search_questions.highlight_precision`), beside the same for the whole chunk;
* **focus rate**: hits with a non-empty focus; **ms per hit**: search with the focus minus without,
  warm (models loaded), over the 5 hits, divided by 5.

Means with 95 % bootstrap intervals (2000 resamples, seed 0). ``--render DIR`` writes the 10 hits
with the lowest focus token precision (focus over chunk) as PNGs.

    python benchmarks/focus.py --save docs/results/focus.md --render docs/results/focus_worst
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_questions import REPO, covers, highlight_precision, load_questions, words  # noqa: E402

MODES = ("hybrid", "text")


def overlap(a: list[str], b: list[str]) -> int:
    return sum((Counter(a) & Counter(b)).values())


def sentence_ceiling(text: str, body_start: int, excerpt: list[str]) -> float | None:
    """Token precision of the whole units (sentences, rows, items) that hold the longest run of the
    excerpt's words in the hit: the best a focus of whole units reaches."""
    from difflib import SequenceMatcher

    from grounded.focus.units import units

    unit_words = [words(u.text(text)) for u in units(text, body_start)]
    flat = [w for ws in unit_words for w in ws]
    owner = [i for i, ws in enumerate(unit_words) for _ in ws]
    m = SequenceMatcher(None, flat, excerpt, autojunk=False).find_longest_match(0, len(flat), 0, len(excerpt))
    if m.size == 0:
        return None
    chosen = set(owner[m.a:m.a + m.size])
    got = sum(len(unit_words[i]) for i in chosen)
    return m.size / got if got else None


def ci(values: list[float]) -> str:
    if not values:
        return "-"
    arr = np.asarray(values, dtype=float)
    rng = np.random.default_rng(0)
    means = [rng.choice(arr, arr.size).mean() for _ in range(2000)]
    lo, hi = np.percentile(means, [2.5, 97.5])
    return f"{100 * arr.mean():.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def evaluate(out: Path, data: Path, mode: str, questions: list[Any], docs: dict[str, Any],
             settings: Any = None) -> dict[str, Any]:
    from grounded.search import search

    rows: list[dict[str, Any]] = []
    caches: dict[str, dict[int, Any]] = {p: {} for p in docs}
    search(out, "warm up", 5, mode=mode)
    for q in questions:
        t0 = time.perf_counter()
        plain = search(out, q.question, 5, mode=mode, focus=False)
        t1 = time.perf_counter()
        hits = search(out, q.question, 5, mode=mode, focus_settings=settings)
        t2 = time.perf_counter()
        added = max(0.0, (t2 - t1) - (t1 - t0)) / max(1, len(plain))
        for hit in hits:
            if Path(hit.source_path).resolve() != (data / q.pdf).resolve():
                continue
            answer = next((a for a in q.answers if covers(hit.body, hit.pages, a)), None)
            if answer is None:
                continue
            excerpt = words(answer.excerpt)
            focus_words = [w for t in hit.focus_text for w in words(t)]
            common = overlap(focus_words, excerpt)
            in_hit = overlap(words(hit.body), excerpt)
            rows.append({
                "id": q.id, "kind": answer.kind, "rank": hit.rank, "hit": hit, "ms": 1000 * added,
                "focused": bool(hit.focus),
                "precision": common / len(focus_words) if focus_words else 0.0,
                "recall": common / in_hit if in_hit else 0.0,
                "ceiling": sentence_ceiling(hit.text, hit.body_start, excerpt),
                "box_precision": highlight_precision(docs[q.pdf], hit.focus_boxes, q.answers, caches[q.pdf])
                if hit.focus_boxes else 0.0,
                "chunk_box_precision": highlight_precision(docs[q.pdf], hit.boxes, q.answers, caches[q.pdf]),
            })
            break
    return {"rows": rows}


def main(argv: list[str] | None = None) -> int:
    import pymupdf

    from grounded.ingest import ingest

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--strategies", nargs="+", default=["recursive", "hierarchical"])
    ap.add_argument("--save", type=Path, default=None, help="write the Markdown report here")
    ap.add_argument("--render", type=Path, default=None, help="render the 10 worst focus cases here (PNG)")
    ap.add_argument("--gap", type=float, default=None, help="FocusSettings.gap to measure (default: the product's)")
    ap.add_argument("--max-units", type=int, default=None, help="FocusSettings.max_units to measure")
    ap.add_argument("--min-lexical", type=float, default=None, help="FocusSettings.min_lexical to measure")
    ap.add_argument("--modes", nargs="+", default=list(MODES))
    ap.add_argument("--work", type=Path, default=None, help="keep the ingest outputs here (reused when present)")
    args = ap.parse_args(argv)
    from grounded.focus import FocusSettings

    given = {k: v for k, v in (("gap", args.gap), ("max_units", args.max_units), ("min_lexical", args.min_lexical)) if v is not None}
    settings = FocusSettings(**given) if given else None
    started = time.perf_counter()
    questions = load_questions()
    pdfs = sorted({q.pdf for q in questions})
    docs = {p: pymupdf.open(str(args.data / p)) for p in pdfs}
    results: dict[tuple[str, str], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="focus-") as tmp:
        work = args.work or Path(tmp)
        for strategy in args.strategies:
            out = work / strategy
            if not (out / "manifest.json").exists():
                report = ingest([str(args.data / p) for p in pdfs], out, strategy=strategy, embed="minilm",
                                sink="lancedb", progress=False)
                if not report.ok:
                    raise SystemExit(f"ingest failed: {report.summary()}")
            for mode in args.modes:
                results[(strategy, mode)] = evaluate(out, args.data, mode, questions, docs, settings)
                print(f"{strategy} {mode}: {len(results[(strategy, mode)]['rows'])} hits", file=sys.stderr)
        load = os.getloadavg()[0]
        lines = [
            "# The focus of search hits on the question set",
            "",
            f"Command: `python benchmarks/focus.py --save docs/results/focus.md --render docs/results/focus_worst` "
            f"({time.perf_counter() - started:.0f} s, load average {load:.2f} at the end, 2-core machine). "
            f"{len(questions)} questions over {len(pdfs)} PDFs; method and measures: the docstring of "
            "`benchmarks/focus.py`. Values in % (95 % bootstrap interval); hits = top hits (k = 5) holding the answer.",
            "",
            "| strategy | mode | hits | focus token precision | recall | sentence ceiling (precision) | focus box word "
            "precision | chunk box word precision | focus rate | ms per hit |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for (strategy, mode), res in results.items():
            rows = res["rows"]
            lines.append(
                f"| {strategy} | {mode} | {len(rows)} | {ci([r['precision'] for r in rows])} | {ci([r['recall'] for r in rows])} "
                f"| {ci([r['ceiling'] for r in rows if r['ceiling'] is not None])} | {ci([r['box_precision'] for r in rows])} "
                f"| {ci([r['chunk_box_precision'] for r in rows])} | {ci([float(r['focused']) for r in rows])} "
                f"| {np.median([r['ms'] for r in rows]) if rows else 0:.1f} |")
        lines += ["", "Per answer kind (recursive, hybrid):", "",
                  "| kind | hits | token precision | recall | box word precision |", "|---|---|---|---|---|"]
        first = results.get((args.strategies[0], "hybrid"), {"rows": []})["rows"]
        for kind in sorted({r["kind"] for r in first}):
            rows = [r for r in first if r["kind"] == kind]
            lines.append(f"| {kind} | {len(rows)} | {ci([r['precision'] for r in rows])} | {ci([r['recall'] for r in rows])} "
                         f"| {ci([r['box_precision'] for r in rows])} |")
        worst = sorted(first, key=lambda r: r["precision"])[:10]
        lines += ["", "The 10 lowest focus token precisions (recursive, hybrid):", "",
                  "| question | kind | precision | recall | focus (start) |", "|---|---|---|---|---|"]
        for r in worst:
            text = " / ".join(" ".join(t.split())[:80] for t in r["hit"].focus_text).replace("|", "\\|")
            lines.append(f"| {r['id']} | {r['kind']} | {100 * r['precision']:.0f} | {100 * r['recall']:.0f} | {text} |")
        if args.render is not None:
            from grounded.attribution.focus_layer import FOCUS_COLOR
            from grounded.attribution.render import render_to_files
            from grounded.focus import Focus
            from grounded.search.hit import hit_chunk, parsing_boxes

            args.render.mkdir(parents=True, exist_ok=True)
            for r in worst:
                hit = r["hit"]
                boxes = tuple(parsing_boxes(hit.focus_boxes))
                render_to_files(hit.source_path, hit_chunk(hit), args.render / f"{r['id']}.png", 80, crop=True,
                                focus=Focus(hit.focus, boxes, hit.focus_method, hit.text), focus_color=FOCUS_COLOR)
            lines += ["", f"Rendered: `{args.render}/<question id>-p<page>.png` (chunk yellow, focus orange)."]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.save:
        args.save.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
