"""LLM-judged RAG evaluation of chunking strategies (``grounded eval rag``; seeds 001 §5 and 002 §III).

For every strategy: the PDF's parse tree is chunked; chunks and questions are embedded with
all-MiniLM-L6-v2 (cached, :mod:`.embeddings`) and the ``top_k`` chunks most similar to a question are
its Search Results; the injected model answers from them (:data:`~.rag_judge.ANSWER_SYSTEM`); a judge
model (the same one unless another is given) grades the answer twice - seed 001's A.2 verdict and
seed 002's per-statement relevancy / faithfulness (:mod:`.rag_judge`).

A judge reply that does not hold the verdict is asked again once, with the defect named in the
prompt; a second invalid reply is recorded (``errors``) and that question is left out of that
metric's mean and counted (``invalid``), never scored as a guess. A failed model call (after the
adapter's retries) stops the run with its typed error.

Scores per strategy (:meth:`RagEvaluation.summary`): ``accuracy`` = share of valid A.2 verdicts that
are ``correct``, with the shares of ``hallucinate`` / ``abstain`` and of ``is_answer_exist``;
``faithfulness`` / ``relevancy`` = mean over questions of the mean over the answer's statements.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import EvaluationError
from .rag_data import RagQuestion
from .rag_judge import (
    ACCURACY_JUDGE_PROMPT,
    ANSWER_SYSTEM,
    STATEMENT_JUDGE_PROMPT,
    AccuracyVerdict,
    JudgeAnswerError,
    StatementScore,
    answer_prompt,
    judge_input,
    read_accuracy,
    read_statements,
    search_results,
)

__all__ = ["QuestionResult", "RagEvaluation", "retrieve", "ask_judge", "evaluate_strategy", "JUDGE_ATTEMPTS"]

JUDGE_ATTEMPTS = 2
Progress = Callable[[Iterable[Any], str, int], Iterable[Any]]
OnResult = Callable[[str, "QuestionResult"], None]


def _no_progress(items: Iterable[Any], desc: str, total: int) -> Iterable[Any]:
    return items


@dataclass
class QuestionResult:
    """One question of one strategy: what was retrieved, the answer and the two verdicts."""

    question: RagQuestion
    retrieved: list[dict[str, Any]]
    answer: str
    verdict: AccuracyVerdict | None = None
    statements: list[StatementScore] | None = None
    errors: list[str] = field(default_factory=list)
    #: wall seconds of this question's answer and of its judging (re-asks included)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def faithfulness(self) -> float | None:
        return float(np.mean([s.faithfulness for s in self.statements])) if self.statements else None

    @property
    def relevancy(self) -> float | None:
        return float(np.mean([s.relevancy for s in self.statements])) if self.statements else None

    def to_dict(self) -> dict[str, Any]:
        return {**self.question.to_dict(), "retrieved": self.retrieved, "generated_answer": self.answer,
                "verdict": self.verdict.to_dict() if self.verdict else None,
                "statements": [s.to_dict() for s in self.statements] if self.statements is not None else None,
                "faithfulness": self.faithfulness, "relevancy": self.relevancy, "errors": self.errors,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}


@dataclass
class RagEvaluation:
    """The results of one chunking configuration."""

    name: str
    params: dict[str, Any]
    n_chunks: int
    results: list[QuestionResult]
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        verdicts = [r.verdict for r in self.results if r.verdict is not None]
        scored = [r for r in self.results if r.statements]

        def share(pred: Callable[[AccuracyVerdict], bool]) -> float | None:
            return sum(1 for v in verdicts if pred(v)) / len(verdicts) if verdicts else None

        return {
            "questions": len(self.results),
            "accuracy": share(lambda v: v.response_quality == "correct"),
            "hallucinate": share(lambda v: v.response_quality == "hallucinate"),
            "abstain": share(lambda v: v.response_quality == "abstain"),
            "answer_exists": share(lambda v: v.is_answer_exist),
            "faithfulness": float(np.mean([r.faithfulness for r in scored])) if scored else None,
            "relevancy": float(np.mean([r.relevancy for r in scored])) if scored else None,
            "invalid_verdicts": len(self.results) - len(verdicts),
            "invalid_statement_scores": len(self.results) - len(scored),
        }

    def to_dict(self, with_questions: bool = True) -> dict[str, Any]:
        out = {"name": self.name, "params": self.params, "n_chunks": self.n_chunks, "summary": self.summary(),
               "seconds": self.seconds}
        if with_questions:
            out["questions"] = [r.to_dict() for r in self.results]
        return out


def retrieve(question_vecs: np.ndarray, chunk_vecs: np.ndarray, top_k: int) -> list[list[tuple[int, float]]]:
    """For each question the ``top_k`` chunk indices by cosine similarity of unit vectors, best first
    (ties: the earlier chunk first)."""
    if chunk_vecs.shape[0] == 0:
        return [[] for _ in range(question_vecs.shape[0])]
    sims = question_vecs @ chunk_vecs.T
    out = []
    for row in sims:
        order = np.lexsort((np.arange(row.size), -row))[:top_k]
        out.append([(int(i), float(row[i])) for i in order])
    return out


def ask_judge(model: Any, system: str, prompt: str, read: Callable[[str], Any], what: str) -> Any:
    """``read(model.complete(prompt, system=system))``; an invalid reply is asked again (up to
    :data:`JUDGE_ATTEMPTS` in all) with the defect named; the last :class:`JudgeAnswerError` is raised."""
    error: JudgeAnswerError | None = None
    for _ in range(JUDGE_ATTEMPTS):
        text = prompt if error is None else (
            f"{prompt}\n\nYour previous output was invalid: {error.cause}. Reply with the JSON object only.")
        try:
            return read(model.complete(text, system=system, what=what))
        except JudgeAnswerError as exc:
            error = exc
    assert error is not None
    raise error


def evaluate_strategy(
    name: str,
    params: dict[str, Any],
    chunks: Sequence[Any],
    questions: Sequence[RagQuestion],
    *,
    embed: Callable[[Sequence[str]], np.ndarray],
    model: Any,
    judge: Any = None,
    top_k: int = 5,
    progress: Progress = _no_progress,
    on_result: OnResult | None = None,
) -> RagEvaluation:
    """Retrieve, answer and judge every question over ``chunks`` (:class:`~grounded.model.Chunk` s);
    ``model`` / ``judge`` are :class:`grounded.llm.Model` s (``judge`` defaults to ``model``);
    ``on_result(name, result)`` is called as soon as each question is judged (a long run with a slow
    model can keep what finished)."""
    if top_k < 1:
        raise EvaluationError(f"top_k must be at least 1, got {top_k}")
    judge = judge or model
    texts = [c.content for c in chunks]
    started = time.perf_counter()
    chunk_vecs = embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)
    question_vecs = embed([q.question for q in questions])
    hits = retrieve(question_vecs, chunk_vecs, top_k)
    seconds = {"retrieval": time.perf_counter() - started, "generation": 0.0, "judging": 0.0}
    results = []
    for q, found in progress(list(zip(questions, hits)), f"rag/{name}", len(questions)):
        picked = [chunks[i] for i, _ in found]
        results_text = search_results([c.content for c in picked], [c.metadata.get("pages", []) for c in picked])
        retrieved = [{"rank": k, "id": c.id, "pages": c.metadata.get("pages", []), "score": round(s, 6)}
                     for k, (c, (_, s)) in enumerate(zip(picked, found), 1)]
        t0 = time.perf_counter()
        answer = model.complete(answer_prompt(q.question, results_text), system=ANSWER_SYSTEM,
                                what=f"answer ({name}): {q.question[:40]}")
        t1 = time.perf_counter()
        result = QuestionResult(q, retrieved, answer)
        read_verdict = functools.partial(read_accuracy, n_sources=len(picked))
        try:
            result.verdict = ask_judge(judge, ACCURACY_JUDGE_PROMPT, judge_input(q.question, results_text, answer),
                                       read_verdict, f"accuracy judge ({name})")
        except JudgeAnswerError as exc:
            result.errors.append(f"accuracy: {exc.cause}")
        try:
            result.statements = ask_judge(
                judge, STATEMENT_JUDGE_PROMPT,
                judge_input(q.question, results_text, answer, context_label="Retrieved Context"),
                read_statements, f"faithfulness/relevancy judge ({name})")
        except JudgeAnswerError as exc:
            result.errors.append(f"statements: {exc.cause}")
        result.seconds = {"answer": t1 - t0, "judging": time.perf_counter() - t1}
        seconds["generation"] += result.seconds["answer"]
        seconds["judging"] += result.seconds["judging"]
        results.append(result)
        if on_result is not None:
            on_result(name, result)
    return RagEvaluation(name, params, len(chunks), results, seconds)


def run_rag(
    root: Any,
    questions: Sequence[RagQuestion],
    chunkers: Sequence[tuple[str, Any]],
    *,
    embed: Callable[[Sequence[str]], np.ndarray],
    model: Any,
    judge: Any = None,
    top_k: int = 5,
    progress: Progress = _no_progress,
    on_result: OnResult | None = None,
) -> list[RagEvaluation]:
    """:func:`evaluate_strategy` for every ``(name, Chunker)`` on the parse tree ``root``."""
    if not questions:
        raise EvaluationError("no questions to evaluate")
    out = []
    for name, chunker in chunkers:
        started = time.perf_counter()
        chunks = chunker.chunk(root).chunks
        chunking = time.perf_counter() - started
        ev = evaluate_strategy(name, chunker.strategy.params(), chunks, questions, embed=embed, model=model,
                               judge=judge, top_k=top_k, progress=progress, on_result=on_result)
        ev.seconds = {"chunking": chunking, **ev.seconds}
        out.append(ev)
    return out
