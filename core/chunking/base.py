"""Strategy interface and registry: a new strategy is one module with one registered class."""

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
    "TokenGroup", "ChunkingStrategy", "STRATEGIES", "REGISTRY", "register_strategy", "strategy_class", "load_strategies",
    "strategy_names", "Option",
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


def _is_int(value: Any) -> bool:
    """An integer (numpy integers included) that is not a bool (``True`` is no token count)."""
    return isinstance(value, Integral) and not isinstance(value, bool)


STRATEGIES: dict[str, type[ChunkingStrategy]] = {}
S = TypeVar("S", bound=type[ChunkingStrategy])

#: strategies that live above this layer, imported on first use: grounded's model-driven strategies
#: (:mod:`grounded.llm`; importing the module registers its class with :func:`register_strategy`).
#: Another distribution registers the entry point group ``grounded.strategies``
#: (``name = "package.module"`` or ``name = "package.module:Class"``).
PLUGIN_MODULES: dict[str, str] = {"llm": "grounded.llm.llm_strategy", "vision": "grounded.llm.vision_strategy"}
ENTRY_POINT_GROUP = "grounded.strategies"


def _import_builtins() -> None:
    from . import strategies  # noqa: F401  (registers the built-in strategies)


#: the strategy registry (:class:`~grounded.runtime.registry.Registry`, the parsers' shape)
REGISTRY: Registry[type[ChunkingStrategy]] = Registry(
    "strategy", ChunkingStrategy, ENTRY_POINT_GROUP, classes=STRATEGIES, lazy=PLUGIN_MODULES, builtins=_import_builtins,
)


def register_strategy(cls: S) -> S:
    REGISTRY.register(cls.name, cls)
    return cls


def load_strategies() -> dict[str, type[ChunkingStrategy]]:
    """Import every known strategy (built-ins, grounded's plugins, installed entry points) and
    return the registry."""
    return REGISTRY.load_all()


def strategy_names() -> list[str]:
    """Every known strategy name (built-in, grounded's plugins, entry points), without importing plugins."""
    return REGISTRY.names()


def strategy_class(name: str) -> type[ChunkingStrategy]:
    """The class of strategy ``name``; :class:`~grounded.errors.UnknownNameError` (a
    :class:`~grounded.errors.ChunkingError`) listing the known names otherwise."""
    return REGISTRY.get(name)
