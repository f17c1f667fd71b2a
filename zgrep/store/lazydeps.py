"""pymilvus imported without what it imports but zg's calls never run: pandas and requests (~0.3 s of
its ~0.8 s import: pandas serves its DataFrame inputs and type inference, requests a cloud topology
refresh), dateutil (ISO timestamp checks), importlib.metadata (for its own version, read here as
store.native reads versions) and python-dotenv, whose load_dotenv() it runs at import (a `.env` found
in the cwd, or in any folder above the install, would set variables in zg's environment: the
workspace is untrusted).

Tied to pymilvus 3.0.x (pyproject pins `>=3.0.2,<3.1`): a new release may use these modules elsewhere,
so tests/store/test_lazydeps.py drives the client against a real engine and checks none is imported."""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import threading
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from zgrep.store.native import installed_version

if TYPE_CHECKING:
    from importlib.abc import Loader

# the modules (with their submodules) stood in for while pymilvus imports
UNUSED = ("pandas", "requests", "dotenv", "dateutil", "importlib.metadata")


def _load_nothing(*args: Any, **kwargs: Any) -> bool:
    """pymilvus.settings' load_dotenv(): reads no `.env` (its settings come from the environment
    alone)."""
    return False


class _NotInstalled(Exception):
    """importlib.metadata.PackageNotFoundError as pymilvus.client catches it at import."""


def _version(package: str) -> str:
    """importlib.metadata.version() as pymilvus.client asks its own at import: read as
    store.native reads it, without importlib.metadata's imports (~120M instructions)."""
    found = installed_version(package)
    if found is None:
        raise _NotInstalled(package)
    return found


# attributes a stand-in gives as they are (not as the real module's, resolved on use)
_FIXED: dict[str, dict[str, Any]] = {
    "dotenv": {"load_dotenv": _load_nothing},
    "importlib.metadata": {"version": _version, "PackageNotFoundError": _NotInstalled},
}


class _Deferred:
    """An attribute of a stood-in module as pymilvus binds it at import: calling it runs the real
    module's attribute (importing that module then)."""

    def __init__(self, module: str, name: str) -> None:
        self._module, self._name = module, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(self._module), self._name)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<{self._module}.{self._name}, imported on first call>"


class _StandIn(types.ModuleType):
    """A module in place of a real one while pymilvus imports; afterwards (no longer in sys.modules)
    each attribute read is the real module's, imported on first use."""

    __path__: list[str] = []  # a package: its submodules are stood in for too

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if sys.modules.get(self.__name__) is self:  # still importing pymilvus
            return _FIXED.get(self.__name__, {}).get(name) or _Deferred(self.__name__, name)
        return getattr(importlib.import_module(self.__name__), name)


class _Finder:
    """Finds a stand-in for each module of UNUSED not yet imported (a meta path finder and its
    loader; not importlib.abc's classes: that module imports importlib.resources, ~10 ms)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        root = next((m for m in UNUSED if fullname == m or fullname.startswith(m + ".")), None)
        if root is None or not isinstance(sys.modules.get(root, _StandIn(root)), _StandIn):
            return None  # (a submodule of a real one, imported before, is real)
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", self), is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _StandIn(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


_IMPORTING = threading.Lock()


@contextmanager
def without_unused() -> Iterator[None]:
    """Modules of UNUSED imported inside are stand-ins, taken out of sys.modules at the end (so a later
    `import pandas` is the real one); ones imported before stay as they are."""
    finder = _Finder()
    with _IMPORTING:
        sys.meta_path.insert(0, finder)
        try:
            yield
        finally:
            sys.meta_path.remove(finder)
            for name, module in list(sys.modules.items()):
                if isinstance(module, _StandIn):
                    del sys.modules[name]
                    parent, _, child = name.rpartition(".")
                    if getattr(sys.modules.get(parent), child, None) is module:
                        delattr(sys.modules[parent], child)  # (importlib.metadata's)
