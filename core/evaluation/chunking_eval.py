"""Chunk-retrieval evaluation of Chroma (seed 003; thesis §3.5.3) for any chunker.

Procedure (as Chroma's ``BaseEvaluation.run``): chunk every corpus, embed all chunks of all corpora
into one collection and every question with the same model (all-MiniLM-L6-v2 by default), retrieve
the ``n`` chunks nearest to each question by cosine similarity from the *whole* collection, and
score the retrieved character ranges against the question's references
(:mod:`grounded.evaluation.retrieval_metrics`). ``n`` is 5, 10, ... or ``"min"``: the number of
chunks touching the question's references (capped at 20, as Chroma does). Chunk offsets come from
the chunkers: the LangChain baselines return spans (:mod:`.baseline_splitters`), the library's
strategies map ``element_spans`` back through the text reader's ``source_start``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .baseline_splitters import CHROMA_SEPARATORS, Cl100k, RecursiveSpanSplitter, TokenSpanSplitter
from .chroma_data import ChromaDataset
from .embeddings import CachedEmbedder
from .errors import EvaluationError
from .retrieval_metrics import ChunkRegion, MetricSummary, precision_omega, score_question, summarize
from .spans import covered, union

if TYPE_CHECKING:
    from ..llm.spec import ModelSpec

__all__ = [
    "CorpusChunker",
    "LangChainRecursive",
    "LangChainTokenText",
    "GroundedCorpusChunker",
    "GroundedSplitter",
    "wrapped_splitters",
    "SKIPPED_STRATEGIES",
    "ChunkingEvaluation",
    "evaluate_chunker",
    "PUBLISHED_MINILM_N5",
    "published_row",
    "MIN_N_CAP",
]

log = logging.getLogger(__name__)

#: strategies an evaluation cannot run here, with the reason printed in the results
SKIPPED_STRATEGIES = {
    "llm": "skipped: it needs a language model (LLMSemanticChunker) and none was given (`--llm MODULE:OBJECT` or "
    "`--llm-model NAME` scores it); none is reachable offline and no answers recorded from a real model exist for "
    "Chroma's corpora (the strategy is tested with hand-written answers, tests/data/llm_chunker)",
    "vision": "skipped: it chunks rendered PDF pages with a multimodal model; Chroma's corpora are plain text",
}
#: Chroma caps "Min" retrieval at this many chunks
MIN_N_CAP = 20
METRICS = ("recall", "precision", "precision_omega", "iou")

#: Chroma technical report (seed 003), table "Results for all-MiniLM-L6-v2", n = 5 retrieved chunks,
#: sizes in cl100k tokens. (splitter, size, overlap) -> {metric: (mean %, std %)}; "mean_size" is the
#: published mean chunk size where the splitter's size varies.
PUBLISHED_MINILM_N5: dict[tuple[str, int, int], dict[str, Any]] = {
    ("recursive", 250, 125): {"recall": (78.7, 39.2), "precision": (4.9, 4.5), "precision_omega": (21.9, 14.9),
                              "iou": (4.9, 4.4), "mean_size": 180},
    ("tokentext", 250, 125): {"recall": (82.4, 36.2), "precision": (3.6, 3.1), "precision_omega": (11.4, 6.6),
                              "iou": (3.5, 3.1), "mean_size": 250},
    ("recursive", 250, 0): {"recall": (78.5, 39.5), "precision": (5.4, 4.9), "precision_omega": (26.7, 18.3),
                            "iou": (5.4, 4.9), "mean_size": 162},
    ("tokentext", 250, 0): {"recall": (77.1, 39.3), "precision": (3.3, 3.0), "precision_omega": (16.4, 10.3),
                            "iou": (3.3, 3.0), "mean_size": 250},
    ("recursive", 200, 0): {"recall": (75.7, 40.7), "precision": (6.5, 6.2), "precision_omega": (31.2, 18.4),
                            "iou": (6.5, 6.1), "mean_size": 128},
    ("tokentext", 200, 0): {"recall": (76.6, 38.8), "precision": (4.1, 3.7), "precision_omega": (19.1, 11.0),
                            "iou": (4.1, 3.6), "mean_size": 200},
    ("cluster", 250, 0): {"recall": (77.3, 38.6), "precision": (6.1, 5.1), "precision_omega": (28.6, 16.7),
                          "iou": (6.0, 5.1), "mean_size": 168},
    ("cluster", 200, 0): {"recall": (75.2, 39.9), "precision": (7.2, 6.1), "precision_omega": (33.6, 20.0),
                          "iou": (7.2, 6.0), "mean_size": 102},
}


def published_row(splitter: str, size: int, overlap: int) -> dict[str, Any] | None:
    return PUBLISHED_MINILM_N5.get((splitter, size, overlap))


Piece = tuple[ChunkRegion, str]  # where the chunk lies + the text that gets embedded


class CorpusChunker(Protocol):
    """Anything that turns one corpus into chunks with exact corpus character ranges."""

    name: str

    def params(self) -> dict[str, Any]: ...

    def chunk_corpus(self, corpus_id: str, text: str) -> list[Piece]: ...


class _SpanBaseline:
    name = "baseline"
    splitter_key = ""

    def __init__(self, size: int, overlap: int = 0, encoder: Cl100k | None = None) -> None:
        self.size, self.overlap = size, overlap
        self.encoder = encoder or Cl100k()

    def params(self) -> dict[str, Any]:
        return {"splitter": self.splitter_key, "chunk_size": self.size, "chunk_overlap": self.overlap,
                "length": "cl100k_base tokens"}

    def _spans(self, text: str) -> list[tuple[int, int]]:
        raise NotImplementedError

    def chunk_corpus(self, corpus_id: str, text: str) -> list[Piece]:
        return [(ChunkRegion(corpus_id, ((s, e),)), text[s:e]) for s, e in self._spans(text)]


class LangChainRecursive(_SpanBaseline):
    """LangChain ``RecursiveCharacterTextSplitter`` with Chroma's separators, cl100k length."""

    name = "LangChain Recursive"
    splitter_key = "recursive"

    def _spans(self, text: str) -> list[tuple[int, int]]:
        return RecursiveSpanSplitter(self.size, self.overlap, self.encoder.count).split(text)


