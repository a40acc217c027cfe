"""Pass plugins: a researcher's own `ModulePass` joins nnx pipelines by name.

Two ways in:

* a Python file, `nnx-opt --load-pass-plugin my_passes.py` (also nnx-compile, and
  `nnx.api.load_pass_plugin`): the file is imported and every `ModulePass` subclass
  it *defines* (not one it imports) is registered under its `name` class attribute;
* the entry-point group `nnx.passes` of an installed distribution, read the first
  time the pass registry is used. Each entry point names a `ModulePass` subclass
  (`my-pass = my_pkg.passes:MyPass`) or a module whose own subclasses are all taken
  (`my_pkg = my_pkg.passes`):

      [project.entry-points."nnx.passes"]
      my-pass = "my_pkg.passes:MyPass"

Options are the pass's dataclass fields, as for built-in passes
(`my-pass{threshold=0.5}`). A pass name that clashes with a built-in pass or with
another plugin's, a class without `name`, a file that does not exist or does not
import, or a file that defines no pass is a `PluginError`: one line, exit 1.

`all_passes()` is the registry every pipeline resolves names in (nnx/pipeline.py).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from types import ModuleType

from xdsl.passes import ModulePass

from nnx.ir_io import UserError

ENTRY_POINT_GROUP = "nnx.passes"

PassFactory = Callable[[], type[ModulePass]]

_plugin_passes: dict[str, PassFactory] = {}
"""Pass name -> factory of every pass a plugin registered."""
_plugin_origin: dict[str, str] = {}
"""Pass name -> where it came from (file or entry point), for clash messages."""
_loaded_files: dict[str, list[str]] = {}
"""Absolute path of a loaded plugin file -> the pass names it registered."""
_entry_points_loaded = False


class PluginError(UserError):
    """A pass plugin that cannot be used; the message is one line."""


def builtin_passes() -> dict[str, PassFactory]:
    """The passes that ship with nnx (passes/registry.py)."""
    from nnx.passes.registry import ALL_PASSES

    return ALL_PASSES


def all_passes() -> dict[str, PassFactory]:
    """Every pass a pipeline may name: built-in ones, then plugins (entry points of
    the group `nnx.passes` are loaded on the first call)."""
    load_entry_points()
    return {**builtin_passes(), **_plugin_passes}


def defined_passes(module: ModuleType) -> list[type[ModulePass]]:
    """The concrete `ModulePass` subclasses defined in `module` (not imported)."""
    found = []
    for obj in vars(module).values():
        if (
            isinstance(obj, type)
            and issubclass(obj, ModulePass)
            and obj.__module__ == module.__name__
            and not inspect.isabstract(obj)
        ):
            found.append(obj)
    return found


def _where(source: str) -> str:
    """Message prefix for a plugin source: `FILE: error:` for a file (a location, as
    `FILE:LINE:COL: error:`), the entry point's description otherwise (the tool then
    prefixes `TOOL: error:`)."""
    return source if source.startswith("entry point") else f"{source}: error"


def register_pass(cls: type[ModulePass], source: str) -> str:
    """Register one plugin pass class under its `name`; returns the name. `source`
    is the plugin file or the entry point, for messages."""
    origin = _where(source)
    name = cls.__dict__.get("name") or getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise PluginError(
            f"{origin}: pass class '{cls.__name__}' has no `name` class attribute "
            "(the name pipelines call it by, e.g. name = \"my-pass\")"
        )
    if name in builtin_passes():
        raise PluginError(
            f"{origin}: pass '{name}' (class {cls.__name__}) clashes with the built-in "
            "pass of that name; rename it"
        )
    if name in _plugin_passes and _plugin_passes[name]() is not cls:
        raise PluginError(
            f"{origin}: pass '{name}' (class {cls.__name__}) clashes with the pass of "
            f"that name from {_plugin_origin[name]}"
        )
    _plugin_passes[name] = lambda: cls
    _plugin_origin[name] = source
    return name


def _register_all(classes: Iterable[type[ModulePass]], source: str) -> list[str]:
    origin = _where(source)
    classes = list(classes)
    if not classes:
        raise PluginError(f"{origin}: defines no ModulePass subclass")
    names = []
    for cls in classes:  # check every class before registering any
        n = cls.__dict__.get("name") or getattr(cls, "name", None)
        if not isinstance(n, str) or not n or n in builtin_passes():
            register_pass(cls, source)  # raises the precise error
        names.append(n)
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise PluginError(f"{origin}: two pass classes are named '{sorted(dup)[0]}'")
    return [register_pass(cls, source) for cls in classes]


def load_pass_plugin(path: str) -> list[str]:
    """Import the plugin file `path` and register its passes; returns their names.

    Loading the same file again is a no-op."""
    full = os.path.abspath(path)
    if full in _loaded_files:
        return list(_loaded_files[full])
    if not os.path.isfile(full):
        what = "is not a file" if os.path.exists(full) else "no such file"
        raise PluginError(f"{path}: error: cannot load pass plugin: {what}")
    digest = hashlib.sha1(full.encode()).hexdigest()[:10]
    stem = "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(full))[0])
    mod_name = f"nnx_pass_plugin_{stem}_{digest}"
    spec = importlib.util.spec_from_file_location(mod_name, full)
    if spec is None or spec.loader is None:
        raise PluginError(f"{path}: error: cannot load pass plugin: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # dataclasses look their module up while building
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001 - the user's code: any failure is theirs
        del sys.modules[mod_name]
        if isinstance(e, KeyboardInterrupt):
            raise
        raise PluginError(f"{path}: error: cannot load pass plugin: {_describe(e, full)}") from None
    names = _register_all(defined_passes(module), path)
    _loaded_files[full] = names
    return names


def _describe(e: BaseException, full: str) -> str:
    """`SyntaxError: invalid syntax (line 3)`: the exception and the plugin line."""
    line = None
    if isinstance(e, SyntaxError) and e.filename == full:
        line = e.lineno
    else:
        tb = e.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == full:
                line = tb.tb_lineno
            tb = tb.tb_next
    msg = (str(e).strip().splitlines() or [""])[0]
    if isinstance(e, SyntaxError):
        msg = e.msg
    where = f" (line {line})" if line is not None else ""
    return f"{type(e).__name__}: {msg}{where}" if msg else f"{type(e).__name__}{where}"


def load_entry_points() -> None:
    """Register the passes of the entry-point group `nnx.passes` (once)."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        source = f"entry point '{ep.name} = {ep.value}' of group {ENTRY_POINT_GROUP}"
        try:
            obj = ep.load()
        except Exception as e:  # noqa: BLE001 - the plugin's code
            _entry_points_loaded = False
            msg = (str(e).strip().splitlines() or [""])[0]
            raise PluginError(f"{source}: cannot load: {type(e).__name__}: {msg}") from None
        try:
            if isinstance(obj, type) and issubclass(obj, ModulePass):
                register_pass(obj, source)
            elif isinstance(obj, ModuleType):
                _register_all(defined_passes(obj), source)
            else:
                raise PluginError(f"{source}: names neither a ModulePass subclass nor a module")
        except PluginError:
            _entry_points_loaded = False
            raise
