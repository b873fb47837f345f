"""Built-in strategies (thesis §3.4.1-3.4.4, seed 003); importing this package registers them. The
model-driven ``llm`` and ``vision`` strategies live in :mod:`grounded.llm` and are loaded on first use
(:func:`grounded.chunking.base.load_strategies`)."""

from . import cluster, fixed, hierarchical, kamradt, kamradt_original, recursive, semantic  # noqa: F401
