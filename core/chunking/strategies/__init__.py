"""Built-in strategies (thesis §3.4.1-3.4.4, seed 003), one module each. The registry imports each
on first use by its name in :data:`grounded.chunking.base.BUILTIN_STRATEGIES`; the model-driven
``llm`` and ``vision`` strategies live in :mod:`grounded.llm`."""
