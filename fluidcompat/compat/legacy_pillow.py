"""The Pillow names of fluid's time that Pillow 10 removed, for the scripts ``fluidcompat run`` runs.

fluid-era readers and image scripts resize with ``Image.ANTIALIAS``, ``Image.LINEAR`` or
``Image.CUBIC``; Pillow 9.1 moved the filters and the other constants of ``PIL.Image`` into enums
(``Image.Resampling``, ``Image.Transpose``, ...) and Pillow 10 removed those three names (an
AttributeError). ``restore()`` puts back those that are missing, as the enum members they name now
(``ANTIALIAS`` is ``LANCZOS``, ``LINEAR`` is ``BILINEAR``, ``CUBIC`` is ``BICUBIC``), and the
module-level constants of the enums should a later Pillow drop them too.

PIL is not imported for it: ``restore()`` adds a finder to ``sys.meta_path`` that patches
``PIL.Image`` once the script imports it (or at once, if it is imported already).
"""

from __future__ import annotations

import importlib.abc
import sys

_MODULE = "PIL.Image"

# removed names -> the enum member they were the same value as
_ALIASES = {
    "ANTIALIAS": ("Resampling", "LANCZOS"),
    "LINEAR": ("Resampling", "BILINEAR"),
    "CUBIC": ("Resampling", "BICUBIC"),
}
# the enums whose members PIL.Image also has as module constants (Image.NEAREST, Image.FLIP_LEFT_RIGHT, ...)
_ENUMS = ("Resampling", "Transpose", "Transform", "Dither", "Palette", "Quantize")


def patch(image) -> list:
    """Put the missing names back into the module ``PIL.Image``; returns those it added."""
    added = []
    for enum_name in _ENUMS:
        enum = getattr(image, enum_name, None)
        if enum is None:
            continue
        for member in enum:
            if member.name not in image.__dict__:
                setattr(image, member.name, member)
                added.append(member.name)
    for name, (enum_name, member) in _ALIASES.items():
        enum = getattr(image, enum_name, None)
        if name not in image.__dict__ and enum is not None and hasattr(enum, member):
            setattr(image, name, getattr(enum, member))
            added.append(name)
    return added


class _PatchingLoader:
    """The loader PIL.Image was found with, patching the module after running it."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        module.__loader__ = module.__spec__.loader = self._loader  # the module as PIL left it
        patch(module)


class _PillowFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != _MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


_finder = _PillowFinder()


def restore() -> list:
    """Patch ``PIL.Image`` when the script imports it (at once if it is imported: returns the names
    added then)."""
    image = sys.modules.get(_MODULE)
    if image is not None:
        return patch(image)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    return []