class LangChainTokenText(_SpanBaseline):
    """LangChain ``TokenTextSplitter`` on cl100k tokens."""

    name = "LangChain TokenText"
    splitter_key = "tokentext"

    def _spans(self, text: str) -> list[tuple[int, int]]:
        return TokenSpanSplitter(self.size, self.overlap, self.encoder).split(text)


class GroundedCorpusChunker:
    """One of this library's strategies on the text reader's tree of a corpus.

    A chunk's regions are its ``element_spans`` shifted by each element's ``source_start``; all
    other characters of its ``content`` (prepended headings, structural delimiters) count as
    ``extra_chars``, so a retrieved chunk weighs exactly ``len(content)`` characters.
    """

    def __init__(self, strategy: str, max_tokens: int, overlap: int = 0, *, spec: ModelSpec | None = None,
                 **options: Any) -> None:
        if {"llm", "model", "generation"} & set(options):
            raise EvaluationError(f"{strategy}: give the model as spec=ModelSpec(...) (its identity is the row's "
                                  "key), not as llm=/model=/generation= options")
        self.strategy, self.max_tokens, self.overlap, self.options = strategy, max_tokens, overlap, options
        #: the model of a model-driven strategy; ``model_options`` its built ``llm=`` / ``model=`` /
        #: ``generation=`` options (built on the first :meth:`chunk_corpus` unless set, e.g. shared by rows)
        self.spec = spec if spec else None
        self.model_options: dict[str, Any] | None = None
        self.name = f"grounded {strategy}"
        #: sentence embedder of the semantic strategy (a cached one shares vectors across runs)
        self.sentence_embedder: Any = None

    def params(self) -> dict[str, Any]:
        """The row's key: the configuration, and for a model-driven strategy the model's identity
        (:meth:`ModelSpec.identity`) with the generation settings it is asked with - given ones over the
        strategy's defaults - so a run at another temperature is another row, never a stale one."""
        model: dict[str, Any] = {}
        if self.spec is not None:
            from ..chunking.base import strategy_class

            model["llm"] = self.spec.identity(getattr(strategy_class(self.strategy), "generation_defaults", None))
        return {"strategy": self.strategy, "max_tokens": self.max_tokens, "overlap": self.overlap,
                "length": "all-MiniLM-L6-v2 tokens", **self.options, **model}

    def chunk_corpus(self, corpus_id: str, text: str) -> list[Piece]:
        from ..chunking import chunk
        from ..chunking.base import strategy_class
        from .text_reader import read_text

        root = read_text(text, source=corpus_id, id_prefix=corpus_id)
        starts = {n.id: int(n.metadata["source_start"]) for n in root.walk() if "source_start" in n.metadata}
        options = dict(self.options)
        if self.spec is not None:
            if self.model_options is None:
                from ..llm.spec import strategy_options

                self.model_options = strategy_options(self.strategy, self.spec)
            options.update(self.model_options)
        if strategy_class(self.strategy).uses_embedder and self.sentence_embedder is not None:
            options.setdefault("embedder", self.sentence_embedder)
        result = chunk(root, strategy=self.strategy, max_tokens=self.max_tokens, overlap=self.overlap, **options)
        pieces: list[Piece] = []
        for c in result.chunks:
            spans = union(
                (starts[eid] + int(s), starts[eid] + int(e)) for eid, s, e in c.metadata.get("element_spans", ())
            )
            extra = max(0, len(c.content) - covered(spans))
            pieces.append((ChunkRegion(corpus_id, tuple(spans), extra), c.content))
        return pieces


