"""Parametrizations: a module's tensor computed by modules from stored originals
(torch.nn.utils.parametrize).

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (``original0``, ``original1``, ... when
``P.right_inverse`` returns a sequence) and makes ``module.weight`` a property that
evaluates ``P(original)``; the module's class becomes a subclass named
``Parametrized<Class>``, so state_dict keys and reprs are torch's."""

from __future__ import annotations

import collections.abc
import copy
import copyreg
from contextlib import contextmanager

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized", "remove_parametrizations",
           "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Within this context each parametrized tensor is computed once, on first access,
    and reused (torch.nn.utils.parametrize.cached); contexts nest."""
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, x) -> None:
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _set_data(dest: Tensor, src: Tensor) -> None:
    # torch uses Tensor.set_: dest takes src's storage (shape and dtype included), keeping its identity
    dest.data = src
    dest._vc[0] += 1


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s)
    they start from (``original`` or ``original0..N-1``).  Unless ``unsafe``, the first
    evaluation must keep the tensor's shape and dtype (ValueError otherwise)
    (torch.nn.utils.parametrize.ParametrizationList).  ``modules``: the parametrizations, at
    least one (ValueError for none); ``original``: the tensor to parametrize, stored through
    their ``right_inverse`` when they have one.  Built by ``register_parametrization``."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the device.\n"
                                 f"original.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            with no_grad():
                _set_data(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of the sequence with type {type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {z.dtype}")
            if z.shape != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {z.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` by running the parametrizations' ``right_inverse`` in reverse
        order into the originals (what ``module.weight = value`` does)."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _set_data(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                 f"Got a sequence of length {len(value)}.")
            for i, t in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(t, Tensor):
                    raise ValueError("'right_inverse' must return a sequence of tensors or reference-type opaques. "
                                     f"Got element {i} of type {type(t).__name__}.")
                if original_i.dtype != t.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {t.dtype} while "
                                     f"`original{i}` has dtype {original_i.dtype}")
                _set_data(original_i, t)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    cls = module.__class__

    def default_deepcopy(self, memo):
        obj = memo.get(id(self))
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = copy.deepcopy(self.__dict__, memo)
        for slot in copyreg._slotnames(self.__class__):
            if hasattr(self, slot):
                setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
        return replica

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                           "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                           "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

    dct = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module: Module, tensor_name: str) -> None:
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        t = _cache.get(key)
        if t is None:
            t = _cache[key] = parametrization()
        return t

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def _check_same(what, name, y, x, unsafe_word="the `unsafe` flag"):
    if x.dtype != y.dtype:
        raise ValueError(f"Registering a parametrization may not change the dtype of the tensor, unless {unsafe_word} "
                         f"is enabled.\nmodule.{name}.dtype: {y.dtype}\n{what}(module.{name}).dtype: {x.dtype}")
    if x.shape != y.shape:
        raise ValueError(f"Registering a parametrization may not change the shape of the tensor, unless {unsafe_word} "
                         f"is enabled.\nmodule.{name}.shape: {y.shape}\n{what}(module.{name}).shape: {x.shape}")


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` applied to the
    stored original; registering again on the same ``tensor_name`` chains parametrizations.
    Returns ``module``, whose class becomes a ``Parametrized<Class>`` subclass.

    ``parametrization.right_inverse``, when present, maps the current value to the
    original(s) to store (a Tensor, or a sequence stored as ``original0..``).  Unless
    ``unsafe``, the parametrization may not change shape or dtype (ValueError).  A name
    that is neither parameter, buffer nor parametrized tensor raises ValueError
    (torch.nn.utils.parametrize.register_parametrization)."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            _check_same("parametrization", tensor_name, y, x)
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(z).__name__}")
                    if z.dtype != y.dtype:
                        raise ValueError("The tensor returned by parametrization.right_inverse must have the same "
                                         f"dtype as module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                                         f"module.{tensor_name}.dtype: {y.dtype}\nreturned dtype: {z.dtype}")
                    if z.shape != y.shape:
                        raise ValueError("The tensor returned by parametrization.right_inverse must have the same "
                                         f"shape as module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                                         f"module.{tensor_name}.shape: {y.shape}\nreturned shape: {z.shape}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
                         f"'{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations on ``tensor_name``: the tensor becomes a plain parameter
    (or buffer) again, holding the current parametrized value if ``leave_parametrized``
    or the stored original otherwise; the ``module`` gets its class back once no
    parametrization is left, and is returned.  ValueError when there is none, or when
    ``leave_parametrized=False`` with several originals
    (torch.nn.utils.parametrize.remove_parametrizations)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _set_data(original, t)
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t) if t.requires_grad else t
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in "
                         "terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class of ``module`` as it was before any parametrization was registered (its
    own class when it has none) (torch.nn.utils.parametrize.type_before_parametrizations)."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module, tensor_name: str | None = None):
    """Register on ``to_module`` the parametrizations of ``from_module`` (all, or those of
    ``tensor_name``) and make it share their original tensors."""
    if is_parametrized(from_module):
        names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
        for name in names:
            if not hasattr(to_module, name):
                setattr(to_module, name, Parameter(getattr(from_module, name)))
            source = from_module.parametrizations[name]
            for p in source:
                register_parametrization(to_module, name, p)
            target = to_module.parametrizations[name]
            if hasattr(source, "original"):
                target.original = source.original
            else:
                i = 0
                while hasattr(source, f"original{i}"):
                    setattr(target, f"original{i}", getattr(source, f"original{i}"))
                    i += 1
    return to_module
