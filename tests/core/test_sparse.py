"""Sparse COO tensors against torch: construction and its errors, coalescing, conversions,
printing, the ops of torch.sparse, gradients through the values and the dense operands,
and a two-layer GCN training step with a sparse normalized adjacency."""

import numpy as np
import pytest
import torch
from torch_namespace import COVERED, Recorder

import ember

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")
rng = np.random.default_rng(0)
IND = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]  # (0, 2) twice: uncoalesced
VAL = [3.0, 4.0, 5.0, 1.0, -2.0]
DENSE = rng.standard_normal((3, 2)).astype(np.float32)
_R = rng.standard_normal((3, 3)).astype(np.float32)


def both(fn):
    """(ember's result, torch's), torch's calls counted toward the conformance table's coverage."""
    with Recorder() as seen:
        expected = fn(torch)
    COVERED.update(seen.names)
    return fn(ember), expected


def coo(L, ind=IND, val=VAL, *args, **kwargs):
    return L.sparse_coo_tensor(L.tensor(ind), L.tensor(val), *args, **kwargs)


def close(e, t, rtol=1e-5, atol=1e-6):
    if isinstance(t, torch.Tensor) and t.is_sparse:
        assert e.is_sparse and tuple(e.shape) == tuple(t.shape) and e.is_coalesced() == t.is_coalesced()
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
        e, t = e._values(), t._values()
    assert not e.is_sparse
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def test_layouts_and_flags():
    assert repr(ember.strided) == repr(torch.strided).replace("torch", "ember")
    assert repr(ember.sparse_coo) == repr(torch.sparse_coo).replace("torch", "ember")
    e, t = both(lambda L: coo(L))
    assert e.layout is ember.sparse_coo and ember.ones(2).layout is ember.strided
    assert e.is_sparse and not ember.ones(2).is_sparse and t.is_sparse
    for q in ("sparse_dim", "dense_dim", "_nnz", "is_coalesced", "dim", "size"):
        assert getattr(e, q)() == getattr(t, q)(), q
    assert e.shape == t.shape and e.numel() == t.numel() and str(e.device) == str(t.device)


@pytest.mark.parametrize("case", [
    lambda L: coo(L),
    lambda L: coo(L, IND, VAL, (4, 5)),
    lambda L: coo(L, IND, VAL, dtype=L.float64),
    lambda L: coo(L, [[0, 2], [1, 0]], [1, 2]),
    lambda L: L.sparse_coo_tensor(L.tensor([[0, 2]]), L.tensor([[1.0, 2.0], [3.0, 4.0]]), (3, 2)),
    lambda L: L.sparse_coo_tensor(L.tensor(IND).float(), L.tensor(VAL)),
    lambda L: L.sparse_coo_tensor(L.zeros(2, 0, dtype=L.long), L.zeros(0), (2, 3)),
    lambda L: coo(L, IND, VAL, (3, 3), is_coalesced=False),
])
def test_construction_and_to_dense(case):
    e, t = both(case)
    close(e, t)
    close(e.to_dense(), t.to_dense())
    assert repr(e) == repr(t).replace("torch.", "ember.")
    close(e.coalesce(), t.coalesce())
    assert repr(e.coalesce()) == repr(t.coalesce()).replace("torch.", "ember.")


@pytest.mark.parametrize("case", [
    lambda L: L.sparse_coo_tensor(L.tensor(IND)[0], L.tensor(VAL)),  # 1-d indices
    lambda L: L.sparse_coo_tensor(L.tensor(IND), L.tensor(VAL[:3])),  # nnz mismatch
    lambda L: L.sparse_coo_tensor(-L.tensor(IND), L.tensor(VAL)),  # negative
    lambda L: coo(L, IND, VAL, (3,)),  # size of the wrong length
    lambda L: L.sparse_coo_tensor(L.tensor([[0, 1]]), L.ones(2, 3), (2, 4)),  # dense size
    lambda L: coo(L, IND, VAL, (2, 3), check_invariants=True),  # out of bounds
    lambda L: coo(L).indices(),
    lambda L: coo(L).values(),
    lambda L: coo(L) + coo(L, IND, VAL, (4, 4)),
    lambda L: coo(L) + L.ones(3, 3),
    lambda L: L.sparse.mm(coo(L), L.ones(4, 2)),
    lambda L: L.ones(2, 2, 2).to_sparse().t(),
    lambda L: L.sparse.mm(L.eye(2).to_sparse(), L.ones(2, 2, dtype=L.float64)),
])
def test_errors_as_torch(case):
    with pytest.raises(Exception) as te:
        case(torch)
    with pytest.raises(type(te.value)) as ee:
        case(ember)
    assert str(ee.value) == str(te.value)


