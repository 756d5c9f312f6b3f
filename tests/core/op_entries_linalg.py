"""Conformance entries: torch.linalg's factorizations and solvers (lu, ldl, cholesky_ex,
inv_ex, solve_ex, eig, matrix_exp, householder products, cond, tensorinv/tensorsolve)
and their top-level forms (torch.lu, lu_unpack, lu_solve, cholesky_solve,
cholesky_inverse, triangular_solve, geqrf, orgqr, ormqr, adjoint, chain_matmul,
frobenius_norm, nuclear_norm, and symeig/eig, which torch 2 removed).

Decompositions whose factors are unique (LU with partial pivoting, Cholesky, LDL,
geqrf's Householder form) are compared factor by factor; eig's eigenvectors, unique up
to a phase, through their moduli.
"""

import math

import numpy as np
from op_table import Op, Sample, f, nc, spd, well_conditioned


def _sym(L, a):
    return (a + a.mT) / 2


def _lu_factor(L, a):
    return (L.linalg.lu_factor(a), L.linalg.lu_factor_ex(a), L.lu(a), L.lu(a, get_infos=True), a.lu())


def _lu(L, a):
    LU, piv = L.linalg.lu_factor(a)
    # (torch's backward through the empty L and U of unpack_data=False fails: detached there)
    return (L.linalg.lu(a), L.lu_unpack(LU, piv), L.lu_unpack(LU.detach(), piv, unpack_data=False),
            L.lu_unpack(LU, piv, unpack_pivots=False))


def _lu_solve(L, a, b):
    LU, piv = L.linalg.lu_factor(a)
    return (L.linalg.lu_solve(LU, piv, b), L.linalg.lu_solve(LU, piv, b, adjoint=True),
            L.linalg.lu_solve(LU, piv, b.mT, left=False), L.linalg.lu_solve(LU, piv, b.mT, left=False, adjoint=True),
            L.lu_solve(b, LU, piv), b.lu_solve(LU, piv))


def _solve_ex(L, a, b):
    return (L.linalg.solve_ex(a, b), L.linalg.solve_ex(a, b[..., 0]), L.linalg.solve_ex(a, b.mT, left=False),
            L.linalg.inv_ex(a))


def _cholesky_ex(L, a):
    s = _sym(L, a)
    return L.linalg.cholesky_ex(s), L.linalg.cholesky_ex(s, upper=True)


def _infos(L, a):
    # info of the factorizations that report failure instead of raising
    s = _sym(L, a)
    return (L.linalg.lu_factor_ex(a).info, L.linalg.inv_ex(a).info, L.linalg.solve_ex(a, a).info,
            L.linalg.cholesky_ex(s).info, L.linalg.cholesky_ex(s, upper=True).info, L.linalg.ldl_factor_ex(s).info)


def _cholesky_solve(L, b, a):
    low = L.tril(a)
    return (L.cholesky_solve(b, low), b.cholesky_solve(low.mT, upper=True), L.cholesky_inverse(low),
            low.mT.cholesky_inverse(upper=True))


def _triangular_solve(L, b, a):
    return (L.triangular_solve(b, a), L.triangular_solve(b, a, upper=False), L.triangular_solve(b, a, transpose=True),
            L.triangular_solve(b, a, upper=False, unitriangular=True), b.triangular_solve(a, False, True))


def _geqrf(L, a, c):
    qr, tau = L.geqrf(a)
    return qr, tau, a.geqrf(), L.orgqr(qr, tau), L.ormqr(qr, tau, c)


def _householder(L, a, tau, c):
    return (L.linalg.householder_product(a, tau), L.orgqr(a, tau), a.orgqr(tau), L.ormqr(a, tau, c),
            L.ormqr(a, tau, c, transpose=True), L.ormqr(a, tau, c.mT, left=False),
            L.ormqr(a, tau, c.mT, left=False, transpose=True), a.ormqr(tau, c))


def _eig(L, a):
    w, V = L.linalg.eig(a)
    # eigenvectors are unique up to a phase per column: their moduli are not
    return w, w.real, w.imag, V.abs(), L.linalg.eigvals(a)


def _ldl(L, a, b):
    s = _sym(L, a)
    LD, piv = L.linalg.ldl_factor(s)
    return (LD, piv, L.linalg.ldl_factor_ex(s), L.linalg.ldl_solve(LD, piv, b),
            L.linalg.ldl_factor(s, hermitian=True), L.linalg.ldl_solve(LD, piv, b, hermitian=True))