class GroundedSplitter:
    """A third-party splitter whose chunk strings are grounded on the corpus (:mod:`grounded.grounding`).

    The corpus becomes the text reader's tree, the splitter splits the raw corpus text, and every chunk
    string is grounded in order (:meth:`Grounder.ground_all`); its regions are the grounded spans mapped
    back to corpus offsets through each element's ``source_start``. Offsets therefore come from grounding,
    never from the splitter: a refused chunk is still retrieved, with no region (all its characters count
    as irrelevant). ``statuses`` counts the grounding outcomes of the last run."""

    def __init__(self, name: str, splitter_key: str, size: int, overlap: int, splitter: Any, split: Any) -> None:
        self.name, self.splitter_key, self.size, self.overlap = name, splitter_key, size, overlap
        self.splitter, self._split = splitter, split
        self.statuses: dict[str, int] = {}

    def params(self) -> dict[str, Any]:
        return {"splitter": self.splitter_key, "chunk_size": self.size, "chunk_overlap": self.overlap,
                "length": "cl100k_base tokens", "offsets": "grounded", "class": type(self.splitter).__name__}

    def chunk_corpus(self, corpus_id: str, text: str) -> list[Piece]:
        from bisect import bisect_right

        from ..chunking import document_text
        from ..grounding import Grounder
        from ..grounding.wrappers import text_of
        from ..model.boxes import ParsingBoundingBox
        from .text_reader import read_text

        root = read_text(text, source=corpus_id, id_prefix=corpus_id)
        doc = document_text(root)
        for node in doc.nodes:  # plain text has no geometry; the grounder places text only where boxes are
            node.geom = [ParsingBoundingBox(1, 0.0, 0.0, 1.0, 1.0)]
        source = [int(n.metadata["source_start"]) for n in doc.nodes]
        texts = [text_of(item) for item in self._split(self.splitter, text)]
        pieces: list[Piece] = []
        for chunk_text, g in zip(texts, Grounder(root).ground_all(texts), strict=True):
            self.statuses[g.status] = self.statuses.get(g.status, 0) + 1
            spans = []
            for a, b in g.spans if g.ok else ():
                inside = []  # the span's parts in each element, in corpus offsets
                k = max(0, bisect_right(doc.starts, a) - 1)
                while k < len(doc.nodes) and doc.starts[k] < b:
                    lo, hi = doc.node_span(k)
                    if min(b, hi) > max(a, lo):
                        inside.append((source[k] + max(a, lo) - lo, source[k] + min(b, hi) - lo))
                    k += 1
                if inside:  # elements are corpus slices in corpus order: the corpus text between them is in the span
                    spans.append((inside[0][0], inside[-1][1]))
            merged = union(spans)
            pieces.append((ChunkRegion(corpus_id, tuple(merged), max(0, len(chunk_text) - covered(merged))), chunk_text))
        log.info("%s on %s: groundings %s", self.name, corpus_id, self.statuses)
        return pieces


