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
linalg_lu = _result("linalg_lu", ["P", "L", "U"])
linalg_lu_factor = _result("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = _result("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_unpack = _result("lu_unpack", ["P", "L", "U"])
_lu_with_info = _result("_lu_with_info", ["LU", "pivots", "info"])
linalg_eig = _result("linalg_eig", ["eigenvalues", "eigenvectors"])
linalg_cholesky_ex = _result("linalg_cholesky_ex", ["L", "info"])
linalg_inv_ex = _result("linalg_inv_ex", ["inverse", "info"])
linalg_solve_ex = _result("linalg_solve_ex", ["result", "info"])
linalg_ldl_factor = _result("linalg_ldl_factor", ["LD", "pivots"])
linalg_ldl_factor_ex = _result("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
geqrf = _result("geqrf", ["a", "tau"])
triangular_solve = _result("triangular_solve", ["solution", "cloned_coefficient"])
