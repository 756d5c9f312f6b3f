"""Printing tensors the way torch does (precision 4, scientific notation when the
magnitudes call for it, summarised beyond 1000 elements)."""

from __future__ import annotations

import numpy

PRINT_OPTIONS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def _default_dtype():
    from ._dtype import get_default_dtype
    return get_default_dtype()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set how tensors print (torch.set_printoptions).

    ``precision`` is the digits after the decimal point (4), ``threshold`` the element count
    above which a tensor is summarized (1000), ``edgeitems`` the items shown at each end of
    a summarized dim (3), ``linewidth`` the characters per line (80). ``profile`` 'default',
    'short' or 'full' sets all four first (full: never summarize). ``sci_mode`` True or
    False forces scientific notation on or off; None (the default, set by every call) lets
    the values decide."""
    if profile == "default":
        PRINT_OPTIONS.update(precision=4, threshold=1000, edgeitems=3, linewidth=80)
    elif profile == "short":
        PRINT_OPTIONS.update(precision=2, threshold=1000, edgeitems=2, linewidth=80)
    elif profile == "full":
        PRINT_OPTIONS.update(precision=4, threshold=float("inf"), edgeitems=3, linewidth=80)
    for k, v in dict(precision=precision, threshold=threshold, edgeitems=edgeitems, linewidth=linewidth).items():
        if v is not None:
            PRINT_OPTIONS[k] = v
    PRINT_OPTIONS["sci_mode"] = sci_mode


def _float_formatter(values):
    p = PRINT_OPTIONS["precision"]
    finite = values[numpy.isfinite(values)]
    if finite.size == 0:
        return lambda v: _special(v) or f"{v:.{p}f}"
    absv = numpy.abs(finite)
    nonzero = absv[absv != 0]
    ints = bool(numpy.all(finite == numpy.round(finite)))
    sci = PRINT_OPTIONS["sci_mode"]
    if ints:
        if sci is None:
            sci = nonzero.size > 0 and (nonzero.max() / nonzero.min() > 1000.0 or nonzero.max() > 1e8)
        if sci:
            return lambda v: _special(v) or f"{v:.{p}e}"
        return lambda v: _special(v) or f"{v:.0f}."
    if sci is None:
        sci = nonzero.size > 0 and (nonzero.max() / nonzero.min() > 1000.0 or nonzero.max() > 1e8
                                    or nonzero.min() < 1e-4)
    if sci:
        return lambda v: _special(v) or f"{v:.{p}e}"
    return lambda v: _special(v) or f"{v:.{p}f}"


def _special(v):
    if numpy.isnan(v):
        return "nan"
    if numpy.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def _format_values(arr, dtype):
    if dtype.is_floating_point:
        vals = numpy.asarray(arr, dtype=numpy.float64)
        fmt = _float_formatter(vals.reshape(-1))
    elif dtype.name == "bool":
        vals, fmt = arr, (lambda v: "True" if v else "False")
    elif dtype.is_complex:
        vals = arr
        p = PRINT_OPTIONS["precision"]
        fmt = lambda v: f"{v.real:.{p}f}{v.imag:+.{p}f}j"  # noqa: E731
    else:
        vals, fmt = arr, (lambda v: str(int(v)))
    return vals, fmt




def _body(arr, fmt, width, indent, summarize):
    if arr.ndim == 0:
        return fmt(arr.item()).rjust(width)
    edge = PRINT_OPTIONS["edgeitems"]
    n = arr.shape[0]
    idx = list(range(n))
    if summarize and n > 2 * edge:
        idx = list(range(edge)) + [None] + list(range(n - edge, n))
    if arr.ndim == 1:
        items = [" ..." if i is None else fmt(arr[i].item()).rjust(width) for i in idx]
        per_line = max(1, (PRINT_OPTIONS["linewidth"] - indent) // (width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    parts = ["..." if i is None else _body(arr[i], fmt, width, indent + 1, summarize) for i in idx]
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def tensor_repr(t) -> str:
    if t.device.type == "meta":  # no values to show, as torch prints it
        dtype = "" if t.dtype is _default_dtype() else f", dtype={t.dtype}"
        return f"tensor(..., device='meta', size={tuple(t.shape)}{dtype})"
    arr = numpy.asarray(t.__array__())
    dtype = t.dtype
    suffix = []
    from . import _dtype as D
    from ._dtype import get_default_dtype
    if arr.size == 0 and arr.ndim != 1 or arr.size == 0:
        body = "[]"
        if arr.shape != (0,):
            suffix.append(f"size={tuple(arr.shape)}")
    else:
        summarize = arr.size > PRINT_OPTIONS["threshold"]
        shown = arr
        if summarize:
            edge = PRINT_OPTIONS["edgeitems"]
            flat_sel = [numpy.concatenate([numpy.arange(min(edge, n)), numpy.arange(max(n - edge, edge), n)])
                        if n > 2 * edge else numpy.arange(n) for n in arr.shape]
            shown = arr[numpy.ix_(*flat_sel)] if arr.ndim else arr
        # the format and width come from the values shown, as torch's do
        shown_vals, fmt = _format_values(shown, dtype)
        vals = numpy.asarray(arr, dtype=numpy.float64) if dtype.is_floating_point else arr
        flat = numpy.asarray(shown_vals).reshape(-1)
        if dtype.is_floating_point and numpy.isfinite(flat).any() and \
                numpy.all(flat[numpy.isfinite(flat)] == numpy.round(flat[numpy.isfinite(flat)])):
            flat = flat[numpy.isfinite(flat)]  # in integer mode nan and inf do not widen the columns
        width = max(len(fmt(v)) for v in flat.tolist()) if flat.size else 1
        body = _body(vals, fmt, width, len("tensor("), summarize)
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    implicit = (get_default_dtype(), D.int64, D.bool_)
    if dtype not in implicit or (arr.size == 0 and dtype is not get_default_dtype()):
        suffix.append(f"dtype={dtype!r}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + s for s in suffix) + ")"
