"""``grounded eval`` end to end on real data (subsets), output files and one-line errors."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from grounded.cli.main import main
from grounded.evaluation.runs import parse_cached, run_dla_icdar
from grounded.parsers import get_parser
from tests.support.data import REPO, shared


def test_eval_help_lists_tasks(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["eval", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "dla" in out and "content" in out and "chunking" in out


def test_dla_publaynet_predictions_file(tmp_path, capsys):
    data = shared()
    gt = json.loads((data / "publaynet_examples" / "samples.json").read_text())
    preds = [{"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"]} for a in gt["annotations"]]
    (tmp_path / "pred.json").write_text(json.dumps(preds))
    code = main(["eval", "dla", "--dataset", "publaynet", "--predictions", str(tmp_path / "pred.json"),
                 "--data", str(data), "--out", str(tmp_path / "out")])
    assert code == 0
    out = capsys.readouterr().out
    assert "| **macro** | 193 | 193 | – | – | **1.0000** | **1.0000** |" in out
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert res["PubLayNet"]["macro"] == {"f1@50": 1.0, "f1@50:95": 1.0}
    assert (tmp_path / "out" / "results.md").read_text().startswith("### PubLayNet")
    assert (tmp_path / "out" / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_eval_errors_are_one_line(tmp_path, capsys):
    assert main(["eval", "dla", "--dataset", "publaynet", "--data", str(shared())]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--predictions" in err
    assert main(["eval", "chunking", "--data", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert "nowhere" in err and "not found" in err and err.count("\n") == 1
    assert main(["eval", "chunking", "--n", "five", "--data", str(shared())]) == 1
    assert "--n" in capsys.readouterr().err
    assert main(["eval", "dla", "--parser", "nosuch", "--data", str(shared())]) == 1
    assert "unknown parser 'nosuch'" in capsys.readouterr().err


@pytest.mark.slow
def test_chunking_cli_on_one_corpus(tmp_path, capsys):
    code = main(["eval", "chunking", "--data", str(shared()), "--corpora", "state_of_the_union", "--n", "5",
                 "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")])
    assert code == 0
    out = capsys.readouterr().out
    assert "### Chroma reproduction (all-MiniLM-L6-v2, n=5, 76 questions)" in out
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert len(res["results"]) == 8  # Chroma's six LangChain rows + the two ClusterSemanticChunker rows
    assert {r["params"]["splitter"] for r in res["results"]} == {"recursive", "tokentext", "cluster"}
    assert list((tmp_path / "cache" / "embeddings").rglob("pack-*.npz"))


@pytest.mark.slow
def test_icdar_table_detection_on_two_pdfs_with_parse_cache(tmp_path):
    data = shared()
    res = run_dla_icdar(data, "pymupdf", limit=2, cache_dir=tmp_path)
    table = res.score("table")
    assert res.meta["documents"] == 2 and table.n_gt == 8  # eu-001: 7 table regions, eu-002: 1
    assert table.f1_50 > 0.8  # the default parser finds these tables
    cached = sorted((tmp_path / "parses").rglob("*.json"))
    assert len(cached) == 2
    # a second run reads the cached parses (no parser needed)
    pdf = data / "pdfs" / "icdar2013_tables" / "competition-dataset-eu" / "eu-002.pdf"

    real = get_parser("pymupdf")

    class NoParser:
        def version(self):
            return real.version()

        def run(self, pdf):  # pragma: no cover - must not be called
            raise AssertionError("parsed again despite the cache")

    doc = parse_cached(pdf, "pymupdf", tmp_path, parser=NoParser())
    assert doc.root is not None and "|" in doc.markdown


def test_eval_imports_stay_light():
    """The eval CLI module (imported by every `grounded` command) loads no model or heavy SDK."""
    import subprocess
    import sys

    code = ("import sys, grounded.evaluation, grounded.evaluation.cli, grounded.evaluation.report; "
            "heavy = [m for m in ('torch', 'sentence_transformers', 'faster_coco_eval', 'apted', 'bpe_openai', "
            "'langchain_text_splitters', 'scipy', 'matplotlib', 'rapidfuzz') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- model options: the llm strategy scored with a local model (no network) ------------------------------------
def split_model() -> Any:
    """``--llm tests.evaluation.test_eval_cli:split_model()``: a model splitting after every fourth piece of its window."""

    def answer(prompt: str) -> str:
        ids = [int(x) for x in re.findall(r"<\|start_chunk_(\d+)\|>", prompt)]
        return "split_after: " + ", ".join(map(str, ids[3::4] or ids[-1:]))

    return answer


def test_llm_strategy_needs_a_model_and_is_scored_with_one(tmp_path, capsys, monkeypatch):
    args = ["eval", "chunking", "--data", str(shared()), "--suite", "grid", "--strategies", "llm", "--sizes", "256",
            "--n", "5", "--corpora", "state_of_the_union", "--limit", "12", "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 1  # no model: llm is skipped, so nothing is left to evaluate
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "llm skipped" in err and "--llm MODULE:OBJECT" in err
    assert main(["eval", "chunking", "--data", str(shared()), "--llm", "tests.evaluation.test_eval_cli:split_model()"]) == 1
    assert "--suite grid or extended" in capsys.readouterr().err  # the reproduction has no llm row

    monkeypatch.syspath_prepend(str(REPO))
    assert main([*args, "--llm", "tests.evaluation.test_eval_cli:split_model()", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "### Skipped" not in out and "| llm | 256 | 0 |" in out
    (row,) = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert row["params"]["strategy"] == "llm" and row["params"]["llm"] == {  # the model as named + the settings sent
        "obj": "tests.evaluation.test_eval_cli:split_model()", "name": None, "settings": {"temperature": 0.2, "max_tokens": 200}}
    assert row["n_chunks"] > 10 and row["mean_chunk_tokens_cl100k"] > 100  # about four 50-token pieces per chunk
    assert row["summaries"]["5"]["all"]["n_questions"] == 12 and 0 < row["summaries"]["5"]["all"]["mean"]["recall"] <= 1


def test_the_llm_rows_key_changes_with_the_generation_settings():
    """A row's params are its key (merged result files, published rows): the model's identity comes from
    ModelSpec.identity with the settings the requests are sent with, so another temperature, output length
    or seed is another key - never the key of a row measured with other settings."""
    from grounded.evaluation.chunking_eval import GroundedCorpusChunker
    from grounded.evaluation.errors import EvaluationError
    from grounded.llm import GenerationSettings
    from grounded.llm.spec import ModelSpec

    obj = "tests.evaluation.test_eval_cli:split_model()"

    def key(**settings: Any) -> dict[str, Any]:
        return GroundedCorpusChunker("llm", 256, 0, spec=ModelSpec(obj, settings=GenerationSettings(**settings))).params()

    default = key()
    assert default["llm"] == {"obj": obj, "name": None, "settings": {"temperature": 0.2, "max_tokens": 200}}
    assert key(temperature=0.2) == default  # the strategy's default spelled out is the same configuration
    assert key(temperature=0.7)["llm"]["settings"] == {"temperature": 0.7, "max_tokens": 200} and key(temperature=0.7) != default
    assert key(max_tokens=64) != default and key(seed=3) != default and key(seed=3) != key(seed=4)
    assert GroundedCorpusChunker("fixed", 256, 0).params().get("llm") is None
    with pytest.raises(EvaluationError, match="spec=ModelSpec"):  # a model object has no key: it is refused
        GroundedCorpusChunker("llm", 256, 0, llm=split_model())
