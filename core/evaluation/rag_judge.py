"""The prompts of the LLM-judged RAG evaluation and the reading of the judge's answers.

* :data:`ANSWER_SYSTEM`: the generator's instruction (answer from the numbered search results only).
* :data:`ACCURACY_JUDGE_PROMPT`: seed 001's evaluation prompt (Appendix A.2) word for word: the judge
  reads the Question, Search Results and Answer and returns ``is_answer_exist``, ``response_quality``
  (``correct`` / ``hallucinate`` / ``abstain``) and ``answer_ids``; accuracy (seed 001 §5.3,
  Table 1) is the share of ``correct``.
* :data:`STATEMENT_JUDGE_PROMPT`: seed 002's answer relevancy and faithfulness (§III A-B): the answer
  is split into statements, each scored against the query (``r^{a->q}``) and against the retrieved
  context (``r^{a->c}``) with a value from {0, 0.2, 0.4, 0.6, 0.8, 1} (§IV); a question's score is the
  mean over its statements, the metric the mean over questions (eqs. 1-2).

:func:`read_accuracy` and :func:`read_statements` turn a reply into a typed verdict or raise
:class:`JudgeAnswerError` saying what was wrong with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ModelOutputError

__all__ = [
    "ANSWER_SYSTEM",
    "ACCURACY_JUDGE_PROMPT",
    "STATEMENT_JUDGE_PROMPT",
    "SCORE_LEVELS",
    "AccuracyVerdict",
    "StatementScore",
    "JudgeAnswerError",
    "search_results",
    "answer_prompt",
    "judge_input",
    "read_accuracy",
    "read_statements",
]

Quality = Literal["correct", "hallucinate", "abstain"]
QUALITIES: tuple[str, ...] = ("correct", "hallucinate", "abstain")
SCORE_LEVELS: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)

ANSWER_SYSTEM = (
    "You answer questions about a document. Use only the numbered Search Results below; do not use outside "
    "knowledge. Answer briefly and cite the numbers of the results you used in square brackets, e.g. [2]. If the "
    "Search Results do not contain the answer, say that you cannot answer the question from them."
)

#: seed 001, Appendix A.2 "Prompt for Evaluation", word for word
ACCURACY_JUDGE_PROMPT = """Instruction: Read the given Question, Search Results, and Answer. Evaluate whether the knowledge sources contain the necessary information to answer the query and assess the quality of the bot's response.

Provide your output in plain JSON format.

Evaluation Criteria:

is_answer_exist: Determine whether the provided knowledge sources contain information that can be used to answer the user query. Mark True if the knowledge includes content that directly or inferentially answers the question. Mark False if the knowledge does not contain the necessary information, is unrelated, or insufficient to address the query.

response_quality: Assess how the LLM handled the query based on the knowledge provided. Choose one of the following labels:

- "correct" The model answered the query accurately using relevant information from the knowledge. No unsupported inferences or hallucinations.
- "hallucinate" The model introduced information not found in or not supported by the knowledge, or it incorrectly assumed relevance from unrelated content.
- "abstain" The model acknowledged it could not answer due to lack of information, or refrained from answering based on absence of relevant knowledge.

answer_ids: List the specific knowledge source indices or document references used (or that should have been used) to support the LLM's answer. If the answer is not present in the Search Results, return an empty List."""

#: seed 002 §III A (answer relevancy) and B (faithfulness), scored on the scale of §IV
STATEMENT_JUDGE_PROMPT = """Instruction: Read the given Question, Retrieved Context, and Answer of a retrieval-augmented generation system. Split the Answer into its individual statements (each claim it makes). Score every statement on two metrics, each with exactly one value from the set 0, 0.2, 0.4, 0.6, 0.8, 1:

relevancy: how well the statement addresses the Question. 1 = it directly answers the Question; 0 = it is unrelated to the Question.

faithfulness: how well the statement is supported by the Retrieved Context. 1 = it is stated in or follows from the Retrieved Context; 0 = it is not supported by the Retrieved Context or contradicts it.

Provide your output in plain JSON format: {"statements": [{"statement": "<the statement>", "relevancy": <score>, "faithfulness": <score>}]}"""


class JudgeAnswerError(ModelOutputError):
    """A judge's reply that does not hold the verdict the prompt asks for."""


@dataclass(frozen=True)
class AccuracyVerdict:
    """Seed 001's judgement of one answer."""

    is_answer_exist: bool
    response_quality: Quality
    answer_ids: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"is_answer_exist": self.is_answer_exist, "response_quality": self.response_quality,
                "answer_ids": list(self.answer_ids)}


