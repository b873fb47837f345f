"""Questions for the LLM-judged RAG evaluation (``grounded eval rag``).

:data:`SAMPLE_GUIDELINE_QUESTIONS`: twelve questions written for this library's sample guideline PDF
(:func:`grounded.samples.write_sample_pdf`, a fictional early-stage breast cancer guideline), one per
kind of content seed 001 §5.2 lists - facts in paragraphs, recommendation boxes, numbered procedures,
bulleted lists, a table row on each side of the page break - each with the expected answer and the
exact passage of the document that holds it (``evidence``, checked against the parsed text by the
tests). The judge prompt of seed 001 (A.2) does not read the expected answer; it is recorded for
people reading the per-question results.

Other question sets: a JSON list or JSON Lines file of objects with ``question`` and optional
``answer`` / ``evidence`` (:func:`load_questions`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputNotFoundError, SchemaError
from ..io.jsonl import iter_jsonl, where

__all__ = ["RagQuestion", "SAMPLE_GUIDELINE_QUESTIONS", "SAMPLE_GUIDELINE_SOURCE", "load_questions"]

SAMPLE_GUIDELINE_SOURCE = "grounded.samples sample guideline (12 questions written for it, grounded.evaluation.rag_data)"


@dataclass(frozen=True)
class RagQuestion:
    """A question, its expected answer and the document passage that answers it (both optional)."""

    question: str
    answer: str | None = None
    evidence: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "answer": self.answer, "evidence": self.evidence}


SAMPLE_GUIDELINE_QUESTIONS: tuple[RagQuestion, ...] = (
    RagQuestion(
        "Which imaging is the standard initial work-up for a suspected early breast cancer?",
        "Bilateral mammography (with tomosynthesis where available) together with ultrasound of the breast and axilla.",
        "Bilateral mammography with tomosynthesis where available, together with ultrasound of the breast and the "
        "axilla, is the standard initial work-up."),
    RagQuestion(
        "When should breast MRI be offered according to Recommendation 1?",
        "Only when its result may change the surgical plan, e.g. lobular histology, suspected multicentric disease "
        "or a discrepancy between clinical and mammographic tumour size.",
        "Offer breast MRI only when its result may change the surgical plan"),
    RagQuestion(
        "What margin is adequate for invasive cancer after breast-conserving surgery?",
        "No ink on tumour; re-excision for wider margins is not needed.",
        "No ink on tumour is an adequate margin for invasive cancer"),
    RagQuestion(
        "When is a completion axillary dissection performed after sentinel lymph node biopsy?",
        "Only when three or more sentinel nodes contain macrometastases.",
        "Completion axillary dissection only when three or more sentinel nodes contain macrometastases."),
    RagQuestion(
        "For how long should patients with ER-positive invasive breast cancer be offered endocrine therapy?",
        "For at least five years (extended to seven or ten years for node-positive disease after shared decision "
        "making).",
        "should be offered endocrine therapy for at least five years"),
    RagQuestion(
        "Which adjuvant treatment does Table 1 give for HER2-positive disease with residual disease after "
        "neoadjuvant therapy, and for how long?",
        "A switch to trastuzumab emtansine, for 14 cycles.",
        "Residual disease after neoadjuvant therapy | Switch to trastuzumab emtansine | 14 cycles"),
    RagQuestion(
        "Which regimen does Table 1 give for triple-negative breast cancer with residual disease after "
        "neoadjuvant therapy?",
        "Capecitabine, or olaparib if there is a BRCA variant (6 months / 1 year).",
        "Residual disease after neoadjuvant therapy | Capecitabine, or olaparib if BRCA variant"),
    RagQuestion(
        "Within how many weeks of surgery should adjuvant chemotherapy start?",
        "Within six weeks of surgery.",
        "Chemotherapy should start within six weeks of surgery."),
    RagQuestion(
        "Which hypofractionated schedules are the standard of care for whole-breast radiotherapy?",
        "40 Gy in 15 fractions (moderate hypofractionation) or 26 Gy in 5 fractions over one week "
        "(ultra-hypofractionation).",
        "Moderately hypofractionated schedules (40 Gy in 15 fractions) or ultra-hypofractionated schedules (26 Gy in "
        "5 fractions over one week) are the standard of care."),
    RagQuestion(
        "Which patients may be offered partial-breast irradiation?",
        "Patients aged 50 or older with small, node-negative, hormone receptor-positive tumours and clear margins.",
        "Partial-breast irradiation is an option for patients aged 50 years or older with small, node-negative, "
        "hormone receptor-positive tumours and clear margins."),
    RagQuestion(
        "How often should patients have a clinical review during the first three years of follow-up?",
        "Every 3–6 months for the first three years (then every 6–12 months).",
        "clinical review every 3–6 months for the first three years, then every 6–12 months"),
    RagQuestion(
        "What kind of studies make up level III evidence in this guideline?",
        "Prospective cohort studies and well-designed case-control studies.",
        "Level III: prospective cohort studies and well-designed case-control studies."),
)


def _question(item: Any, where: str) -> RagQuestion:
    if not isinstance(item, dict) or not isinstance(item.get("question"), str) or not item["question"].strip():
        raise SchemaError(f"{where}: expected an object with a non-empty 'question' string, got {item!r:.80}")
    extra = {k: item.get(k) for k in ("answer", "evidence")}
    for key, value in extra.items():
        if value is not None and not isinstance(value, str):
            raise SchemaError(f"{where}: '{key}' must be a string, got {type(value).__name__}")
    return RagQuestion(item["question"].strip(), extra["answer"], extra["evidence"])


def load_questions(path: str | Path) -> list[RagQuestion]:
    """Questions from a JSON list or a JSON Lines file (objects with ``question``, optional
    ``answer`` and ``evidence``); a missing file is :class:`InputNotFoundError`, anything else unreadable a
    :class:`SchemaError` naming the file and the place (a list index, or the line of a JSON Lines file:
    a file that is not one JSON document is read by :func:`grounded.io.jsonl.iter_jsonl`)."""
    path = Path(path)
    if not path.is_file():
        raise InputNotFoundError(path, "question file not found")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SchemaError(f"{path}: unreadable question file ({exc})") from exc
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except RecursionError as exc:
        raise SchemaError(f"{path}: JSON nested too deeply to read") from exc
    except ValueError:  # not one JSON document (nor UTF-8): JSON Lines, read line by line
        out = [_question(item, where(path, no)) for no, item in iter_jsonl(path)]
    else:
        items = data if isinstance(data, list) else [data]
        out = [_question(item, f"{path}[{k}]") for k, item in enumerate(items)]
    if not out:
        raise SchemaError(f"{path}: no questions")
    return out