def _cond(L, a):
    return tuple(L.linalg.cond(a, p) for p in (None, 2, -2))


def _cond_norms(L, a):
    return tuple(L.linalg.cond(a, p) for p in ("fro", "nuc", 1, -1, math.inf, -math.inf))


def _tensor_solve(L, a, b):
    return (L.linalg.tensorinv(a.reshape(4, 2, 2), ind=1), L.linalg.tensorinv(a.reshape(2, 2, 2, 2)),
            L.linalg.tensorsolve(a.reshape(2, 2, 4), b), L.linalg.tensorsolve(a, b.reshape(4), dims=(0,)))


def _no_derivative(name):
    # the factorization runs; its backward raises (torch has no derivative for it)
    def fn(L, a):
        x = _sym(L, a.detach()).requires_grad_()
        out = L.geqrf(x)[0] if name == "geqrf" else L.linalg.ldl_factor(x)[0]
        out.sum().backward()
    return fn


def _adjoint(L, a):
    z = L.complex(a, 2 * a)
    # (torch's complex adjoint is a lazily conjugated view: resolved before comparing)
    return (L.adjoint(a), a.adjoint(), a.mH, L.adjoint(z).resolve_conj(), z.mH.resolve_conj()) + \
        ((a.H, z.H.resolve_conj()) if a.ndim == 2 else ())


def _complex(L, a, b, c, d):
    # complex matrices built from real leaves: the complex forms of the rules, seen through moduli
    z, w = L.complex(a, b), L.complex(c, d)
    LU, piv = L.linalg.lu_factor(z)
    outs = (L.linalg.solve_ex(z, w).result, L.linalg.inv_ex(z).inverse, LU, L.linalg.lu(z).U,
            L.linalg.lu_solve(LU, piv, w, adjoint=True), L.linalg.cholesky_ex(z @ z.mH).L,
            L.triangular_solve(w, z).solution, L.linalg.matrix_exp(0.3 * z), L.linalg.eigvals(z),
            L.linalg.householder_product(z, z[:, 0]))
    return tuple(o.abs() for o in outs)


def _complex_sample():
    """Its own seeded values (not the shared stream, which shifts with the entries drawn
    before): moduli have a kink at 0, and these keep every output's entries away from it."""
    g = np.random.default_rng(11)
    parts = [g.uniform(-2, 2, shape).astype(np.float32) for shape in ((3, 3), (3, 3), (3, 2), (3, 2))]
    parts[0] += 9 * np.eye(3, dtype=np.float32)
    return Sample(tuple(parts))


