"""Strategy interface and registry: a new strategy is one module with one class, named in the
registry's table.

The registry (:data:`REGISTRY`, the parsers' shape: :mod:`grounded.runtime.registry`) knows the
built-in strategies by :data:`BUILTIN_STRATEGIES` (imported on first use), the classes registered in
this process (:func:`register_strategy`) and the entry points of the group ``grounded.strategies``
of installed distributions (``name = "package.module:Class"`` or ``name = "package.module"``, a
module that registers its class). A name belongs to one class: registering another class under a
taken name raises :class:`~grounded.errors.NameTakenError`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from numbers import Integral
from typing import Any, ClassVar, TypeVar

from ..errors import ChunkingError
from ..model.elements import ParsingResult
from ..model.options import Option, check_options
from ..runtime.registry import Registry
from ..text.groups import TokenGroup
from ..text.stream import TokenStream

__all__ = [
    "TokenGroup", "ChunkingStrategy", "STRATEGIES", "BUILTIN_STRATEGIES", "REGISTRY", "register_strategy",
    "strategy_class", "load_strategies", "strategy_names", "is_int", "Option",
]


class ChunkingStrategy(ABC):
    """Groups a :class:`TokenStream` into :class:`TokenGroup` s lazily (a generator).

    The full-control interface; most strategies derive from
    :class:`grounded.chunking.pieces.PieceStrategy` instead (pieces in, token ranges out).

    ``max_tokens`` (N) bounds every chunk including prepended headings; ``overlap`` (O) tokens are
    repeated between consecutive windows where the strategy supports it.
    """

    name: ClassVar[str] = ""
    #: the options the constructor takes besides ``max_tokens`` and ``overlap``, declared once
    #: (:class:`~grounded.model.options.Option`): checked by :meth:`check_options`, offered on the
    #: command line and by the adapters. ``None``: not declared (a third-party strategy written before
    #: declarations): its keywords go to the constructor unchecked and the command line offers none.
    options: ClassVar[tuple[Option, ...] | None] = None
    #: capability: the strategy is driven by a language or vision model, given as its ``llm`` option
    #: (with ``model``/``generation``; the command line builds them from ``--llm``/``--llm-model``)
    needs_model: ClassVar[bool] = False
    #: capability: the strategy embeds text through an ``embedder`` option (an evaluation run passes its cached one)
    uses_embedder: ClassVar[bool] = False
    #: capability: consecutive chunks may share ``overlap`` tokens; False: the chunks partition the
    #: document and ``overlap`` must be 0
    supports_overlap: ClassVar[bool] = True

    def __init__(self, max_tokens: int = 256, overlap: int = 0) -> None:
        if not is_int(max_tokens) or max_tokens < 1:
            raise ChunkingError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if not is_int(overlap) or not 0 <= overlap < max_tokens:
            raise ChunkingError(f"overlap must be an int in [0, max_tokens), got {overlap!r} with max_tokens={max_tokens}")
        if overlap and not self.supports_overlap:
            raise ChunkingError(f"the {self.name} strategy partitions the document: overlap must be 0")
        self.max_tokens = int(max_tokens)
        self.overlap = int(overlap)

    @abstractmethod
    def groups(self, stream: TokenStream, root: ParsingResult) -> Iterator[TokenGroup]:
        """Yield token groups in reading order."""

    def params(self) -> dict[str, Any]:
        """What decides the token ranges besides the document, as JSON data: ``max_tokens``,
        ``overlap``, then the resolved value of each declared option that is
        :attr:`~grounded.model.options.Option.in_params`, in declaration order, read from the
        attribute of the option's name (a tuple written as a list). They enter every chunk's
        metadata and the chunker fingerprint (so every chunk id). A strategy adds what no option
        holds (a model's identity) by overriding this and extending ``super().params()``."""
        params: dict[str, Any] = {"max_tokens": self.max_tokens, "overlap": self.overlap}
        for option in self.options or ():
            if not option.in_params:
                continue
            try:
                value = getattr(self, option.name)
            except AttributeError:
                raise ChunkingError(f"strategy {self.name!r} declares the option {option.name!r} but keeps no "
                                    f"attribute {option.name!r}: set it in __init__ or override params()") from None
            params[option.name] = list(value) if isinstance(value, tuple) else value
        return params

    @classmethod
    def partitions(cls) -> bool:
        """Capability: the chunks tile the document without overlap."""
        return not cls.supports_overlap

    @classmethod
    def capabilities(cls) -> dict[str, bool]:
        """The declared capabilities: needs a model, needs an embedder, takes overlap, partitions."""
        return {"needs_model": cls.needs_model, "uses_embedder": cls.uses_embedder,
                "supports_overlap": cls.supports_overlap, "partitions": cls.partitions()}

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` checked against :attr:`options` (:class:`~grounded.errors.OptionError` naming
        the strategy and the option); unchanged when the class declares none."""
        if cls.options is None:
            return dict(options)
        return check_options(cls.options, options, f"strategy {cls.name!r}", fixed=("max_tokens", "overlap"))


def is_int(value: Any) -> bool:
    """An integer (numpy integers included) that is not a bool (``True`` is no token count)."""
    return isinstance(value, Integral) and not isinstance(value, bool)


STRATEGIES: dict[str, type[ChunkingStrategy]] = {}
S = TypeVar("S", bound=type[ChunkingStrategy])

#: registry name -> "module:Class" of grounded's strategies, imported when first asked for. The
#: model-driven ``llm`` and ``vision`` live in :mod:`grounded.llm`, a higher layer (nothing here
#: imports them: the registry does, by name).
BUILTIN_STRATEGIES: dict[str, str] = {
    "fixed": "grounded.chunking.strategies.fixed:FixedSizeStrategy",
    "recursive": "grounded.chunking.strategies.recursive:RecursiveStrategy",
    "hierarchical": "grounded.chunking.strategies.hierarchical:HierarchicalStrategy",
    "semantic": "grounded.chunking.strategies.semantic:SemanticStrategy",
    "cluster": "grounded.chunking.strategies.cluster:ClusterStrategy",
    "kamradt_mod": "grounded.chunking.strategies.kamradt:KamradtModifiedStrategy",
    "kamradt": "grounded.chunking.strategies.kamradt_original:KamradtStrategy",
    "llm": "grounded.llm.llm_strategy:LLMStrategy",
    "vision": "grounded.llm.vision_strategy:VisionStrategy",
}
ENTRY_POINT_GROUP = "grounded.strategies"


#: the strategy registry (:class:`~grounded.runtime.registry.Registry`, the parsers' shape)
REGISTRY: Registry[type[ChunkingStrategy]] = Registry("strategy", ChunkingStrategy, ENTRY_POINT_GROUP,
                                                     classes=STRATEGIES, lazy=BUILTIN_STRATEGIES)


def register_strategy(cls: S) -> S:
    """Register ``cls`` under its ``name`` in this process (a class decorator, for a strategy of
    another distribution or a script; grounded's own are in :data:`BUILTIN_STRATEGIES`)."""
    REGISTRY.register(cls.name, cls)
    return cls


def load_strategies() -> dict[str, type[ChunkingStrategy]]:
    """Import every known strategy (built-ins, installed entry points) and return the registry."""
    return REGISTRY.load_all()


def strategy_names() -> list[str]:
    """Every known strategy name (built-in, registered, entry points), importing none."""
    return REGISTRY.names()


def strategy_class(name: str) -> type[ChunkingStrategy]:
    """The class of strategy ``name``; :class:`~grounded.errors.UnknownNameError` (a
    :class:`~grounded.errors.ChunkingError`) listing the known names otherwise."""
    return REGISTRY.get(name)
