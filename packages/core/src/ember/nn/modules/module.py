"""Module: the base class of every layer (torch.nn.Module).

Assigning a Parameter, a Module or (through ``register_buffer``) a buffer tensor to an
attribute registers it, as torch's ``__setattr__`` does, so ``parameters()``,
``state_dict()`` and ``to()`` find it.  state_dict keys are torch's: dotted attribute
paths (``features.0.weight``), parameters before buffers, in registration order.
"""

from __future__ import annotations

import functools
import itertools
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import _dtype as D
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter, is_lazy

__all__ = ["Module"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict(strict=False) could not match: missing and unexpected keys."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# Bumped by every change of a module's attributes, submodules, parameters, buffers or hooks
# made through Module's methods: a compiled module re-reads its state only when it moved.
STATE_VERSION = [0]
# called with each module whose __call__ runs while a compiled function records (see
# ``ember.compiler``): the modules outside its own tree whose state its replays must guard
CALL_OBSERVER = [None]


class RemovableHandle:
    """Returned by the hook registrations; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks_dict, *extra_dicts):
        STATE_VERSION[0] += 1
        self.hooks_dict = hooks_dict
        self.extra_dicts = extra_dicts
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        STATE_VERSION[0] += 1
        for d in (self.hooks_dict,) + self.extra_dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class Module:
    """Base class for all neural network modules; subclasses define ``forward``.

    Submodules, parameters and buffers assigned as attributes are registered and
    visible to ``parameters()``, ``state_dict()``, ``to()``, ``train()``/``eval()`` and
    ``repr`` (torch.nn.Module)."""

    dump_patches = False
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        sa = object.__setattr__
        sa(self, "training", True)
        sa(self, "_parameters", {})
        sa(self, "_buffers", {})
        sa(self, "_non_persistent_buffers_set", set())
        sa(self, "_modules", {})
        sa(self, "_forward_hooks", OrderedDict())
        sa(self, "_forward_hooks_with_kwargs", {})
        sa(self, "_forward_hooks_always_called", {})
        sa(self, "_forward_pre_hooks", OrderedDict())
        sa(self, "_forward_pre_hooks_with_kwargs", {})
        sa(self, "_backward_hooks", OrderedDict())
        sa(self, "_backward_pre_hooks", OrderedDict())
        sa(self, "_state_dict_hooks", OrderedDict())
        sa(self, "_state_dict_pre_hooks", OrderedDict())
        sa(self, "_load_state_dict_pre_hooks", OrderedDict())
        sa(self, "_load_state_dict_post_hooks", OrderedDict())

    def forward(self, *input):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ---- registration ------------------------------------------------------------
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (running statistics); with
        ``persistent=False`` it stays out of ``state_dict``."""
        STATE_VERSION[0] += 1
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param) -> None:
        """Add a parameter (a Parameter or None) under ``name``."""
        STATE_VERSION[0] += 1
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             "created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name: str, module) -> None:
        """Add a child module under ``name``."""
        STATE_VERSION[0] += 1
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value) -> None:
        STATE_VERSION[0] += 1
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _remove_from(name, d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                _remove_from(name, d, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        "(torch.Tensor or None expected)")
                    buffers[name] = value
                else:
                    object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        STATE_VERSION[0] += 1
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self)) + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        # modules pickled before a hook table existed get an empty one
        for name in _HOOK_TABLES:
            if name not in self.__dict__:
                object.__setattr__(self, name, OrderedDict())
        if "_non_persistent_buffers_set" not in self.__dict__:
            object.__setattr__(self, "_non_persistent_buffers_set", set())

    # ---- iteration ---------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for mod_prefix, mod in modules:
            for k, v in get_members(mod):
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield (mod_prefix + ("." if mod_prefix else "") + k), v

    def parameters(self, recurse: bool = True):
        """The parameters of this module (and its submodules when ``recurse``), each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """(dotted name, parameter) pairs."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """(dotted name, module) for this module and every submodule, depth first; a
        module met twice is given once unless ``remove_duplicate=False``, and modules in
        ``memo`` (a set of modules) are skipped."""
        stack = [(prefix, self)]
        memo = set() if memo is None else memo
        while stack:
            name, mod = stack.pop()
            if mod in memo:
                continue
            if remove_duplicate:
                memo.add(mod)
            yield name, mod
            kids = [(name + ("." if name else "") + k, m) for k, m in mod._modules.items() if m is not None]
            stack.extend(reversed(kids))

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path ``target`` ('' is self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target: str):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        p = getattr(mod, name)
        if not isinstance(p, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return p

    def get_buffer(self, target: str):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return mod._buffers[name]

    # ---- state dict --------------------------------------------------------------
    def get_extra_state(self):
        """State beyond parameters and buffers to put in state_dict under ``_extra_state``;
        override together with ``set_extra_state`` (torch.nn.Module.get_extra_state)."""
        raise RuntimeError(f"{type(self).__name__}.get_extra_state() is not defined: a module with extra state "
                           "overrides get_extra_state() and set_extra_state() together")

    def set_extra_state(self, state) -> None:
        """Receive what ``get_extra_state`` returned, on load_state_dict."""
        raise RuntimeError(f"{type(self).__name__}.set_extra_state() is not defined: a module with extra state "
                           "overrides get_extra_state() and set_extra_state() together")

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered dict of every parameter and persistent buffer by dotted name
        (detached unless ``keep_vars``), keys as torch writes them; state-dict pre-hooks
        run first, post-hooks last."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict "
                          "for details.", FutureWarning, stacklevel=2)
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """Load this module's own parameters, buffers and extra state from ``state_dict``
        (keys starting with ``prefix``), recording problems in the three lists; the
        load-state-dict pre-hooks run first.  Override to migrate old checkpoints."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items()) if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor) and not hasattr(value, "__array__"):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(value)}")
                continue
            value = _as_tensor(value, param)
            lazy = is_lazy(param)
            if not lazy and param.dim() == 0 and value.dim() == 1 and value.shape[0] == 1:
                value = value[0]  # checkpoints of old torch versions stored scalars as [1]
            if not lazy and tuple(value.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {_size(value.shape)} from "
                                  f"checkpoint, the shape in current model is {_size(param.shape)}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if isinstance(value, Parameter):
                                value.requires_grad_(param.requires_grad)
                            else:
                                value = Parameter(value, requires_grad=param.requires_grad)
                        setattr(self, name, value)
                    else:
                        param.copy_(value)
            except Exception as e:  # noqa: BLE001
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{_size(param.shape)} and whose dimensions in the checkpoint are "
                                  f"{_size(value.shape)}, an exception occurred : {e.args}.")
        extra_key = prefix + _EXTRA_STATE_KEY
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    parts = key[len(prefix):].split(".", 1)
                    if (parts[0] not in self._modules) if len(parts) > 1 else (parts[0] not in local):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` (ember or torch tensors, or
        arrays); with ``assign`` the module takes the given tensors themselves (wrapped as
        Parameters where it held Parameters).  With ``strict`` a missing or unexpected key
        raises RuntimeError; a shape mismatch always does, naming the key and both shapes.
        Returns the ``(missing_keys, unexpected_keys)`` named tuple."""
        if not isinstance(state_dict, Mapping) and not (hasattr(state_dict, "keys")
                                                        and hasattr(state_dict, "__getitem__")):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_meta = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_meta["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_meta, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                         child_prefix)
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified, "
                                         "it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` collects this module."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def _register_state_dict_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` runs after ``state_dict``
        collected this module; it may return a replacement dict."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was previously "
                               "registered via register_state_dict_post_hook")
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """Like ``_register_state_dict_hook`` but the hook must edit the dict in place and return None."""
        hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        """``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` (the module first when ``with_module``) runs before this module loads
        its entries and may rewrite ``state_dict``."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _WrappedHook(hook, self if with_module else None)
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module loads its entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` runs after this module and its children
        loaded; it may edit ``incompatible_keys`` in place and must return None."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ---- modes and conversion ----------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode (dropout active, batch norm on batch statistics) here and below."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        STATE_VERSION[0] += 1  # a compiled module's guard on the tree reads it again
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def share_memory(self) -> "Module":
        """Move every parameter and buffer into shared memory (``Tensor.share_memory_``), so
        that processes given this module through ``ember.multiprocessing`` train one copy."""
        return self._apply(lambda t: t.share_memory_())

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default) or to zeros."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def apply(self, fn) -> "Module":
        """Call ``fn`` on every submodule (children first) and then on self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn, recurse: bool = True) -> "Module":
        for m in self.children() if recurse else ():
            m._apply(fn)
        for store in (self._parameters, self._buffers):
            for k, t in store.items():
                if t is None:
                    continue
                with no_grad():
                    new = fn(t)
                if new is t:
                    continue
                if isinstance(t, Parameter):
                    t.data = new
                    if t.grad is not None:
                        with no_grad():
                            g = fn(t.grad)
                        t.grad.data = g
                else:
                    store[k] = new
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Move and/or cast parameters and buffers in place (``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)``); only floating tensors change dtype."""
        from ...ops.conversion import _parse_to_args
        dtype, device, _ = _parse_to_args(args, dict(kwargs))
        if dtype is not None:
            dtype = D.to_dtype(dtype)
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                f"dtype={dtype}")

        fmt = kwargs.get("memory_format")

        def convert(t):
            if dtype is not None and (t.dtype.is_floating_point or t.dtype.is_complex):
                t = t.to(device=device, dtype=dtype) if device is not None else t.to(dtype)
            elif device is not None:
                t = t.to(device)
            # a memory format applies to the 4-d (5-d) weights, as torch's Module.to does
            if fmt is not None and fmt.name in ("channels_last", "channels_last_3d") and \
                    t.ndim == (4 if fmt.name == "channels_last" else 5):
                t = t.contiguous(memory_format=fmt)
            return t
        return self._apply(convert)

    def float(self) -> "Module":
        return self._apply(lambda t: t.float() if t.dtype.is_floating_point else t)

    def double(self) -> "Module":
        return self._apply(lambda t: t.double() if t.dtype.is_floating_point else t)

    def half(self) -> "Module":
        return self._apply(lambda t: t.half() if t.dtype.is_floating_point else t)

    def bfloat16(self) -> "Module":
        return self._apply(lambda t: t.bfloat16() if t.dtype.is_floating_point else t)

    def cpu(self) -> "Module":
        return self._apply(lambda t: t.cpu())

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Move parameters and buffers to ``device`` without copying their values: new,
        uninitialized memory of the same shapes and dtypes (how a model built on the meta
        device gets real memory; initialize or ``load_state_dict`` it next)."""
        from ...ops.creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cuda(self, device=None) -> "Module":
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type) -> "Module":
        return self._apply(lambda t: t.to(dst_type))

    # ---- hooks and calling -------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """``hook(module, args)`` (``hook(module, args, kwargs)`` with ``with_kwargs``) runs
        before ``forward`` and may return replacement args."""
        handle = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """``hook(module, args, output)`` runs after ``forward`` and may return a replacement output."""
        handle = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                                 self._forward_hooks_always_called)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_input, grad_output)`` runs once the gradients of the
        module's tensor inputs are computed and may return a replacement grad_input
        (a tuple with one entry per tensor input, None where there is no gradient)."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_output)`` runs when the gradients of the module's outputs
        arrive, before those of its inputs are computed; it may return a replacement
        grad_output."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def __call__(self, *args, **kwargs):
        if CALL_OBSERVER[0] is not None:
            CALL_OBSERVER[0](self)
        compiled = self.__dict__.get("_compiled_call_impl")  # set by Module.compile()
        if compiled is not None:
            return compiled(*args, **kwargs)
        backward_hooks = self.__dict__.get("_backward_hooks") or self.__dict__.get("_backward_pre_hooks")
        if not self._forward_hooks and not self._forward_pre_hooks and not backward_hooks:
            return self.forward(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        """The call without compilation: pre-hooks, backward hooks, forward, forward hooks."""
        backward_hooks = self.__dict__.get("_backward_hooks") or self.__dict__.get("_backward_pre_hooks")
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {res}.")
                    args, kwargs = res
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        hooks = None
        if backward_hooks:
            from ._backward_hooks import BackwardHook
            hooks = BackwardHook(self, self._backward_hooks, self._backward_pre_hooks)
            args = hooks.wrap_inputs(args)
        result = self.forward(*args, **kwargs)
        for hid, hook in list(self._forward_hooks.items()):
            if hid in self._forward_hooks_with_kwargs:
                res = hook(self, args, kwargs, result)
            else:
                res = hook(self, args, result)
            if res is not None:
                result = res
        return result if hooks is None else hooks.wrap_outputs(result)

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's calls in place with ``ember.compile(self._call_impl, *args,
        **kwargs)`` (torch.nn.Module.compile): the module keeps its class, parameters and
        state-dict keys."""
        from ... import compiler
        self.__dict__["_compiled_call_impl"] = compiler.compile(self._call_impl, *args, **kwargs)

    # ---- printing ----------------------------------------------------------------
    def extra_repr(self) -> str:
        """The module's own settings, shown inside the parentheses of its repr."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({k}): " + _addindent(repr(m), 2) for k, m in self._modules.items()]
        lines = extra_lines + child_lines
        s = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                s += extra_lines[0]
            else:
                s += "\n  " + "\n  ".join(lines) + "\n"
        return s + ")"


_EXTRA_STATE_KEY = "_extra_state"
_HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                "_load_state_dict_post_hooks")


class _WrappedHook:
    """A load_state_dict pre-hook, called with its module first when registered
    ``with_module`` (the module held by weak reference, as torch)."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        self.module = weakref.ref(module) if module is not None else None

    def __call__(self, *args, **kwargs):
        if not self.with_module:
            return self.hook(*args, **kwargs)
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args, **kwargs)


def _remove_from(name, d, *stores):
    if name in d:
        del d[name]
    for s in stores:
        s.discard(name) if isinstance(s, set) else s.pop(name, None)


def _typename(v) -> str:
    if isinstance(v, Tensor):
        return "torch." + {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor"}.get(
            v.dtype.name, "Tensor")
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _size(shape) -> str:
    return "torch.Size([" + ", ".join(str(int(s)) for s in shape) + "])"


def _as_tensor(value, like):
    """A state_dict value (ember tensor, torch tensor, numpy array) as an ember tensor."""
    if isinstance(value, Tensor):
        return value
    import numpy

    from ...ops.creation import tensor
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return tensor(numpy.asarray(value))
