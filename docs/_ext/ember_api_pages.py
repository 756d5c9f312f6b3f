"""Sphinx extension: writes one API reference page per public module (``docs/api/<module>.rst``)
before the build reads its sources.

Each page holds the module's docstring, a summary table of its public names and, for every
name, autodoc's entry: signature and docstring (classes with their documented members).
Names a module re-exports from the standard library are listed in one line that links
Python's documentation of that module.
The module list and the public names come from ``public_api``, which the docstring checker
reads too, so the pages and the check cover the same names.
"""

from __future__ import annotations

import importlib
import os

from public_api import PUBLIC_MODULES, REEXPORTS, all_modules, kind, public_names, reexported_names

DIRECTIVES = {"class": "autoclass", "function": "autofunction"}

# "module.Name" -> "home.Name" for each class a page documents with :no-index: (set when the
# pages are written), so that a reference to it through that module finds its home page
ALIASES: dict[str, str] = {}


def class_homes() -> dict[int, str]:
    """For each public class, the one page that indexes it (the others document it with
    ``:no-index:``, as Sphinx indexes a class under its defining module's name too, and two
    pages indexing one class is a duplicate). The home is the exporting module whose name is
    the longest prefix of the class's ``__module__``; failing that, the first listed."""
    exporters: dict[int, list[tuple[str, type]]] = {}
    for module_name in all_modules():
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            obj = getattr(module, name)
            if kind(obj) == "class":
                exporters.setdefault(id(obj), []).append((module_name, obj))
    homes = {}
    for key, pages in exporters.items():
        defined_in = getattr(pages[0][1], "__module__", "") or ""
        prefixes = [m for m, _ in pages if defined_in == m or defined_in.startswith(m + ".")]
        homes[key] = max(prefixes, key=len) if prefixes else pages[0][0]
    return homes


def module_page(module_name: str, homes: dict[int, str]) -> str:
    module = importlib.import_module(module_name)
    names = public_names(module_name)
    lines = [module_name, "=" * len(module_name), "", f".. automodule:: {module_name}", "   :no-members:", "",
             f".. currentmodule:: {module_name}", ""]
    reexported = reexported_names(module_name)
    if reexported:
        lines += [f"Its other public names are the standard library's, documented in Python's "
                  f":mod:`{REEXPORTS[module_name]}`: " + ", ".join(f"``{n}``" for n in reexported) + ".", ""]
    # data is left out of the table: autosummary would summarise the value's type (dict, int)
    summarised = [n for n in names if kind(getattr(module, n)) != "data"]
    if summarised:
        lines += [".. autosummary::", "   :nosignatures:", ""] + [f"   {n}" for n in summarised] + [""]
    for name in names:
        what = kind(getattr(module, name))
        if what == "data":
            # a plain entry: autodoc would show the docstring of the value's type (dict's, int's)
            lines += [f".. py:data:: {name}", ""]
            continue
        lines.append(f".. {DIRECTIVES[what]}:: {name}")
        if what == "class":
            lines.append("   :members:")
            if homes.get(id(getattr(module, name)), module_name) != module_name:
                lines.append("   :no-index:")
        lines.append("")
    return "\n".join(lines)


def index_page() -> str:
    lines = ["API reference", "=============", "",
             "One page per public module of each package; each lists every public name (the module's",
             "``__all__``, or its attributes without a leading underscore) with its signature and docstring.", ""]
    for package, modules in PUBLIC_MODULES.items():
        lines += [package, "-" * len(package), "", ".. toctree::", "   :maxdepth: 1", ""]
        lines += [f"   {m}" for m in modules] + [""]
    return "\n".join(lines)


def _write_if_changed(path: str, text: str) -> None:
    # an unchanged page keeps its mtime, so an incremental build does not reread it
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def aliases(homes: dict[int, str]) -> dict[str, str]:
    """``{module.Name: home.Name}`` for every class exported by a module that is not its home."""
    found = {}
    for module_name in all_modules():
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            home = homes.get(id(getattr(module, name)), module_name)
            if home != module_name:
                found[f"{module_name}.{name}"] = f"{home}.{name}"
    return found


def write_pages(app) -> None:
    out = os.path.join(app.srcdir, "api")
    os.makedirs(out, exist_ok=True)
    _write_if_changed(os.path.join(out, "index.rst"), index_page())
    homes = class_homes()
    ALIASES.clear()
    ALIASES.update(aliases(homes))
    for modules in PUBLIC_MODULES.values():
        for module_name in modules:
            _write_if_changed(os.path.join(out, f"{module_name}.rst"), module_page(module_name, homes))


def drop_inherited_class_docstring(app, what, name, obj, options, lines) -> None:
    # an Enum (or any class) without a docstring of its own would show its base's
    if what == "class" and isinstance(obj, type) and not vars(obj).get("__doc__"):
        lines[:] = []


def resolve_alias(app, env, node, contnode):
    """Resolve a Python reference that names a class through a module other than its home
    (``ember.no_grad``, or ``Server`` written in a docstring shown on ``ember_serve``'s page) to
    the home page's entry; None leaves the reference to the other resolvers."""
    if node.get("refdomain") != "py":
        return None
    target, module = node["reftarget"], node.get("py:module")
    home = ALIASES.get(f"{module}.{target}") if module else None
    home = home or ALIASES.get(target)
    if home is None:
        return None
    return env.get_domain("py").resolve_xref(env, node["refdoc"], app.builder, node["reftype"], home, node, contnode)


def setup(app):
    app.connect("builder-inited", write_pages)
    app.connect("missing-reference", resolve_alias)
    app.connect("autodoc-process-docstring", drop_inherited_class_docstring)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
