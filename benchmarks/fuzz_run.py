"""The larger seeded fuzz run of issues #14 and #21: every bad-input kind, ~200 byte-flip mutants, API + CLI.

Run: ``python benchmarks/fuzz_run.py --cases 320 --seed 0 --save docs/results/fuzz.md``;
``python benchmarks/fuzz_run.py --suite-corpus --cli all`` runs the CLI on every file of the suite's
corpus (tests/fuzz/test_fuzz.py runs it on the first file of each kind; the other files' CLI cases
moved here in issue #30.7, ~2 s of subprocess each).
The corpus (``tests/fuzz/corpus.py``) is generated into a temporary folder from the shared PDFs;
each file goes through ``get_parser("pymupdf").run`` + ``Chunker("recursive", 64).chunk`` +
``ParseOutput.save`` in this process and through ``grounded parse FILE -o DIR`` in a subprocess
(``--cli sample``: every non-mutant file and every 5th mutant; ``--cli none``: API only).
Each outcome is classified by ``tests/fuzz/contract.py``: OK / EMPTY_WITH_REASON / TYPED_ERROR
are the contract; anything else is a violation, listed with its file and message.

Printed: per interface a table kind x outcome (counts), the violations, and for the byte-flip
mutants that parse, how much of the unmutated source's text they keep (issue #14 item 2: a
corrupt file passed off as good).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
for _key, _value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(_key, _value)

import grounded  # noqa: E402  (before pymupdf: grounded's offline defaults first)
from tests.fuzz.contract import GOOD, VIOLATIONS, Outcome, _chars, check_api, check_cli, expected_text  # noqa: E402
from tests.fuzz.corpus import KINDS, TEST_COUNTS, Case, build_corpus, full_counts  # noqa: E402


def _git_head() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "core"], cwd=REPO, capture_output=True, text=True, timeout=10)
        return done.stdout.strip() + (" (+ uncommitted changes under core/)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _table(outcomes: list[Outcome], cases: list[Case]) -> list[str]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for out in outcomes:
        counts[out.case.kind][out.status] += 1
    seen = [c for c in (*GOOD, *VIOLATIONS) if any(counts[k][c] for k in counts)]
    expect: dict[str, set[str]] = defaultdict(set)
    for case in cases:
        expect[case.kind].add(case.expect)
    head = f"{'kind':<16} {'n':>4}  {'expected':<30}" + "".join(f" {c:>{max(len(c), 4)}}" for c in seen)
    lines = [head, "-" * len(head)]
    total: Counter[str] = Counter()
    for kind in KINDS:
        if kind not in counts:
            continue
        row = counts[kind]
        total.update(row)
        lines.append(
            f"{kind:<16} {sum(row.values()):>4}  {'/'.join(sorted(expect[kind])):<30}"
            + "".join(f" {(row[c] or '.'):>{max(len(c), 4)}}" for c in seen)
        )
    lines.append("-" * len(head))
    lines.append(f"{'total':<16} {sum(total.values()):>4}  {'':<30}" + "".join(f" {total[c]:>{max(len(c), 4)}}" for c in seen))
    return lines


def _mutant_retention(outcomes: list[Outcome]) -> list[str]:
    """Byte-flip mutants the API accepted (OK): share of the unmutated source's text kept."""
    kept: list[tuple[float, Outcome]] = []
    for out in outcomes:
        if out.case.kind != "byte_flip" or out.status != "OK" or not out.case.source:
            continue
        original = expected_text(Path(out.case.source))
        if original is None or not sum(original.total.values()):
            continue
        if out.text is None:
            continue
        want = original.total
        kept.append((sum((want & _chars(out.text)).values()) / sum(want.values()), out))
    if not kept:
        return ["(no byte-flip mutant parsed to a result)"]
    below = sorted(((k, o) for k, o in kept if k < 0.9), key=lambda pair: pair[0])
    unflagged = [o for _, o in below if not o.flagged]
    lines = [
        f"byte-flip mutants accepted by the API: {len(kept)}; with < 90% of the source's text: {len(below)}"
        + (f" (lowest {below[0][0]:.0%})" if below else "")
        + f"; of these without any damage flag in the result's metadata: {len(unflagged)}"
    ]
    lines += [
        f"  {k:5.0%}  {o.case.path.name} ({o.case.note}){'' if o.flagged else '  NOT FLAGGED'}" for k, o in below[:25]
    ]
    if len(below) > 25:
        lines.append(f"  ... and {len(below) - 25} more")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=320, help="number of generated files (mutants fill up; default 320)")
    ap.add_argument("--seed", type=int, default=0, help="corpus seed (default 0)")
    ap.add_argument("--suite-corpus", action="store_true",
                    help="the suite's corpus (TEST_COUNTS of tests/fuzz/corpus.py) instead of --cases: with --cli all, "
                         "the CLI on every file tests/fuzz/test_fuzz.py runs through the API (the suite runs the CLI "
                         "on the first file of each kind)")
    ap.add_argument("--cli", choices=("all", "sample", "none"), default="all",
                    help="CLI subprocess for every file, for non-mutants + every 5th mutant, or never")
    ap.add_argument("--kinds", default="", help="comma-separated kinds to run (default: all 22)")
    ap.add_argument("--exclude", default="", help="comma-separated kinds to leave out")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="minutes after which no new file is started (0: no limit); the report says how many ran")
    ap.add_argument("--workdir", type=Path, help="generate into this folder (default: a temporary one)")
    ap.add_argument("--note", action="append", default=[], help="a line to add under the table in --save (repeatable)")
    ap.add_argument("--save", type=Path, help="also write the report as Markdown, e.g. docs/results/fuzz.md")
    args = ap.parse_args()
    import pymupdf

    pymupdf.TOOLS.mupdf_display_errors(False)  # MuPDF's own stderr chatter would drown the progress lines
    work = args.workdir or Path(tempfile.mkdtemp(prefix="grounded-fuzz-"))
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()] or list(KINDS)
    excluded = {k.strip() for k in args.exclude.split(",") if k.strip()}
    kinds = [k for k in kinds if k not in excluded]
    started = time.perf_counter()
    counts = TEST_COUNTS if args.suite_corpus else full_counts(args.cases)
    cases = build_corpus(work / "in", seed=args.seed, counts=counts, kinds=kinds)
    generated = time.perf_counter() - started
    # the image bombs (#21.8) first, every other kind next, then the mutants, the 1000 pages last:
    # a --budget cut trims the mutants first
    rank = {"image_bomb": -1, "byte_flip": 1, "thousand_pages": 2}
    cases.sort(key=lambda c: rank.get(c.kind, 0))
    planned = len(cases)
    parser = grounded.get_parser("pymupdf")
    chunker = grounded.Chunker("recursive", 64)
    api: list[Outcome] = []
    cli: list[Outcome] = []
    mutant_no = 0
    done_cases: list[Case] = []
    for n, case in enumerate(cases, 1):
        if args.budget and time.perf_counter() - started > args.budget * 60:
            print(f"budget of {args.budget:g} min used up: {n - 1} of {planned} files run", file=sys.stderr)
            break
        done_cases.append(case)
        expected = expected_text(case.path)
        out = check_api(case, work / "out" / f"{case.kind}-{case.name}-api", parser, chunker, expected)
        api.append(out)
        run_cli = args.cli == "all" or (args.cli == "sample" and (case.kind != "byte_flip" or mutant_no % 5 == 0))
        mutant_no += case.kind == "byte_flip"
        line = f"[{n}/{len(cases)}] {case.kind}/{case.path.name[:60]}: api {out.status} ({out.seconds:.1f} s)"
        if run_cli:
            c = check_cli(case, work / "out" / f"{case.kind}-{case.name}-cli", expected)
            cli.append(c)
            line += f", cli {c.status} ({c.seconds:.1f} s)"
        print(line, file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - started
    cases = done_cases

    printed: list[str] = []

    def emit(text: str = "") -> None:
        print(text, flush=True)
        printed.append(text)

    emit(f"grounded {grounded.__version__} at {_git_head()}, PyMuPDF {pymupdf.VersionBind}; "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if excluded:
        emit(f"kinds left out: {', '.join(sorted(excluded))}")
    if len(cases) < planned:
        emit(f"time budget ({args.budget:g} min) used up: {len(cases)} of {planned} generated files were run "
             "(all non-mutant files first, then mutants in seed order)")
    emit(f"cases: {len(cases)} of {planned} generated with seed {args.seed} in {generated:.0f} s; CLI: {args.cli} "
         f"({len(cli)} files); total {elapsed / 60:.1f} min; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for label, outs in (("API: get_parser('pymupdf').run -> Chunker('recursive', 64).chunk -> save", api),
                        ("CLI: grounded parse FILE -o DIR (subprocess)", cli)):
        if not outs:
            continue
        bad = [o for o in outs if not o.ok]
        emit()
        emit(f"{label}: {len(outs) - len(bad)} of {len(outs)} meet the contract, {len(bad)} violate it")
        emit()
        for line in _table(outs, cases):
            emit(line)
        if bad:
            emit()
            emit("violations:")
            for o in bad:
                for v in o.violations:
                    emit(f"  {v.code:<18} {o.case.kind}/{o.case.path.name[:70]} ({o.case.note}): {v.message[:240]}")
    emit()
    for line in _mutant_retention(api):
        emit(line)
    if args.save:
        from grounded.serialization import atomic_write_text

        report = "\n".join(printed)
        size = "--suite-corpus" if args.suite_corpus else f"--cases {args.cases}"
        command = f"python benchmarks/fuzz_run.py {size} --seed {args.seed} --cli {args.cli}"
        command += f" --exclude {args.exclude}" if args.exclude else ""
        command += f" --kinds {args.kinds}" if args.kinds else ""
        command += f" --budget {args.budget:g}" if args.budget else ""
        atomic_write_text(
            args.save,
            f"# Fuzz run (`{command} --save {args.save}`)\n\n"
            "Contract (issue #14): every generated bad input gives a typed error naming the file "
            "(TYPED_ERROR), a result holding the text MuPDF sees in it (OK, >= 90% of the non-space "
            "characters, every text page represented), or an empty result with a reason per page "
            "(EMPTY_WITH_REASON); anything else is a violation. Kinds, expected classes and outcome "
            "codes are defined in `tests/fuzz/corpus.py` and `tests/fuzz/contract.py`; the CI subset "
            "is `tests/fuzz/test_fuzz.py`.\n\n"
            f"```\n{report}\n```\n"
            + "".join(f"\n{note}\n" for note in args.note),
        )
    return 0 if all(o.ok for o in api + cli) else 1


if __name__ == "__main__":
    sys.exit(main())
