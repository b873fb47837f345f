"""Fusion methods for ``grounded search --mode hybrid`` on Chroma's corpora and on the development
question set over the shared PDFs, cross-validated by corpus (issue 32 item 2).

Chroma: the chunks, table and questions of ``benchmarks/search_modes.py`` (recursive, N = 256, no
overlap; LanceDB BM25 and MiniLM cosine through :func:`grounded.search.search`). The question set:
the lists ``benchmarks/search_questions.py`` writes (``--lists``, default in the temp folder: run it
first), context on. For every question the full-text and the vector list (top 50 each, with their
scores) are fetched once; the fusions are then computed offline from those two lists:

* ``rrf``: reciprocal-rank fusion, K = 60, equal weights;
* ``wrrf(w)``: RRF with the full-text list weighted ``w`` and the vector list ``1 - w``;
* ``norm(a)``: min-max normalised scores of each list, ``a * bm25 + (1 - a) * cosine`` (the engine's hybrid);
* ``bm25-first``: the full-text list, the vector list when the full-text list is empty.

The weight of ``wrrf`` / ``norm`` is chosen by **leave-one-corpus-out** cross-validation over the 11
corpora (5 Chroma corpora + each PDF): for each corpus, the weight with the best mean recall@5 over the
other corpora's questions is applied to it. Never
tuned on the corpus it is scored on. Question vectors: the ONNX MiniLM query path
(:mod:`grounded.chunking.minilm_onnx`, checked equal to sentence-transformers at cosine >= 0.999),
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
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_modes import MAX_TOKENS, REPO, STRATEGY, build_table  # noqa: E402

from grounded.search.fusion import TEXT_WEIGHT  # noqa: E402

DEPTH = 50
K = 5
WEIGHTS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
Lists = tuple[list[tuple[Any, float]], list[tuple[Any, float]]]  # (text [(id, bm25)], vector [(id, cosine)])


def rrf(lists: Lists, w: float = 0.5, k: int = 60) -> list[Any]:
    scores: dict[Any, float] = {}
    for weight, ranking in ((w, lists[0]), (1 - w, lists[1])):
        for rank, (cid, _) in enumerate(ranking, 1):
            scores[cid] = scores.get(cid, 0.0) + weight / (k + rank)
    return sorted(scores, key=lambda c: -scores[c])


def norm(lists: Lists, a: float = 0.5) -> list[Any]:
    scores: dict[Any, float] = {}
    for weight, ranking in ((a, lists[0]), (1 - a, lists[1])):
        if not ranking:
            continue
        values = np.array([s for _, s in ranking], dtype=float)
        lo, hi = float(values.min()), float(values.max())
        for cid, s in ranking:
            scores[cid] = scores.get(cid, 0.0) + weight * ((s - lo) / (hi - lo) if hi > lo else 1.0)
    return sorted(scores, key=lambda c: -scores[c])


def bm25_first(lists: Lists) -> list[Any]:
    return [c for c, _ in lists[0]] or [c for c, _ in lists[1]]


def question_set_lists(path: Path, context: str = "on") -> tuple[list[Lists], list[str], list[set[str]]]:
    """The development question set's lists written by ``benchmarks/search_questions.py --lists``:
    (text, vector) lists per question, its corpus (the PDF) and the ids of the chunks covering an answer."""
    import json

    dump = json.loads(path.read_text(encoding="utf-8"))
    rows = dump["contexts"][context]
    lists = [([(str(c), float(v)) for c, v in r["text"]], [(str(c), float(v)) for c, v in r["vector"]]) for r in rows]
    return lists, [Path(p).stem for p in dump["pdfs"]], [set(r["covers"]) for r in rows]


def main(argv: list[str] | None = None) -> int:
    from grounded.chunking.minilm_onnx import onnx_query_embedder
    from grounded.evaluation.chroma_data import load_chroma_dataset
    from grounded.evaluation.chunking_eval import GroundedCorpusChunker
    from grounded.evaluation.retrieval_metrics import score_question
    from grounded.search import NoSearchableWordsError, SearchIndex, search

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--save", type=Path, default=None)
    ap.add_argument("--questions", type=Path, default=Path(tempfile.gettempdir()) / "search_questions-lists.json",
                    help="the lists of `benchmarks/search_questions.py --lists` (the development question set)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    dataset = load_chroma_dataset(args.data / "chroma")
    pieces = [p for cid, text in dataset.corpora.items()
              for p in GroundedCorpusChunker(STRATEGY, MAX_TOKENS, 0).chunk_corpus(cid, text)]
    regions, texts = [p[0] for p in pieces], [p[1] for p in pieces]
    embed = onnx_query_embedder()
    if embed is None:
        raise SystemExit("the ONNX MiniLM graph is unavailable (see grounded.chunking.minilm_onnx)")
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
    n_chroma = len(lists)
    corpus_of = [q.corpus_id for q in questions]
    q_lists, q_corpora, q_covers = question_set_lists(args.questions)
    lists += q_lists
    corpus_of += q_corpora

    def recall(order: Sequence[Any], qi: int) -> float:
        if qi >= n_chroma:  # the question set: an answer-covering chunk in the top K
            return float(any(c in q_covers[qi - n_chroma] for c in order[:K]))
        q = questions[qi]
        return float(score_question(q.references, q.corpus_id, [regions[i] for i in order[:K]]).recall)

    chroma_corpora = sorted(set(corpus_of[:n_chroma]))
    corpora = chroma_corpora + sorted(set(q_corpora))
    by_corpus = {c: [i for i, cc in enumerate(corpus_of) if cc == c] for c in corpora}
    sets = {"Chroma (5 corpora)": list(range(n_chroma)), "question set (6 PDFs)": list(range(n_chroma, len(lists)))}
    fixed: dict[str, Callable[[Lists], list[Any]]] = {
        "text": lambda ls: [c for c, _ in ls[0]], "vector": lambda ls: [c for c, _ in ls[1]],
        "rrf (K=60)": rrf, "bm25-first": bm25_first,
        f"norm (w = {TEXT_WEIGHT}, the hybrid now)": lambda ls: norm(ls, TEXT_WEIGHT),
    }
    per_q: dict[str, np.ndarray] = {name: np.array([recall(f(ls), i) for i, ls in enumerate(lists)])
                                    for name, f in fixed.items()}
    chosen: dict[str, dict[str, float]] = {}
    for family, f in (("wrrf", rrf), ("norm", norm)):
        grid = {w: np.array([recall(f(ls, w), i) for i, ls in enumerate(lists)]) for w in WEIGHTS}
        cv = np.zeros(len(lists))
        chosen[family] = {}
        for c in corpora:  # the weight best on the other corpora's questions (mean recall over them)
            rest = np.concatenate([by_corpus[o] for o in corpora if o != c])
            best = max(WEIGHTS, key=lambda w: (grid[w][rest].mean(), -abs(w - 0.5)))
            chosen[family][c] = best
            cv[by_corpus[c]] = grid[best][by_corpus[c]]
        per_q[f"{family} (w by leave-one-corpus-out)"] = cv
        per_q.update({f"{family} w={w}": grid[w] for w in WEIGHTS})
    rng = np.random.default_rng(0)
    lines = [
        "# Fusion for hybrid search, cross-validated by corpus (Chroma + the development question set, recall@5)",
        "",
        f"Command: `python benchmarks/search_questions.py` (writes the question set's lists), then "
        f"`python benchmarks/search_fusion.py --save docs/results/search_fusion.md` "
        f"({time.perf_counter() - started:.0f} s on the shared 2-core machine). Chroma: {n_chroma} questions, "
        f"{len(texts)} chunks (grounded `{STRATEGY}`, N = {MAX_TOKENS}), recall = Chroma's character recall of the "
        f"top {K}. Question set: {len(q_lists)} questions over {len(set(q_corpora))} PDFs, recall = an answer-covering "
        f"chunk in the top {K} (`benchmarks/search_questions.py`), context on (heading path in what is searched). "
        f"Each list cut at {DEPTH}. Vectors: the ONNX MiniLM path. The {len(corpora)} corpora (5 Chroma corpora + "
        "each PDF) are the folds of the leave-one-corpus-out choice of a weight: the weight with the best mean recall "
        "over the other corpora's questions is applied to the held-out one (never tuned on the corpus it is scored on).",
        "",
        "| method | " + " | ".join(sets) + " | mean of corpora | minus best single list per corpus (min) |",
        "|---|" + "---|" * len(sets) + "---|---|",
    ]
    shown = [n for n in per_q if " w=" not in n]
    for name in shown + [n for n in per_q if " w=" in n]:
        values = per_q[name]
        means = [100 * values[by_corpus[c]].mean() for c in corpora]
        best_single = [max(100 * per_q["text"][by_corpus[c]].mean(), 100 * per_q["vector"][by_corpus[c]].mean())
                       for c in corpora]
        margin = min(m - b for m, b in zip(means, best_single))
        lines.append(f"| {name} | " + " | ".join(f"{100 * values[ix].mean():.1f}" for ix in sets.values())
                     + f" | {np.mean(means):.1f} | {margin:+.1f} |")
    lines += ["", f"Recall@{K} per corpus (%; Chroma corpora first, then the PDFs):", "",
              "| method | " + " | ".join(corpora) + " |", "|---|" + "---|" * len(corpora)]
    for name in shown:
        lines.append(f"| {name} | " + " | ".join(f"{100 * per_q[name][by_corpus[c]].mean():.1f}" for c in corpora) + " |")
    lines += ["", "Weights chosen on the other corpora (text weight): "
              + "; ".join(f"{fam}: " + ", ".join(f"{c} {w}" for c, w in ws.items()) for fam, ws in chosen.items()), ""]
    hybrid = "norm (w by leave-one-corpus-out)"
    lines += [f"Per corpus: `{hybrid}` minus the better single list of that corpus (text or vector, by its mean), "
              "paired over the corpus's questions (95% bootstrap interval, 2000 resamples, seed 0). \"Within noise\": "
              "the interval reaches 0 or above.", "", "| corpus | questions | better list | difference (points) | 95% interval |",
              "|---|---|---|---|---|"]
    for c in corpora:
        idx = by_corpus[c]
        better = max(("text", "vector"), key=lambda m: per_q[m][idx].mean())
        diff = 100 * (per_q[hybrid][idx] - per_q[better][idx])
        means = diff[rng.integers(0, len(idx), size=(2000, len(idx)))].mean(axis=1)
        lo, hi = np.percentile(means, [2.5, 97.5])
        lines.append(f"| {c} | {len(idx)} | {better} | {diff.mean():+.1f} | [{lo:+.1f}, {hi:+.1f}] |")
    lines.append("")
    for set_name, ix in sets.items():
        sel = np.array(ix)
        lines += [f"Paired differences against text and against vector ({set_name}; 95% bootstrap "
                  "interval of the mean, 2000 resamples, seed 0; won / tied / lost against text):", "",
                  "| method − text | mean (points) | 95% interval | won / tied / lost | method − vector | 95% interval |",
                  "|---|---|---|---|---|---|"]
        for name in shown:
            if name in ("text", "vector"):
                continue
            cells = []
            for other in ("text", "vector"):
                diff = 100 * (per_q[name][sel] - per_q[other][sel])
                means = diff[rng.integers(0, len(sel), size=(2000, len(sel)))].mean(axis=1)
                lo, hi = np.percentile(means, [2.5, 97.5])
                cells.append((diff, lo, hi))
            (d1, lo1, hi1), (d2, lo2, hi2) = cells
            lines.append(f"| {name} | {d1.mean():+.1f} | [{lo1:+.1f}, {hi1:+.1f}] | {int((d1 > 0).sum())} / "
                         f"{int((d1 == 0).sum())} / {int((d1 < 0).sum())} | {d2.mean():+.1f} | [{lo2:+.1f}, {hi2:+.1f}] |")
        lines.append("")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.save:
        args.save.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
