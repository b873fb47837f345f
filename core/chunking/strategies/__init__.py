"""Built-in strategies (thesis §3.4.1-3.4.4); importing this package registers them."""

from . import cluster, fixed, hierarchical, kamradt, llm, recursive, semantic, vision  # noqa: F401