def test_out_of_bounds_always_checked():
    # torch checks bounds only with check_invariants=True; ember always (see sparse_coo_tensor)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 1, size is 2"):
        coo(ember, IND, VAL, (3, 2))


@pytest.mark.parametrize("op", [lambda s: s.exp(), lambda s: s.view(-1), lambda s: s.relu(), lambda s: s[0],
                                lambda s: s.numpy(), lambda s: ember.cat([s, s])])
def test_unsupported_ops_raise(op):
    with pytest.raises(NotImplementedError, match="SparseCPU.*sparse_coo"):
        op(coo(ember))


def test_unsupported_op_names_the_op():
    with pytest.raises(NotImplementedError, match="Could not run 'exp'"):
        coo(ember).exp()
    with pytest.raises(NotImplementedError):
        torch.exp(coo(torch))


@pytest.mark.parametrize("op", [
    lambda L, s: s * 2.5, lambda L, s: 3 * s, lambda L, s: s / 2, lambda L, s: -s, lambda L, s: s.neg(),
    lambda L, s: s + s, lambda L, s: s.coalesce() + s.coalesce(), lambda L, s: s.coalesce().t(),
    lambda L, s: s.t(), lambda L, s: s.detach(), lambda L, s: L.sparse.sum(s, dim=0),
    lambda L, s: L.sparse.sum(s, dim=-1), lambda L, s: L.sparse.sum(s), lambda L, s: L.sparse.sum(s, dim=(0, 1)),
    lambda L, s: s.sum(), lambda L, s: L.sparse.mm(s, L.tensor(DENSE)), lambda L, s: L.mm(s, L.tensor(DENSE)),
    lambda L, s: s @ L.tensor(DENSE), lambda L, s: L.matmul(s, L.tensor(DENSE[:, 0])),
    lambda L, s: L.tensor(DENSE.T) @ s.t(),
    lambda L, s: L.sparse.addmm(L.ones(3, 2), s, L.tensor(DENSE), beta=2, alpha=0.5),
    lambda L, s: L.addmm(L.ones(3, 2), s, L.tensor(DENSE)),
    lambda L, s: L.tensor(_R).sparse_mask(s.coalesce()),
    lambda L, s: L.sparse.softmax(s, 1), lambda L, s: L.sparse.softmax(s, 0),
    lambda L, s: s.to_dense().to_sparse(), lambda L, s: s.to_dense().to_sparse_coo(),
    lambda L, s: s.to(L.float64), lambda L, s: s.double(), lambda L, s: s.clone(), lambda L, s: s.long(),
    lambda L, s: s * L.tensor(_R), lambda L, s: s.coalesce() * L.tensor(2.0),
    lambda L, s: L.tensor([[0, 2], [3, 0]], dtype=L.int32).to_sparse(),
    lambda L, s: L.sparse.sum(L.tensor([[0, 2], [3, 0]], dtype=L.int32).to_sparse()),
    lambda L, s: L.tensor([[True, False], [False, True]]).to_sparse().to_dense(),
    lambda L, s: L.sparse_coo_tensor([[1], [2]], [3.0]), lambda L, s: L.eye(3).to_sparse() + L.eye(3).to_sparse() * 2,
])
def test_ops_match_torch(op):
    e, t = both(lambda L: op(L, coo(L)))
    close(e, t)


def test_hybrid_to_sparse_and_sum():
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    x[1] = 0
    e, t = both(lambda L: L.tensor(x).to_sparse(1))
    close(e, t)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    for dim in (0, 1, 2, (1, 2), (0, 2)):
        close(ember.sparse.sum(e, dim=dim), torch.sparse.sum(t, dim=dim))
    close(e.to_dense(), t.to_dense())


def grads(L, fn):
    s = coo(L, requires_grad=True)
    d = L.tensor(DENSE, requires_grad=True)
    fn(L, s, d).backward()
    return s, d


