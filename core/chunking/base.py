"""Strategy interface and registry: a new strategy is one module with one registered class."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from numbers import Integral
from typing import Any, ClassVar, TypeVar

from ..errors import ChunkingError
from ..model.elements import ParsingResult
from ..text.groups import TokenGroup
from ..text.stream import TokenStream

__all__ = ["TokenGroup", "ChunkingStrategy", "STRATEGIES", "register_strategy", "strategy_class", "load_strategies"]


class ChunkingStrategy(ABC):
    """Groups a :class:`TokenStream` into :class:`TokenGroup` s lazily (a generator).

    The full-control interface; most strategies derive from
    :class:`grounded.chunking.pieces.PieceStrategy` instead (pieces in, token ranges out).

    ``max_tokens`` (N) bounds every chunk including prepended headings; ``overlap`` (O) tokens are
    repeated between consecutive windows where the strategy supports it.
    """

    name: ClassVar[str] = ""
    #: the strategy embeds text through an ``embedder`` option (an evaluation run passes its cached one)
    uses_embedder: ClassVar[bool] = False
    #: False: the chunks partition the document, ``overlap`` must be 0
    supports_overlap: ClassVar[bool] = True

    def __init__(self, max_tokens: int = 256, overlap: int = 0) -> None:
        if not _is_int(max_tokens) or max_tokens < 1:
            raise ChunkingError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if not _is_int(overlap) or not 0 <= overlap < max_tokens:
            raise ChunkingError(f"overlap must be an int in [0, max_tokens), got {overlap!r} with max_tokens={max_tokens}")
        if overlap and not self.supports_overlap:
            raise ChunkingError(f"the {self.name} strategy partitions the document: overlap must be 0")
        self.max_tokens = int(max_tokens)
        self.overlap = int(overlap)

    @abstractmethod
    def groups(self, stream: TokenStream, root: ParsingResult) -> Iterator[TokenGroup]:
        """Yield token groups in reading order."""

    def params(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "overlap": self.overlap}


def _is_int(value: Any) -> bool:
    """An integer (numpy integers included) that is not a bool (``True`` is no token count)."""
    return isinstance(value, Integral) and not isinstance(value, bool)


STRATEGIES: dict[str, type[ChunkingStrategy]] = {}
S = TypeVar("S", bound=type[ChunkingStrategy])


def register_strategy(cls: S) -> S:
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    STRATEGIES[cls.name] = cls
    return cls


#: strategies that live above this layer or in another distribution, imported on first use: grounded's
#: model-driven strategies (:mod:`grounded.llm`) and the entry points of the group ``grounded.strategies``
#: (``name = "package.module"``: importing the module registers its class with :func:`register_strategy`).
PLUGIN_MODULES: dict[str, str] = {"llm": "grounded.llm.llm_strategy", "vision": "grounded.llm.vision_strategy"}
ENTRY_POINT_GROUP = "grounded.strategies"
_loaded = False


def load_strategies() -> dict[str, type[ChunkingStrategy]]:
    """Import every known strategy (built-ins, grounded's plugins, installed entry points) once and
    return the registry."""
    global _loaded
    if not _loaded:
        import importlib
        from importlib.metadata import entry_points

        from . import strategies  # noqa: F401  (registers the built-in strategies)

        modules = dict(PLUGIN_MODULES)
        modules.update({ep.name: ep.value.split(":")[0] for ep in entry_points(group=ENTRY_POINT_GROUP)})
        for module in modules.values():
            importlib.import_module(module)
        _loaded = True
    return STRATEGIES


def strategy_class(name: str) -> type[ChunkingStrategy]:
    registry = STRATEGIES if name in STRATEGIES else load_strategies()
    try:
        return registry[name]
    except KeyError:
        raise ChunkingError(f"unknown strategy {name!r}; choose one of: {', '.join(sorted(registry))}") from None
