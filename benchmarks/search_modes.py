"""Hybrid vs vector-only vs BM25-only retrieval of ``grounded search`` on Chroma's corpora.

The same chunks for every mode: Chroma's 5 corpora chunked once by this library's ``recursive``
strategy at N = 256 MiniLM tokens, no overlap (the chunking evaluation's
:class:`~grounded.evaluation.chunking_eval.GroundedCorpusChunker`), embedded with all-MiniLM-L6-v2
(the evaluation's cached embedder, the model of ``grounded ingest --embed minilm``), written as an
ingest-schema LanceDB table (``chunk_schema`` + ``vector``, FTS index on ``text``) in a temporary
folder, and searched with :func:`grounded.search.search` in each mode -- the code path of
``grounded search``, retrieving from the whole collection as Chroma does. Each question's hits are
scored with Chroma's character metrics (:func:`~grounded.evaluation.retrieval_metrics.score_question`:
recall, precision, IoU) at k = 5 and 10. As a cross-check, the vector mode's top k are compared with
the exact cosine ranking of the chunking evaluation (numpy, same vectors).

Run from the repository root (a few minutes cold on 2 cores; vectors are cached)::

    python benchmarks/search_modes.py [--data ../shared/data] [--save docs/results/search_modes_chroma.md]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
MODES = ("hybrid", "vector", "text")
KS = (5, 10)
STRATEGY, MAX_TOKENS = "recursive", 256
CONFIG = f"chroma-{STRATEGY}-{MAX_TOKENS}"


def build_table(out: Path, texts: list[str], corpus_ids: list[str], vectors: np.ndarray) -> None:
    """An ingest-like ``out/lancedb`` table ``chunks``: one row per chunk (id = its position)."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    from grounded.ingest.rows import chunk_schema

    n = len(texts)
    schema = chunk_schema().append(pa.field("vector", pa.list_(pa.float32(), vectors.shape[1])))
    columns: dict[str, Any] = {
        "chunk_id": [str(i) for i in range(n)], "text": texts, "body": texts,
        "start_char": [0] * n, "end_char": [0] * n, "pages": [[] for _ in range(n)], "boxes": [[] for _ in range(n)],
        "heading_path": [[] for _ in range(n)], "element_ids": [[] for _ in range(n)], "token_count": [0] * n,
        "source_path": corpus_ids, "source_sha256": [""] * n, "config_fingerprint": [CONFIG] * n,
        "strategy": [STRATEGY] * n, "embedding": [None] * n,
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), vectors.shape[1]),
    }
    columns["body_start"] = [0] * n

    def column(f: Any) -> Any:  # fields the chunks do not fill: empty lists, else nulls
        if f.name == "vector":
            return columns["vector"]
        if f.name in columns:
            return pa.array(columns[f.name], f.type)
        return pa.array([[] for _ in range(n)], f.type) if pa.types.is_list(f.type) else pa.nulls(n, f.type)

    table = pa.Table.from_arrays([column(f) for f in schema], schema=schema)
    db_table = lancedb.connect(str(out / "lancedb")).create_table("chunks", data=table, schema=schema)
    db_table.create_index("text", config=FTS(), replace=True)


