"""Every ``grounded search`` mode on the development question set over the shared PDFs (issue 32 items 1-3).

The questions: ``benchmarks/data/search_questions.jsonl``, one JSON object a line --
``{"id", "pdf" (under the shared data folder), "question", "answers": [{"page" (1-based), "excerpt"}]}``,
written by reading the PDFs (never copied from them wholesale); several answers are alternatives (any one
answers). An answer may also say where its excerpt lives -- ``"kind"``: ``"text"`` (running text, the
default, left out), ``"table"`` (one row of a table, or cells of one row, as the PDF's words give them),
``"list"`` (one list item) or ``"multipage"`` (a sentence across a page break, with ``"end_page": page + 1``).
``tests/search/test_search_questions.py`` checks that every excerpt occurs where it says
(:func:`answer_word_ids`):

* on one page: the excerpt's words are one contiguous run of the page's words in reading order;
* across a page break (``page`` .. ``end_page``): the excerpt's words are one run of page ``page``'s words
  followed by page ``end_page``'s words, where its head (>= 1 word) closes a text block of the first page
  (the foot of the page or of its last column) and its tail (>= 1 word) opens a text block of the next. What
  PyMuPDF's reading order puts between the two (running feet and heads, figure captions, footnotes, a
  table above the continuation) is not part of the run: the pages' words are never simply concatenated,
  since on these PDFs something always stands between.

What is run: the question set's PDFs ingested **once** (``grounded.ingest.ingest``, pymupdf, ``recursive``
N = 256, the ingest defaults, ``--embed none --sink lancedb``) into a temporary OUT; its rows are
then written as two search tables that differ only in what is searched:

* ``context off``: BM25 indexes the stored ``text`` (the body) and the vectors are of the body;
* ``context on``: BM25 indexes ``search_text`` and the vectors are of ``search_text`` fitted to MiniLM's
  window (:func:`grounded.ingest.rows.search_text`: the heading path before the body;
  :func:`~grounded.ingest.rows.embed_text`: the path trimmed to the room the body leaves, as ingest embeds).

Vectors: all-MiniLM-L6-v2 through the ONNX query path (:mod:`grounded.chunking.minilm_onnx`, equal to
sentence-transformers at cosine >= 0.999). Each question is searched with :func:`grounded.search.search`:
``text`` and ``vector`` (top 50 each, kept for the fusion study of ``benchmarks/search_fusion.py``,
written to ``--lists``) and ``hybrid`` (the engine's default fusion).

Scores (per question, then averaged; ``--save`` writes the Markdown table):

* **a hit covers an answer** when the chunk lies on the answer's page, or on any page of a multi-page
  answer's range (its ``pages``), and its body
  holds at least half of the excerpt's words (at least 3; all of a shorter excerpt) as one
  contiguous run -- words = lower-case letter/digit runs after NFKC, a line-end hyphen joined
  (:func:`grounded.evaluation.box_words.tokens`), so spacing, ligatures and punctuation do not count;
* **recall@k**: share of questions with a covering chunk among the top k (any of its answers);
* **hit@1**: the top hit covers an answer;
* **highlight precision** of the top hit: of the PDF words its line boxes highlight (PyMuPDF words whose
  centre lies in a line span), the share that belong to an answer's excerpt on that page -- for a
  multi-page answer, its head on the first page and its tail on the next (0 when the top hit misses).

    python benchmarks/search_questions.py [--data ../shared/data] [--save docs/results/search_questions.md]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
QUESTIONS = REPO / "benchmarks" / "data" / "search_questions.jsonl"
KS = (1, 3, 5, 10)
DEPTH = 50
MODES = ("text", "vector", "hybrid")
CONTEXTS = ("off", "on")


KINDS = ("text", "table", "list", "multipage")

PageWords = list[tuple[float, float, list[str]]]


class QuestionSetError(ValueError):
    """A line of the question set that does not follow the format of the module docstring."""


@dataclass(frozen=True)
class Answer:
    """``page`` (1-based) holds the excerpt; a multi-page answer runs on to ``end_page`` (= ``page + 1``)."""

    page: int
    excerpt: str
    end_page: int | None = None
    kind: str = "text"

    @property
    def pages(self) -> range:
        """The pages the excerpt lies on: ``page`` .. ``end_page``."""
        return range(self.page, (self.end_page or self.page) + 1)


@dataclass(frozen=True)
class Question:
    id: str
    pdf: str
    question: str
    answers: tuple[Answer, ...]


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    """The question set; :class:`QuestionSetError` (naming the file and line) for an answer whose ``kind``
    is not one of :data:`KINDS`, or whose ``end_page`` is not the page after ``page``."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            d = json.loads(line)
            answers = []
            for a in d["answers"]:
                page = int(a["page"])
                end = int(a["end_page"]) if a.get("end_page") is not None else None
                kind = str(a.get("kind", "text"))
                if kind not in KINDS:
                    raise QuestionSetError(f"{path}:{number}: answer kind {kind!r} is not one of {', '.join(KINDS)}")
                if end is not None and end != page + 1:
                    raise QuestionSetError(f"{path}:{number}: end_page {end} is not the page after page {page} "
                                           "(a multi-page answer crosses one page break)")
                answers.append(Answer(page, str(a["excerpt"]), end, kind))
            out.append(Question(d["id"], d["pdf"], d["question"], tuple(answers)))
    return out


