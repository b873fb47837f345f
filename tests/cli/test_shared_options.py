"""The parser and chunking options of ``parse``, ``chunk``, ``ground`` and ``ingest`` come from one
set of declarations (issue 22) and reach the work: a value given on the command line changes the
result or the recorded configuration. An option given to a parser or strategy that does not take it
is one usage line (exit 2); an unknown name one typed line listing the known names."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pymupdf
import pytest

from grounded.chunking import Chunker
from grounded.cli.main import build_parser, main
from grounded.parsers import get_parser
from grounded.serialization import load_chunking_result, load_parsing_result
from tests.support.data import shared
from tests.support.pdf_builders import save_pdf
from tests.support.plugins import PARSER, STRATEGY, install_plugin, uninstall_plugin
from tests.support.scanned import scanned_pdf

PASSWORD = "s3cret-pw-9431"


@pytest.fixture(scope="module")
def pdf() -> Path:
    return shared("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")


@pytest.fixture(scope="module")
def files(pdf: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs")
    scanned = folder / "scanned.pdf"
    scanned.write_bytes(scanned_pdf(pdf, dpi=150))
    locked = folder / "locked" / "locked.pdf"
    locked.parent.mkdir()
    save_pdf(pymupdf.open(pdf), locked, user_pw=PASSWORD, owner_pw="owner-" + PASSWORD)
    texts = folder / "chunks.txt"
    texts.write_text("Optimized Table Tokenization for Table Structure Recognition\n\n"
                     "the table structure is predicted by the model\n")
    return {"scanned": scanned, "locked": locked, "texts": texts}


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, list[str], str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, [ln for ln in out.err.splitlines() if ln.strip()], out.out


def _flags(command: str) -> set[str]:
    sub = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    return set(sub._option_string_actions)


# -- the option matrix -------------------------------------------------------------------------------
def test_every_command_offers_the_options_that_apply_to_it() -> None:
    parse, chunk, ground, ingest = (_flags(c) for c in ("parse", "chunk", "ground", "ingest"))
    parser_opts = {"--parser", "--ocr", "--ocr-dpi", "--password"}
    chunk_opts = {"--tokenizer", "--box-mode"}
    strategy_opts = {"--strategy", "--max-tokens", "--overlap", "--percentile", "--min-tokens", "--heading-budget",
                     "--piece-tokens", "--max-pieces", "--centre", "--avg-tokens", "--min-chunk-tokens", "--buffer",
                     "--language", "--window-tokens", "--retries", "--batch-size", "--dpi"}
    model_opts = {"--llm", "--llm-model", "--llm-temperature", "--llm-max-tokens", "--llm-seed"}
    assert parser_opts <= parse and not (chunk_opts | strategy_opts) & parse
    assert parser_opts | chunk_opts | strategy_opts | model_opts <= chunk
    assert parser_opts | chunk_opts <= ground and not strategy_opts & ground
    assert parser_opts | chunk_opts | strategy_opts | model_opts <= ingest


def test_help_says_which_strategy_uses_an_option(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("chunk", "ingest"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "strategy semantic: breakpoint percentile Q (a number in (0, 1); default 0.9)" in text
        assert "strategy kamradt: breakpoint percentile Q (a number in (0, 1); default 0.95)" in text
        assert "strategy hierarchical: heading token budget" in text
        assert "parser pymupdf: OCR the pages" in text
        assert "--llm-temperature" in text and "--llm-seed" in text  # issue 25: generation settings stay visible


# -- misuse -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["chunk", "ingest"])
def test_an_option_of_another_strategy_is_a_usage_error(command: str, pdf: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    extra = ["-o", tmp_path / "out", "-q"] if command == "ingest" else []
    code, err, _ = _cli(capsys, command, pdf, "-s", "recursive", "--percentile", "0.8", *extra)
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"grounded {command}: error: --percentile does not apply to the strategy 'recursive'")
    assert "strategies kamradt, semantic" in err[0] and not (tmp_path / "out").exists()
    code, err, _ = _cli(capsys, command, pdf, "-s", "semantic", "--percentile", "1.5", *extra)
    assert code == 2 and len(err) == 1 and "option 'percentile' must be a number in (0, 1), got 1.5" in err[0]


def test_unknown_names_are_one_line_listing_the_known_ones(pdf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("parse", "chunk", "ground", "ingest"):
        with pytest.raises(SystemExit) as exit_:
            main([command, str(pdf), "x.txt", "--parser", "nope"] if command == "ground" else [command, str(pdf), "--parser", "nope"])
        err = capsys.readouterr().err.strip().splitlines()
        assert exit_.value.code == 2 and len(err) == 1 and "unknown parser 'nope'; choose one of: " in err[0], command
    with pytest.raises(SystemExit):
        main(["chunk", str(pdf), "-s", "nope"])
    err = capsys.readouterr().err
    assert "unknown strategy 'nope'; choose one of: cluster, fixed, hierarchical" in err


def test_parser_options_are_refused_for_a_parse_tree(pdf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = _cli(capsys, "parse", pdf, "-o", tmp_path, "--no-progress")
    assert code == 0
    code, err, _ = _cli(capsys, "chunk", tmp_path / f"{pdf.stem}.json", "--ocr", "always")
    assert code == 1 and len(err) == 1 and "--ocr" in err[0] and "PDF input only" in err[0]


# -- the options reach the work ----------------------------------------------------------------------
def test_chunk_ocr_and_strategy_options_reach_the_work(files: dict[str, Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    scanned = files["scanned"]
    code, err, _ = _cli(capsys, "chunk", scanned, "--ocr", "never", "-o", tmp_path / "never.jsonl")
    assert code == 1 and "text layer" in err[-1]
    code, err, _ = _cli(capsys, "chunk", scanned, "--ocr", "always", "-s", "hierarchical", "--heading-budget", "20",
                        "-o", tmp_path / "always.jsonl")
    assert code == 0, err
    result = load_chunking_result(tmp_path / "always.jsonl")
    assert result.metadata["parameters"]["heading_budget"] == 20
    assert "table" in " ".join(c.body for c in result.chunks).lower()  # OCR'd text


def test_ground_takes_the_box_mode(pdf: Path, files: dict[str, Path], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    outs = {}
    for mode in ("auto", "line"):
        code, err, _ = _cli(capsys, "ground", pdf, files["texts"], "--box-mode", mode, "-o", tmp_path / f"{mode}.json")
        assert code == 0, err
        outs[mode] = load_chunking_result(tmp_path / f"{mode}.json")
    assert outs["line"].metadata["box_mode"] == "line"
    boxes = {m: [[(b.page, b.left, b.right) for b in c.geom] for c in r.chunks] for m, r in outs.items()}
    assert boxes["auto"] != boxes["line"]  # exact character extents vs whole lines


def _rows(out: Path) -> list[dict]:
    return [r for p in sorted((out / "chunks").glob("*.parquet")) for r in pq.read_table(p).to_pylist()]


def _settings(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())["config"]["settings"]


def test_ingest_options_reach_the_workers(pdf: Path, files: dict[str, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    never, always = tmp_path / "never", tmp_path / "always"
    code, err, _ = _cli(capsys, "ingest", files["scanned"], "-o", never, "--ocr", "never", "--workers", "1", "-q")
    assert code == 1 and not _rows(never) and "scanned.pdf" in " ".join(err)
    code, err, _ = _cli(capsys, "ingest", files["scanned"], "-o", always, "--ocr", "always", "--workers", "1", "-q")
    assert code == 0, err
    assert _rows(always) and _settings(always)["parser_options"] == {"ocr": "always"}

    minilm, cl100k = tmp_path / "minilm", tmp_path / "cl100k"
    for out, extra in ((minilm, []), (cl100k, ["--tokenizer", "cl100k_base", "--box-mode", "line"])):
        code, err, _ = _cli(capsys, "ingest", pdf, "-o", out, "--workers", "1", "-q", "-n", "128", *extra)
        assert code == 0, err
    a, b = _rows(minilm), _rows(cl100k)
    assert sum(r["token_count"] for r in a) != sum(r["token_count"] for r in b)
    assert _settings(cl100k)["tokenizer"] == "cl100k_base" and _settings(cl100k)["box_mode"] == "line"
    assert "tokenizer" not in _settings(minilm)  # the default configuration keeps its recorded form


def test_ingest_records_strategy_options_and_refuses_others(pdf: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # --workers 0: the in-process engine (the rows of a worker run, tests/ingest/test_ingest_inprocess.py)
    # loads MiniLM once for the ingest and the comparison below; options reaching worker processes:
    # test_ingest_options_reach_the_workers
    out = tmp_path / "semantic"
    code, err, _ = _cli(capsys, "ingest", pdf, "-o", out, "-s", "semantic", "--percentile", "0.8", "--workers", "0", "-q")
    assert code == 0, err
    assert _settings(out)["strategy_options"] == {"percentile": 0.8}
    chunker = Chunker("semantic", 256, percentile=0.8)
    assert _settings(out)["chunker"] == chunker.fingerprint != Chunker("semantic", 256).fingerprint
    made_here = chunker.chunk(get_parser("pymupdf").parse(pdf)).chunks  # the ingest used the same chunker
    assert sorted(r["chunk_id"] for r in _rows(out)) == sorted(c.id for c in made_here)
    capsys.readouterr()  # the model's loading bar of the line above
    code, err, _ = _cli(capsys, "ingest", pdf, "-o", out, "-s", "semantic", "--percentile", "0.7", "--workers", "0", "-q")
    assert code == 1 and len(err) == 1 and "strategy options" in err[0] and "percentile=0.8 -> percentile=0.7" in err[0]


def test_ingest_password_opens_inputs_and_is_never_stored(files: dict[str, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    locked, out = files["locked"], tmp_path / "locked"
    code, err, _ = _cli(capsys, "ingest", locked, "-o", out, "--workers", "1", "-q")
    assert code == 1  # no password: an error row
    code, err, _ = _cli(capsys, "ingest", locked, "-o", out, "--password", PASSWORD, "--retry-errors", "--workers", "1", "-q")
    assert code == 0, err
    assert _rows(out)
    for path in out.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


# -- third-party parsers and strategies by name on every command --------------------------------------
def test_entry_point_parser_and_strategy_on_every_command(pdf: Path, files: dict[str, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    site = install_plugin(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    try:
        assert {"--upper", "--parts"} <= _flags("ingest")
        code, err, _ = _cli(capsys, "parse", pdf, "--parser", PARSER, "--upper", "-o", tmp_path / "parsed", "--no-progress")
        assert code == 0, err
        tree = load_parsing_result(tmp_path / "parsed" / f"{pdf.stem}.json")
        texts = [n.content for n in tree.walk() if n.content]
        assert texts and all(t == t.upper() for t in texts)
        code, err, _ = _cli(capsys, "chunk", pdf, "--parser", PARSER, "--upper", "-s", STRATEGY, "--parts", "3", "-n", "1024",
                            "-o", tmp_path / "c.jsonl")
        assert code == 0, err
        chunks = load_chunking_result(tmp_path / "c.jsonl")
        assert chunks.metadata["parameters"]["parts"] == 3 and all(c.body == c.body.upper() for c in chunks.chunks)
        code, err, _ = _cli(capsys, "ground", pdf, files["texts"], "--parser", PARSER, "-o", tmp_path / "g.json")
        assert code == 0, err
        code, err, _ = _cli(capsys, "chunk", pdf, "--upper")  # an option of another parser than pymupdf
        assert code == 2 and "--upper does not apply to the parser 'pymupdf'; it is an option of the parser caps_demo" in err[0]
        out = tmp_path / "ingest"  # worker processes find the plugin by the same entry points
        code, err, _ = _cli(capsys, "ingest", pdf, "-o", out, "--parser", PARSER, "--upper", "-s", STRATEGY, "--parts", "2",
                            "-n", "1024", "--workers", "1", "-q")
        assert code == 0, err
        rows = _rows(out)
        assert rows and all(r["text"] == r["text"].upper() for r in rows)
        assert _settings(out)["parser"] == PARSER and _settings(out)["parser_options"] == {"upper": True}
        assert "strategy_options" not in _settings(out)  # parts=2 is the declared default: no configuration of its own
    finally:
        uninstall_plugin()