def main(argv: list[str] | None = None) -> int:
    from grounded.evaluation.chroma_data import load_chroma_dataset
    from grounded.evaluation.chunking_eval import GroundedCorpusChunker
    from grounded.evaluation.embeddings import minilm_embedder
    from grounded.evaluation.retrieval_metrics import score_question, summarize
    from grounded.search import DEFAULT_MODE, RRF_K, SearchIndex, candidates, search

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data", help="folder holding chroma/")
    ap.add_argument("--save", type=Path, default=None, help="also write the Markdown report here")
    ap.add_argument("--limit", type=int, default=None, help="first N questions only (a quick look)")
    args = ap.parse_args(argv)

    started = time.perf_counter()
    dataset = load_chroma_dataset(args.data / "chroma")
    questions = dataset.questions[: args.limit] if args.limit else dataset.questions
    t0 = time.perf_counter()
    pieces = [p for cid, text in dataset.corpora.items()
              for p in GroundedCorpusChunker(STRATEGY, MAX_TOKENS, 0).chunk_corpus(cid, text)]
    regions, texts = [p[0] for p in pieces], [p[1] for p in pieces]
    chunk_seconds = time.perf_counter() - t0
    embedder = minilm_embedder()
    t0 = time.perf_counter()
    vectors = embedder.embed(texts)
    question_vectors = embedder.embed([q.text for q in questions])
    embed_seconds = time.perf_counter() - t0
    exact = np.argsort(-(question_vectors @ vectors.T), axis=1, kind="stable")[:, : max(KS)]

    scores: dict[str, dict[int, dict[str, list[float]]]] = {
        m: {k: {"recall": [], "precision": [], "iou": []} for k in KS} for m in MODES}
    per_corpus: dict[str, dict[str, list[float]]] = {m: {} for m in MODES}
    seconds = dict.fromkeys(MODES, 0.0)
    agree = 0
    with tempfile.TemporaryDirectory(prefix="search_modes-") as tmp:
        out = Path(tmp) / "out"
        build_table(out, texts, [r.corpus_id for r in regions], vectors)
        index = SearchIndex(out)
        for qi, q in enumerate(questions):
            for mode in MODES:
                t0 = time.perf_counter()
                hits = search(index, q.text, max(KS), mode=mode, embedder=embedder.embed)
                seconds[mode] += time.perf_counter() - t0
                ids = [int(h.chunk_id) for h in hits]
                if mode == "vector":
                    agree += len(set(ids) & set(exact[qi].tolist()))
                for k in KS:
                    s = score_question(q.references, q.corpus_id, [regions[i] for i in ids[:k]])
                    for metric in ("recall", "precision", "iou"):
                        scores[mode][k][metric].append(getattr(s, metric))
                    if k == 5:
                        per_corpus[mode].setdefault(q.corpus_id, []).append(s.recall)

    n_q = len(questions)
    summaries = {m: {k: summarize(scores[m][k]) for k in KS} for m in MODES}
    best = max(MODES, key=lambda m: (summaries[m][5].mean["recall"], summaries[m][5].mean["iou"]))
    lines = [
        "# Search modes: hybrid vs vector vs BM25 (`grounded search`)",
        "",
        "Command: `python benchmarks/search_modes.py --save docs/results/search_modes_chroma.md` "
        f"({time.perf_counter() - started:.0f} s on the shared 2-core machine; chunking {chunk_seconds:.0f} s, "
        f"embedding {embed_seconds:.0f} s: MiniLM vectors come from the on-disk cache when warm; cold, embedding "
        "the chunks took about 9 min here).",
        "",
        f"Chroma's general evaluation set: {len(dataset.corpora)} corpora, {n_q} questions. The same {len(texts)} chunks "
        f"for every mode: grounded `{STRATEGY}` at N = {MAX_TOKENS} MiniLM tokens, no overlap, written as an ingest "
        "LanceDB table (vector column + FTS index on `text`) and searched with `grounded.search.search` over the "
        "whole collection. vector = all-MiniLM-L6-v2 cosine (exact, no vector index); text = LanceDB's BM25 "
        "full-text search (default tokenizer: lower case, English stemming, stop words removed); hybrid = "
        f"reciprocal-rank fusion of both lists, K = {RRF_K}, each list cut at {candidates(max(KS))} candidates "
        f"(`max(50, 4k)` for k = {max(KS)}; the top 5 are the first 5 of the top 10). Metrics: Chroma's "
        "character recall, precision and IoU of the retrieved chunks against the reference excerpts, mean ± "
        "std over questions, in %.",
        "",
        "| mode | recall@5 | IoU@5 | precision@5 | recall@10 | IoU@10 | precision@10 | ms / query |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cell(summary: Any, metric: str) -> str:
        return f"{100 * summary.mean[metric]:.1f} ± {100 * summary.std[metric]:.1f}"

    for m in MODES:
        s5, s10 = summaries[m][5], summaries[m][10]
        name = f"**{m}**" if m == best else m
        lines.append(f"| {name} | {cell(s5, 'recall')} | {cell(s5, 'iou')} | {cell(s5, 'precision')} | "
                     f"{cell(s10, 'recall')} | {cell(s10, 'iou')} | {cell(s10, 'precision')} | "
                     f"{1000 * seconds[m] / n_q:.1f} |")
    corpora = sorted(per_corpus[MODES[0]])
    lines += ["", "Recall@5 per corpus (%):", "", "| mode | " + " | ".join(corpora) + " |",
              "|---|" + "---|" * len(corpora)]
    for m in MODES:
        lines.append(f"| {m} | " + " | ".join(f"{100 * float(np.mean(per_corpus[m][c])):.1f}" for c in corpora) + " |")
    rng = np.random.default_rng(0)
    lines += ["", f"Paired differences in recall@5 over the same {n_q} questions ({best} minus the other mode; 95% "
              "bootstrap interval of the mean, 2000 resamples, seed 0; questions won / tied / lost by "
              f"{best}):", "", "| comparison | mean difference (points) | 95% interval | won / tied / lost |", "|---|---|---|---|"]
    for m in MODES:
        if m == best:
            continue
        diff = 100 * (np.array(scores[best][5]["recall"]) - np.array(scores[m][5]["recall"]))
        means = diff[rng.integers(0, n_q, size=(2000, n_q))].mean(axis=1)
        lo, hi = np.percentile(means, [2.5, 97.5])
        lines.append(f"| {best} − {m} | {diff.mean():+.1f} | [{lo:+.1f}, {hi:+.1f}] | "
                     f"{int((diff > 0).sum())} / {int((diff == 0).sum())} / {int((diff < 0).sum())} |")
    if best != DEFAULT_MODE:
        print(f"note: grounded.search.DEFAULT_MODE is {DEFAULT_MODE!r} but {best!r} measured best", file=sys.stderr)
    lines += [
        "",
        f"Best here: **{best}** (best recall@5); `grounded.search.DEFAULT_MODE` is `{DEFAULT_MODE}`. Cross-check: the vector mode's "
        f"top {max(KS)} share {100 * agree / (n_q * max(KS)):.2f}% of their chunks with the chunking evaluation's "
        "exact numpy cosine ranking of the same vectors. Query time includes embedding the question (cached "
        "vectors here, so it is mostly LanceDB) and reading the hits' rows.",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if args.save:
        args.save.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
