"""A fake model replaying the hand-written replies of tests/data/rag (``grounded eval rag`` tests):
``tests.support.rag_fakes:recorded_model()`` is what the tests pass as ``--llm``."""

from __future__ import annotations

import json
import re

from grounded.evaluation.rag_judge import ACCURACY_JUDGE_PROMPT, ANSWER_SYSTEM, STATEMENT_JUDGE_PROMPT
from tests.support.data import TEST_DATA

RAG_DATA = TEST_DATA / "rag"
RECORDED = json.loads((RAG_DATA / "recorded_replies.json").read_text(encoding="utf-8"))
VISION_ANSWER = (RAG_DATA / "sample_guideline_vision.txt").read_text(encoding="utf-8")
REASK = "Your previous output was invalid"


class RecordedModel:
    """A callable model (``(prompt) -> str``, ``(images, prompt) -> str``) replaying the recorded replies:
    the role is read from the system prompt the adapter puts first, the question from the prompt, the
    reply index from whether it is a re-ask. Every prompt is kept for the assertions."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.images = 0

    def __call__(self, *args: object) -> str:
        if len(args) == 2:  # the vision strategy: page images + the chunking prompt
            self.images += len(args[0])  # type: ignore[arg-type]
            return VISION_ANSWER
        prompt = str(args[0])
        self.prompts.append(prompt)
        question = re.search(r"Question: (.*)", prompt)
        assert question, prompt[:200]
        q = question.group(1).strip()
        if prompt.startswith(ANSWER_SYSTEM):
            return str(RECORDED["answers"][q])
        role = "accuracy" if prompt.startswith(ACCURACY_JUDGE_PROMPT) else "statements"
        assert role == "accuracy" or prompt.startswith(STATEMENT_JUDGE_PROMPT)
        return str(RECORDED[role][q][1 if REASK in prompt else 0])


def recorded_model() -> RecordedModel:
    return RecordedModel()
