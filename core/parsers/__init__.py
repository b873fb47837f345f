"""Parser backends behind one interface; ``get_parser(name)`` imports a backend only when asked.

Importing this package never imports a backend SDK: each backend checks its optional dependencies
with :func:`grounded.runtime.optional.require`, which raises :class:`grounded.errors.BackendUnavailableError`
(an ImportError naming the ``pip install``) when the object is built without its extra. The backend
contract (``_parse``, ``_transform``, ``LABEL_MAP``) is described in :mod:`grounded.parsers.base` and
``docs/backends/writing_a_backend.md``.

The registry (:data:`REGISTRY`, the shape of the strategies' registry: :mod:`grounded.runtime.registry`)
holds the built-in backends of :data:`PARSERS` and the entry points of the group ``grounded.parsers``
of installed distributions (``name = "package.module:ParserClass"``): a third-party parser is usable
by name in ``--parser`` of every command, in ``grounded ingest`` and in the adapters. Each parser class
declares its constructor options (:attr:`BaseParser.options`); :func:`get_parser` checks the given
options against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import UnknownNameError
from ..model.options import fingerprinted
from ..runtime.registry import Registry
from .base import DEFAULT_DROP_TYPES, BaseParser, ParseOutput, map_label
from .native import NodeFactory

__all__ = [
    "BaseParser",
    "ParseOutput",
    "DEFAULT_DROP_TYPES",
    "map_label",
    "NodeFactory",
    "PARSERS",
    "REGISTRY",
    "ENTRY_POINT_GROUP",
    "get_parser",
    "parser_class",
    "parser_names",
    "register_parser",
    "public_options",
]

#: registry name -> "module:Class" (relative to this package)
PARSERS: dict[str, str] = {
    "pymupdf": "backends.pymupdf:PyMuPDFParser",
    "docling": "backends.docling:DoclingParser",
    "granite_docling": "backends.granite_docling:GraniteDoclingParser",
    "mineru_pipeline": "backends.mineru:MinerUPipelineParser",
    "mineru_vlm": "backends.mineru:MinerUVLMParser",
    "unstructured": "backends.unstructured:UnstructuredParser",
    "gemini": "backends.gemini:GeminiParser",
    "llamaparse": "backends.llamaparse:LlamaParseParser",
    "documentai": "backends.documentai:DocumentAIParser",
}


ENTRY_POINT_GROUP = "grounded.parsers"
#: the parser registry: built-ins imported on first use, then this process's and the entry points'
REGISTRY: Registry[type[BaseParser]] = Registry(
    "parser", BaseParser, ENTRY_POINT_GROUP, lazy={name: f"{__name__}.{target}" for name, target in PARSERS.items()},
)


def register_parser(cls: type[BaseParser]) -> type[BaseParser]:
    """Register ``cls`` under its ``name`` in this process (a class decorator)."""
    return REGISTRY.register(cls.name, cls)


def parser_names() -> list[str]:
    """Every known parser name (built-in and entry points), sorted, importing none."""
    return REGISTRY.names()


def parser_class(name: str) -> type[BaseParser]:
    """The class of parser ``name``; :class:`~grounded.errors.UnknownNameError` (a ``ValueError``)
    listing the known names otherwise."""
    return REGISTRY.get(name)


def get_parser(name: str = "pymupdf", **kwargs: Any) -> BaseParser:
    """Build the backend ``name`` with ``kwargs``, checked against its declared options
    (:class:`~grounded.errors.OptionError` naming parser and option; a missing extra raises an
    ImportError-compatible :class:`~grounded.errors.BackendUnavailableError`)."""
    cls = parser_class(name)
    return cls(**cls.check_options(kwargs))


def public_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` of parser ``name`` without its ``secret`` ones (API keys): what a stored record
    (a Document's metadata, a cache key) may hold; unchanged for a parser no registry knows."""
    try:
        declared = parser_class(name).declared_options() or ()
    except UnknownNameError:
        return dict(options)
    return fingerprinted(declared, options)
