"""Optional dependencies: one way to check for them and to name the ``pip install`` that adds them.

Modules of ``grounded`` never import an optional package at module level; they call
:func:`require` where the dependency is first needed (usually a backend's constructor) and import
it lazily afterwards. Importing any ``grounded`` module therefore never fails for a missing extra.
"""

from __future__ import annotations

import importlib.util

from ..errors import BackendUnavailableError

__all__ = ["available", "require"]


def available(module: str) -> bool:
    """Whether ``module`` (dotted name) can be imported, found without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package raises instead of returning None
        return False


def require(module: str, *, extra: str, what: str | None = None, package: str | None = None) -> None:
    """Raise :class:`~grounded.errors.BackendUnavailableError` (an ImportError) unless ``module``
    can be imported; the message names ``what`` needs it and ``pip install 'grounded[extra]'``
    (plus ``pip install package`` when the extra is not the only way to get it)."""
    if not available(module):
        raise BackendUnavailableError(what or module, extra, package)
