"""Pruning: zero out entries of a module's tensor through a mask (torch.nn.utils.prune).

Pruning ``name`` moves the parameter to ``<name>_orig``, stores the mask as the buffer
``<name>_mask`` and registers the method as a forward pre-hook that recomputes
``<name> = <name>_mask * <name>_orig`` before each forward, so state_dict keys are
torch's.  Pruning the same tensor again combines the masks in a PruningContainer."""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ..._tensor import Tensor

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way to compute a pruning mask; subclasses set ``PRUNING_TYPE`` ("unstructured",
    "structured" with a ``dim``, or "global") and define ``compute_mask``."""

    _tensor_name: str

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The new mask for ``t`` (same shape), given the current ``default_mask``."""

    def apply_mask(self, module):
        """``<name>_mask * <name>_orig``, the pruned tensor."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, ranking entries by
        ``importance_scores`` (default: the tensor itself); returns the method."""
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}, "
                                     f"got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = _ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # put the parameter back as it was
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times the mask this method computes for it."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError("importance_scores should have the same shape as tensor t, got "
                                     f"{importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else _ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module) -> None:
        """Make the pruning permanent: ``<name>`` becomes a Parameter holding the pruned
        values, and ``<name>_orig``/``<name>_mask`` go away."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _ones_like(t):
    from ...ops.creation import ones_like
    return ones_like(t)


def _composite_method(cls, module, name, *args, **kwargs):
    """The new method, merged with a pruning hook already on ``name`` (which it replaces)."""
    old, keys = None, []
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            old = hook
            keys.append(k)
    if len(keys) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                             "Use a PruningContainer.")
    for k in keys:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if isinstance(old, PruningContainer):
        old.add_pruning_method(method)
        method = old
    elif old is not None:
        container = PruningContainer(old)
        container.add_pruning_method(method)
        method = container
    return method


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods on one tensor; each new one prunes only what the
    previous masks kept (a structured one acts on the channels still alive)."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        """Append ``method``; TypeError for a non-method, ValueError for another tensor name."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            slc = default_mask == 1
        elif kind in ("structured", "global"):
            n_dims = t.dim()
            slc = [slice(None)] * n_dims
            if kind == "structured":
                if not hasattr(method, "dim"):
                    raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute '
                                         "`dim` defined.")
                dim = method.dim + n_dims if method.dim < 0 else method.dim
                if dim < 0:
                    raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
                slc[dim] = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = tuple(slc)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` (a fraction in [0, 1] or a count) entries chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        from ...ops.creation import rand_like
        k = _n_to_prune(self.amount, t.numel())
        _validate_amount(k, t.numel())
        mask = default_mask.clone()
        if k != 0:
            mask.view(-1)[rand_like(t).view(-1).topk(k).indices] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _n_to_prune(self.amount, t.numel())
        _validate_amount(k, t.numel())
        mask = default_mask.clone()
        if k != 0:
            mask.view(-1)[t.abs().reshape(-1).topk(k, largest=False).indices] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t, dim, keep):
    """Ones on the slices ``keep`` (a bool mask or indices) along ``dim``, zeros elsewhere."""
    from ...ops.creation import zeros_like
    mask = zeros_like(t)
    slc = [slice(None)] * t.dim()
    slc[dim] = keep
    mask[tuple(slc)] = 1
    return mask


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim`` chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1) -> None:
        _validate_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        from ...ops.creation import rand
        _validate_structured(t)
        _validate_dim(t, self.dim)
        n = t.shape[self.dim]
        k = _n_to_prune(self.amount, n)
        _validate_amount(k, n)
        if k == 0:
            return default_mask
        prob = rand(n)
        mask = _channel_mask(t, self.dim, prob > prob.kthvalue(k).values)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1) -> None:
        _validate_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t)
        _validate_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _n_to_prune(self.amount, size)
        _validate_amount(k, size)
        dims = list(range(t.dim()))
        dims.remove(dims[self.dim])
        keep = t.norm(p=self.n, dim=dims).topk(size - k, largest=True).indices
        if k == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, keep)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given ``mask`` is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask) -> None:
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Attach an all-ones mask to ``module.<name>``; returns ``module``
    (torch.nn.utils.prune.identity).  ``name``: the parameter (or buffer) of ``module`` to prune; it
    is moved to ``<name>_orig``, a ``<name>_mask`` buffer is added, and ``module.<name>`` becomes their
    product, recomputed before each forward."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` random entries of ``module.<name>``; returns ``module``
    (torch.nn.utils.prune.random_unstructured).

    ``name``: the parameter (or buffer) of ``module`` to prune; it is moved to
    ``<name>_orig``, a ``<name>_mask`` buffer is added, and ``module.<name>`` becomes their
    product, recomputed before each forward.
    ``amount``: a float in [0, 1] (that fraction, rounded) or an int count (TypeError for
    another type, ValueError out of range or above the number of entries, or of channels for
    the structured methods).
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` entries of ``module.<name>`` of smallest magnitude (or score);
    returns ``module`` (torch.nn.utils.prune.l1_unstructured).

    ``name``: the parameter (or buffer) of ``module`` to prune; it is moved to
    ``<name>_orig``, a ``<name>_mask`` buffer is added, and ``module.<name>`` becomes their
    product, recomputed before each forward.
    ``amount``: a float in [0, 1] (that fraction, rounded) or an int count (TypeError for
    another type, ValueError out of range or above the number of entries, or of channels for
    the structured methods).
    ``importance_scores``: a tensor of the parameter's shape ranking the entries
    instead of their absolute values.
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` random channels (whole slices) of ``module.<name>`` along ``dim``;
    returns ``module`` (torch.nn.utils.prune.random_structured).

    ``name``: the parameter (or buffer) of ``module`` to prune; it is moved to
    ``<name>_orig``, a ``<name>_mask`` buffer is added, and ``module.<name>`` becomes their
    product, recomputed before each forward.
    ``amount``: a float in [0, 1] (that fraction, rounded) or an int count (TypeError for
    another type, ValueError out of range or above the number of entries, or of channels for
    the structured methods).
    ValueError for a 1-D tensor, IndexError for a ``dim`` out of range.
    """
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` channels (whole slices) of ``module.<name>`` along ``dim`` of
    smallest ``n``-norm (``n`` the order, as Tensor.norm's ``p``); returns ``module``
    (torch.nn.utils.prune.ln_structured).

    ``name``: the parameter (or buffer) of ``module`` to prune; it is moved to
    ``<name>_orig``, a ``<name>_mask`` buffer is added, and ``module.<name>`` becomes their
    product, recomputed before each forward.
    ``amount``: a float in [0, 1] (that fraction, rounded) or an int count (TypeError for
    another type, ValueError out of range or above the number of entries, or of channels for
    the structured methods).
    ``importance_scores``: a tensor of the parameter's shape whose norms rank the
    channels instead.  ValueError for a 1-D tensor, IndexError for a ``dim`` out of range.
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the ``(module, name)`` pairs of ``parameters`` together, ranking all their
    entries at once with an unstructured ``pruning_method(**kwargs)``; TypeError for a
    non-iterable, a non-dict ``importance_scores`` or a structured method."""
    from ...ops.creation import ones_like
    from .convert_parameters import parameters_to_vector
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n)) for m, n in parameters])
    default_mask = parameters_to_vector([getattr(m, n + "_mask") if hasattr(m, n + "_mask")
                                         else ones_like(getattr(m, n)) for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for m, n in parameters:
        param = getattr(m, n)
        size = param.numel()
        custom_from_mask(m, n, mask=final_mask[pointer:pointer + size].view_as(param))
        pointer += size


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` where ``mask`` (a tensor of its shape) is 0; returns ``module``
    (torch.nn.utils.prune.custom_from_mask).  ``name``: the parameter (or buffer) of ``module`` to
    prune; it is moved to ``<name>_orig``, a ``<name>_mask`` buffer is added, and ``module.<name>``
    becomes their product, recomputed before each forward."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent: ``name`` becomes a plain Parameter
    holding the pruned values and ``<name>_orig``, ``<name>_mask`` and the hook go away;
    returns ``module``.  ValueError if it is not pruned (torch.nn.utils.prune.remove)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module) -> bool:
    """Whether any submodule of ``module`` carries a pruning hook."""
    return any(isinstance(h, BasePruningMethod) for m in module.modules() for h in m._forward_pre_hooks.values())


def _validate_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or \
            (not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_amount(amount, tensor_size) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _validate_structured(t: Tensor) -> None:
    if t.dim() <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{t.shape} with {t.dim()} dims")


def _n_to_prune(amount, tensor_size) -> int:
    return amount if isinstance(amount, numbers.Integral) else round(amount * tensor_size)


def _validate_dim(t: Tensor, dim) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")
