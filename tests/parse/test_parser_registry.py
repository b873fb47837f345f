"""The parser registry refuses a name another class holds, as the strategy registry does (one rule in
grounded.runtime.registry): registering a parser under ``pymupdf`` used to replace the built-in
silently, for every later ``get_parser("pymupdf")`` of the process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from grounded.errors import ConfigError, NameTakenError
from grounded.parsers import REGISTRY, parser_class, register_parser
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser


class _Forgot(PyMuPDFParser):
    """A subclass that kept its parent's name."""


class _Own(PyMuPDFParser):
    name = "pymupdf_test_own"


def test_a_parser_under_a_taken_name_is_refused_and_the_builtin_stays() -> None:
    builtin = parser_class("pymupdf")
    with pytest.raises(NameTakenError) as err:
        register_parser(_Forgot)
    assert isinstance(err.value, ConfigError)
    assert err.value.taken_by == "grounded.parsers.backends.pymupdf.parser.PyMuPDFParser"
    assert str(err.value).startswith("parser name 'pymupdf' is taken by ")
    assert parser_class("pymupdf") is builtin
    assert register_parser(builtin) is builtin  # the class that holds the name registers again


def test_a_parser_under_its_own_name_registers() -> None:
    try:
        assert register_parser(_Own) is _Own and parser_class("pymupdf_test_own") is _Own
        assert "pymupdf_test_own" in REGISTRY.names()
    finally:
        REGISTRY.classes.pop("pymupdf_test_own", None)


def test_a_builtin_name_is_refused_before_the_builtin_is_imported() -> None:
    code = ("from grounded.parsers import register_parser, BaseParser\n"
            "from grounded.errors import NameTakenError\n"
            "class Mine(BaseParser):\n    name = 'docling'\n"
            "try:\n    register_parser(Mine)\nexcept NameTakenError as err:\n    print(err.taken_by)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "grounded.parsers.backends.docling.DoclingParser"
