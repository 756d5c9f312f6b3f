"""Named tuples returned by ops with several results (torch.return_types)."""

from collections import namedtuple


def _result(name, fields):
    base = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"ember.return_types.{name}(\n{body})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": __name__})


max = _result("max", ["values", "indices"])
min = _result("min", ["values", "indices"])
sort = _result("sort", ["values", "indices"])
topk = _result("topk", ["values", "indices"])
var_mean = _result("var_mean", ["var", "mean"])
std_mean = _result("std_mean", ["std", "mean"])
median = _result("median", ["values", "indices"])
nanmedian = _result("nanmedian", ["values", "indices"])
kthvalue = _result("kthvalue", ["values", "indices"])
mode = _result("mode", ["values", "indices"])
aminmax = _result("aminmax", ["min", "max"])
cummax = _result("cummax", ["values", "indices"])
cummin = _result("cummin", ["values", "indices"])
slogdet = _result("slogdet", ["sign", "logabsdet"])
lstsq = _result("lstsq", ["solution", "residuals", "rank", "singular_values"])
qr = _result("qr", ["Q", "R"])
eigh = _result("eigh", ["eigenvalues", "eigenvectors"])
svd = _result("svd", ["U", "S", "Vh"])
frexp = _result("frexp", ["mantissa", "exponent"])
histogram = _result("histogram", ["hist", "bin_edges"])
histogramdd = _result("histogramdd", ["hist", "bin_edges"])
