"""One default (PyMuPDF) parse per shared PDF for the whole test run, not one per test module.

The default parse runs the ONNX layout model (~0.5 s a page): the 44 pages of ``../shared/data/long``
cost 20-40 s per parse, and half a dozen modules measure the same trees. :class:`SharedParses`
parses a PDF once per run and hands the same tree to every module that only reads it:

- the trees live in the product's own :class:`~grounded.parsers.cache.ParseCache` in a folder
  every pytest-xdist worker of the run sees (:mod:`tests.support.run_once`), so the second worker
  loads the first one's tree instead of parsing again; a lock per PDF keeps two workers from
  parsing the same file at once;
- within a worker the decoded tree is kept (one object per PDF).

A tree handed out is shared: a test must not change it. :meth:`SharedParses.assert_unchanged`
(called by the module fixtures on teardown) fails when a module did, naming the PDF - so sharing
can never let one module's mutation leak silently into another's measurement.

Modules that test the parser itself keep their own fresh parse; this is for the ones that
measure chunking, grounding and boxes *of* the default parse.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from grounded.io.codec import dumps_parsing_result
from grounded.model import ParsingResult
from grounded.parsers import get_parser
from grounded.parsers.cache import ParseCache, cached_parse
from tests.support.run_once import exclusive

PARSER = "pymupdf"


def _digest(root: ParsingResult) -> str:
    return hashlib.sha256(dumps_parsing_result(root).encode()).hexdigest()



class SharedParses:
    """Default parses of PDFs, made once per test run (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.cache = ParseCache(directory)
        self.parser = get_parser(PARSER)
        self._trees: dict[Path, ParsingResult] = {}
        self._digests: dict[Path, str] = {}

    def tree(self, pdf: Path) -> ParsingResult:
        """The default parse of ``pdf`` (shared: read it, never change it)."""
        pdf = Path(pdf).resolve()
        root = self._trees.get(pdf)
        if root is None:
            with exclusive(self.cache.directory / "locks" / f"{hashlib.sha256(str(pdf).encode()).hexdigest()}.lock"):
                root = cached_parse(self.parser, pdf, cache=self.cache)
                self.cache.put(root)
            self._trees[pdf] = root
            self._digests[pdf] = _digest(root)
        return root

    def trees(self, pdfs: list[Path], what: str) -> dict[str, ParsingResult]:
        """:meth:`tree` of each of ``pdfs`` by file name; skips the test when there are none."""
        if not pdfs:
            pytest.skip(f"{what} not available")
        return {p.name: self.tree(p) for p in pdfs}

    def assert_unchanged(self, trees: dict[str, ParsingResult] | ParsingResult) -> None:
        """Fail when a tree handed out by :meth:`tree` was changed by its user (a shared tree must
        stay as parsed for the next module)."""
        roots = [trees] if isinstance(trees, ParsingResult) else list(trees.values())
        for pdf, root in self._trees.items():
            if any(root is r for r in roots):
                assert _digest(root) == self._digests[pdf], f"a test changed the shared parse tree of {pdf}"