class _ChonkieCl100k:
    """cl100k_base as a chonkie tokenizer (built lazily as a subclass of chonkie's ``Tokenizer``)."""

    @staticmethod
    def make(encoder: Cl100k) -> Any:
        from chonkie.tokenizer import Tokenizer

        class Cl100kTokenizer(Tokenizer):
            def __repr__(self) -> str:
                return "Cl100kTokenizer()"

            def tokenize(self, text: str) -> list[int]:
                return encoder.encode(text)

            def encode(self, text: str) -> list[int]:
                return encoder.encode(text)

            def decode(self, tokens: Sequence[int]) -> str:
                return encoder.decode(tokens)

            def count_tokens(self, text: str) -> int:
                return encoder.count(text)

        return Cl100kTokenizer()


def wrapped_splitters(size: int = 250, overlap: int = 0, encoder: Cl100k | None = None) -> list[GroundedSplitter]:
    """LangChain ``RecursiveCharacterTextSplitter`` (Chroma's separators), LlamaIndex ``SentenceSplitter``
    and chonkie ``TokenChunker``, all counting cl100k tokens, grounded by :class:`GroundedSplitter`. The
    LangChain row re-runs the Recursive baseline through grounding (its offsets come from the splitter),
    so the two rows differ only by what grounding recovers."""
    from chonkie import TokenChunker
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core.node_parser import SentenceSplitter

    enc = encoder or Cl100k()
    return [
        GroundedSplitter("LangChain Recursive (grounded)", "langchain recursive (grounded)", size, overlap,
                         RecursiveCharacterTextSplitter(separators=list(CHROMA_SEPARATORS), chunk_size=size,
                                                        chunk_overlap=overlap, length_function=enc.count),
                         lambda s, text: s.split_text(text)),
        GroundedSplitter("LlamaIndex SentenceSplitter (grounded)", "llamaindex sentence (grounded)", size, overlap,
                         SentenceSplitter(chunk_size=size, chunk_overlap=overlap, tokenizer=enc.encode),
                         lambda s, text: s.split_text(text)),
        GroundedSplitter("chonkie TokenChunker (grounded)", "chonkie token (grounded)", size, overlap,
                         TokenChunker(tokenizer=_ChonkieCl100k.make(enc), chunk_size=size, chunk_overlap=overlap),
                         lambda s, text: s.chunk(text)),
    ]


@dataclass
class ChunkingEvaluation:
    """Scores of one chunker: ``summaries[n][scope]`` with scope ``"all"`` or a corpus id; metric
    values in [0, 1]; ``per_question[n]`` lists each question's scores."""

    name: str
    params: dict[str, Any]
    n_chunks: int
    mean_chunk_tokens: float
    summaries: dict[str, dict[str, MetricSummary]] = field(default_factory=dict)
    per_question: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, with_questions: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "params": self.params,
            "n_chunks": self.n_chunks,
            "mean_chunk_tokens_cl100k": self.mean_chunk_tokens,
            "settings": self.settings,
            "seconds": self.seconds,
            "summaries": {n: {scope: s.to_dict() for scope, s in by.items()} for n, by in self.summaries.items()},
        }
        if with_questions:
            d["per_question"] = self.per_question
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChunkingEvaluation:
        """The evaluation of one :meth:`to_dict` (a stored result file's ``results`` item), e.g. to plot
        published rows again without re-running them."""
        return cls(
            name=d["name"], params=d["params"], n_chunks=d["n_chunks"], mean_chunk_tokens=d["mean_chunk_tokens_cl100k"],
            summaries={n: {scope: MetricSummary.from_dict(s) for scope, s in by.items()} for n, by in d["summaries"].items()},
            per_question=d.get("per_question", {}), seconds=d.get("seconds", {}), settings=d.get("settings", {}),
        )