OPS = [
    Op("linalg.complex", _complex, [_complex_sample()], rtol=1e-4, atol=1e-4),
    Op("linalg.lu_factor", _lu_factor, [Sample((well_conditioned(3, 3),)), Sample((f(2, 4, 4),)),
                                        Sample((f(5, 3),)), Sample((f(3, 5),)), Sample((nc(f(3, 3)),))],
       errors=[(Sample((np.zeros((3, 3), np.float32),)), RuntimeError), (Sample((f(3),)), RuntimeError)]),
    Op("linalg.lu", _lu, [Sample((well_conditioned(3, 3),)), Sample((f(2, 4, 4),)), Sample((f(5, 3),)),
                          Sample((f(3, 5),))]),
    Op("linalg.lu_solve", _lu_solve, [Sample((well_conditioned(3, 3), f(3, 2))),
                                      Sample((well_conditioned(2, 3, 3), f(3, 2)))],
       errors=[(Sample((well_conditioned(3, 3), f(4, 2))), RuntimeError)]),
    Op("linalg.solve_ex", _solve_ex, [Sample((well_conditioned(3, 3), f(3, 2))),
                                      Sample((well_conditioned(2, 3, 3), f(2, 3, 3)))],
       errors=[(Sample((well_conditioned(3, 3), f(4, 2))), RuntimeError)]),
    Op("linalg.cholesky_ex", _cholesky_ex, [Sample((spd(3, 3),)), Sample((spd(2, 4, 4),))]),
    Op("linalg.ex_info", _infos, [Sample((np.zeros((3, 3), np.float32),)), Sample((-spd(2, 3, 3),)),
                                  Sample((well_conditioned(3, 3),))], grad=False),
    Op("linalg.ex_check_errors", lambda L, a, which: (
        L.linalg.inv_ex(a, check_errors=True) if which == 0 else L.linalg.solve_ex(a, a, check_errors=True)
        if which == 1 else L.linalg.cholesky_ex(a, check_errors=True) if which == 2 else
        L.linalg.lu_factor_ex(a, check_errors=True)), [], grad=False,
       errors=[(Sample((np.zeros((2, 3, 3), np.float32), w)), RuntimeError) for w in range(4)]),
    Op("cholesky_solve", _cholesky_solve, [Sample((f(3, 2), well_conditioned(3, 3))),
                                           Sample((f(2, 3, 2), well_conditioned(3, 3)))],
       errors=[(Sample((f(4, 2), well_conditioned(3, 3))), RuntimeError), (Sample((f(3), well_conditioned(3, 3))),
                                                                            RuntimeError)]),
    Op("triangular_solve", _triangular_solve, [Sample((f(3, 2), well_conditioned(3, 3))),
                                               Sample((f(2, 3, 2), well_conditioned(3, 3)))],
       errors=[(Sample((f(4, 2), well_conditioned(3, 3))), RuntimeError), (Sample((f(3, 2), f(3, 4))),
                                                                            RuntimeError)]),
    Op("geqrf", _geqrf, [Sample((f(4, 3), f(4, 2))), Sample((f(2, 3, 3), f(2, 3, 3)))], grad=False,
       errors=[(Sample((f(3), f(3, 2))), RuntimeError)]),
    Op("geqrf_no_derivative", _no_derivative("geqrf"), [], grad=False,
       errors=[(Sample((f(3, 3),)), NotImplementedError)]),
    Op("ldl_no_derivative", _no_derivative("ldl"), [], grad=False,
       errors=[(Sample((spd(3, 3),)), RuntimeError)]),
    Op("householder_product", _householder, [Sample((f(4, 3), f(3), f(4, 2))), Sample((f(2, 3, 3), f(2, 3),
                                                                                       f(2, 3, 3)))],
       errors=[(Sample((f(2, 3), f(2), f(2, 2))), RuntimeError)]),
    Op("linalg.eig", _eig, [Sample((f(3, 3),)), Sample((f(2, 4, 4),)), Sample((well_conditioned(3, 3),))],
       rtol=1e-4, atol=1e-4,
       errors=[(Sample((f(3, 4),)), RuntimeError), (Sample((f(3),)), RuntimeError)]),
    Op("linalg.matrix_exp", lambda L, a: (L.linalg.matrix_exp(a), L.matrix_exp(a), a.matrix_exp()),
       [Sample((f(3, 3),)), Sample((f(2, 4, 4),)), Sample((nc(f(3, 3)),))], rtol=1e-4, atol=1e-5,
       errors=[(Sample((f(3, 4),)), RuntimeError)]),
    Op("linalg.ldl", _ldl, [Sample((f(4, 4), f(4, 2))), Sample((spd(2, 3, 3), f(2, 3, 1)))], grad=False, rtol=1e-4,
       errors=[(Sample((f(3, 4), f(3, 2))), RuntimeError)]),
    Op("linalg.cond", _cond, [Sample((well_conditioned(3, 3),)), Sample((f(2, 3, 3),))], rtol=1e-4, atol=1e-4,
       errors=[(Sample((f(3),)), RuntimeError)]),
    # torch's backward of these fails (its cond writes into inv_ex's result in place, which
    # autograd refuses): forward values only
    Op("linalg.cond_norms", _cond_norms, [Sample((well_conditioned(3, 3),)), Sample((f(2, 3, 3),)),
                                          ], grad=False, rtol=1e-4, atol=1e-4),
    # a singular matrix has condition number inf (torch's 'nuc' gives nan there: left out)
    Op("linalg.cond_singular", lambda L, a: tuple(L.linalg.cond(a, p) for p in ("fro", 1, -1, math.inf, -math.inf)),
       [Sample((np.zeros((3, 3), np.float32),))], grad=False),
    Op("linalg.cond_rect", lambda L, a, p=None: (L.linalg.cond(a, p), L.linalg.cond(a, -2)), [Sample((f(3, 4),))],
       rtol=1e-4,
       errors=[(Sample((f(3, 4), "fro")), RuntimeError)]),
    Op("linalg.tensorinv", _tensor_solve, [Sample((well_conditioned(4, 4), f(2, 2)))],
       rtol=1e-4, atol=1e-5),
    Op("adjoint", _adjoint, [Sample((f(2, 3),)), Sample((f(2, 3, 4),))], errors=[(Sample((f(3),)), RuntimeError)]),
    Op("chain_matmul", lambda L, a, b, c: (L.chain_matmul(a, b, c), L.chain_matmul(a)),
       [Sample((f(2, 3), f(3, 4), f(4, 2)))], errors=[(Sample((f(2, 3), f(2, 3), f(3, 3))), RuntimeError)]),
    Op("frobenius_nuclear_norm", lambda L, a: (L.frobenius_norm(a, dim=(0, 1)), L.frobenius_norm(a, 1),
                                               L.frobenius_norm(a, (0, 2), keepdim=True), L.nuclear_norm(a),
                                               L.nuclear_norm(a, keepdim=True), L.nuclear_norm(a, (0, 2)),
                                               L.nuclear_norm(a[0], True)),
       [Sample((f(2, 3, 4),))]),
    Op("frobenius_norm_dims", lambda L, a: L.frobenius_norm(a, (0, 1, 2)), [], grad=False,
       errors=[(Sample((f(2, 3, 4),)), RuntimeError)]),
    Op("symeig_eig_removed", lambda L, a, which: (L.symeig, L.eig, a.symeig, a.eig)[which](a) if which < 2 else
       (L.symeig, L.eig, a.symeig, a.eig)[which](), [], grad=False,
       errors=[(Sample((f(2, 2), w)), RuntimeError) for w in range(4)]),
]

