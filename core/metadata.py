"""Chunk metadata of the store surfaces (public path; the code lives in :mod:`grounded.io.chunk_metadata`)."""

from __future__ import annotations

from .io.chunk_metadata import *  # noqa: F403
from .io.chunk_metadata import __all__ as __all__  # noqa: F401
