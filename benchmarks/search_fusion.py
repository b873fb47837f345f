"""Fusion methods for ``grounded search --mode hybrid`` on Chroma's corpora, cross-validated by corpus
(issue 32 item 2; a first, partial measurement).

The chunks, table and questions of ``benchmarks/search_modes.py`` (recursive, N = 256, no overlap;
LanceDB BM25 and MiniLM cosine through :func:`grounded.search.search`). For every question the
full-text and the vector list (top 50 each, with their scores) are fetched once; the fusions are
then computed offline from those two lists:

* ``rrf``: reciprocal-rank fusion, K = 60, equal weights (today's hybrid);
* ``wrrf(w)``: RRF with the full-text list weighted ``w`` and the vector list ``1 - w``;
* ``norm(a)``: min-max normalised scores of each list, ``a * bm25 + (1 - a) * cosine``;
* ``bm25-first``: the full-text list, the vector list when the full-text list is empty.

The weight of ``wrrf`` / ``norm`` is chosen by **leave-one-corpus-out** cross-validation: for each
corpus, the weight with the best mean recall@5 on the other four corpora is applied to it. Never
tuned on the corpus it is scored on. Question vectors: the ONNX MiniLM query path
(:mod:`grounded.search.query_onnx`, checked equal to sentence-transformers at cosine >= 0.999),
also used for the chunks here (no torch needed).

    python benchmarks/search_fusion.py [--data ../shared/data] [--save docs/results/search_fusion.md]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_modes import MAX_TOKENS, REPO, STRATEGY, build_table  # noqa: E402

DEPTH = 50
K = 5
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
Lists = tuple[list[tuple[int, float]], list[tuple[int, float]]]  # (text [(id, bm25)], vector [(id, cosine)])


def rrf(lists: Lists, w: float = 0.5, k: int = 60) -> list[int]:
    scores: dict[int, float] = {}
    for weight, ranking in ((w, lists[0]), (1 - w, lists[1])):
        for rank, (cid, _) in enumerate(ranking, 1):
            scores[cid] = scores.get(cid, 0.0) + weight / (k + rank)
    return sorted(scores, key=lambda c: -scores[c])


def norm(lists: Lists, a: float = 0.5) -> list[int]:
    scores: dict[int, float] = {}
    for weight, ranking in ((a, lists[0]), (1 - a, lists[1])):
        if not ranking:
            continue
        values = np.array([s for _, s in ranking], dtype=float)
        lo, hi = float(values.min()), float(values.max())
        for cid, s in ranking:
            scores[cid] = scores.get(cid, 0.0) + weight * ((s - lo) / (hi - lo) if hi > lo else 1.0)
    return sorted(scores, key=lambda c: -scores[c])


def bm25_first(lists: Lists) -> list[int]:
    return [c for c, _ in lists[0]] or [c for c, _ in lists[1]]


def main(argv: list[str] | None = None) -> int:
    from grounded.evaluation.chroma_data import load_chroma_dataset
    from grounded.evaluation.chunking_eval import GroundedCorpusChunker
    from grounded.evaluation.retrieval_metrics import score_question
    from grounded.search import NoSearchableWordsError, SearchIndex, search
    from grounded.search.query_onnx import onnx_query_embedder

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--save", type=Path, default=None)
    args = ap.parse_args(argv)
    started = time.perf_counter()
    dataset = load_chroma_dataset(args.data / "chroma")
    pieces = [p for cid, text in dataset.corpora.items()
              for p in GroundedCorpusChunker(STRATEGY, MAX_TOKENS, 0).chunk_corpus(cid, text)]
    regions, texts = [p[0] for p in pieces], [p[1] for p in pieces]
    embed = onnx_query_embedder()
    if embed is None:
        raise SystemExit("the ONNX MiniLM graph is unavailable (see grounded.search.query_onnx)")
    cache = Path(tempfile.gettempdir()) / f"search_fusion-vectors-{len(texts)}.npy"  # a re-run skips embedding
    vectors = np.load(cache) if cache.is_file() else embed(texts)
    np.save(cache, vectors)
    questions = dataset.questions
    lists: list[Lists] = []
    with tempfile.TemporaryDirectory(prefix="search_fusion-") as tmp:
        out = Path(tmp) / "out"
        build_table(out, texts, [r.corpus_id for r in regions], vectors)
        index = SearchIndex(out)
        for q in questions:
            try:
                text = [(int(h.chunk_id), h.score) for h in search(index, q.text, DEPTH, mode="text")]
            except NoSearchableWordsError:
                text = []
            vector = [(int(h.chunk_id), h.score) for h in search(index, q.text, DEPTH, mode="vector", embedder=embed)]
            lists.append((text, vector))

    def recall(order: Sequence[int], qi: int) -> float:
        q = questions[qi]
        return float(score_question(q.references, q.corpus_id, [regions[i] for i in order[:K]]).recall)

    corpora = sorted({q.corpus_id for q in questions})
    by_corpus = {c: [i for i, q in enumerate(questions) if q.corpus_id == c] for c in corpora}
    fixed: dict[str, Callable[[Lists], list[int]]] = {
        "text": lambda ls: [c for c, _ in ls[0]], "vector": lambda ls: [c for c, _ in ls[1]],
        "rrf (K=60, the hybrid before)": rrf, "bm25-first": bm25_first,
    }
    per_q: dict[str, np.ndarray] = {name: np.array([recall(f(ls), i) for i, ls in enumerate(lists)])
                                    for name, f in fixed.items()}
    chosen: dict[str, dict[str, float]] = {}
    for family, f in (("wrrf", rrf), ("norm", norm)):
        grid = {w: np.array([recall(f(ls, w), i) for i, ls in enumerate(lists)]) for w in WEIGHTS}
        cv = np.zeros(len(questions))
        chosen[family] = {}
        for c in corpora:  # the weight best on the other corpora (mean of their per-corpus means)
            others = [o for o in corpora if o != c]
            best = max(WEIGHTS, key=lambda w: (np.mean([grid[w][by_corpus[o]].mean() for o in others]), -abs(w - 0.5)))
            chosen[family][c] = best
            cv[by_corpus[c]] = grid[best][by_corpus[c]]
        per_q[f"{family} (w by leave-one-corpus-out)"] = cv
    rng = np.random.default_rng(0)
    lines = [
        "# Fusion for hybrid search, cross-validated by corpus (Chroma, recall@5)",
        "",
        f"Command: `python benchmarks/search_fusion.py --save docs/results/search_fusion.md` "
        f"({time.perf_counter() - started:.0f} s on the shared 2-core machine, load ~20). {len(questions)} questions, "
        f"{len(texts)} chunks (grounded `{STRATEGY}`, N = {MAX_TOKENS}); each list cut at {DEPTH}; recall = Chroma's "
        "character recall of the top 5, %. Chunk and question vectors from the ONNX MiniLM path (equal to "
        "sentence-transformers at cosine >= 0.999), so the text/vector/rrf rows can differ slightly from "
        "`search_modes.md`.",
        "",
        "| method | mean | " + " | ".join(corpora) + " | minus best single list per corpus (min) |",
        "|---|---|" + "---|" * len(corpora) + "---|",
    ]
    for name, values in per_q.items():
        means = [100 * values[by_corpus[c]].mean() for c in corpora]
        best_single = [max(100 * per_q["text"][by_corpus[c]].mean(), 100 * per_q["vector"][by_corpus[c]].mean())
                       for c in corpora]
        margin = min(m - b for m, b in zip(means, best_single))
        lines.append(f"| {name} | {100 * values.mean():.1f} | " + " | ".join(f"{m:.1f}" for m in means)
                     + f" | {margin:+.1f} |")
    lines += ["", "Weights chosen on the other four corpora (text weight): "
              + "; ".join(f"{fam}: " + ", ".join(f"{c} {w}" for c, w in ws.items()) for fam, ws in chosen.items()), "",
              "Paired difference against `text` (95% bootstrap interval of the mean, 2000 resamples, seed 0):", "",
              "| method − text | mean (points) | 95% interval | won / tied / lost |", "|---|---|---|---|"]
    n = len(questions)
    for name, values in per_q.items():
        if name == "text":
            continue
        diff = 100 * (values - per_q["text"])
        means = diff[rng.integers(0, n, size=(2000, n))].mean(axis=1)
        lo, hi = np.percentile(means, [2.5, 97.5])
        lines.append(f"| {name} | {diff.mean():+.1f} | [{lo:+.1f}, {hi:+.1f}] | "
                     f"{int((diff > 0).sum())} / {int((diff == 0).sum())} / {int((diff < 0).sum())} |")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.save:
        args.save.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
