"""Markdown tables, JSON and PNG plots of evaluation results (all writes are atomic)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import BackendUnavailableError
from ..io.atomic import atomic_write_bytes, atomic_write_text
from .chunking_eval import METRICS, ChunkingEvaluation, published_row
from .content_eval import aggregate
from .dla import DLAResult

__all__ = [
    "markdown_table",
    "dla_markdown",
    "content_markdown",
    "chunking_markdown",
    "reproduction_markdown",
    "per_corpus_markdown",
    "write_json",
    "plot_dla",
    "plot_chunking",
    "plot_stored_chunking",
    "rag_markdown",
    "rag_questions_markdown",
    "METRIC_TITLES",
]

METRIC_TITLES = {"iou": "IoU", "recall": "Recall", "precision": "Precision", "precision_omega": "Precision_Ω"}
GAP_NOTE_POINTS = 3.0


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return "–" if v is None else str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _f(v: float | None, digits: int = 4) -> str | None:
    return None if v is None else f"{v:.{digits}f}"


# -- DLA ---------------------------------------------------------------------------------------------
def dla_markdown(result: DLAResult, title: str | None = None) -> str:
    rows = []
    for c in result.classes:
        d = c.to_dict()
        rows.append([c.label, c.n_gt, c.n_pred, _f(d["precision@50"]), _f(d["recall@50"]), _f(c.f1_50), _f(c.f1_50_95)])
    rows.append(["**macro**", sum(c.n_gt for c in result.classes), sum(c.n_pred for c in result.classes), None, None,
                 f"**{result.macro_f1_50:.4f}**", f"**{result.macro_f1_50_95:.4f}**"])
    head = f"### {title}\n\n" if title else ""
    meta = result.meta
    info = f"{result.n_pages} pages" + (f", {meta['documents']} documents" if "documents" in meta else "")
    if meta.get("parser"):
        info += f", parser `{meta['parser']}`"
    if meta.get("failed"):
        info += f", failed to parse: {', '.join(meta['failed'])}"
    return head + info + "\n\n" + markdown_table(
        ["class", "GT boxes", "predicted", "P@50", "R@50", "F1@50", "F1@50:95"], rows)


def plot_dla(results: dict[str, DLAResult], path: str | Path) -> Path:
    """Grouped bars of per-class F1@50 and F1@50:95 for each result."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.4), squeeze=False)
    for ax, (name, res) in zip(axes[0], results.items()):
        labels = [c.label for c in res.classes] + ["macro"]
        f50 = [c.f1_50 for c in res.classes] + [res.macro_f1_50]
        f95 = [c.f1_50_95 for c in res.classes] + [res.macro_f1_50_95]
        xs = range(len(labels))
        ax.bar([x - 0.2 for x in xs], f50, width=0.4, label="F1@50")
        ax.bar([x + 0.2 for x in xs], f95, width=0.4, label="F1@50:95")
        ax.set_xticks(list(xs), labels, rotation=30, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(name, fontsize=10)
    axes[0][0].legend(fontsize=8)
    return _save(fig, path)


# -- content -------------------------------------------------------------------------------------------
def _formula_counts(pred: int, gt: int, without_text: int) -> str:
    """``pred/ref`` display formulas, and how many reference formulas have no text."""
    return f"{pred}/{gt}" + (f" ({without_text} without text)" if without_text else "")


def content_markdown(docling: Sequence[Any], icdar: Sequence[Any], parser: str = "pymupdf") -> str:
    out = []
    if docling:
        rows = []
        for s in docling:
            d = s.to_dict()
            rows.append([d["name"], _f(d["text_edit"]), _f(d["reading_order_edit"]), _f(d["teds"]), _f(d["s_teds"]),
                         f"{d['n_matched_units']}/{d['n_gt_blocks']}", f"{d['n_pred_tables']}/{d['n_gt_tables']}",
                         _f(d["formula_edit"]), _formula_counts(d["n_pred_formulas"], d["n_gt_formulas"],
                                                                d["n_gt_formulas_without_text"])])
        agg = aggregate(docling)
        rows.append(["**all**", f"**{_f(agg['text_edit'])}**", _f(agg["reading_order_edit"]), _f(agg["teds"]),
                     _f(agg["s_teds"]), None, f"{agg['pred_tables']}/{agg['gt_tables']}", _f(agg["formula_edit"]),
                     _formula_counts(agg["pred_formulas"], agg["gt_formulas"], agg["gt_formulas_without_text"])])
        out.append(f"### Docling references (parser `{parser}`)\n\n" + markdown_table(
            ["document", "Text Edit ↓", "Read Edit ↓", "TEDS ↑", "S-TEDS ↑", "matched units / ref blocks",
             "pred / ref tables", "Formula Edit ↓", "pred / ref formulas"], rows))
        if agg["gt_formulas_without_text"]:
            out.append(f"Formula Edit: {agg['gt_formulas_without_text']} of {agg['gt_formulas']} reference formulas have "
                       "no text (Docling wrote `formula-not-decoded`: no formula model ran) and cannot be scored; "
                       "a document is scored only when a reference formula has text.\n")
        overall = agg["overall"]
        out.append(f"Overall (thesis Table 4.1 formula) = {overall:.2f}\n" if overall is not None
                   else "Overall: – (a component is undefined)\n")
    if icdar:
        agg = aggregate(icdar)
        docs_with_tables = sum(1 for s in icdar if s.n_gt_tables)
        missed = sum(1 for s in icdar for v in s.table_teds if v == 0.0)
        out.append(f"### ICDAR-2013 table structure (parser `{parser}`)\n\n" + markdown_table(
            ["documents", "GT tables", "predicted tables", "GT tables without partner", "TEDS ↑", "S-TEDS ↑"],
            [[docs_with_tables, agg["gt_tables"], agg["pred_tables"], missed, _f(agg["teds"]), _f(agg["s_teds"])]]))
    return "\n".join(out)


# -- rag ---------------------------------------------------------------------------------------------------
def rag_markdown(evals: Sequence[Any], *, model: str, judge: str, source: str, top_k: int) -> str:
    """One row per strategy (:class:`~grounded.evaluation.rag.RagEvaluation`): accuracy and the other
    A.2 labels, faithfulness and relevancy, and how many judge answers stayed invalid."""

    def pct(v: float | None) -> str | None:
        return None if v is None else f"{100 * v:.1f}"

    rows = []
    for ev in evals:
        s = ev.summary()
        rows.append([ev.name, ev.params.get("max_tokens"), ev.n_chunks, s["questions"], pct(s["accuracy"]),
                     pct(s["hallucinate"]), pct(s["abstain"]), pct(s["answer_exists"]), _f(s["faithfulness"], 3),
                     _f(s["relevancy"], 3), f"{s['invalid_verdicts']} / {s['invalid_statement_scores']}"])
    head = (f"### RAG evaluation (retrieval: all-MiniLM-L6-v2, top {top_k})\n\nAnswering model `{model}`, judge "
            f"`{judge}`; questions: {source}.\n\n")
    return head + markdown_table(
        ["Chunking", "N", "chunks", "questions", "Accuracy % ↑", "hallucinate %", "abstain %", "answer in sources %",
         "Faithfulness ↑", "Relevancy ↑", "invalid judge answers (A.2 / statements)"], rows) + (
        "\nAccuracy and the other A.2 labels (seed 001) are shares of the valid verdicts; faithfulness and relevancy "
        "(seed 002, 0-1) are means over questions of the mean over the answer's statements. A judge answer still "
        "invalid after one re-ask leaves that question out of that metric.\n")


def rag_questions_markdown(records: Sequence[dict[str, Any]]) -> str:
    """One row per judged question (``{"strategy": ..., **QuestionResult.to_dict()}``, as ``--log``
    writes them): the retrieved pages, the answer's start, the A.2 verdict and the statement scores -
    ``invalid`` where the judge's reply stayed unreadable (counted, never scored) - and the seconds."""

    def short(text: str, n: int = 60) -> str:
        one = " ".join(text.split())
        return one if len(one) <= n else one[: n - 1] + "…"

    rows = []
    for r in records:
        verdict = r.get("verdict")
        pages = sorted({p for hit in r.get("retrieved", []) for p in hit.get("pages", [])})
        seconds = r.get("seconds") or {}
        rows.append([
            r.get("strategy"), short(r["question"], 50), ",".join(map(str, pages)) or None, short(r["generated_answer"]),
            verdict["response_quality"] if verdict else "invalid",
            "invalid" if r.get("statements") is None else _f(r.get("faithfulness"), 2),
            "invalid" if r.get("statements") is None else _f(r.get("relevancy"), 2),
            f"{seconds['answer']:.0f} / {seconds['judging']:.0f}" if seconds else None,
        ])
    return markdown_table(["Chunking", "question", "retrieved pages", "answer (start)", "A.2 verdict", "Faithfulness",
                           "Relevancy", "s answer / judging"], rows)


# -- chunking ----------------------------------------------------------------------------------------------
def _pm(ev: ChunkingEvaluation, n: str, metric: str, scope: str = "all") -> str:
    s = ev.summaries[n][scope]
    return f"{100 * s.mean[metric]:.1f} ± {100 * s.std[metric]:.1f}"


def _config(ev: ChunkingEvaluation) -> tuple[str, Any, Any]:
    """(name, N, overlap or the semantic breakpoint percentile) of one evaluated chunker."""
    p = ev.params
    if "strategy" in p:
        if p["strategy"] == "semantic" and "percentile" in p:
            return p["strategy"], p["max_tokens"], f"Q={p['percentile']}"
        return p["strategy"], p["max_tokens"], p["overlap"]
    return ev.name.replace("LangChain ", ""), p["chunk_size"], p["chunk_overlap"]


def chunking_markdown(evals: Sequence[ChunkingEvaluation], n: str = "5") -> str:
    rows = []
    for ev in evals:
        name, size, overlap = _config(ev)
        rows.append([name, size, overlap, ev.n_chunks, f"{ev.mean_chunk_tokens:.0f}",
                     *(_pm(ev, n, m) for m in ("iou", "recall", "precision", "precision_omega"))])
    return markdown_table(["Chunking", "N", "O (semantic: Q)", "chunks", "mean cl100k tokens", "IoU", "Recall",
                           "Precision", "Precision_Ω"], rows)


def per_corpus_markdown(evals: Sequence[ChunkingEvaluation], n: str = "5", metric: str = "recall") -> str:
    if not evals:
        return ""
    corpora = [k for k in evals[0].summaries[n] if k != "all"]
    rows = []
    for ev in evals:
        name, size, overlap = _config(ev)
        rows.append([name, size, overlap, *(_pm(ev, n, metric, c) for c in corpora)])
    return markdown_table(["Chunking", "N", "O (semantic: Q)", *corpora], rows)


def reproduction_markdown(evals: Sequence[ChunkingEvaluation], n: str = "5") -> tuple[str, list[str]]:
    """Ours beside Chroma's published MiniLM rows; returns (table, gaps over 3 points)."""
    rows, gaps = [], []
    for ev in evals:
        key, size, overlap = ev.params["splitter"], ev.params["chunk_size"], ev.params["chunk_overlap"]
        pub = published_row(key, size, overlap)
        label = {"recursive": "Recursive", "tokentext": "TokenText"}.get(key, key.title())
        cells = []
        for m in ("recall", "precision", "precision_omega", "iou"):
            ours = 100 * ev.summaries[n]["all"].mean[m]
            theirs = pub[m][0] if pub else None
            delta = None if theirs is None else ours - theirs
            cells += [_pm(ev, n, m), f"{theirs:.1f} ± {pub[m][1]:.1f}" if pub else None,
                      None if delta is None else f"{delta:+.1f}"]
            if delta is not None and abs(delta) > GAP_NOTE_POINTS:
                gaps.append(f"{label} {size}/{overlap} {METRIC_TITLES[m]}: {delta:+.1f} points")
        mean_pub = pub.get("mean_size") if pub else None
        rows.append([label, size, overlap, f"{ev.mean_chunk_tokens:.0f} / {mean_pub}", *cells])
    header = ["Chunking", "Size", "Overlap", "mean size ours / Chroma"]
    for m in ("recall", "precision", "precision_omega", "iou"):
        header += [f"{METRIC_TITLES[m]} ours", "Chroma", "Δ"]
    return markdown_table(header, rows), gaps


def plot_chunking(evals: Sequence[ChunkingEvaluation], path: str | Path, n: str = "5") -> Path:
    """Grouped bars (IoU, recall, precision, precision_Ω) per chunker configuration."""
    plt = _pyplot()
    labels = ["{} {}/{}".format(*_config(ev)) for ev in evals]
    if len(evals) > 8:  # a big grid: one metric per row
        fig, grid = plt.subplots(len(METRICS), 1, figsize=(3 + 0.42 * len(evals), 3.2 * len(METRICS)), squeeze=False)
        axes = [[row[0] for row in grid]]
    else:
        fig, axes = plt.subplots(1, len(METRICS), figsize=(4 + 0.45 * len(evals) * len(METRICS), 3.6), squeeze=False)
    published = [published_row(ev.params.get("splitter", ""), ev.params.get("chunk_size", 0),
                               ev.params.get("chunk_overlap", 0)) if n == "5" else None for ev in evals]
    paired = any(p is not None for p in published)
    width = 0.4 if paired else 0.8
    for ax, m in zip(axes[0], ("iou", "recall", "precision", "precision_omega")):
        xs = list(range(len(evals)))
        vals = [100 * ev.summaries[n]["all"].mean[m] for ev in evals]
        ax.bar([x - width / 2 if paired else x for x in xs], vals, width=width, color="tab:blue", label="ours")
        if paired:
            ax.bar([x + width / 2 for x in xs], [p[m][0] if p else 0.0 for p in published], width=width,
                   color="tab:orange", label="Chroma (published)")
        ax.set_xticks(xs, labels, rotation=60, ha="right", fontsize=7)
        ax.set_title(f"{METRIC_TITLES[m]} (n={n}), %", fontsize=9)
    if paired:
        axes[0][0].legend(fontsize=7)
    return _save(fig, path)


def plot_stored_chunking(results: str | Path, path: str | Path | None = None, n: str = "5") -> Path:
    """:func:`plot_chunking` of a stored result file (``grounded eval chunking --out``'s JSON, rows merged
    into it by ``benchmarks/eval_merge_rows.py`` included) into ``path`` (default: the JSON's ``.png``
    beside it), no row re-run. Rows are grouped by strategy in the order each first appears, as the
    merged tables list them."""
    results = Path(results)
    data = json.loads(results.read_text(encoding="utf-8"))
    evals = [ChunkingEvaluation.from_dict(d) for d in data["results"]]
    order: dict[str, int] = {}
    for ev in evals:
        order.setdefault(_config(ev)[0], len(order))
    evals.sort(key=lambda ev: order[_config(ev)[0]])  # stable: the rows of a strategy keep their order
    return plot_chunking(evals, results.with_suffix(".png") if path is None else path, n)


# -- files --------------------------------------------------------------------------------------------------
def write_json(data: Any, path: str | Path) -> Path:
    return atomic_write_text(path, json.dumps(data, indent=1, ensure_ascii=False, default=_jsonable) + "\n")


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise BackendUnavailableError("evaluation plots (matplotlib)", "eval") from exc

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | Path) -> Path:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    _pyplot().close(fig)
    return atomic_write_bytes(path, buf.getvalue())
