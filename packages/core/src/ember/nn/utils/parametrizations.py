"""Ready-made parametrizations: orthogonal, weight_norm, spectral_norm
(torch.nn.utils.parametrizations), registered through :mod:`.parametrize` so state_dict
keys are torch's (``parametrizations.weight.original0/1``, ``parametrizations.weight.0._u``)."""

from __future__ import annotations

import math
from enum import Enum, auto

import numpy

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---- differentiable helpers, composed of ember ops ------------------------------------------------
def _eye_like(x: Tensor, n: int, k: int | None = None) -> Tensor:
    from ...ops.creation import eye
    return eye(n, n if k is None else k, dtype=x.dtype, device=x.device)


def _matrix_exp(a: Tensor) -> Tensor:
    """exp of square matrices ``[*, n, n]`` by scaling and squaring of a degree-18 Taylor
    series (Higham, "The scaling and squaring method for the matrix exponential
    revisited", 2005); the scaling is chosen on values only, so gradients flow through
    the series and the squarings."""
    with no_grad():
        norm = float(a.abs().sum(dim=-2).max()) if a.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    x = a / (2.0 ** s)
    eye = _eye_like(a, a.shape[-1])
    out = eye
    for k in range(18, 0, -1):  # Horner: I + X/1 (I + X/2 (I + ...))
        out = eye + (x @ out) / k
    for _ in range(s):
        out = out @ out
    return out


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """The first ``k`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^T``, with
    ``v_i`` the i-th column of ``a [*, n, k]`` below the diagonal and 1 on it (LAPACK's
    orgqr layout, as torch.linalg.householder_product)."""
    n, k = a.shape[-2], a.shape[-1]
    v = a.tril(-1) + _eye_like(a, n, k)
    q = _eye_like(a, n, k).expand(*a.shape[:-2], n, k)
    for i in range(k - 1, -1, -1):
        vi = v[..., :, i:i + 1]
        q = q - tau[..., i:i + 1].unsqueeze(-1) * (vi @ (vi.mT @ q))
    return q


def _geqrf(a: Tensor):
    """LAPACK geqrf of ``a [*, n, k]`` on host values: R above the diagonal, Householder
    vectors below, and their scales tau (not differentiable, as torch.geqrf)."""
    from ...ops.creation import tensor
    h, tau = numpy.linalg.qr(numpy.asarray(a.detach().cpu().numpy()), mode="raw")
    return (tensor(numpy.ascontiguousarray(numpy.swapaxes(h, -1, -2))).to(device=a.device, dtype=a.dtype),
            tensor(tau).to(device=a.device, dtype=a.dtype))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a's QR decomposition with the signs of R's diagonal folded in."""
    from ...linalg import qr
    q, r = qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _is_orthogonal(q: Tensor) -> bool:
    from ...ops.elementwise import allclose
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * float(numpy.finfo(q.dtype.name).eps)
    return bool(allclose(q.mT @ q, _eye_like(q, k), atol=eps))


def _normalize(x: Tensor, eps: float) -> Tensor:
    return x / x.norm().clamp_min(eps)


# ---- orthogonal ------------------------------------------------------------------------------------
class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map: _OrthMaps, *, use_trivialization=True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        from ...linalg import solve
        from ...ops.shape import cat
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT.conj()
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _matrix_exp(A)
            else:
                eye = _eye_like(A, n)
                Q = solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:
        from ...ops.creation import randn, zeros_like
        from ...ops.shape import cat
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            A, tau = _geqrf(Q)
            diag = A.diagonal(dim1=-2, dim2=-1)
            diag.sign_()
            diag[tau == 0.0] *= -1
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:
            N = randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, N], dim=-1))
        self.base = Q
        neg_id = zeros_like(Q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Keep ``module.<name>`` (a matrix ``[n, k]`` or a batch ``[*, n, k]``) orthogonal
    (orthonormal columns or rows) through ``orthogonal_map``: "matrix_exp" or "cayley"
    of a skew-symmetric matrix, or "householder" reflections (default: matrix_exp for
    square or complex, householder otherwise).  ``use_trivialization`` keeps a ``base``
    buffer so that assigning any orthogonal matrix works.  ValueError for a missing
    tensor, fewer than 2 dims or an unknown map (torch.nn.utils.parametrizations.orthogonal)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---- weight norm -----------------------------------------------------------------------------------
def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim``, kept as size-1 dims; ``dim == -1``
    means the norm of the whole tensor (0-d), as torch.norm_except_dim."""
    from ...linalg import vector_norm
    if dim == -1:
        return vector_norm(v)
    dim %= v.dim()
    return vector_norm(v, 2, dim=tuple(d for d in range(v.dim()) if d != dim), keepdim=True)


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int = 0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` with the norm over every dim
    but ``dim`` (``None``: over all dims): ``original0`` is g, ``original1`` is v
    (Salimans & Kingma, 2016; torch.nn.utils.parametrizations.weight_norm).  State dicts
    of the older ``weight_norm`` (``<name>_g``, ``<name>_v``) still load."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# ---- spectral norm ---------------------------------------------------------------------------------
class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            with no_grad():
                u = _normalize(weight_mat.new_empty(h).normal_(0, 1), eps)
                v = _normalize(weight_mat.new_empty(w).normal_(0, 1), eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # u and v are updated in place so the buffers keep their identity, as torch's out= does
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(_normalize(weight_mat.mv(self._v), self.eps))
                self._v.copy_(_normalize(weight_mat.mT.conj().mv(self._u), self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        from ...ops.products import vdot
        if weight.ndim == 1:
            return _normalize(weight, self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        sigma = vdot(self._u.clone(), weight_mat.mv(self._v.clone()))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its largest singular value, estimated by
    ``n_power_iterations`` power-iteration steps per training forward on the weight
    reshaped to ``[size(dim), -1]`` (buffers ``_u``, ``_v``; 15 steps at registration; in
    eval mode the stored vectors are used as they are).  ``dim`` defaults to 1 for
    transposed convolutions, 0 otherwise (Miyato et al., 2018;
    torch.nn.utils.parametrizations.spectral_norm).  IndexError for a bad ``dim``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
        dim = 1 if any(c.__name__ in transposed for c in type(module).__mro__) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
