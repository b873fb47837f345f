"""``grounded eval dla|content|chunking|rag``: evaluation tables on stdout, files with ``--out DIR``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..cli.llm_options import add_model_options, model_spec
from ..errors import InputError
from ..llm.spec import ModelSpec, strategy_options
from .errors import EvaluationError as EvalUsageError

__all__ = ["register"]

GRID_DEFAULT = "fixed,recursive,semantic,hierarchical"
#: the token bound of the ``kamradt`` extended row: Kamradt's chunker has no size parameter (Chroma's row:
#: "N/A (~660)" cl100k tokens), the library needs one; this one is far above its chunks
KAMRADT_BOUND = 4096


def _common(p: argparse.ArgumentParser, parser_opt: bool = True) -> None:
    p.add_argument("--data", type=Path, default=None, metavar="DIR",
                   help="evaluation data folder holding pdfs/, chroma/, publaynet_examples/ "
                        "(required unless $GROUNDED_EVAL_DATA is set)")
    if parser_opt:
        p.add_argument("--parser", default="pymupdf", metavar="NAME",
                       help="parser backend whose output is evaluated (default: pymupdf, offline)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="also write NAME.json, NAME.md and a NAME.png plot into DIR")
    p.add_argument("--name", default="results", metavar="NAME", help="file stem for --out (default: results)")
    p.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                   help="cache for parses and embeddings (default: $GROUNDED_CACHE_DIR or ~/.cache/grounded)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the on-disk caches")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="evaluate only the first N documents (dla/content) or questions (chunking)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")


def register(subparsers: Any) -> None:
    ev = subparsers.add_parser(
        "eval",
        help="evaluate layout analysis, content extraction or chunk retrieval",
        description="Evaluation framework of thesis §3.5: DLA F1, OmniDocBench-style content scores, "
                    "Chroma chunk-retrieval metrics. Prints Markdown tables; --out writes JSON/MD/PNG.",
    )
    sub = ev.add_subparsers(dest="eval_command", metavar="TASK")
    sub.required = True

    dla = sub.add_parser(
        "dla", help="layout analysis F1@50 and F1@50:95 (per class + macro)",
        description="Per-class and macro F1@50 / F1@50:95 of hard layout predictions, matched with "
                    "faster-coco-eval. icdar: tables of the parser on the 67 ICDAR-2013 PDFs; docling: "
                    "agreement with Docling's reference layouts; publaynet: COCO predictions (--predictions) "
                    "or parse trees (--trees) of the 20 PubLayNet page images.")
    dla.add_argument("--dataset", nargs="+", choices=("icdar", "docling", "publaynet"), default=["icdar"],
                     help="data set(s) to score (default: icdar)")
    dla.add_argument("--predictions", type=Path, default=None, metavar="JSON",
                     help="publaynet: COCO detection list (image_id, category_id, bbox[, score])")
    dla.add_argument("--trees", type=Path, default=None, metavar="DIR",
                     help="publaynet: folder of parse-tree JSON files named like the images")
    _common(dla)
    dla.set_defaults(func=run_dla)

    content = sub.add_parser(
        "content", help="text edit distance, TEDS / S-TEDS, reading-order edit distance",
        description="OmniDocBench-style content scores of the parser's Markdown: text blocks (adjacency "
                    "matching) and reading order against the Docling references, tables (TEDS, S-TEDS) "
                    "against Docling tables and ICDAR-2013 cell structure (*-str.xml).")
    content.add_argument("--dataset", nargs="+", choices=("docling", "icdar"), default=["docling", "icdar"],
                         help="reference set(s) (default: both)")
    _common(content)
    content.set_defaults(func=run_content_cmd)

    ch = sub.add_parser(
        "chunking", help="Chroma chunk-retrieval recall / precision / IoU / precision_Ω",
        description="Chroma's evaluation (5 corpora, 472 questions, all-MiniLM-L6-v2 retrieval over all "
                    "chunks). --suite reproduce: LangChain Recursive/TokenText at 250/125, 250/0, 200/0 "
                    "(cl100k) beside Chroma's published numbers; --suite grid: this library's strategies "
                    "at --sizes x --overlaps (semantic: x --percentiles), sizes in MiniLM tokens.")
    ch.add_argument("--suite", choices=("reproduce", "grid", "extended"), default="reproduce",
                    help="reproduce Chroma's published rows, score this library's strategies (grid), or score "
                         "kamradt_mod / llm at Chroma's Cluster sizes and third-party splitters grounded on the "
                         "corpora (extended) (default: reproduce)")
    ch.add_argument("--strategies", default=None, metavar="LIST",
                    help="grid: comma-separated strategies (default: fixed,recursive,semantic,hierarchical); "
                         "extended: only the rows of these strategies / splitters (e.g. kamradt)")
    ch.add_argument("--sizes", default="128,256,512,1024", metavar="LIST",
                    help="grid: max tokens N (default: 128,256,512,1024, the thesis grid)")
    ch.add_argument("--overlaps", default="0,0.2", metavar="LIST",
                    help="grid: overlaps, a fraction of N if < 1 else tokens (default: 0,0.2)")
    ch.add_argument("--percentiles", default="0.7,0.9", metavar="LIST",
                    help="grid: breakpoint percentiles Q of the semantic strategy, which has no overlap "
                         "(default: 0.7,0.9)")
    ch.add_argument("--n", default="min,5,10", metavar="LIST",
                    help="retrieved chunks per question; 'min' = as many as touch the references (default: min,5,10)")
    ch.add_argument("--corpora", default=None, metavar="LIST",
                    help="only these corpora (questions and retrieval pool), e.g. state_of_the_union,wikitexts")
    ch.add_argument("--strict-touching", action="store_true",
                    help="count only chunks sharing a character with a reference as touching it (Chroma also counts "
                         "chunks that merely abut one; affects precision_Ω and n=min)")
    ch.add_argument("--with-questions", action="store_true", help="include per-question scores in results.json")
    add_model_options(ch)
    _common(ch, parser_opt=False)
    ch.set_defaults(func=run_chunking_cmd)
    _register_rag(sub)


def _progress(args: argparse.Namespace) -> Any:
    from .runs import no_progress, tqdm_progress

    return no_progress if args.no_progress or not sys.stderr.isatty() else tqdm_progress


def _data(args: argparse.Namespace) -> Path:
    from .runs import data_dir

    data = data_dir(args.data)
    if not data.is_dir():
        raise InputError(data, "evaluation data folder not found (pass --data DIR or set GROUNDED_EVAL_DATA)")
    return data


def _emit(args: argparse.Namespace, markdown: str, payload: Any, plot: Any = None) -> None:
    from .report import write_json

    sys.stdout.write(markdown if markdown.endswith("\n") else markdown + "\n")
    if args.out is not None:
        from ..io.atomic import atomic_write_text

        write_json(payload, args.out / f"{args.name}.json")
        atomic_write_text(args.out / f"{args.name}.md", markdown)
        if plot is not None:
            plot(args.out / f"{args.name}.png")


def run_dla(args: argparse.Namespace) -> int:
    from .report import dla_markdown, plot_dla
    from .runs import run_dla_docling, run_dla_icdar, run_dla_publaynet

    data = _data(args)
    results = {}
    for name in args.dataset:
        if name == "icdar":
            results["ICDAR-2013 tables"] = run_dla_icdar(
                data, args.parser, limit=args.limit, cache_dir=args.cache_dir, use_cache=not args.no_cache,
                progress=_progress(args))
        elif name == "docling":
            results["Docling reference layouts"] = run_dla_docling(
                data, args.parser, cache_dir=args.cache_dir, use_cache=not args.no_cache, progress=_progress(args))
        else:
            gt = data / "publaynet_examples" / "samples.json"
            if args.predictions is not None:
                results["PubLayNet"] = run_dla_publaynet(gt, args.predictions)
            elif args.trees is not None:
                from ..io.codec import load_parsing_result

                trees = [load_parsing_result(p) for p in sorted(args.trees.glob("*.json"))]
                if not trees:
                    raise InputError(args.trees, "no parse-tree .json files")
                results["PubLayNet"] = run_dla_publaynet(gt, trees)
            else:
                raise EvalUsageError(
                    "publaynet needs --predictions JSON or --trees DIR: its examples are page images, which "
                    "the PDF parsers cannot read (parse image-only PDFs of them with an OCR-capable backend)")
    md = "\n".join(dla_markdown(r, title) for title, r in results.items())
    _emit(args, md, {k: v.to_dict() for k, v in results.items()}, lambda p: plot_dla(results, p))
    return 0


def run_content_cmd(args: argparse.Namespace) -> int:
    from .content_eval import aggregate
    from .report import content_markdown
    from .runs import run_content

    run = run_content(_data(args), args.parser, datasets=args.dataset, limit=args.limit, cache_dir=args.cache_dir,
                      use_cache=not args.no_cache, progress=_progress(args))
    md = content_markdown(run.docling, run.icdar, args.parser)
    payload = {"parser": args.parser, "failed": run.failed,
               "docling": {"aggregate": aggregate(run.docling) if run.docling else None,
                           "documents": [s.to_dict() for s in run.docling]},
               "icdar": {"aggregate": aggregate(run.icdar) if run.icdar else None,
                         "documents": [s.to_dict() for s in run.icdar]}}
    _emit(args, md, payload)
    return 0


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise EvalUsageError(f"--{what} must be comma-separated integers, got {text!r}") from None


def run_chunking_cmd(args: argparse.Namespace) -> int:
    from .chunking_eval import SKIPPED_STRATEGIES
    from .report import chunking_markdown, per_corpus_markdown, plot_chunking, reproduction_markdown
    from .runs import grid_chunkers, reproduction_chunkers, run_chunking

    data = _data(args)
    n_values: list[int | str] = []
    for x in args.n.split(","):
        x = x.strip().lower()
        if x == "min":
            n_values.append("min")
        elif x.isdigit() and int(x) > 0:
            n_values.append(int(x))
        elif x:
            raise EvalUsageError(f"--n takes 'min' or positive integers, got {x!r}")
    skipped: dict[str, str] = {}
    spec = model_spec(args)
    if args.suite == "reproduce":
        if spec:
            raise EvalUsageError("--llm/--llm-model score the llm strategy: use them with --suite grid or extended")
        chunkers = reproduction_chunkers()
    elif args.suite == "extended":
        chunkers, skipped = extended_chunkers(spec)
        if args.strategies:
            keep = {s.strip() for s in args.strategies.split(",") if s.strip()}
            chunkers = [c for c in chunkers if _row_key(c) in keep]
            skipped = {k: v for k, v in skipped.items() if k in keep}
            if not chunkers and not skipped:
                raise EvalUsageError(f"--strategies {args.strategies!r} selects no extended row (rows: "
                                     f"{', '.join(_row_key(c) for c in extended_chunkers(spec)[0])})")
    else:
        try:
            overlaps = [float(x) for x in args.overlaps.split(",") if x.strip()]
            percentiles = [float(x) for x in args.percentiles.split(",") if x.strip()]
        except ValueError:
            raise EvalUsageError(f"--overlaps/--percentiles must be numbers, got {args.overlaps!r} / "
                                 f"{args.percentiles!r}") from None
        if any(not 0 < q < 1 for q in percentiles):
            raise EvalUsageError(f"--percentiles must lie in (0, 1), got {args.percentiles!r}")
        strategies = [s.strip() for s in (args.strategies or GRID_DEFAULT).split(",") if s.strip()]
        from ..cli.chunk import strategy_names

        unknown = set(strategies) - set(strategy_names())
        if unknown:
            raise EvalUsageError(f"unknown strategies {sorted(unknown)}")
        sizes = _ints(args.sizes, "sizes")
        llm_rows = _llm_rows(spec, sizes) if "llm" in strategies else []
        if spec and not llm_rows:
            raise EvalUsageError("--llm/--llm-model score the llm strategy: add it to --strategies")
        skipped = {s: SKIPPED_STRATEGIES[s] for s in strategies if s in SKIPPED_STRATEGIES and not (s == "llm" and llm_rows)}
        strategies = [s for s in strategies if s not in skipped and s != "llm"]
        chunkers = grid_chunkers(strategies, sizes, overlaps, percentiles) + llm_rows
    if not chunkers:
        raise EvalUsageError("nothing to evaluate: " + "; ".join(f"{k} {v}" for k, v in skipped.items()))
    corpora = [c.strip() for c in args.corpora.split(",")] if args.corpora else None
    evals = run_chunking(data, chunkers, n_values=n_values, corpora=corpora, limit=args.limit,
                         cache_dir=args.cache_dir, use_cache=not args.no_cache,
                         chroma_compat=not args.strict_touching, progress=_progress(args))
    keys = [str(n) for n in n_values]
    main_n = "5" if "5" in keys else keys[0]
    parts = []
    if args.suite == "reproduce" and main_n == "5":
        table, gaps = reproduction_markdown(evals, main_n)
        parts.append(f"### Chroma reproduction (all-MiniLM-L6-v2, n=5, {evals[0].settings['n_questions']} questions)\n\n"
                     + table + ("\nGaps over 3 points: " + "; ".join(gaps) + "\n" if gaps else "\nNo gap over 3 points.\n"))
    if args.suite == "extended":  # no published MiniLM rows for these (Chroma's KamradtMod row used another model)
        parts.append(f"### Extended rows (all-MiniLM-L6-v2, {evals[0].settings['n_questions']} questions, corpora: "
                     f"{', '.join(corpora) if corpora else 'all five'})\n" + _grounding_note(chunkers))
    if skipped:
        parts.append("### Skipped\n\n" + "".join(f"* `{name}`: {why}\n" for name, why in skipped.items()))
    for k in keys:
        parts.append(f"### n = {k}\n\n" + chunking_markdown(evals, k))
    parts.append(f"### Recall per corpus (n = {main_n})\n\n" + per_corpus_markdown(evals, main_n, "recall"))
    parts.append(f"### IoU per corpus (n = {main_n})\n\n" + per_corpus_markdown(evals, main_n, "iou"))
    md = "\n".join(parts)
    payload = {"suite": args.suite, "n_values": keys, "skipped": skipped,
               "results": [e.to_dict(with_questions=args.with_questions) for e in evals]}
    _emit(args, md, payload, lambda p: plot_chunking(evals, p, main_n))
    return 0


def _llm_rows(spec: ModelSpec, sizes: list[int], **options: Any) -> list[Any]:
    """The ``llm`` strategy at ``sizes`` with the model of ``spec`` (one model for all rows); none
    without a model."""
    if not spec:
        return []
    from .runs import chroma_row

    rows = [chroma_row("llm", size, **options, spec=spec) for size in sizes]
    built = strategy_options("llm", spec)  # the model imported once, before any work (a bad --llm fails here)
    for row in rows:
        row.model_options = built
    return rows


def _row_key(chunker: Any) -> str:
    """The strategy / splitter an extended row stands for (its ``splitter`` parameter, else its name)."""
    return str(chunker.params().get("splitter") or chunker.name)


def extended_chunkers(spec: ModelSpec | None = None) -> tuple[list[Any], dict[str, str]]:
    """``--suite extended``: kamradt_mod at Chroma's Cluster sizes (250 / 200 cl100k tokens, 50-token
    pieces), Kamradt's original (``kamradt``: no size of its own, so a bound of
    :data:`KAMRADT_BOUND` cl100k tokens that its chunks do not reach, as Chroma's unbounded row), the
    LangChain Recursive 250/0 baseline and the third-party splitters at 250/0 grounded on the corpora;
    ``llm`` at the same sizes and pieces when ``spec`` names a model, else listed as skipped with its
    reason."""
    from .chunking_eval import SKIPPED_STRATEGIES, LangChainRecursive, wrapped_splitters
    from .runs import chroma_row

    rows: list[Any] = [chroma_row("kamradt_mod", size, tokenizer="cl100k_base") for size in (250, 200)]
    rows.append(chroma_row("kamradt", KAMRADT_BOUND, tokenizer="cl100k_base"))
    llm = _llm_rows(spec or ModelSpec(), [250, 200], tokenizer="cl100k_base")
    baseline = LangChainRecursive(250, 0)
    rows += [*llm, baseline, *wrapped_splitters(250, 0, baseline.encoder)]
    return rows, {} if llm else {"llm": SKIPPED_STRATEGIES["llm"]}


def _grounding_note(chunkers: list[Any]) -> str:
    counts = [f"{c.name}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.statuses.items()))
              for c in chunkers if getattr(c, "statuses", None)]
    return ("\nGrounding outcomes of the wrapped splitters' chunks: " + "; ".join(counts) + ".\n") if counts else ""


# -- rag ---------------------------------------------------------------------------------------------------
def _register_rag(sub: Any) -> None:
    rag = sub.add_parser(
        "rag", help="LLM-judged RAG: accuracy (seed 001 A.2 judge), answer faithfulness / relevancy (seed 002)",
        description="Chunk a PDF with each strategy, retrieve the --top-k chunks per question (all-MiniLM-L6-v2), let "
                    "the model (--llm / --llm-model) answer from them and a judge (--judge-llm / --judge-model, default: "
                    "the same model) grade the answer: seed 001's A.2 verdict (accuracy = share 'correct') and seed "
                    "002's per-statement relevancy and faithfulness. Without --pdf: the sample guideline "
                    "(grounded.samples) with the 12 questions written for it. The vision strategy uses the same model.")
    rag.add_argument("--pdf", type=Path, default=None, metavar="PDF",
                     help="document to ask about (needs --questions; default: the sample guideline and its questions)")
    rag.add_argument("--questions", type=Path, default=None, metavar="FILE",
                     help="JSON list or JSON Lines of {question, answer?, evidence?} objects")
    rag.add_argument("--strategies", default="fixed,hierarchical,vision", metavar="LIST",
                     help="comma-separated strategies (default: fixed,hierarchical,vision: seed 001's comparison plus "
                          "the structure-aware strategy)")
    rag.add_argument("-n", "--max-tokens", type=int, default=256, metavar="N", help="chunk size N (default: 256)")
    rag.add_argument("--overlap", type=float, default=0.0, metavar="O",
                     help="overlap of the strategies that have one, a fraction of N if < 1 else tokens (default: 0)")
    rag.add_argument("--top-k", type=int, default=5, metavar="K",
                     help="retrieved chunks per question (default: 5, as seed 002; seed 001 used 10)")
    add_model_options(rag)
    rag.add_argument("--judge-llm", default=None, metavar="MODULE:OBJECT",
                     help="judge model object (as --llm; default: the answering model)")
    rag.add_argument("--judge-model", default=None, metavar="NAME",
                     help="Gemini judge model through google-genai, or the model name for a client given with --judge-llm")
    rag.add_argument("--parser", default="pymupdf", metavar="NAME", help="parser backend (default: pymupdf)")
    rag.add_argument("--out", type=Path, default=None, metavar="DIR", help="also write NAME.json and NAME.md into DIR")
    rag.add_argument("--name", default="rag", metavar="NAME", help="file stem for --out (default: rag)")
    rag.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                     help="cache for parses and embeddings (default: $GROUNDED_CACHE_DIR or ~/.cache/grounded)")
    rag.add_argument("--no-cache", action="store_true", help="neither read nor write the on-disk caches")
    rag.add_argument("--limit", type=int, default=None, metavar="N", help="ask only the first N questions")
    rag.add_argument("--log", type=Path, default=None, metavar="FILE",
                     help="JSON Lines of the judged questions so far (strategy + result), rewritten atomically after "
                          "each one: a long run with a slow model keeps what finished")
    rag.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    rag.set_defaults(func=run_rag_cmd)


def _rag_chunkers(args: argparse.Namespace, llm: Any, name: str | None, embed: Any) -> list[tuple[str, Any]]:
    from ..chunking import Chunker
    from ..chunking.base import strategy_class
    from ..cli.chunk import strategy_names
    from ..llm.spec import takes_model

    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = sorted(set(strategies) - set(strategy_names()))
    if unknown or not strategies:
        raise EvalUsageError(f"--strategies: unknown strategies {unknown}" if unknown else "--strategies is empty")
    if args.max_tokens < 1 or args.overlap < 0:
        raise EvalUsageError(f"--max-tokens must be >= 1 and --overlap >= 0, got {args.max_tokens} / {args.overlap}")
    overlap = int(args.overlap) if args.overlap >= 1 else float(args.overlap)
    out = []
    for s in strategies:
        cls = strategy_class(s)
        options: dict[str, Any] = {"llm": llm, "model": name} if takes_model(s) else {}
        if getattr(cls, "uses_embedder", False):
            options["embedder"] = embed
        out.append((s, Chunker(s, args.max_tokens, overlap if cls.supports_overlap else 0, **options)))
    return out


def _question_log(path: Path) -> Any:
    """``on_result`` for :func:`~.rag.run_rag`: ``path`` holds one JSON line per judged question so far
    (``{"strategy": ..., **result}``), the whole file rewritten atomically each time (never a cut line)."""
    import json

    from ..io.atomic import atomic_write_text, check_output_target

    check_output_target(path)
    lines: list[str] = []

    def write(strategy: str, result: Any) -> None:
        lines.append(json.dumps({"strategy": strategy, **result.to_dict()}, ensure_ascii=False))
        atomic_write_text(path, "\n".join(lines) + "\n")

    return write


def run_rag_cmd(args: argparse.Namespace) -> int:
    import tempfile

    from ..llm import as_model
    from .embeddings import minilm_embedder
    from .rag import run_rag
    from .rag_data import SAMPLE_GUIDELINE_QUESTIONS, SAMPLE_GUIDELINE_SOURCE, load_questions
    from .report import rag_markdown, rag_questions_markdown
    from .runs import parse_cached

    spec = model_spec(args)
    if not spec:
        raise EvalUsageError(f"grounded eval rag needs a model to answer and judge: {args.model_options}")
    if (args.pdf is None) != (args.questions is None):
        raise EvalUsageError("--pdf and --questions go together (without both: the sample guideline and its questions)")
    if args.top_k < 1:
        raise EvalUsageError(f"--top-k must be at least 1, got {args.top_k}")
    questions = list(SAMPLE_GUIDELINE_QUESTIONS) if args.questions is None else load_questions(args.questions)
    source = SAMPLE_GUIDELINE_SOURCE if args.questions is None else str(args.questions)
    questions = questions[: args.limit] if args.limit else questions
    on_result = _question_log(args.log) if args.log is not None else None
    llm, name = spec.build()
    model = as_model(llm, model=name)
    judge_spec = ModelSpec(args.judge_llm, args.judge_model, "--judge-model NAME or --judge-llm MODULE:OBJECT")
    judge = model
    if judge_spec:
        judge_obj, judge_name = judge_spec.build()
        judge = as_model(judge_obj, model=judge_name)
    embedder = minilm_embedder(cache_dir=args.cache_dir, use_cache=not args.no_cache)
    chunkers = _rag_chunkers(args, llm, name, embedder.embed)
    with tempfile.TemporaryDirectory(prefix="grounded-rag-") as tmp:
        pdf = args.pdf
        if pdf is None:
            from ..demo.samples import write_sample_pdf

            pdf = write_sample_pdf(Path(tmp) / "sample_guideline.pdf")
        elif not pdf.is_file():
            raise InputError(pdf, "PDF not found")
        doc = parse_cached(pdf, args.parser, args.cache_dir, use_cache=not args.no_cache)
        if doc.error or doc.root is None:
            raise EvalUsageError(f"{pdf}: parsing failed: {doc.error}")
        evals = run_rag(doc.root, questions, chunkers, embed=embedder.embed, model=model, judge=judge,
                        top_k=args.top_k, progress=_progress(args), on_result=on_result)
    md = rag_markdown(evals, model=model.identity, judge=judge.identity, source=source, top_k=args.top_k)
    md += "\n### Per question\n\n" + rag_questions_markdown(
        [{"strategy": ev.name, **r.to_dict()} for ev in evals for r in ev.results])
    payload = {"model": model.identity, "judge": judge.identity, "questions_source": source, "top_k": args.top_k,
               "pdf": str(args.pdf) if args.pdf else "grounded.samples sample guideline",
               "results": [e.to_dict() for e in evals]}
    _emit(args, md, payload)
    return 0