def words(text: str) -> list[str]:
    """The compared words of ``text``: NFKC, then lower-case letter/digit runs, line-end hyphens joined."""
    from grounded.evaluation.box_words import tokens

    return tokens(unicodedata.normalize("NFKC", text))


def page_words(doc: Any, page: int) -> PageWords:
    """``(centre x, centre y, words)`` of each PyMuPDF word of ``page`` (fractions of the page)."""
    from grounded.evaluation.box_words import _page_words

    return [(x, y, words(w)) for x, y, w in _page_words(doc, page)]


def block_edges(doc: Any, page: int) -> list[tuple[bool, bool]]:
    """``(opens a text block, closes a text block)`` of each word of :func:`page_words` (same order and
    length): PyMuPDF's ``get_text("words")`` block numbers, a line-end hyphenated word joined with the next
    line's first word as ``page_words`` joins it (the joined word closes what its second part closes)."""
    raw = doc[page - 1].get_text("words")
    out: list[tuple[bool, bool]] = []
    i = 0
    while i < len(raw):
        first = last = i
        text, block, line = raw[i][4], raw[i][5], raw[i][6]
        if text.endswith("-") and i + 1 < len(raw) and (raw[i + 1][5], raw[i + 1][6]) != (block, line) and raw[i + 1][4][:1].islower():
            last = i + 1
        opens = first == 0 or raw[first - 1][5] != raw[first][5]
        closes = last == len(raw) - 1 or raw[last + 1][5] != raw[last][5]
        out.append((opens, closes))
        i = last + 1
    return out


def find_run(haystack: Sequence[str], needle: Sequence[str]) -> int | None:
    """Start of the first occurrence of ``needle`` as a contiguous run in ``haystack``."""
    return next(find_runs(haystack, needle), None)


def find_runs(haystack: Sequence[str], needle: Sequence[str]) -> Iterator[int]:
    """Start of every occurrence of ``needle`` as a contiguous run in ``haystack``, in order."""
    n = len(needle)
    for i in range(len(haystack) - n + 1):
        if list(haystack[i : i + n]) == list(needle):
            yield i


def _flat(pwords: PageWords) -> list[tuple[str, int, bool, bool]]:
    """``(token, word index, first token of its word, last token of its word)`` of each token of the page."""
    return [(t, i, k == 0, k == len(ts) - 1) for i, (_, _, ts) in enumerate(pwords) for k, t in enumerate(ts)]


def excerpt_word_ids(pwords: PageWords, excerpt: str) -> set[int] | None:
    """Indexes (into ``pwords``) of the page words that make up ``excerpt``, None when it is not there."""
    flat = _flat(pwords)
    target = words(excerpt)
    at = find_run([t for t, *_ in flat], target)
    return None if at is None or not target else {flat[j][1] for j in range(at, at + len(target))}


