"""The user's frame for a warning raised deep inside grounded: :func:`user_stacklevel`.

A warning of the adapters (``GroundingWarning``) is raised several calls below the user's call, and
the user may reach grounded through the framework (``VectorStoreIndex.from_documents`` ->
LlamaIndex's transformations -> ``GroundedNodeParser``). A fixed ``stacklevel`` points at one of
those calls (``node_parser.py:261``); this one points at the first frame that is neither grounded's
nor a framework's: the line the user wrote.
"""

from __future__ import annotations

import sys

__all__ = ["user_stacklevel", "INTERNAL_MODULES"]

#: top-level packages whose frames are never "the user's line" (grounded, the frameworks its adapters
#: plug into, the standard library's call plumbing); ``llama_index*`` and ``langchain*`` (every
#: package of the two frameworks, the adapters included) too
INTERNAL_MODULES = frozenset({"grounded", "pydantic", "tqdm", "asyncio", "concurrent", "contextlib", "functools", "threading"})


def _internal(name: str) -> bool:
    top = name.partition(".")[0]
    return top in INTERNAL_MODULES or top.startswith(("llama_index", "langchain"))


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called by this function's caller that names the first
    frame outside :data:`INTERNAL_MODULES` (1: the caller itself); the outermost frame when every
    frame is internal (a worker thread)."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and _internal(str(frame.f_globals.get("__name__", ""))):
        frame = frame.f_back
        level += 1
    return level
