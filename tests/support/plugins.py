"""Test helper: a third-party distribution that registers a parser and a strategy by entry point.

:func:`install_plugin` writes a module and its ``*.dist-info`` (``METADATA`` + ``entry_points.txt``)
into a folder; with the folder on ``sys.path``, :mod:`importlib.metadata` finds the entry points as
it finds those of any installed distribution (no mock of importlib). The parser ``caps_demo`` is the
PyMuPDF parser with a declared option ``upper`` (upper-cases every text); the strategy ``parts_demo``
cuts the document into ``parts`` equal token ranges (a declared option).
"""

from __future__ import annotations

import sys
from pathlib import Path

MODULE = "grounded_plugin_demo"
PARSER = "caps_demo"
STRATEGY = "parts_demo"

_SOURCE = '''
from grounded.chunking.base import Option as StrategyOption, register_strategy
from grounded.chunking.pieces import PieceStrategy
from grounded.model.options import Option
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser


class CapsParser(PyMuPDFParser):
    name = "caps_demo"
    options = (Option("upper", bool, False, "upper-case every text"),)

    def __init__(self, *, upper=False, **kwargs):
        super().__init__(**kwargs)
        self.upper = upper

    def _transform(self, native):
        root = super()._transform(native)
        if self.upper:
            for node in root.walk():
                if node.content:
                    node.content = node.content.upper()
        return root


@register_strategy
class PartsStrategy(PieceStrategy):
    name = "parts_demo"
    piece_kind = None
    supports_overlap = False
    options = (StrategyOption("parts", int, 2, "equal parts of the document", low=1),)

    def __init__(self, max_tokens=256, overlap=0, parts=2):
        super().__init__(max_tokens, overlap)
        self.parts = parts

    def split(self, pieces, doc):
        n = len(doc)
        cuts = [round(i * n / self.parts) for i in range(self.parts + 1)]
        return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]

    def params(self):
        return {**super().params(), "parts": self.parts}
'''


def install_plugin(folder: Path) -> Path:
    """Write the plugin module and its dist-info into ``folder``; returns ``folder`` (put it on sys.path)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{MODULE}.py").write_text(_SOURCE)
    info = folder / f"{MODULE}-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {MODULE.replace('_', '-')}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[grounded.parsers]\n{PARSER} = {MODULE}:CapsParser\n\n[grounded.strategies]\n{STRATEGY} = {MODULE}\n"
    )
    return folder


def uninstall_plugin() -> None:
    """Forget the plugin in this process: its registered classes and its module (a later install
    from another folder imports it again, which registers the strategy again)."""
    from grounded.chunking.base import STRATEGIES
    from grounded.parsers import REGISTRY

    STRATEGIES.pop(STRATEGY, None)
    REGISTRY.classes.pop(PARSER, None)
    sys.modules.pop(MODULE, None)