@pytest.mark.parametrize("fn", [
    lambda L, s, d: (L.sparse.mm(s, d) * L.arange(6.0).reshape(3, 2)).sum(),
    lambda L, s, d: (s @ d).pow(2).sum(),
    lambda L, s, d: L.mm(s, d).sum() + L.matmul(s, d[:, 0]).sum() + (d.t() @ s.t()).sum(),
    lambda L, s, d: (L.sparse.mm(s, d) + L.addmm(d[:, :1], s, d)).pow(2).sum() + s.to_dense().sum(),
    lambda L, s, d: s.to_dense().pow(2).sum() + d.sum(),
    lambda L, s, d: L.sparse.sum(s) + d.sum(),
    lambda L, s, d: L.sparse.sum(s, dim=1).to_dense().pow(2).sum() + d.sum(),
    lambda L, s, d: (L.sparse.addmm(d[:, :1].expand(3, 2), s, d, beta=2, alpha=3) ** 2).sum(),
    lambda L, s, d: (2 * s + s.coalesce()).to_dense().mul(L.arange(9.0).reshape(3, 3)).sum() + d.sum(),
])
def test_gradients_match_torch(fn):
    (es, ed), (ts, td) = both(lambda L: grads(L, fn))
    assert es.is_leaf and ts.is_leaf
    assert es.grad.layout.name == str(ts.grad.layout).split(".")[1]  # torch.mm's is strided, sparse.mm's sparse
    close(es.grad.to_dense(), ts.grad.to_dense())
    if ts.grad.is_sparse:
        np.testing.assert_array_equal(es.grad._indices().numpy(), ts.grad._indices().numpy())
    close(ed.grad, td.grad)


def test_softmax_gradient():
    def run(L):
        v = L.tensor(VAL, requires_grad=True)
        s = L.sparse_coo_tensor(L.tensor(IND), v, (3, 3))
        (L.sparse.softmax(s, 1).to_dense() * L.tensor(_R)).sum().backward()
        return v
    e, t = both(run)
    close(e.grad, t.grad)


def test_derived_sparse_tensors_are_not_leaves():
    def run(L):
        s = coo(L, requires_grad=True)
        u = s.t()
        (u @ L.tensor(DENSE[:, :1].T.repeat(3, 0))).sum().backward()
        return s, u
    (es, eu), (ts, tu) = both(run)
    assert eu.is_leaf == tu.is_leaf and eu.requires_grad == tu.requires_grad
    assert es.grad.layout.name == str(ts.grad.layout).split(".")[1]
    close(es.grad, ts.grad)


def test_gradient_to_values_tensor():
    def run(L):
        v = L.tensor(VAL, requires_grad=True)
        s = L.sparse_coo_tensor(L.tensor(IND), v, (3, 3))
        assert not s.is_leaf and s.requires_grad
        (L.sparse.mm(s, L.tensor(DENSE)) ** 2).sum().backward()
        return v
    e, t = both(run)
    close(e.grad, t.grad)
    assert repr(coo(ember, requires_grad=True)) == repr(coo(torch, requires_grad=True)).replace("torch.", "ember.")


def test_gradient_to_dense_through_to_sparse_and_mask():
    def run(L):
        x = L.tensor(_R, requires_grad=True)
        s = (x * (L.tensor(_R) > 0)).to_sparse()
        m = x.sparse_mask(coo(L).coalesce())
        (L.sparse.sum(s) + L.sparse.sum(m * 3)).backward()
        return x
    e, t = both(run)
    close(e.grad, t.grad)


def normalized_adjacency(L, n=6, edges=((0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (1, 4))):
    # D^-1/2 (A + I) D^-1/2 of an undirected graph, as a sparse tensor
    a = np.eye(n, dtype=np.float32)
    for i, j in edges:
        a[i, j] = a[j, i] = 1
    d = a.sum(1) ** -0.5
    a = d[:, None] * a * d[None, :]
    return L.tensor(a).to_sparse()


def test_gcn_training_step_matches_torch():
    x = rng.standard_normal((6, 5)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2])
    w1 = rng.standard_normal((5, 8)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((8, 3)).astype(np.float32) * 0.3

    def step(L):
        adj = normalized_adjacency(L)
        p1, p2 = L.nn.Parameter(L.tensor(w1)), L.nn.Parameter(L.tensor(w2))
        opt = L.optim.Adam([p1, p2], lr=0.01)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            h = L.relu(L.sparse.mm(adj, L.tensor(x) @ p1))
            out = adj @ (h @ p2)
            loss = L.nn.functional.cross_entropy(out, L.tensor(y))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return p1, p2, losses

    (e1, e2, el), (t1, t2, tl) = both(step)
    np.testing.assert_allclose(el, tl, rtol=1e-5)
    close(e1, t1, rtol=1e-4, atol=1e-6)
    close(e2, t2, rtol=1e-4, atol=1e-6)
