"""Optimizer: the base of every algorithm (torch.optim.Optimizer).

An optimizer holds ``param_groups`` (a list of dicts, each with ``'params'`` and the
group's hyper-parameters) and ``state`` (a dict from parameter to its per-parameter
buffers, created lazily on the first step).  ``state_dict()`` has torch's structure,
parameters replaced by their position across all groups, so checkpoints move between
ember and PyTorch.  Source: https://pytorch.org/docs/stable/optim.html
"""

from __future__ import annotations

import copy
from collections import OrderedDict, defaultdict
from itertools import chain

from .._tensor import Tensor, _make
from ..autograd.grad_mode import no_grad
from ..ops import _dispatch

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Marks a hyper-parameter that has no default (torch.optim.optimizer.required)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts each
            holding ``'params'`` and per-group options.
        defaults: the default option values of every group.

    Raises:
        TypeError: ``params`` is a single tensor, a set, or holds something not a tensor.
        ValueError: an empty parameter list, a parameter in two groups, a required
            option missing.
    """

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {params.type()}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # ---- pickling / printing ---------------------------------------------------------
    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())

    def __repr__(self) -> str:
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    # ---- groups ----------------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters (a dict with ``'params'``) with its own options.

        Raises TypeError (not a dict, a set of params, a non-tensor), ValueError (a non-leaf
        tensor, a required option missing, a parameter already in another group).
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        plist, names = [], []
        for p in param_group["params"]:
            if isinstance(p, tuple) and len(p) == 2:
                names.append(p[0])
                p = p[1]
            plist.append(p)
        if names:
            if len(names) != len(plist):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        param_group["params"] = plist

        for p in plist:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or p._retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        if len({id(p) for p in plist}) != len(plist):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error", stacklevel=3)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in plist):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- gradients -------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (default) or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g = g.detach()
                        p.grad = g
                    g._data[...] = 0
                    g._vc[0] += 1

    def step(self, closure=None):
        """Update the parameters once; subclasses implement it."""
        raise NotImplementedError

    def _run_closure(self, closure):
        if closure is None:
            return None
        from ..autograd.grad_mode import enable_grad
        with enable_grad():
            return closure()

    # ---- hooks -----------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs before each step; returns a handle with ``remove()``."""
        return _Handle(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs after each step; returns a handle with ``remove()``."""
        return _Handle(self._optimizer_step_post_hooks, hook)

    # ---- state dict ------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}``.

        Indices count parameters across groups in order; state tensors are the live ones
        (not copies), as in torch.
        """
        index: dict = {}
        start = 0
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {index[id(p)]: v for p, v in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a ``state_dict()`` (from ember or torch): the groups must match in number and size.

        State tensors are cast to the parameter's dtype and device, except ``'step'``.
        Raises ValueError when the group count or a group's size differs.
        """
        state_dict = _copy_state_dict(state_dict)
        groups = self.param_groups
        saved_groups = state_dict["param_groups"]
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = [len(g["params"]) for g in groups]
        saved_lens = [len(g["params"]) for g in saved_groups]
        if any(a != b for a, b in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = {key: _cast_state(param, val, key) for key, val in v.items()} \
                    if isinstance(v, dict) else v
            else:
                state[k] = v
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            new = dict(saved)
            new["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                new["param_names"] = group["param_names"]
            new_groups.append(new)
        self.__setstate__({"state": state, "param_groups": new_groups})


def _copy_state_dict(sd):
    """A deep copy of a state dict whose tensors are copied with their values."""
    memo: dict = {}

    def rec(x):
        if isinstance(x, Tensor):
            if id(x) not in memo:
                memo[id(x)] = _make(x._data.copy(), x.dtype)
            return memo[id(x)]
        if isinstance(x, dict):
            return type(x)((k, rec(v)) for k, v in x.items()) if type(x) is not defaultdict else \
                {k: rec(v) for k, v in x.items()}
        if isinstance(x, list):
            return [rec(v) for v in x]
        if isinstance(x, tuple) and not hasattr(x, "_fields"):
            return tuple(rec(v) for v in x)
        return copy.deepcopy(x)
    return rec(sd)


def _cast_state(param: Tensor, value, key):
    """A state value moved to ``param``'s device (and, floating, to its dtype), 'step' left alone."""
    if not isinstance(value, Tensor):
        return value
    if key == "step":
        return value
    if value.dtype.is_floating_point and param.dtype.is_floating_point:
        return value.to(dtype=param.dtype, device=param.device)
    return value.to(device=param.device)


class _Handle:
    _next_id = 0

    def __init__(self, table, hook):
        self.table, self.id = table, _Handle._next_id
        _Handle._next_id += 1
        table[self.id] = hook

    def remove(self) -> None:
        self.table.pop(self.id, None)


def _step_wrapper(step):
    """Runs the optimizer's pre/post step hooks around ``step`` under no_grad."""
    import functools

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in list(self._optimizer_step_pre_hooks.values()):
            res = hook(self, args, kwargs)
            if res is not None:
                args, kwargs = res
        with no_grad():
            out = step(self, *args, **kwargs)
        for hook in list(self._optimizer_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out
    # graph capture keeps a step whole (it updates arrays, not through ops)
    return _dispatch.register(wrapper, step.__qualname__, capture="call")


def _state_zeros_like(p: Tensor) -> Tensor:
    """A fresh zero tensor shaped, typed and placed like ``p`` (a state buffer)."""
    return _make(_xp(p).zeros_like(p._data), p.dtype)


def _xp(t: Tensor):
    from ..ops._helpers import be
    return be(t).xp


def _step_tensor() -> Tensor:
    """The 'step' counter: a float32 0-d CPU tensor holding 0, as torch keeps it."""
    import numpy

    from .. import _dtype as D
    return _make(numpy.zeros((), dtype=numpy.float32), D.float32)


def _check_lr(lr, eps=None, weight_decay=None, betas=None, momentum=None) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= float(lr):
        raise ValueError(f"Invalid learning rate: {lr}")
    if eps is not None and not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if momentum is not None and not 0.0 <= momentum:
        raise ValueError(f"Invalid momentum value: {momentum}")
    if weight_decay is not None and not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if betas is not None:
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