def excerpt_word_ids_across(first: PageWords, first_edges: Sequence[tuple[bool, bool]], second: PageWords,
                            second_edges: Sequence[tuple[bool, bool]], excerpt: str) -> tuple[set[int], set[int]] | None:
    """Indexes of the words of ``excerpt`` on two consecutive pages, ``(first page's, second page's)``,
    None when it is not there: its head (>= 1 word) is a run of ``first`` that ends on the last token of a
    word closing a text block, its tail (the rest, >= 1 word) a run of ``second`` that starts on the first
    token of a word opening one (``*_edges``: :func:`block_edges` of each page)."""
    target = words(excerpt)
    a, b = _flat(first), _flat(second)
    ta, tb = [t for t, *_ in a], [t for t, *_ in b]
    for k in range(1, len(target)):
        heads = [i for i in find_runs(ta, target[:k]) if a[i + k - 1][3] and first_edges[a[i + k - 1][1]][1]]
        if not heads:
            continue
        tails = [j for j in find_runs(tb, target[k:]) if b[j][2] and second_edges[b[j][1]][0]]
        if tails:
            i, j = heads[-1], tails[0]  # the last block end of the first page, the first block start of the next
            return {a[x][1] for x in range(i, i + k)}, {b[x][1] for x in range(j, j + len(target) - k)}
    return None


def answer_word_ids(doc: Any, answer: Answer, cache: dict[int, PageWords] | None = None) -> dict[int, set[int]] | None:
    """The words (indexes into :func:`page_words` of each page) that make up ``answer``'s excerpt, by page;
    None when the excerpt is not where the answer says (the rules of the module docstring). ``cache`` holds
    ``page_words`` by page and is filled as pages are read."""
    cache = {} if cache is None else cache
    for page in answer.pages:
        if page not in cache:
            cache[page] = page_words(doc, page)
    if answer.end_page is None:
        ids = excerpt_word_ids(cache[answer.page], answer.excerpt)
        return None if ids is None else {answer.page: ids}
    found = excerpt_word_ids_across(cache[answer.page], block_edges(doc, answer.page), cache[answer.end_page],
                                    block_edges(doc, answer.end_page), answer.excerpt)
    return None if found is None else {answer.page: found[0], answer.end_page: found[1]}


def longest_run(a: Sequence[str], b: Sequence[str]) -> int:
    from difflib import SequenceMatcher

    m = SequenceMatcher(None, list(a), list(b), autojunk=False).find_longest_match(0, len(a), 0, len(b))
    return int(m.size)


