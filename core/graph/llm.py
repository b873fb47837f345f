"""Backward-compatible names of the graph's model client, now :mod:`grounded.models`:
``ModelClient`` is :class:`grounded.models.Model`, ``as_client`` is :func:`grounded.models.as_model`."""

from __future__ import annotations

from ..models import Model as ModelClient
from ..models import as_model as as_client

__all__ = ["ModelClient", "as_client"]