@dataclass(frozen=True)
class StatementScore:
    """Seed 002's scores of one answer statement."""

    statement: str
    relevancy: float
    faithfulness: float

    def to_dict(self) -> dict[str, Any]:
        return {"statement": self.statement, "relevancy": self.relevancy, "faithfulness": self.faithfulness}


def search_results(texts: Sequence[str], pages: Sequence[Sequence[int]] = ()) -> str:
    """The retrieved chunks as numbered knowledge sources ``[1] (pages 2-3) text``, best first."""
    out = []
    for k, text in enumerate(texts, 1):
        p = sorted(set(pages[k - 1])) if k - 1 < len(pages) else []
        where = f" (page {p[0]})" if len(p) == 1 else (f" (pages {p[0]}-{p[-1]})" if p else "")
        out.append(f"[{k}]{where} {text.strip()}")
    return "\n\n".join(out)


def answer_prompt(question: str, results: str) -> str:
    """The generator's user prompt (its system prompt is :data:`ANSWER_SYSTEM`)."""
    return f"Search Results:\n\n{results}\n\nQuestion: {question}\n\nAnswer:"


def judge_input(question: str, results: str, answer: str, *, context_label: str = "Search Results") -> str:
    """The judges' user prompt: the three inputs their instruction names."""
    return f"Question: {question}\n\n{context_label}:\n\n{results}\n\nAnswer: {answer}"


def _json(reply: str) -> Any:
    from ..parsers.backends.gemini import parse_model_json

    try:
        return parse_model_json(reply)
    except ValueError as exc:
        shown = " ".join(reply.split())
        raise JudgeAnswerError(
            "judge answer", f"{exc}; received {shown[:120]!r}{'...' if len(shown) > 120 else ''}") from None


def _bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    raise JudgeAnswerError("judge answer", f"{key} must be True or False, got {value!r}")


def _ids(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, bool):
            raise JudgeAnswerError("judge answer", f"answer_ids must list source numbers, got {value!r}")
        if isinstance(item, int):
            out.append(item)
            continue
        found = re.fullmatch(r"\s*\[?\s*(\d+)\s*\]?\s*", str(item))
        if not found:
            raise JudgeAnswerError("judge answer", f"answer_ids must list source numbers, got {value!r}")
        out.append(int(found.group(1)))
    return tuple(out)


def read_accuracy(reply: str, n_sources: int) -> AccuracyVerdict:
    """The A.2 verdict in ``reply``; a source number outside 1..``n_sources`` is an error."""
    data = _json(reply)
    if not isinstance(data, dict):
        raise JudgeAnswerError("judge answer", f"expected a JSON object, got {type(data).__name__}")
    missing = [k for k in ("is_answer_exist", "response_quality") if k not in data]
    if missing:
        raise JudgeAnswerError("judge answer", f"missing {', '.join(missing)} (keys: {', '.join(map(str, data)) or 'none'})")
    quality = str(data["response_quality"]).strip().strip('"').lower()
    if quality not in QUALITIES:
        raise JudgeAnswerError("judge answer", f"response_quality must be one of {', '.join(QUALITIES)}, got "
                                               f"{data['response_quality']!r}")
    ids = _ids(data.get("answer_ids"))
    bad = [i for i in ids if not 1 <= i <= n_sources]
    if bad:
        raise JudgeAnswerError("judge answer", f"answer_ids {bad} name no search result (1..{n_sources})")
    return AccuracyVerdict(_bool(data["is_answer_exist"], "is_answer_exist"), quality, ids)  # type: ignore[arg-type]


def _level(value: Any, key: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise JudgeAnswerError("judge answer", f"{key} must be a number, got {value!r}") from None
    for level in SCORE_LEVELS:
        if abs(number - level) < 1e-6:
            return level
    raise JudgeAnswerError("judge answer", f"{key} must be one of 0, 0.2, 0.4, 0.6, 0.8, 1, got {value!r}")


def read_statements(reply: str) -> list[StatementScore]:
    """Seed 002's statement scores in ``reply`` (at least one statement)."""
    data = _json(reply)
    items = data.get("statements") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise JudgeAnswerError("judge answer", "expected a non-empty 'statements' list")
    out = []
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            raise JudgeAnswerError("judge answer", f"statement {k + 1} is not an object: {item!r:.60}")
        out.append(StatementScore(str(item.get("statement", "")).strip(), _level(item.get("relevancy"), "relevancy"),
                                  _level(item.get("faithfulness"), "faithfulness")))
    return out
