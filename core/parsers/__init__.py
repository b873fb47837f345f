"""Parser backends behind one interface; ``get_parser(name)`` imports a backend only when asked.

Importing this package never imports a backend SDK: each backend checks its optional dependencies
with :func:`grounded.runtime.optional.require`, which raises :class:`grounded.errors.BackendUnavailableError`
(an ImportError naming the ``pip install``) when the object is built without its extra. The backend
contract (``_parse``, ``_transform``, ``LABEL_MAP``) is described in :mod:`grounded.parsers.base` and
``docs/backends/writing_a_backend.md``.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import DEFAULT_DROP_TYPES, BaseParser, ParseOutput, map_label
from .native import NodeFactory

__all__ = [
    "BaseParser",
    "ParseOutput",
    "DEFAULT_DROP_TYPES",
    "map_label",
    "NodeFactory",
    "PARSERS",
    "get_parser",
    "parser_class",
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


def parser_class(name: str) -> type[BaseParser]:
    try:
        target = PARSERS[name]
    except KeyError:
        raise ValueError(f"unknown parser {name!r}; choose one of: {', '.join(PARSERS)}") from None
    module_name, cls_name = target.split(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    cls: type[BaseParser] = getattr(module, cls_name)
    return cls


def get_parser(name: str = "pymupdf", **kwargs: Any) -> BaseParser:
    """Build the backend ``name`` with ``kwargs`` (raises ImportError-compatible errors for missing extras)."""
    return parser_class(name)(**kwargs)
