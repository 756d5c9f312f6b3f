"""ember.version: the versions a program may ask for, as torch.version holds them.

``__version__`` is the torch API level ember implements with ember's own version as the
PEP 440 local label (``2.13.0+ember.0.1.0``), so that version gates written for torch
(``torch.__version__ >= "2.0"``) take their modern path; the ember-core distribution's
version (``EMBER_VERSION``) is ember's own.
"""

from __future__ import annotations

import re

__all__ = ["TorchVersion", "__version__", "cuda", "debug", "git_version", "hip", "xpu", "EMBER_VERSION",
           "TORCH_API_VERSION"]

EMBER_VERSION = "0.1.0"
TORCH_API_VERSION = "2.13.0"

_PEP440 = re.compile(
    r"^\s*v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|alpha|b|beta|rc|c|pre|preview)[-_.]?(?P<pre_n>\d*))?"
    r"(?:[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d*))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$", re.IGNORECASE)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_INF = float("inf")


def _key(text: str) -> tuple:
    """PEP 440's ordering of ``text`` (the forms version gates use: release, pre, post, dev, local)."""
    m = _PEP440.match(text)
    if m is None:
        raise ValueError(f"Invalid version: {text!r}")
    release = tuple(int(p) for p in m["release"].split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    if m["pre_l"]:
        pre = (_PRE[m["pre_l"].lower()], int(m["pre_n"] or 0))
    else:  # a dev release of a final version sorts before its pre-releases
        pre = (-_INF, 0) if m["dev"] is not None and m["post"] is None else (_INF, 0)
    post = -_INF if m["post"] is None else int(m["post"] or 0)
    dev = _INF if m["dev"] is None else int(m["dev"] or 0)
    local = () if m["local"] is None else tuple(
        (int(p), "") if p.isdigit() else (-_INF, p.lower()) for p in re.split(r"[-_.]", m["local"]))
    return release, pre, post, dev, (m["local"] is not None, local)


class TorchVersion(str):
    """A version string that compares as a version (torch.torch_version.TorchVersion):
    against strings, tuples of ints (``>= (2, 1)``) and ``packaging`` Version objects.
    A string that is no version compares as a plain string, as torch's does. ``!=`` is the
    negation of ``==`` (torch's falls back to string inequality, so there "2.13" == "2.13.0"
    and "2.13" != "2.13.0" are both true)."""

    def _other(self, other):
        if isinstance(other, tuple):
            return ".".join(str(p) for p in other)
        if isinstance(other, str) or type(other).__name__ == "Version":
            return str(other)
        raise TypeError(f"'{type(other).__name__}' is not a version to compare with")

    def _compare(self, other, op):
        try:
            text = self._other(other)
        except TypeError:
            return NotImplemented
        try:
            return op(_key(self), _key(text))
        except ValueError:
            return op(str(self), text) if isinstance(other, str) else NotImplemented

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b)

    def __eq__(self, other):
        return self._compare(other, lambda a, b: a == b)

    def __ne__(self, other):
        return self._compare(other, lambda a, b: a != b)

    __hash__ = str.__hash__


__version__ = TorchVersion(f"{TORCH_API_VERSION}+ember.{EMBER_VERSION}")
cuda = None  # the CUDA version ember was built for: none (cupy brings its own at run time)
hip = None
xpu = None
debug = False
git_version = "Unknown"