# composite ops (their nodes are those of the ops they are written with) or, for eig's
# moduli, torch's own graph differs around the complex outputs
NODE_NAMES_DIFFER = {"householder_product", "linalg.cond", "linalg.cond_rect", "linalg.tensorinv", "chain_matmul",
                     "frobenius_nuclear_norm", "adjoint", "linalg.eig"}


def _svd_lowrank(L, a):
    # q is a's rank here, so the randomized range finder is exact whatever its random sketch
    U, S, V = L.svd_lowrank(a, q=3)
    # centering the rows takes one off the rank: ask for no more (a zero singular value's
    # vectors are arbitrary, and so are the gradients through them)
    U2, S2, V2 = L.svd_lowrank(a, q=min(a.shape[-2] - 1, a.shape[-1]), M=a.mean(-2, keepdim=True))
    return S, U * U, V * V, (U * S.unsqueeze(-2)) @ V.mT, S2, (U2 * S2.unsqueeze(-2)) @ V2.mT


def _pca_lowrank(L, a, q=None):
    U, S, V = L.pca_lowrank(a, q)
    return S, U * U, V * V


def _f64(a):
    return a.astype(np.float64)


def _lobpcg(L, a, b):
    s = _sym(L, a)
    outs = (L.lobpcg(s, k=2), L.lobpcg(s, k=2, largest=False))
    if not a.requires_grad:  # (torch has no derivative for the generalized problem: see lobpcg_B)
        outs += (L.lobpcg(s, k=2, B=_sym(L, b)), L.lobpcg(s, k=3, B=_sym(L, b), largest=False))
    return tuple(x for E, X in outs for x in (E, X * X))  # eigenvectors up to sign


def _lobpcg_B_backward(L, a, b):
    s = _sym(L, a.detach()).requires_grad_()
    L.lobpcg(s, k=2, B=_sym(L, b))[0].sum().backward()


OPS += [
    Op("svd_lowrank", _svd_lowrank, [Sample((f(5, 3),)), Sample((f(3, 5),)), Sample((f(2, 4, 3),))], rtol=1e-4,
       atol=1e-4),
    Op("pca_lowrank", _pca_lowrank, [Sample((f(5, 3),)), Sample((f(2, 4, 3),))], rtol=1e-4, atol=1e-4,
       errors=[(Sample((f(5, 3), 4)), ValueError)]),
    # in float64: torch's float32 LOBPCG stops at a residual of about 3e-4, too coarse to compare
    Op("lobpcg", _lobpcg, [Sample((_f64(spd(9, 9)), _f64(spd(9, 9)))), Sample((_f64(spd(12, 12)), _f64(spd(12, 12))))],
       rtol=1e-5, atol=1e-5,
       errors=[(Sample((spd(5, 5), spd(5, 5))), ValueError)]),
    Op("lobpcg_B", _lobpcg_B_backward, [], grad=False, errors=[(Sample((spd(9, 9), spd(9, 9))), ValueError)]),
]
NODE_NAMES_DIFFER |= {"svd_lowrank", "pca_lowrank", "lobpcg"}
