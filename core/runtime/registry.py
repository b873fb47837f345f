"""One registry shape for parsers and chunking strategies: names -> classes, loaded on first use.

A :class:`Registry` knows three kinds of entries:

* classes registered in this process (``register``; the built-in strategies' decorator);
* lazy targets, imported when their name is first asked for: ``"package.module:Class"`` (the class is
  registered under the name) or ``"package.module"`` (importing the module registers its classes,
  as grounded's model-driven strategies do);
* the entry points of the registry's group (``grounded.parsers``, ``grounded.strategies``) of every
  installed distribution, with the same two value forms. A third-party parser or strategy declared so
  is usable by name everywhere: ``--parser``/``--strategy`` of every command, ``grounded ingest`` and
  its worker processes (they look the name up the same way), the adapters.

An unknown name is one :class:`~grounded.errors.UnknownNameError` listing every known name; a
class registered under a name another class holds (a built-in's, not yet imported, included) is one
:class:`~grounded.errors.NameTakenError` -- never a silent replacement.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from ..errors import ConfigError, NameTakenError, UnknownNameError

__all__ = ["Registry"]

C = TypeVar("C", bound=type)


class Registry(Generic[C]):
    """Names of one ``kind`` ("parser", "strategy") -> classes derived from ``base``.

    ``classes``: the dict that holds the registered classes (shared with a module-level name such
    as ``STRATEGIES``); ``lazy``: name -> import target; ``group``: the entry-point group;
    ``builtins``: a callable importing the built-in classes (run once before the first lookup
    that misses)."""

    def __init__(
        self, kind: str, base: type, group: str, *, classes: dict[str, C] | None = None,
        lazy: dict[str, str] | None = None, builtins: Callable[[], object] | None = None,
    ) -> None:
        self.kind = kind
        self.base = base
        self.group = group
        self.classes: dict[str, C] = {} if classes is None else classes
        self.lazy: dict[str, str] = {} if lazy is None else lazy
        self._builtins = builtins
        self._builtins_loaded = builtins is None

    def register(self, name: str, cls: C) -> C:
        """Register ``cls`` under ``name``; :class:`~grounded.errors.NameTakenError` when another
        class holds the name (registered, or the lazy target of a built-in). The same class again
        (a module imported twice) is fine."""
        if not name:
            raise ValueError(f"{cls.__name__} has no name")
        given = f"{cls.__module__}.{cls.__qualname__}"
        taken = self.classes.get(name)
        target = self.lazy.get(name)
        if taken is None and target is not None and target.replace(":", ".") not in (given, cls.__module__):
            raise NameTakenError(self.kind, name, target.replace(":", "."), given)
        if taken is not None and taken is not cls and f"{taken.__module__}.{taken.__qualname__}" != given:
            raise NameTakenError(self.kind, name, f"{taken.__module__}.{taken.__qualname__}", given)
        self.classes[name] = cls
        return cls

    def _load_builtins(self) -> None:
        if not self._builtins_loaded:
            self._builtins_loaded = True
            assert self._builtins is not None
            self._builtins()

    def entry_points(self) -> dict[str, str]:
        """name -> target of the installed entry points of :attr:`group` (read each call: a
        distribution installed meanwhile is seen)."""
        return {ep.name: ep.value for ep in entry_points(group=self.group)}

    def names(self) -> list[str]:
        """Every known name (registered, lazy, entry points), sorted; imports nothing but the built-ins."""
        self._load_builtins()
        return sorted({*self.classes, *self.lazy, *self.entry_points()})

    def check(self, name: str) -> str:
        """``name`` when it is known (without importing it), else :class:`UnknownNameError`."""
        if name in self.classes or name in self.lazy:
            return name
        if name not in self.names():
            raise UnknownNameError(self.kind, name, self.names())
        return name

    def get(self, name: str) -> C:
        """The class of ``name``, importing its module on first use."""
        if name in self.classes:
            return self.classes[name]
        self._load_builtins()
        if name not in self.classes:
            target = self.lazy.get(name) or self.entry_points().get(name)
            if target is None:
                raise UnknownNameError(self.kind, name, self.names())
            self._import(name, target)
        return self.classes[name]

    def load_all(self) -> dict[str, C]:
        """Import every known entry and return the registered classes."""
        self._load_builtins()
        for name, target in {**self.entry_points(), **self.lazy}.items():
            if name not in self.classes:
                self._import(name, target)
        return self.classes

    def _import(self, name: str, target: str) -> None:
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name.strip())
        if attr:
            obj: object = module
            for part in attr.strip().split("."):
                obj = getattr(obj, part)
            if not (isinstance(obj, type) and issubclass(obj, self.base)):
                raise ConfigError(f"{self.kind} {name!r} ({target}) is not a {self.base.__name__} subclass")
            self.classes[name] = obj  # type: ignore[assignment]
        if name not in self.classes:
            raise ConfigError(f"{self.kind} {name!r}: importing {module_name} registered no class of that name")
