"""Backward-compatible names of the graph's model client, now :mod:`grounded.llm`:
``ModelClient`` is :class:`grounded.llm.Model`, ``as_client`` is :func:`grounded.llm.as_model`."""

from __future__ import annotations

from ..llm import Model as ModelClient
from ..llm import as_model as as_client

__all__ = ["ModelClient", "as_client"]
