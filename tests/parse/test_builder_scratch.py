"""Scratch state lives in builder objects, never in the tree (#39.3): the PyMuPDF tree builder's
document-wide values (line-break hyphens pending a decision, a page header's style) are kept beside
the elements, travel from worker processes with them, and no element's metadata ever holds an
underscore key - in process or with workers, whose tree is the in-process one."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from grounded.model import ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.backends.pymupdf.tree import Pending, _TreeBuilder
from tests.support.data import LONG_PDFS, shared


def _underscore_keys(root: ParsingResult) -> list[tuple[str, str]]:
    return [(n.type.value, k) for n in root.walk() for k in n.metadata if k.startswith("_")]


def test_pending_values_survive_pickling_by_position():
    """A worker returns its pages' scratch values keyed by walk position, not by ``id()``."""
    worker = _TreeBuilder(Path("doc.pdf"))
    table = ParsingResult("", T.TABLE)
    row = ParsingResult("", T.TABLE_ROW)
    cell = ParsingResult("", T.TABLE_CELL, content="infor-mation")
    row.add_child(cell)
    table.add_child(row)
    header = ParsingResult("", T.PAGE_HEADER, content="Dosing")
    worker.hold(cell, Pending(hyphens=((5, "infor", "mation"),)))
    worker.hold(header, Pending(style=(14.0, False, True)))
    elements = [header, ParsingResult("", T.PARAGRAPH, content="body"), table]
    pending = worker.pending_of(elements)
    assert pending == {0: Pending(style=(14.0, False, True)), 4: Pending(hyphens=((5, "infor", "mation"),))}
    copied, held = pickle.loads(pickle.dumps((elements, pending)))
    parent = _TreeBuilder(Path("doc.pdf"))
    parent.adopt(copied, held)
    assert parent.elements == elements and parent.elements[0] is not header
    assert parent.pending_of(parent.elements) == pending
    assert all(not n.metadata for e in parent.elements for n in e.walk())
    parent.finish()
    assert copied[2].children[0].children[0].content == "information"  # the hyphen was decided
    assert parent.pending_of(parent.elements) == {}  # finish() drops the scratch


@pytest.mark.slow
@pytest.mark.parametrize("pdf", LONG_PDFS, ids=lambda p: p.name)
def test_no_scratch_key_in_the_tree_in_process_or_with_workers(pdf: Path):
    shared("long")
    keep_all: frozenset[T] = frozenset()  # page headers too: they held the style scratch
    single = PyMuPDFParser(drop_types=keep_all).parse(pdf)
    with PyMuPDFParser(drop_types=keep_all, workers=2, batch_pages=1) as parser:
        double = parser.parse(pdf)
    assert _underscore_keys(single) == []
    assert _underscore_keys(double) == []
    for r in (single, double):
        for key in ("elapsed_seconds", "layout_seconds"):
            r.metadata.pop(key)
    assert double == single