def covers(body: str, pages: Iterable[int], answer: Answer) -> bool:
    """The rule of the module docstring: on a page of the answer (any page of a multi-page answer's range),
    and half the excerpt's words (>= 3) in one run."""
    if not set(answer.pages) & set(pages):
        return False
    target = words(answer.excerpt)
    need = len(target) if len(target) < 3 else max(3, (len(target) + 1) // 2)
    return longest_run(words(body), target) >= need


def highlight_precision(doc: Any, boxes: Sequence[Any], answers: Sequence[Answer], cache: dict[int, PageWords]) -> float:
    """Share of the words highlighted by ``boxes`` (hit boxes with line spans) that lie in an answer excerpt
    (on each page, the part of the excerpt that lies on it)."""
    lines = [(b.page, s) for b in boxes for s in (b.spans or [b])]
    shown = inside = 0
    for page in sorted({p for p, _ in lines}):
        if page not in cache:
            cache[page] = page_words(doc, page)
        pw = cache[page]
        wanted: set[int] = set()
        for a in answers:
            if page in a.pages:
                wanted |= (answer_word_ids(doc, a, cache) or {}).get(page, set())
        rects = [s for p, s in lines if p == page]
        for i, (cx, cy, ts) in enumerate(pw):
            if ts and any(r.left <= cx <= r.right and r.top <= cy <= r.bottom for r in rects):
                shown += 1
                inside += i in wanted
    return inside / shown if shown else 0.0


def ingest_pdfs(pdfs: Sequence[Path], out: Path) -> None:
    from grounded.ingest import ingest

    report = ingest([str(p) for p in pdfs], out, embed="none", sink="lancedb", workers=1, progress=False)
    if not report.ok:
        raise SystemExit(f"ingest failed: {report.summary()}")


def variant_table(rows: Any, out: Path, context: str, embed: Any) -> None:
    """``out/lancedb`` table ``chunks``: the ingest ``rows`` + ``vector`` (+ ``search_text`` when
    ``context == "on"``), the FTS index on the column BM25 should read."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    from grounded.ingest.rows import embed_text, search_text
    from grounded.ingest.worker import embed_window

    rows = rows.drop_columns([c for c in ("vector", "search_text") if c in rows.column_names])
    bodies = [t[b:] for t, b in zip(rows.column("text").to_pylist(), rows.column("body_start").to_pylist())]
    if context == "on":  # BM25 reads search_text; the vectors are of it fitted to MiniLM's window, as ingest embeds
        records = rows.select(["text", "body_start", "section"]).to_pylist()
        indexed = [search_text(r) for r in records]
        rows = rows.append_column("search_text", pa.array(indexed, pa.string()))
        count, window = embed_window("minilm")
        embedded = [embed_text(r, count, window)[0] for r in records]
    else:
        embedded = bodies
    vectors = np.asarray(embed(embedded), dtype=np.float32)
    rows = rows.append_column("vector", pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()),
                                                                          vectors.shape[1]))
    table = lancedb.connect(str(out / "lancedb")).create_table("chunks", data=rows)
    table.create_index("search_text" if context == "on" else "text", config=FTS(), replace=True)


def score_as_ingested(out: Path, data: Path) -> int:
    """recall@5 / hit@1 of each mode (and the default) over an ingest output of the question set's PDFs."""
    from grounded.search import NoSearchableWordsError, SearchIndex, default_mode, search

    questions = load_questions()
    index = SearchIndex(out)
    print(f"| mode | recall@5 | hit@1 |  ({out}; default = {default_mode(index)})\n|---|---|---|")
    for mode in (None, "hybrid", "text", "vector"):
        r5, h1 = [], []
        for q in questions:
            try:
                hits = search(index, q.question, 5, mode=mode)
            except NoSearchableWordsError:  # a question text mode cannot serve counts as a miss
                hits = []
            ok = [Path(h.source_path).resolve() == (data / q.pdf).resolve() and any(covers(h.body, h.pages, a) for a in q.answers)
                  for h in hits]
            r5.append(any(ok))
            h1.append(bool(ok) and ok[0])
        print(f"| {mode or 'default'} | {100 * np.mean(r5):.1f} | {100 * np.mean(h1):.1f} |")
    return 0


def bootstrap(diff: np.ndarray, seed: int = 0, n: int = 2000) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(n, len(diff)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def main(argv: list[str] | None = None) -> int:
    import lancedb
    import pymupdf

    from grounded.chunking.minilm_onnx import onnx_query_embedder
    from grounded.search import NoSearchableWordsError, SearchIndex, search

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--save", type=Path, default=None, help="write the Markdown report here")
    ap.add_argument("--lists", type=Path, default=Path(tempfile.gettempdir()) / "search_questions-lists.json",
                    help="write each question's text/vector lists (with coverage) here, for search_fusion.py")
    ap.add_argument("--out", type=Path, default=None, help="reuse this ingest OUT (else a temporary one)")
    ap.add_argument("--as-ingested", type=Path, default=None, metavar="OUT",
                    help="only score OUT as `grounded ingest --embed minilm --sink lancedb` wrote it (its own "
                         "search_text index and torch vectors), every mode and the default, and print the table")
    args = ap.parse_args(argv)
    if args.as_ingested is not None:
        return score_as_ingested(args.as_ingested, args.data)
    started = time.perf_counter()
    questions = load_questions()
    pdfs = sorted({q.pdf for q in questions})
    embed = onnx_query_embedder()
    if embed is None:
        raise SystemExit("the ONNX MiniLM graph is unavailable (see grounded.chunking.minilm_onnx)")
    per_q: dict[tuple[str, str], dict[str, list[float]]] = {}
    dump: dict[str, Any] = {"questions": [q.id for q in questions], "pdfs": [q.pdf for q in questions], "contexts": {}}
    with tempfile.TemporaryDirectory(prefix="search_questions-") as tmp:
        out = args.out or Path(tmp) / "ingest"
        t0 = time.perf_counter()
        if not (out / "manifest.json").exists():
            ingest_pdfs([args.data / p for p in pdfs], out)
        ingest_seconds = time.perf_counter() - t0
        rows = lancedb.connect(str(out / "lancedb")).open_table("chunks").to_arrow()
        n_chunks = rows.num_rows
        docs = {p: pymupdf.open(str(args.data / p)) for p in pdfs}
        caches: dict[str, dict[int, Any]] = {p: {} for p in pdfs}
        for context in CONTEXTS:
            vout = Path(tmp) / f"context-{context}"
            variant_table(rows, vout, context, embed)
            index = SearchIndex(vout)
            lists_dump = []
            for q in questions:
                try:
                    text = search(index, q.question, DEPTH, mode="text")
                except NoSearchableWordsError:
                    text = []
                vector = search(index, q.question, DEPTH, mode="vector", embedder=embed)
                hybrid = search(index, q.question, max(KS), mode="hybrid", embedder=embed)
                hit_cover = {h.chunk_id: any(covers(h.body, h.pages, a) for a in q.answers) for h in [*text, *vector, *hybrid]
                             if Path(h.source_path).resolve() == (args.data / q.pdf).resolve()}
                lists_dump.append({"text": [[h.chunk_id, h.score] for h in text],
                                   "vector": [[h.chunk_id, h.score] for h in vector],
                                   "covers": sorted(c for c, ok in hit_cover.items() if ok)})
                for mode, hits in (("text", text), ("vector", vector), ("hybrid", hybrid)):
                    empty: dict[str, list[float]] = {name: [] for name in [*(f"recall@{k}" for k in KS), "hit@1", "precision"]}
                    scores = per_q.setdefault((context, mode), empty)
                    ok = [hit_cover.get(h.chunk_id, False) for h in hits]
                    for k in KS:
                        scores[f"recall@{k}"].append(float(any(ok[:k])))
                    scores["hit@1"].append(float(bool(ok[:1]) and ok[0]))
                    top = hits[0] if hits else None
                    scores["precision"].append(
                        highlight_precision(docs[q.pdf], top.boxes, q.answers, caches[q.pdf])
                        if top is not None and ok[0] else 0.0)
            dump["contexts"][context] = lists_dump
    args.lists.write_text(json.dumps(dump), encoding="utf-8")
    lines = [
        "# Search modes on the development question set (shared PDFs)",
        "",
        "Command: `python benchmarks/search_questions.py --save docs/results/search_questions.md` "
        f"({time.perf_counter() - started:.0f} s on the shared 2-core machine; ingest {ingest_seconds:.0f} s).",
        "",
        f"{len(questions)} questions over {len(pdfs)} PDFs (`benchmarks/data/search_questions.jsonl`), "
        f"{n_chunks} chunks (ingest defaults: pymupdf, `recursive`, N = 256). Scoring rule and method: the "
        "docstring of `benchmarks/search_questions.py`. Values in %; highlight precision = share of the top "
        "hit's highlighted words that are the answer's excerpt (0 when the top hit misses).",
        "",
        "| context | mode | " + " | ".join(f"recall@{k}" for k in KS) + " | hit@1 | highlight precision (top hit) |",
        "|---|---|" + "---|" * len(KS) + "---|---|",
    ]
    for context in CONTEXTS:
        for mode in MODES:
            s = per_q[(context, mode)]
            lines.append(f"| {context} | {mode} | " + " | ".join(f"{100 * np.mean(s[f'recall@{k}']):.1f}" for k in KS)
                         + f" | {100 * np.mean(s['hit@1']):.1f} | {100 * np.mean(s['precision']):.1f} |")
    lines += ["", "Recall@5 per PDF (%):", "", "| context | mode | " + " | ".join(Path(p).stem for p in pdfs) + " |",
              "|---|---|" + "---|" * len(pdfs)]
    for context in CONTEXTS:
        for mode in MODES:
            r5 = np.array(per_q[(context, mode)]["recall@5"])
            lines.append(f"| {context} | {mode} | " + " | ".join(
                f"{100 * r5[[i for i, q in enumerate(questions) if q.pdf == p]].mean():.1f}" for p in pdfs) + " |")
    lines += ["", "Paired differences in recall@5 (95% bootstrap interval of the mean, 2000 resamples, seed 0; "
              "won / tied / lost by the first):", "", "| comparison | mean (points) | 95% interval | won / tied / lost |",
              "|---|---|---|---|"]
    pairs = [(("on", "hybrid"), ("on", "text")), (("on", "hybrid"), ("on", "vector")), (("on", "text"), ("on", "vector")),
             (("on", "text"), ("off", "text")), (("on", "vector"), ("off", "vector")), (("on", "hybrid"), ("off", "hybrid"))]
    for a, b in pairs:
        diff = 100 * (np.array(per_q[a]["recall@5"]) - np.array(per_q[b]["recall@5"]))
        lo, hi = bootstrap(diff)
        lines.append(f"| {a[1]} (context {a[0]}) − {b[1]} (context {b[0]}) | {diff.mean():+.1f} | [{lo:+.1f}, {hi:+.1f}] | "
                     f"{int((diff > 0).sum())} / {int((diff == 0).sum())} / {int((diff < 0).sum())} |")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.save:
        args.save.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
