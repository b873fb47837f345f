"""``grounded eval rag``: the judges' prompts (seed 001 A.2 word for word, seed 002's statement
scores), the reading of their replies, the re-ask after an invalid reply, the aggregation, and the
whole run on the sample guideline with a fake model replaying hand-written replies
(tests/data/rag/README.md) - fixed, hierarchical and the vision strategy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grounded.chunking import document_text
from grounded.cli import main
from grounded.demo.samples import write_sample_pdf
from grounded.evaluation.rag import QuestionResult, RagEvaluation, ask_judge, retrieve
from grounded.evaluation.rag_data import SAMPLE_GUIDELINE_QUESTIONS, RagQuestion, load_questions
from grounded.evaluation.rag_judge import (
    ACCURACY_JUDGE_PROMPT,
    ANSWER_SYSTEM,
    STATEMENT_JUDGE_PROMPT,
    AccuracyVerdict,
    JudgeAnswerError,
    StatementScore,
    read_accuracy,
    read_statements,
    search_results,
)
from grounded.llm import as_model
from tests.support.rag_fakes import RECORDED, RecordedModel


# -- the question set ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sample_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    import grounded

    pdf = write_sample_pdf(tmp_path_factory.mktemp("rag") / "sample.pdf")
    return " ".join(document_text(grounded.get_parser("pymupdf").parse(pdf)).text.split())


def test_every_sample_question_has_its_evidence_in_the_parsed_guideline(sample_text: str) -> None:
    assert len(SAMPLE_GUIDELINE_QUESTIONS) == 12 == len({q.question for q in SAMPLE_GUIDELINE_QUESTIONS})
    for q in SAMPLE_GUIDELINE_QUESTIONS:
        assert q.answer and q.evidence and " ".join(q.evidence.split()) in sample_text, q.question
    assert set(RECORDED["answers"]) == {q.question for q in SAMPLE_GUIDELINE_QUESTIONS}


def test_question_files_json_and_jsonl(tmp_path: Path) -> None:
    from grounded.errors import InputNotFoundError, SchemaError

    (tmp_path / "q.json").write_text(json.dumps([{"question": " What? ", "answer": "That."}]), encoding="utf-8")
    assert load_questions(tmp_path / "q.json") == [RagQuestion("What?", "That.")]
    (tmp_path / "q.jsonl").write_text('{"question": "A?"}\n\n{"question": "B?", "evidence": "b"}\n', encoding="utf-8")
    assert [q.question for q in load_questions(tmp_path / "q.jsonl")] == ["A?", "B?"]
    (tmp_path / "bad.jsonl").write_text('{"question": "A?"}\n{"answer": "no question"}\n', encoding="utf-8")
    with pytest.raises(SchemaError, match=r"bad.jsonl: line 2: expected an object with a non-empty 'question'"):
        load_questions(tmp_path / "bad.jsonl")
    (tmp_path / "broken.jsonl").write_text('{"question": "A?"}\n{"question": \n', encoding="utf-8")
    with pytest.raises(SchemaError, match=r"broken.jsonl: line 2: not valid JSON"):
        load_questions(tmp_path / "broken.jsonl")
    deep = "[" * 200_000 + "]" * 200_000  # one line nested past the parser's recursion limit
    (tmp_path / "deep.jsonl").write_text('{"question": "A?"}\n' + deep + "\n", encoding="utf-8")
    with pytest.raises(SchemaError, match=r"deep.jsonl: line 2: JSON nested too deeply"):
        load_questions(tmp_path / "deep.jsonl")
    (tmp_path / "deep.json").write_text(deep, encoding="utf-8")
    with pytest.raises(SchemaError, match=r"deep.json: JSON nested too deeply"):
        load_questions(tmp_path / "deep.json")
    with pytest.raises(InputNotFoundError):
        load_questions(tmp_path / "missing.json")


# -- reading the judges' replies ------------------------------------------------------------------------
def test_a2_verdicts_are_read_from_fenced_prose_and_string_booleans() -> None:
    assert read_accuracy('```json\n{"is_answer_exist": true, "response_quality": "correct", "answer_ids": [1, 3]}\n```', 5) \
        == AccuracyVerdict(True, "correct", (1, 3))
    assert read_accuracy('Evaluation: {"is_answer_exist": "False", "response_quality": "Abstain", "answer_ids": []}', 5) \
        == AccuracyVerdict(False, "abstain", ())
    assert read_accuracy('{"is_answer_exist": "True", "response_quality": "hallucinate", "answer_ids": ["[2]", "4"]}', 5) \
        == AccuracyVerdict(True, "hallucinate", (2, 4))


@pytest.mark.parametrize(("reply", "cause"), [
    ("The answer is fine.", r"no JSON object or array in the model reply; received 'The answer is fine.'"),
    ('{"is_answer_exist": true}', "missing response_quality"),
    ('{"is_answer_exist": true, "response_quality": "partially correct"}', "must be one of correct, hallucinate, abstain"),
    ('{"is_answer_exist": "maybe", "response_quality": "correct"}', "is_answer_exist must be True or False"),
    ('{"is_answer_exist": true, "response_quality": "correct", "answer_ids": [6]}',
     r"answer_ids \[6\] name no search result \(1..5\)"),
    ('{"is_answer_exist": true, "response_quality": "correct", "answer_ids": ["doc A"]}', "answer_ids must list source numbers"),
    ('[1, 2]', "expected a JSON object"),
])
def test_invalid_a2_verdicts_name_the_defect(reply: str, cause: str) -> None:
    with pytest.raises(JudgeAnswerError, match=cause):
        read_accuracy(reply, 5)


def test_statement_scores_take_only_the_six_levels() -> None:
    scores = read_statements('{"statements": [{"statement": "a", "relevancy": 0.8, "faithfulness": "1"}, '
                             '{"statement": "b", "relevancy": 0, "faithfulness": 0.2}]}')
    assert scores == [StatementScore("a", 0.8, 1.0), StatementScore("b", 0.0, 0.2)]
    assert read_statements('[{"statement": "a", "relevancy": 1, "faithfulness": 1}]') == [StatementScore("a", 1.0, 1.0)]
    for reply, cause in (('{"statements": [{"statement": "a", "relevancy": 0.5, "faithfulness": 1}]}',
                          "relevancy must be one of"),
                         ('{"statements": [{"statement": "a", "relevancy": 1}]}', "faithfulness must be a number"),
                         ('{"statements": []}', "non-empty 'statements' list"),
                         ('{"statements": ["a"]}', "statement 1 is not an object")):
        with pytest.raises(JudgeAnswerError, match=cause):
            read_statements(reply)


def test_an_invalid_reply_is_asked_again_with_the_defect_named() -> None:
    replies = iter(['{"is_answer_exist": true, "response_quality": "partially correct"}',
                    '{"is_answer_exist": true, "response_quality": "correct", "answer_ids": [1]}'])
    seen: list[str] = []

    def model(prompt: str) -> str:
        seen.append(prompt)
        return next(replies)

    verdict = ask_judge(as_model(model), ACCURACY_JUDGE_PROMPT, "Question: q", lambda r: read_accuracy(r, 1), "judge")
    assert verdict == AccuracyVerdict(True, "correct", (1,))
    assert seen[0] == ACCURACY_JUDGE_PROMPT + "\n\nQuestion: q"
    assert seen[1].endswith("Question: q\n\nYour previous output was invalid: response_quality must be one of correct, "
                            "hallucinate, abstain, got 'partially correct'. Reply with the JSON object only.")
    with pytest.raises(JudgeAnswerError, match="no JSON"):
        ask_judge(as_model(lambda prompt: "no idea"), ACCURACY_JUDGE_PROMPT, "Question: q",
                  lambda r: read_accuracy(r, 1), "judge")


# -- retrieval and aggregation ------------------------------------------------------------------------
def test_retrieval_ranks_by_cosine_and_breaks_ties_by_order() -> None:
    chunks = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    hits = retrieve(np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32), chunks, 3)
    assert [i for i, _ in hits[0]] == [0, 2, 3] and [i for i, _ in hits[1]] == [1, 3, 0]
    assert hits[0][2][1] == pytest.approx(0.6)
    assert retrieve(np.ones((2, 2), dtype=np.float32), np.zeros((0, 2), dtype=np.float32), 3) == [[], []]


def test_summary_counts_shares_of_valid_verdicts_and_means_of_statement_means() -> None:
    q = RagQuestion("q")

    def result(quality: str | None, exist: bool, scores: list[tuple[float, float]] | None) -> QuestionResult:
        r = QuestionResult(q, [], "a")
        r.verdict = AccuracyVerdict(exist, quality, ()) if quality else None  # type: ignore[arg-type]
        r.statements = [StatementScore("s", rel, faith) for rel, faith in scores] if scores is not None else None
        return r

    ev = RagEvaluation("fixed", {}, 10, [
        result("correct", True, [(1, 1), (0.6, 0.4)]),   # question means: relevancy 0.8, faithfulness 0.7
        result("hallucinate", True, [(1, 0)]),
        result("abstain", False, [(0.2, 1)]),
        result(None, True, None),                       # no valid verdict, no valid statement scores
    ])
    s = ev.summary()
    assert (s["questions"], s["invalid_verdicts"], s["invalid_statement_scores"]) == (4, 1, 1)
    assert s["accuracy"] == s["hallucinate"] == s["abstain"] == pytest.approx(1 / 3)
    assert s["answer_exists"] == pytest.approx(2 / 3)
    assert s["relevancy"] == pytest.approx((0.8 + 1 + 0.2) / 3)
    assert s["faithfulness"] == pytest.approx((0.7 + 0 + 1) / 3)
    assert RagEvaluation("x", {}, 0, []).summary()["accuracy"] is None


# -- the whole run ------------------------------------------------------------------------------------------
def test_eval_rag_on_the_sample_guideline_with_recorded_replies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", "rag", "--llm", "tests.support.rag_fakes:recorded_model()", "--strategies", "fixed,hierarchical,vision",
                 "-n", "128", "--top-k", "3", "--out", str(tmp_path), "--no-progress", "--cache-dir", str(tmp_path / "cache"),
                 "--log", str(tmp_path / "questions.jsonl")])
    assert code == 0
    out = capsys.readouterr().out
    payload = json.loads((tmp_path / "rag.json").read_text(encoding="utf-8"))
    assert (tmp_path / "rag.md").read_text(encoding="utf-8") in out
    rows = {r["name"]: r for r in payload["results"]}
    assert list(rows) == ["fixed", "hierarchical", "vision"]
    # five model chunks, one of them longer than N=128 and cut in two by the token bound
    assert rows["vision"]["n_chunks"] == 6 and rows["fixed"]["n_chunks"] > rows["vision"]["n_chunks"]
    for row in rows.values():  # the same recorded replies for every strategy: the same aggregate
        s = row["summary"]
        assert (s["questions"], s["invalid_verdicts"], s["invalid_statement_scores"]) == (12, 1, 1)
        assert s["accuracy"] == pytest.approx(8 / 11) and s["abstain"] == pytest.approx(1 / 11)
        assert s["hallucinate"] == pytest.approx(2 / 11) and s["answer_exists"] == pytest.approx(10 / 11)
        assert s["relevancy"] == pytest.approx(9.6 / 11) and s["faithfulness"] == pytest.approx(9.5 / 11)
        by_q = {q["question"]: q for q in row["questions"]}
        assert by_q[SAMPLE_GUIDELINE_QUESTIONS[10].question]["errors"][0].startswith("accuracy: no JSON")
        assert by_q[SAMPLE_GUIDELINE_QUESTIONS[11].question]["errors"] == ["statements: expected a non-empty 'statements' list"]
        assert by_q[SAMPLE_GUIDELINE_QUESTIONS[3].question]["verdict"]["response_quality"] == "correct"  # on the re-ask
        assert all(1 <= len(q["retrieved"]) <= 3 for q in row["questions"])
    assert "| vision | 128 | 6 | 12 | 72.7 | 18.2 | 9.1 | 90.9 | 0.864 | 0.873 | 1 / 1 |" in out
    # one row per question; a judge reply that stayed invalid reads "invalid", never a score
    per_question = [line for line in out.split("### Per question")[1].splitlines() if line.startswith("| fixed |")]
    assert len(per_question) == 12 and [k for k, line in enumerate(per_question) if "| invalid |" in line] == [10, 11]
    assert payload["judge"] == payload["model"] and payload["model"].startswith("callable:")
    # --log: every judged question as it was done, the same records as the result file's
    logged = [json.loads(line) for line in (tmp_path / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert logged == [{"strategy": r["name"], **q} for r in payload["results"] for q in r["questions"]]
    assert all(q["seconds"]["answer"] >= 0 and q["seconds"]["judging"] >= 0 for q in logged)


def test_the_prompts_carry_the_question_the_retrieved_chunks_and_the_answer(tmp_path: Path) -> None:
    from grounded.evaluation.rag import evaluate_strategy
    from grounded.evaluation.rag_data import SAMPLE_GUIDELINE_QUESTIONS as QS
    from grounded.model import Chunk

    chunks = [Chunk(f"c{k}", f"chunk {k} {QS[k].evidence}", {"pages": [k % 4 + 1]}) for k in range(3)]
    fake = RecordedModel()

    def embed(texts: list[str]) -> np.ndarray:  # chunk k is the nearest to question k
        return np.array([[1.0 if (f"chunk {k} " in t or t == QS[k].question) else 0.0 for k in range(3)] for t in texts])

    ev = evaluate_strategy("fixed", {}, chunks, QS[:3], embed=embed, model=as_model(fake), top_k=2)
    assert len(ev.results) == 3 and len(fake.prompts) == 9  # an answer and two judges each, no re-ask needed
    assert [r["id"] for r in ev.results[0].to_dict()["retrieved"]] == ["c0", "c1"]
    answer, accuracy, statements = fake.prompts[:3]
    results = search_results([chunks[0].content, chunks[1].content], [[1], [2]])
    assert results.startswith("[1] (page 1) chunk 0 Bilateral mammography") and "\n\n[2] (page 2) chunk 1 " in results
    assert answer == f"{ANSWER_SYSTEM}\n\nSearch Results:\n\n{results}\n\nQuestion: {QS[0].question}\n\nAnswer:"
    assert accuracy == (f"{ACCURACY_JUDGE_PROMPT}\n\nQuestion: {QS[0].question}\n\nSearch Results:\n\n{results}\n\n"
                        f"Answer: {RECORDED['answers'][QS[0].question]}")
    assert statements.startswith(STATEMENT_JUDGE_PROMPT) and "\n\nRetrieved Context:\n\n[1] (page 1) chunk 0" in statements
    # seed 001's A.2 prompt, word for word (its criteria and the three labels)
    criterion = "Mark True if the knowledge includes content that directly or inferentially answers the question."
    assert criterion in ACCURACY_JUDGE_PROMPT
    assert all(f'- "{label}" The model' in ACCURACY_JUDGE_PROMPT for label in ("correct", "hallucinate", "abstain"))
    assert "If the answer is not present in the Search Results, return an empty List." in ACCURACY_JUDGE_PROMPT
    assert "0, 0.2, 0.4, 0.6, 0.8, 1" in STATEMENT_JUDGE_PROMPT


def test_eval_rag_usage_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "rag"]) == 1
    assert "needs a model to answer and judge" in capsys.readouterr().err
    model = ["--llm", "tests.support.rag_fakes:recorded_model()"]
    assert main(["eval", "rag", *model, "--pdf", str(tmp_path / "x.pdf")]) == 1
    assert "--pdf and --questions go together" in capsys.readouterr().err
    assert main(["eval", "rag", *model, "--strategies", "fixed,nope"]) == 1
    assert "unknown strategies ['nope']" in capsys.readouterr().err
    assert main(["eval", "rag", *model, "--top-k", "0"]) == 1
    err = capsys.readouterr().err
    assert "--top-k must be at least 1" in err and "Traceback" not in err
    assert main(["eval", "rag", *model, "--log", str(tmp_path)]) == 1  # refused before any model call
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a directory" in err and "Traceback" not in err
