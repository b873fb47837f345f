"""Import LanceDB for local queries without the parts a local query never runs (issue 32 item 4).

``import lancedb`` takes about 1.7 s of CPU, most of it in two things a query on a local folder
never uses: the generated REST client of LanceDB's remote namespaces
(``lance_namespace_urllib3_client``, ~150 modules of pydantic models and API classes) and pandas
(imported by ``pyarrow.dataset`` when it is installed).

* The REST client's package bodies (``lance_namespace_urllib3_client`` and its ``api`` package) are
  made lazy: the package exists, its submodules import as usual, and the first attribute asked of
  the package itself runs its real body. Nothing changes for a program that uses the client.
* pandas is kept out only when the caller asks (:func:`import_lancedb` ``without_pandas=True``, what
  the ``grounded search`` command does: its process never converts to pandas), only while LanceDB
  is imported, and only when pandas is not loaded already. PyArrow then records "no pandas" for
  that process (``Table.to_pandas`` would fail in it).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

__all__ = ["import_lancedb", "LAZY_PACKAGES"]

#: packages whose own body runs at the first attribute asked of them (their submodules import as usual)
LAZY_PACKAGES = frozenset({"lance_namespace_urllib3_client", "lance_namespace_urllib3_client.api"})
_LOCK = threading.Lock()


class _LazyBody(importlib.abc.Loader):
    def __init__(self, real: Any) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.real.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        real = self.real

        def __getattr__(name: str) -> Any:  # noqa: N807  (a module's __getattr__)
            if name.startswith("__"):
                raise AttributeError(name)
            module.__dict__.pop("__getattr__", None)
            real.exec_module(module)
            return getattr(module, name)

        module.__getattr__ = __getattr__  # type: ignore[method-assign]


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, without_pandas: bool) -> None:
        self.without_pandas = without_pandas

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> Any:
        if self.without_pandas and (name == "pandas" or name.startswith("pandas.")):
            raise ModuleNotFoundError("pandas is not imported by `grounded search`", name=name)
        if name not in LAZY_PACKAGES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _LazyBody(spec.loader)
        return spec


def import_lancedb(*, without_pandas: bool = False) -> ModuleType:
    """``lancedb``, imported with the REST client lazy (and pandas kept out when ``without_pandas``
    and pandas is not loaded yet); raises ImportError like ``import lancedb``."""
    loaded = sys.modules.get("lancedb")
    if loaded is not None:
        return loaded
    with _LOCK:
        finder = _Finder(without_pandas and "pandas" not in sys.modules)
        sys.meta_path.insert(0, finder)
        try:
            import lancedb
        finally:
            sys.meta_path.remove(finder)
    return lancedb
