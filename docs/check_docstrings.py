"""Docstring coverage of the public API: every public name (``docs/_ext/public_api.py``: a
module's ``__all__``, or its attributes without a leading underscore, less the names it
re-exports from the standard library) of a class or callable has a docstring that names
each of its parameters.

A parameter counts as named when the docstring writes it as a literal or emphasis
(````name````, ```name```, ``*name*``, ````name=...````) or opens a line with it, alone or in
a comma-separated list, followed by ``:`` or `` (`` (a Google-style ``Args:`` entry, a
numpydoc ``name : type`` line). ``self``, ``cls``, ``*args``/``**kwargs`` and names starting
with ``_`` are not asked for; a class's parameters are its constructor's, looked for in the
class docstring and its ``__init__``'s; an Enum's are its members, not asked for. Data
(dtypes, constants) carries no docstring of its own and is counted apart.

The gaps the API had when the check was introduced are listed in ``docstring_gaps.txt``
(``name: no docstring`` or ``name: its unnamed parameters``). The check fails on any gap not
listed there (a new public name, or a new parameter, without its documentation) and on a
listed gap that was closed (so the list only shrinks: rewrite it with ``--update``).

    python docs/check_docstrings.py            # the table; fails on a new or a closed gap
    python docs/check_docstrings.py --list     # also every gap, listed or not
    python docs/check_docstrings.py --update   # rewrite docstring_gaps.txt from the code
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))
from public_api import all_modules, kind, public_names  # noqa: E402

GAPS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "docstring_gaps.txt")
NO_DOCSTRING = "no docstring"


def read_gaps(path: str = GAPS_FILE) -> dict[str, set[str]]:
    """``{module.name: {NO_DOCSTRING} or its unnamed parameters}`` from the gaps file."""
    gaps = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    name, _, rest = line.partition(": ")
                    gaps[name] = {NO_DOCSTRING} if rest == NO_DOCSTRING else set(rest.split(", "))
    return gaps


def write_gaps(gaps: dict[str, list[str]], path: str = GAPS_FILE) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write("# Public names whose docstring is missing or leaves parameters unnamed (docs/check_docstrings.py).\n"
                "# Remove a line by documenting the name; never add one by hand.\n")
        for name, missing in gaps.items():
            f.write(f"{name}: {', '.join(missing)}\n")


def _names_parameter(doc: str, name: str) -> bool:
    n = re.escape(name)
    patterns = (rf"``\*{{0,2}}{n}(?![\w])", rf"(?<!`)`\*{{0,2}}{n}`", rf"(?<![\w*])\*{n}\*(?!\*)",
                rf"^\s*(\w+,\s*)*\*{{0,2}}{n}(,\s*\w+)*\s*(\(|:)")
    return any(re.search(p, doc, flags=re.M) for p in patterns)


def _documented_parameters(obj) -> list[str] | None:
    """The parameter names a docstring must name, or None when there is no signature to read."""
    if isinstance(obj, type) and issubclass(obj, (enum.Enum, BaseException)):
        return []
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    skipped = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [p.name for p in signature.parameters.values()
            if p.kind not in skipped and p.name not in ("self", "cls") and not p.name.startswith("_")]


def docstring_of(obj) -> str:
    """The object's own docstring (a class's with its own ``__init__``'s), '' when it has none."""
    doc = obj.__doc__ if isinstance(obj.__doc__, str) else ""
    if isinstance(obj, type) and "__init__" in vars(obj):
        init_doc = vars(obj)["__init__"].__doc__
        doc += "\n" + (init_doc or "")
    return doc.strip()


def check_module(module_name: str) -> dict:
    module = importlib.import_module(module_name)
    result = {"names": 0, "data": 0, "complete": 0, "no_docstring": [], "missing_parameters": []}
    for name in public_names(module_name):
        obj = getattr(module, name)
        result["names"] += 1
        if kind(obj) == "data":
            result["data"] += 1
            continue
        doc = docstring_of(obj)
        if not doc:
            result["no_docstring"].append(name)
            continue
        missing = [p for p in (_documented_parameters(obj) or []) if not _names_parameter(doc, p)]
        if missing:
            result["missing_parameters"].append((name, missing))
        else:
            result["complete"] += 1
    return result


def current_gaps(module_name: str, r: dict) -> dict[str, list[str]]:
    gaps = {f"{module_name}.{name}": [NO_DOCSTRING] for name in r["no_docstring"]}
    gaps.update({f"{module_name}.{name}": missing for name, missing in r["missing_parameters"]})
    return gaps


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every missing docstring and parameter")
    parser.add_argument("--update", action="store_true", help="rewrite docstring_gaps.txt from the code")
    args = parser.parse_args(argv)
    listed = read_gaps()
    found: dict[str, list[str]] = {}
    totals = {"names": 0, "data": 0, "complete": 0, "no_docstring": 0, "missing_parameters": 0}
    print(f"{'module':34} {'names':>6} {'data':>5} {'complete':>9} {'no doc':>7} {'params':>7}")
    for module_name in all_modules():
        r = check_module(module_name)
        print(f"{module_name:34} {r['names']:6} {r['data']:5} {r['complete']:9} {len(r['no_docstring']):7} "
              f"{len(r['missing_parameters']):7}")
        for key in totals:
            totals[key] += r[key] if isinstance(r[key], int) else len(r[key])
        found.update(current_gaps(module_name, r))
    print(f"{'total':34} {totals['names']:6} {totals['data']:5} {totals['complete']:9} "
          f"{totals['no_docstring']:7} {totals['missing_parameters']:7}")
    if args.update:
        write_gaps(found)
        print(f"{len(found)} names with gaps written to {GAPS_FILE}")
        return 0
    new = [(name, sorted(set(missing) - listed.get(name, set()))) for name, missing in found.items()]
    new = [(name, missing) for name, missing in new if missing]
    closed = sorted(name for name, missing in listed.items() if not missing <= set(found.get(name, ())))
    if args.list:
        for name, missing in found.items():
            print(f"    {name}: {', '.join(missing)}")
    for name, missing in new:
        print(f"new gap: {name}: {', '.join(missing)}")
    for name in closed:
        print(f"closed gap still listed in docstring_gaps.txt: {name} (run with --update)")
    print(f"{len(found)} names with gaps, {len(listed)} listed; {len(new)} new, {len(closed)} closed")
    return 1 if new or closed else 0


if __name__ == "__main__":
    sys.exit(main())
