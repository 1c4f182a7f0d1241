"""One registry implementation for everything mpibench looks up by name from configuration:
launchers, scheduler backends and MPI stack kinds.

A backend is a class in its own module that registers itself with a decorator; the package's
modules are imported the first time a name is looked up, so adding a backend is one new file
and no edits elsewhere.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from mpibench.errors import UsageError

T = TypeVar("T", bound=type)


class Registry(Generic[T]):
    """Classes by name. `what` names the thing in error messages ("launcher"); `package` is
    the dotted package whose modules hold the backends."""

    def __init__(self, what: str, package: str):
        self.what = what
        self.package = package
        self._classes: dict[str, T] = {}
        self._loaded = False

    def register(self, name: str) -> Callable[[T], T]:
        def deco(cls: T) -> T:
            cls.name = name
            self._classes[name] = cls
            return cls

        return deco

    def load_all(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        pkg = importlib.import_module(self.package)
        for info in pkgutil.iter_modules(pkg.__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{self.package}.{info.name}")

    def get(self, name: str) -> T:
        if name not in self._classes:
            self.load_all()
        try:
            return self._classes[name]
        except KeyError:
            raise UsageError(f"unknown {self.what} {name!r}; expected one of: "
                             f"{', '.join(self.names())}") from None

    def __contains__(self, name: object) -> bool:
        self.load_all()
        return name in self._classes

    def names(self) -> list[str]:
        self.load_all()
        return sorted(self._classes)

    def classes(self) -> Iterator[T]:
        self.load_all()
        return iter(list(self._classes.values()))