def _n_key(n: int | str) -> str:
    return "min" if str(n).lower() == "min" else str(int(n))


def evaluate_chunker(
    dataset: ChromaDataset,
    chunker: CorpusChunker,
    embedder: CachedEmbedder,
    *,
    n_values: Iterable[int | str] = ("min", 5, 10),
    chroma_compat: bool = True,
    encoder: Cl100k | None = None,
) -> ChunkingEvaluation:
    """Chunk, embed, retrieve and score ``dataset`` with ``chunker`` (see module doc).

    ``chroma_compat`` counts chunks that only abut a reference as touching it (Chroma's code does;
    it affects precision_Ω and the "min" n).
    """
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    pieces: list[Piece] = []
    for cid, text in dataset.corpora.items():
        pieces.extend(chunker.chunk_corpus(cid, text))
    if not pieces:
        raise ValueError(f"{chunker.name} produced no chunks")
    regions = [p[0] for p in pieces]
    texts = [p[1] for p in pieces]
    timings["chunking"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    chunk_vecs = embedder.embed(texts)
    question_vecs = embedder.embed([q.text for q in dataset.questions])
    timings["embedding"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    by_corpus: dict[str, list[ChunkRegion]] = {}
    for r in regions:
        by_corpus.setdefault(r.corpus_id, []).append(r)
    omegas, counts = [], []
    for q in dataset.questions:
        om, cnt = precision_omega(q.references, q.corpus_id, by_corpus.get(q.corpus_id, []), touching=chroma_compat)
        omegas.append(om)
        counts.append(cnt)

    keys = [_n_key(n) for n in n_values]
    min_cap = min(MIN_N_CAP, max(counts)) if counts else 0
    per_q_n = {k: ([min(c, min_cap) for c in counts] if k == "min" else [int(k)] * len(counts)) for k in keys}
    max_n = max((max(v) for v in per_q_n.values() if v), default=0)
    sims = question_vecs @ chunk_vecs.T
    order = np.argsort(-sims, axis=1, kind="stable")[:, : max(1, max_n)]

    evaluation = ChunkingEvaluation(
        name=chunker.name,
        params=chunker.params(),
        n_chunks=len(regions),
        mean_chunk_tokens=float(np.mean([(encoder or _encoder()).count(t) for t in texts])),
        settings={"embedding_model": embedder.model_key, "retrieval": "cosine, whole collection",
                  "chroma_compat_touching": chroma_compat, "n_questions": len(dataset.questions)},
    )
    corpus_ids = sorted({q.corpus_id for q in dataset.questions})
    for k in keys:
        rows: list[dict[str, Any]] = []
        for qi, q in enumerate(dataset.questions):
            retrieved = [regions[j] for j in order[qi, : per_q_n[k][qi]]]
            s = score_question(q.references, q.corpus_id, retrieved)
            rows.append({"corpus_id": q.corpus_id, "n": per_q_n[k][qi], "recall": s.recall,
                         "precision": s.precision, "iou": s.iou, "precision_omega": omegas[qi]})
        evaluation.per_question[k] = rows
        scopes: dict[str, MetricSummary] = {"all": _summary(rows)}
        for cid in corpus_ids:
            scopes[cid] = _summary([r for r in rows if r["corpus_id"] == cid])
        evaluation.summaries[k] = scopes
    timings["scoring"] = time.perf_counter() - t0
    evaluation.seconds = timings
    return evaluation


@lru_cache(maxsize=1)
def _encoder() -> Cl100k:
    return Cl100k()


def _summary(rows: Sequence[dict[str, Any]]) -> MetricSummary:
    return summarize({m: [r[m] for r in rows] for m in METRICS})
