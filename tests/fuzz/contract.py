"""The contract of issue #14, checked for one generated input through the API and through the CLI.

Good outcomes:

* ``OK`` -- a non-empty result; for ``must_have_text``/``text_or_error`` cases at least
  :data:`MIN_COVERAGE` of the non-space characters ``page.get_text()`` sees are in the document
  text (compared as NFKC character counts, so reading order and line breaks do not matter), and
  every page with text contributes some,
* ``EMPTY_WITH_REASON`` -- no text, and every page of ``root.metadata["pages"]`` says why
  (:func:`page_reason`),
* ``TYPED_ERROR`` -- a :class:`grounded.errors.GroundedError` whose message names the file; CLI:
  exit code != 0, a one-line ``grounded parse: error: ...`` on stderr naming the file, no traceback.

Violations (anything else): ``TRACEBACK``, ``CRASH`` (killed by a signal), ``TIMEOUT``,
``UNTYPED_ERROR`` (another exception, or an error that does not name the file), ``SILENT_EMPTY``
(no text and a page without a reason), ``TEXT_LOST`` (text the file carries is missing),
``REFUSED`` (a typed error for a file whose text must come out), ``ACCEPTED_BAD_INPUT`` (a result
for a file that must be refused), ``TEMP_FILE_LEFT`` (``*.tmp`` or hidden partial file in the
output folder), ``HALF_WRITTEN`` (``.json`` without ``.md`` or the reverse, or unreadable JSON),
``DAMAGE_HIDDEN`` (MuPDF repaired the file or reported errors reading it, and the result's metadata
says nothing: neither ``pdf_warnings``/``pdf_repaired`` nor a page's ``warnings``/``status``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import traceback
import unicodedata
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymupdf

from .corpus import MUST_ERROR, MUST_HAVE_TEXT, TEXT_OR_ERROR, Case

__all__ = [
    "GOOD",
    "VIOLATIONS",
    "MIN_COVERAGE",
    "Outcome",
    "Violation",
    "Expected",
    "check_api",
    "check_cli",
    "check_case",
    "expected_text",
    "flags_damage",
    "page_reason",
    "grounded_exe",
]

GOOD = ("OK", "EMPTY_WITH_REASON", "TYPED_ERROR")
VIOLATIONS = (
    "TRACEBACK",
    "CRASH",
    "TIMEOUT",
    "UNTYPED_ERROR",
    "SILENT_EMPTY",
    "TEXT_LOST",
    "REFUSED",
    "ACCEPTED_BAD_INPUT",
    "TEMP_FILE_LEFT",
    "HALF_WRITTEN",
    "DAMAGE_HIDDEN",
)
MIN_COVERAGE = 0.90
#: keys of a page's metadata that can carry the reason it is empty (the parser's choice)
REASON_KEYS = ("reason", "empty_reason", "status", "warnings", "warning", "note", "flags", "errors")
_NOT_A_REASON = {"", "ok", "text", "none"}
CLI_TIMEOUT = 900


@dataclass(frozen=True)
class Violation:
    code: str
    message: str


@dataclass
class Outcome:
    """What one interface did with one case: the good class reached, or the first violation."""

    interface: str  # "api" | "cli"
    case: Case
    outcome: str = ""
    violations: list[Violation] = field(default_factory=list)
    detail: str = ""
    coverage: float | None = None
    seconds: float = 0.0
    text: str | None = None  # the document text of a result (for reports)
    flagged: bool | None = None  # whether the result's metadata reports damage

    @property
    def status(self) -> str:
        """The outcome, or the first violation's code."""
        return self.violations[0].code if self.violations else self.outcome

    @property
    def ok(self) -> bool:
        return not self.violations

    def violate(self, code: str, message: str) -> None:
        assert code in VIOLATIONS, code
        self.violations.append(Violation(code, message))

    def describe(self) -> str:
        head = f"[{self.interface}] {self.case.kind}/{self.case.name} ({self.case.note}; expect {self.case.expect}): {self.status}"
        lines = [head] + [f"    {v.code}: {v.message}" for v in self.violations]
        if self.detail and not self.violations:
            lines.append(f"    {self.detail}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# text the file carries (MuPDF's own view) and text a result holds
# ---------------------------------------------------------------------------------------------


def _chars(text: str) -> Counter[str]:
    """Non-space characters that carry meaning (NFKC; control, private-use, U+FFFD left out:
    MuPDF reports glyphs without a Unicode value as U+0000, grounded as U+FFFD)."""
    return Counter(
        ch
        for ch in unicodedata.normalize("NFKC", text)
        if not ch.isspace() and ch != "\ufffd" and unicodedata.category(ch) not in ("Cc", "Cs", "Co", "Cn")
    )


@dataclass
class Expected:
    """``page.get_text()`` of every page MuPDF can load (1-based page -> character counts), and
    what MuPDF reported on the way (repairs, errors, warnings)."""

    pages: dict[int, Counter[str]]
    damage: list[str] = field(default_factory=list)

    @property
    def total(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for c in self.pages.values():
            out.update(c)
        return out

    @property
    def text_pages(self) -> list[int]:
        return [p for p, c in self.pages.items() if sum(c.values()) > 0]


def expected_text(path: Path) -> Expected | None:
    """What MuPDF itself extracts, or None when it cannot open the file (or it needs a password)."""
    if not path.is_file():
        return None
    pymupdf.TOOLS.mupdf_warnings(reset=True)
    try:
        with pymupdf.open(path) as doc:
            if doc.needs_pass or not doc.is_pdf:
                return None
            pages: dict[int, Counter[str]] = {}
            for index in range(doc.page_count):
                try:
                    pages[index + 1] = _chars(doc.load_page(index).get_text())
                except Exception:  # MuPDF's own error on a broken page: it carries no readable text
                    pages[index + 1] = Counter()
            damage = [ln.strip() for ln in pymupdf.TOOLS.mupdf_warnings(reset=True).splitlines() if ln.strip()]
            if doc.is_repaired:
                damage.insert(0, "MuPDF repaired the file")
            return Expected(pages, damage)
    except Exception:  # MuPDF's own errors (FileDataError, ...)
        return None


def flags_damage(metadata: Any) -> bool:
    """Whether a result's root metadata reports damage (file-level or on some page)."""
    if not isinstance(metadata, dict):
        return False
    if metadata.get("pdf_warnings") or metadata.get("pdf_repaired"):
        return True
    for page in metadata.get("pages") or []:
        if isinstance(page, dict) and (page.get("warnings") or page.get("status") not in (None, "ok")):
            return True
    return False


def page_reason(page_meta: Any) -> str | None:
    """The reason a page's metadata gives for being empty, if any."""
    if not isinstance(page_meta, dict):
        return None
    for key in REASON_KEYS:
        value = page_meta.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            if value.strip().lower() not in _NOT_A_REASON:
                return f"{key}={value}"
        elif value:  # a non-empty list/dict of warnings or flags
            return f"{key}={value}"
    return None


def _root_text(root: Any) -> tuple[str, set[int]]:
    """The document text the chunker sees and the pages its text nodes lie on."""
    from grounded.text.stream import document_text

    doc = document_text(root)
    pages = {box.page for node in doc.nodes if node.content.strip() for box in node.geom}
    return doc.text, pages


def _judge_result(out: Outcome, root: Any, expected: Expected | None, chunk_count: int | None) -> None:
    """OK / EMPTY_WITH_REASON / violations for a tree the interface returned."""
    case = out.case
    text, text_pages = _root_text(root)
    out.text = text
    out.flagged = flags_damage(root.metadata)
    got = _chars(text)
    meta_pages = root.metadata.get("pages") or []
    if sum(got.values()) == 0:
        missing = [
            str(m.get("page", i + 1)) if isinstance(m, dict) else str(i + 1)
            for i, m in enumerate(meta_pages)
            if page_reason(m) is None
        ]
        doc_reason = page_reason(root.metadata)
        if (meta_pages and not missing) or (not meta_pages and doc_reason):
            out.outcome = "EMPTY_WITH_REASON"
            out.detail = "; ".join(filter(None, (page_reason(m) for m in meta_pages))) or (doc_reason or "")
        else:
            out.outcome = "SILENT_EMPTY"
            out.violate(
                "SILENT_EMPTY",
                f"0 characters and no reason for page(s) {', '.join(missing[:12]) or '(no page metadata)'}",
            )
        if case.expect in (MUST_HAVE_TEXT, TEXT_OR_ERROR):
            want = sum(expected.total.values()) if expected else 0
            out.violate("TEXT_LOST", f"empty result, but the file carries {want} characters of text")
    else:
        out.outcome = "OK"
        if chunk_count == 0:
            out.violate("TEXT_LOST", f"{sum(got.values())} characters of text but 0 chunks")
    if case.expect == MUST_ERROR:
        out.violate("ACCEPTED_BAD_INPUT", f"expected a typed error, got {out.outcome}")
    if expected is not None and expected.damage and not flags_damage(root.metadata):
        out.violate("DAMAGE_HIDDEN", f"MuPDF: {'; '.join(expected.damage[:2])[:200]}; the result reports no damage")
    if expected is not None:
        want = expected.total
        total = sum(want.values())
        if total:
            out.coverage = sum((want & got).values()) / total
        if case.expect in (MUST_HAVE_TEXT, TEXT_OR_ERROR) and out.outcome == "OK":
            if out.coverage is not None and out.coverage < MIN_COVERAGE:
                out.violate("TEXT_LOST", f"{out.coverage:.0%} of the {total} characters MuPDF extracts are in the result")
            lost = [p for p in expected.text_pages if p not in text_pages]
            if lost:
                shown = ", ".join(str(p) for p in lost[:12]) + (f" (+{len(lost) - 12})" if len(lost) > 12 else "")
                by_page = {m.get("page"): m for m in meta_pages if isinstance(m, dict)}
                said = page_reason(by_page.get(lost[0]))
                out.violate(
                    "TEXT_LOST",
                    f"page(s) {shown} have text but none of it is in the result"
                    + (f" (page {lost[0]}: {said})" if said else " (no reason given)"),
                )


def _judge_error(out: Outcome, message: str, typed: bool, error_type: str) -> None:
    case = out.case
    # an output error may name the output file (<stem>.json) rather than the input
    names_file = any(part in message for part in (case.path.name, str(case.path), case.path.stem))
    if typed and names_file:
        out.outcome = "TYPED_ERROR"
        out.detail = f"{error_type}: {message}"
    else:
        out.outcome = "UNTYPED_ERROR"
        why = "not a GroundedError" if not typed else "the message does not name the file"
        out.violate("UNTYPED_ERROR", f"{error_type} ({why}): {message[:300]}")
    if case.expect == MUST_HAVE_TEXT and out.outcome == "TYPED_ERROR":
        out.violate("REFUSED", f"a file with text must parse, got {error_type}: {message[:300]}")


def _check_output_dir(out: Outcome, out_dir: Path) -> None:
    """No temp/partial files; every .json has its .md and reads back."""
    if not out_dir.exists():
        return
    files = [p for p in out_dir.iterdir() if p.is_file()]
    leftovers = [p.name for p in files if p.name.endswith(".tmp") or ".tmp" in p.suffixes or p.name.startswith(".")]
    if leftovers:
        out.violate("TEMP_FILE_LEFT", f"left in the output folder: {', '.join(sorted(leftovers)[:5])}")
    stems_json = {p.stem for p in files if p.suffix == ".json"}
    stems_md = {p.stem for p in files if p.suffix == ".md"}
    lone = sorted(stems_json ^ stems_md)
    if lone:
        out.violate("HALF_WRITTEN", f"unpaired output(s): {', '.join(lone[:5])}")


# ---------------------------------------------------------------------------------------------
# the two interfaces
# ---------------------------------------------------------------------------------------------


def check_api(case: Case, out_dir: Path, parser: Any = None, chunker: Any = None,
              expected: Expected | None = None) -> Outcome:
    """``get_parser("pymupdf").run(path)`` -> ``Chunker("recursive", 64).chunk(root)`` -> ``save``."""
    import grounded
    from grounded.errors import GroundedError

    parser = parser if parser is not None else grounded.get_parser("pymupdf")
    chunker = chunker if chunker is not None else grounded.Chunker("recursive", 64)
    out = Outcome("api", case)
    started = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            output = parser.run(case.path)
            chunks = chunker.chunk(output.root)
            output.save(out_dir)
    except GroundedError as exc:
        _judge_error(out, str(exc), True, type(exc).__name__)
    except Exception as exc:  # the contract is exactly that nothing else escapes
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f" at {Path(frame.filename).name}:{frame.lineno}" if frame else ""
        _judge_error(out, f"{exc}{where}", False, type(exc).__name__)
    else:
        _judge_result(out, output.root, expected, len(chunks.chunks))
        notes = sorted({str(w.message)[:120] for w in caught})
        if notes and not out.detail:
            out.detail = "warnings: " + " | ".join(notes[:3])
    out.seconds = time.perf_counter() - started
    _check_output_dir(out, out_dir)
    return out


def grounded_exe() -> list[str]:
    """The installed ``grounded`` console script beside this interpreter (else ``python -m grounded.cli``)."""
    script = Path(sys.executable).with_name("grounded")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "grounded.cli"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    return env


def check_cli(case: Case, out_dir: Path, expected: Expected | None = None, timeout: float = CLI_TIMEOUT) -> Outcome:
    """``grounded parse FILE -o DIR`` in a subprocess."""
    from grounded.errors import GroundedError
    from grounded.serialization import load_parsing_result

    out = Outcome("cli", case)
    if case.cli_relative:  # a name starting with '-' given the way a careful user would: after --
        cmd = [*grounded_exe(), "parse", "--no-progress", "-o", str(out_dir), "--", case.path.name]
        cwd: Path | None = case.path.parent
    else:
        cmd = [*grounded_exe(), "parse", "--no-progress", "-o", str(out_dir), str(case.path)]
        cwd = None
    started = time.perf_counter()
    try:
        done = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        out.seconds = time.perf_counter() - started
        out.outcome = "TIMEOUT"
        out.violate("TIMEOUT", f"no exit after {timeout:.0f} s")
        _check_output_dir(out, out_dir)
        return out
    out.seconds = time.perf_counter() - started
    stderr = done.stderr.decode("utf-8", "replace")
    err_lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if done.returncode < 0:
        out.outcome = "CRASH"
        out.violate("CRASH", f"killed by signal {-done.returncode}; stderr: {' | '.join(err_lines[-3:])[:300]}")
    elif "Traceback (most recent call last)" in stderr:
        out.outcome = "TRACEBACK"
        last = err_lines[-1] if err_lines else ""
        out.violate("TRACEBACK", f"exit {done.returncode}: {last[:300]}")
    elif done.returncode != 0:
        errors = [ln for ln in err_lines if ln.startswith("grounded parse: error:")]
        if len(errors) == 1:
            _judge_error(out, errors[0], True, f"exit {done.returncode}")
        else:
            _judge_error(out, " | ".join(err_lines[-3:]) or "(nothing on stderr)", False,
                         f"exit {done.returncode} with {len(errors)} 'grounded parse: error:' lines")
        others = [ln for ln in err_lines if not ln.startswith("grounded parse: error:")]
        if others and out.ok:
            out.detail += f" (+{len(others)} other stderr line(s))"
    else:
        jsons = sorted(out_dir.glob("*.json")) if out_dir.exists() else []
        if not jsons:
            out.outcome = "HALF_WRITTEN"
            out.violate("HALF_WRITTEN", "exit 0 but no .json written")
        else:
            try:
                root = load_parsing_result(jsons[0])
            except GroundedError as exc:
                out.outcome = "HALF_WRITTEN"
                out.violate("HALF_WRITTEN", f"the written .json does not load: {exc}"[:300])
            else:
                _judge_result(out, root, expected, None)
    _check_output_dir(out, out_dir)
    return out


def check_case(case: Case, work: Path, parser: Any = None, chunker: Any = None, cli: bool = True) -> list[Outcome]:
    """Both interfaces on one case; outputs go to fresh folders under ``work``."""
    expected = expected_text(case.path)
    results = [check_api(case, work / f"{case.kind}-{case.name}-api", parser, chunker, expected)]
    if cli:
        results.append(check_cli(case, work / f"{case.kind}-{case.name}-cli", expected))
    return results

