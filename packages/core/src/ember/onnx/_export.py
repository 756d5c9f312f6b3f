"""Walk an fx graph captured from the model and build the ONNX graph, op by op.

The capture is ``ember.jit.trace``'s: parameters and buffers are ``get_attr`` nodes (they
become initializers named by their state_dict keys), every op node carries its recorded
shape and dtype in ``node.meta["tensor_meta"]``, and targets are ember's public op
functions, named through the dispatch table; ``_ops.EMITTERS`` maps each name to a short
function writing its ONNX nodes."""

from __future__ import annotations

import inspect
import operator
import os
import warnings

from . import _dynamic
from .errors import OnnxExporterError, UnsupportedOperatorError

ONNX_DEFAULT_OPSET = 20
ONNX_MIN_OPSET = 17
ONNX_MAX_OPSET = 21


class Ctx:
    """The ONNX graph under construction: nodes, initializers, each value's shape/dtype."""

    def __init__(self, opset: int):
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.meta: dict[str, tuple] = {}  # ONNX value name -> (shape tuple, numpy dtype)
        self.op_name = ""  # the ember op being emitted
        self.folded: dict = {}  # Constant value name -> its array, for ops of constants only
        self.sym: dict = {}  # value name -> its dims, Syms where they follow a dynamic axis
        self.value_names: dict = {}  # the recording's value index -> its ONNX value name
        self.size_axes: dict = {}  # ONNX name of a computed size -> the dynamic axes it follows
        self._size_values: dict = {}  # size expression -> ONNX name of its [1] int64 value
        self._used: set[str] = set()

    def fresh(self, base: str) -> str:
        name, i = base, 0
        while name in self._used:
            i += 1
            name = f"{base}_{i}"
        self._used.add(name)
        return name

    def op(self, op_type: str, inputs, outputs: int = 1, **attrs):
        """Append one ONNX node; returns its output name (a list of them when ``outputs`` > 1).
        An input of ``None`` or "" is an omitted optional input."""
        import onnx
        names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(onnx.helper.make_node(op_type, ["" if i is None else i for i in inputs], names,
                                                name=self.fresh(f"node_{op_type}"), **attrs))
        return names[0] if outputs == 1 else names

    def const(self, value, dtype=None) -> str:
        """A Constant node holding ``value`` (a number, list or array) as ``dtype`` (numpy)."""
        import numpy as np
        import onnx
        array = np.asarray(value, dtype=dtype)
        name = self.fresh("val")
        self.nodes.append(onnx.helper.make_node("Constant", [], [name], name=self.fresh("node_Constant"),
                                                value=onnx.numpy_helper.from_array(array, name)))
        self.meta[name] = (array.shape, array.dtype)
        return name

    def ints(self, values) -> str:
        import numpy as np
        return self.const(list(values), np.int64)

    def cast(self, name: str, dtype) -> str:
        """``name`` as numpy ``dtype`` (no node when it already is)."""
        import numpy as np
        import onnx
        dtype = np.dtype(dtype)
        have = self.meta.get(name)
        if have is not None and have[1] == dtype:
            return name
        out = self.op("Cast", [name], to=onnx.helper.np_dtype_to_tensor_dtype(dtype))
        if have is not None:
            self.meta[out] = (have[0], dtype)
        return out

    def operand(self, x, dtype) -> str:
        """A tensor value or Python number as an ONNX value of numpy ``dtype``."""
        return self.cast(x, dtype) if isinstance(x, str) else self.const(x, dtype)

    def shape(self, name: str) -> tuple:
        return tuple(self.meta[name][0])

    def rank(self, name: str) -> int:
        return len(self.meta[name][0])

    def dims(self, name: str) -> tuple:
        """The value's dims, a ``Sym`` where a dim follows a dynamic axis."""
        return self.sym.get(name) or self.shape(name)

    def sym_value(self, sym) -> str:
        """A 1-element int64 value: ``sym`` computed from the shapes of the graph's values."""
        return self.size_value(sym.expr, sym.param)

    def size_value(self, expr, param="a size") -> str:
        """A 1-element int64 value computing a size expression: Shape/Gather of the value
        it reads, integer Add/Sub/Mul/Div/Mod/Neg/Abs (sizes are not negative, so Div's
        truncation is floor division)."""
        import operator

        import numpy as np
        if isinstance(expr, int):
            return self.ints([expr])
        name = self._size_values.get(expr)
        if name is not None:
            return name
        head = expr[0]
        if head == "size":
            source = self.value_names.get(expr[1])
            if source is None:
                raise OnnxExporterError(f"the size {param} is needed before the value it is read from is computed "
                                        f"(op {self.op_name})")
            name = self.op("Gather", [self.op("Shape", [source]), self.ints([expr[2]])], axis=0)
        else:
            ops = {operator.add: "Add", operator.sub: "Sub", operator.mul: "Mul", operator.floordiv: "Div",
                   operator.mod: "Mod", operator.neg: "Neg", operator.abs: "Abs"}
            if head not in ops:
                raise OnnxExporterError(f"the size arithmetic {head!r} is not exported")
            name = self.op(ops[head], [self.size_value(e, param) for e in expr[1:]])
        self.meta[name] = ((1,), np.dtype(np.int64))
        self._size_values[expr] = name
        return name

    def shape_tensor(self, dims) -> str:
        """A 1-d int64 value holding ``dims``: a constant, or a Concat computing the Syms
        (and the computed sizes, given by their ONNX names)."""
        from ._dynamic import Sym
        if not any(isinstance(d, (Sym, str)) for d in dims):
            return self.ints(dims)
        pieces, run = [], []
        for d in dims:
            if isinstance(d, (Sym, str)):
                if run:
                    pieces.append(self.ints(run))
                    run = []
                pieces.append(self.sym_value(d) if isinstance(d, Sym) else d)
            else:
                run.append(d)
        if run:
            pieces.append(self.ints(run))
        return self.op("Concat", pieces, axis=0)

    def require_static(self, name: str, dims, op: str, why: str):
        """Raise when one of ``dims`` of ``name`` follows a dynamic axis."""
        from ._dynamic import Sym
        all_dims = self.dims(name)
        for d in dims:
            if isinstance(all_dims[d], Sym):
                raise OnnxExporterError(f"dynamic axis {all_dims[d].param!r} is fixed by the op {op!r}: {why} "
                                        f"(dim {d} of its input)")


def _value_info(name, shape, np_dtype, names=None):
    """``names``: ``{axis: dim_param}`` overriding a Sym's own name."""
    import onnx
    dims = [(names or {}).get(i) or getattr(d, "param", d) for i, d in enumerate(shape)]
    return onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(np_dtype), dims)


def _meta(node):
    tm = node.meta.get("tensor_meta")
    if tm is None:
        return None
    return (tuple(tm.shape), tm.dtype.np)


def _capture(model, args, kwargs, dynamic=None):
    from ..jit import trace
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*jit.trace")
        try:
            return trace(model, args, example_kwarg_inputs=kwargs or None, _dynamic=dynamic)
        except RuntimeError as exc:
            raise OnnxExporterError(f"ember.onnx.export could not capture the model: {exc}") from exc


def _bind(target, args, kwargs):
    """The call's arguments by parameter name, defaults filled in; a Tensor method's
    ``self`` is also ``input``, as the functions name it."""
    try:
        bound = inspect.signature(target).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    out = dict(bound.arguments)
    for name, param in inspect.signature(target).parameters.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            out.update(out.pop(name, {}))
    if "self" in out and "input" not in out:
        out["input"] = out["self"]
    return out


# ops whose result shares memory with their first argument: mutating one changes the other,
# which an ONNX graph cannot say
_VIEWS = {"view", "reshape", "getitem", "transpose", "permute", "t", "flatten", "unsqueeze", "squeeze", "expand",
          "narrow", "select", "split", "chunk", "unbind", "operator.getitem", "detach", "swapaxes", "swapdims"}


def _out_of_place(target, op: str):
    """The function whose signature an in-place method's call binds to (``add_`` -> ``add``)."""
    import ember
    if op == "setitem":
        return target
    return getattr(ember, op[:-1], None) or getattr(ember.Tensor, op[:-1], target)


_BATCH_NORM_STATISTICS = ("num_batches_tracked", "running_mean", "running_var")


def _rebind(ctx, node, out, env, op):
    from ..fx import Node
    target = node.args[0] if node.args else None
    if not isinstance(target, Node):
        return
    if target.op == "call_function" and _op_name(target.target) in _VIEWS:
        raise OnnxExporterError(f"the in-place op {op!r} (node {node.name!r}) writes into a view "
                                f"({target.name!r}); the exported graph cannot change the viewed tensor: "
                                f"write the op out of place")
    if target.op == "get_attr":
        if target.target.rpartition(".")[2] in _BATCH_NORM_STATISTICS:
            raise OnnxExporterError(f"batch norm in training mode updates its running statistics "
                                    f"({target.target!r}, node {node.name!r}), which an ONNX file's weights cannot: "
                                    "export the model in eval mode (model.eval())")
        raise OnnxExporterError(f"the in-place op {op!r} (node {node.name!r}) changes the module's "
                                f"{target.target!r}; an ONNX file's weights cannot change")
    before = env[target.name]
    ctx.meta.setdefault(out, ctx.meta[before])  # same shape and dtype: the op wrote in place
    if before in ctx.sym:
        ctx.sym.setdefault(out, ctx.sym[before])
    env[target.name] = out


def _op_name(target) -> str:
    from ..ops._dispatch import entry_of
    if target is operator.getitem:
        return "operator.getitem"  # an element of a multi-output op's result
    entry = entry_of(target)
    if entry is not None:
        return entry.name
    return getattr(target, "__qualname__", repr(target))


def build(model, args, kwargs, *, input_names, output_names, opset: int, export_params: bool,
          keep_initializers_as_inputs: bool, dynamic_axes=None, dynamic_shapes=None):
    """Capture ``model`` on ``args``/``kwargs`` and return the ``onnx.ModelProto``."""
    try:
        import onnx
    except ImportError as exc:
        raise ImportError("ember.onnx.export needs the onnx package: pip install 'ember-core[onnx]'") from exc

    from .._tensor import Tensor
    from ..fx.node import map_arg
    from ._ops import EMITTERS
    gm = _capture(model, args, kwargs)
    ctx = Ctx(opset)
    env: dict[str, object] = {}
    inputs, params = [], []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    names = list(input_names or [])
    if len(names) > len(placeholders):
        raise ValueError(f"input_names has {len(names)} names but the model has {len(placeholders)} inputs")
    dyn_inputs, dyn_outputs = _dynamic.declared(dynamic_axes, dynamic_shapes, input_names, output_names,
                                                placeholders, len(args))
    syms: dict = {}
    namer = None
    if dyn_inputs:  # recorded again, the declared axes as symbolic sizes
        dims, axis_names = _dynamic.input_dims(args, kwargs, dyn_inputs)
        gm = _capture(model, args, kwargs, dims)
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        node_names = {n.meta["value_index"]: n.name for n in gm.graph.nodes if "value_index" in n.meta}
        namer = _dynamic.Namer(axis_names, node_names)
        _dynamic.check_guards(getattr(gm, "_ember_guards", ()), namer)
        syms = _dynamic.symbolic_dims(gm, namer)
    for i, node in enumerate(placeholders):
        name = ctx.fresh(names[i] if i < len(names) else node.target)  # the forward argument's name, as torch
        env[node.name] = name
        _name_value(ctx, node, name)
        m = _meta(node)
        if m is None:
            raise OnnxExporterError(f"input {node.name!r} is not a tensor; only tensor inputs can be exported")
        ctx.meta[name] = m
        if node.name in syms:
            ctx.sym[name] = syms[node.name]
        inputs.append(_value_info(name, ctx.dims(name), m[1]))
    flat_out: list = []
    _flatten(map_arg(next(n for n in gm.graph.nodes if n.op == "output").args[0], lambda n: n), flat_out)
    out_names = _output_names(ctx, flat_out, output_names)
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = _attr(gm, node.target)
            if not isinstance(value, Tensor):  # a constant the recording kept (a dtype, a size)
                env[node.name] = value
                continue
            name = ctx.fresh(node.target)
            env[node.name] = name
            _name_value(ctx, node, name)
            array = value.detach().cpu().numpy()
            ctx.meta[name] = (array.shape, array.dtype)
            params.append((name, array))
            if export_params and not keep_initializers_as_inputs:  # weights a runtime may not replace: foldable
                ctx.folded[name] = array
        elif "sym_expr" in node.meta:  # a size the model computed from a dynamic axis
            expr = node.meta["sym_expr"]
            env[node.name] = ctx.size_value(expr, _dynamic.render(expr, namer))
            ctx.size_axes[env[node.name]] = namer.axes(expr)
        elif node.op == "call_function":
            op = _op_name(node.target)
            emit = EMITTERS.get(op)
            if emit is None and op.endswith("_") and not op.endswith("__"):
                emit = EMITTERS.get(op[:-1])  # in place: the recording already points later uses here
            if emit is None and node.name not in syms and _foldable(ctx, node, op, env):
                env[node.name] = _fold(ctx, node, env)
                continue
            call_args, call_kwargs = map_arg((node.args, node.kwargs), lambda n: env[n.name])
            _check_sizes(ctx, op, node, call_args, call_kwargs)
            if emit is None:
                raise UnsupportedOperatorError(_unsupported(model, args, kwargs, op, node))
            inplace = op not in EMITTERS or op == "setitem"
            bound = _bind(_out_of_place(node.target, op) if inplace else node.target, call_args, call_kwargs)
            if bound is None:
                raise OnnxExporterError(f"could not read the arguments of {op} at node {node.name!r}")
            ctx.op_name = op
            static = _meta(node)
            dims = syms.get(node.name, static and static[0])
            if op in _SIZED and node.name in syms:  # the sizes as given: ints, -1, computed sizes
                dims = _given_sizes(bound, op)
            try:
                out = emit(ctx, bound, (dims, static and static[1]))
            except OnnxExporterError as exc:
                raise type(exc)(f"{exc} (op {op}, node {node.name!r})") from None
            m = _meta(node)
            if isinstance(out, str) and m is not None:
                ctx.meta[out] = m
                if node.name in syms:
                    ctx.sym[out] = syms[node.name]
                # keep its value too, for an unmapped op after it (not where it follows a dynamic axis)
                if node.name not in syms and _foldable(ctx, node, op, env):
                    ctx.folded[out] = _evaluate(ctx, node, env)
            env[node.name] = out
            if isinstance(out, str):
                _name_value(ctx, node, out)
            if inplace:  # ONNX values are immutable: later uses of the mutated value read the result
                _rebind(ctx, node, out, env, op)
        elif node.op == "output":
            outputs = _outputs(ctx, flat_out, out_names, env, syms, dyn_outputs)
        elif node.op != "placeholder":
            raise OnnxExporterError(f"graph node {node.name!r} of kind {node.op!r} cannot be exported")
    initializers = [onnx.numpy_helper.from_array(arr, name) for name, arr in params]
    graph_inputs = list(inputs)
    if keep_initializers_as_inputs or not export_params:
        graph_inputs += [_value_info(name, arr.shape, arr.dtype) for name, arr in params]
    graph = onnx.helper.make_graph(ctx.nodes, _graph_name(model), graph_inputs, outputs,
                                   initializer=initializers if export_params else [])
    from .. import __version__
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                  producer_name="ember", producer_version=str(__version__), ir_version=10)


_RANDOM = ("rand", "normal", "bernoulli", "multinomial", "poisson", "dropout", "uniform", "exponential")


def _foldable(ctx, node, op: str, env) -> bool:
    """An op of constants only (``full``, ``arange`` inside the model), not random: its
    value is the same on every run, so the file holds it as a Constant."""
    from ..fx.node import map_arg
    found = []
    map_arg((node.args, node.kwargs), found.append)
    # a node standing for a non-tensor constant (a dtype, a device) has a Python value in env
    # as has a tensor folded before
    return all(not isinstance(env[n.name], (str, list)) or (isinstance(env[n.name], str) and env[n.name] in ctx.folded)
               for n in found) and \
        not any(r in op for r in _RANDOM)


def _fold(ctx, node, env):
    array = _evaluate(ctx, node, env)
    name = ctx.const(array)
    ctx.folded[name] = array
    return name


def _evaluate(ctx, node, env):
    """Run the op eagerly on the constant values of its inputs."""
    from .. import from_numpy
    from .._tensor import Tensor
    from ..fx.node import map_arg

    def value_of(n):
        v = env[n.name]
        return from_numpy(ctx.folded[v].copy()) if isinstance(v, str) else v

    args, kwargs = map_arg((node.args, node.kwargs), value_of)
    value = node.target(*args, **kwargs)
    if not isinstance(value, Tensor):
        raise OnnxExporterError(f"the op at node {node.name!r} made a {type(value).__name__}, not a tensor")
    return value.detach().cpu().numpy()


def _graph_name(model) -> str:
    return type(model).__name__ if not inspect.isfunction(model) else model.__name__


def _attr(gm, target: str):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _flatten(value, out: list):
    if isinstance(value, (tuple, list)):
        for v in value:
            _flatten(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _flatten(v, out)
    else:
        out.append(value)


def _output_names(ctx, flat, output_names) -> list[str]:
    """The graph's output names (reserved before any other value is named)."""
    from ..fx import Node
    names = list(output_names or [])
    if len(names) > len(flat):
        raise ValueError(f"output_names has {len(names)} names but the model has {len(flat)} outputs")
    for i, node in enumerate(flat):
        if not isinstance(node, Node):
            raise OnnxExporterError(f"output {i} is {type(node).__name__}, not a tensor computed by the model")
        if i >= len(names):
            names.append(node.name if node.op == "call_function" else f"output_{i}")
    return [ctx.fresh(n) for n in names]


def _outputs(ctx, flat, names, env, syms, dyn_outputs):
    import onnx

    from ._dynamic import Sym
    unknown = set(dyn_outputs) - set(names)
    if unknown:
        raise OnnxExporterError(f"dynamic_axes names {sorted(unknown)}, which are neither inputs nor outputs "
                                f"(outputs: {names})")
    infos = []
    for node, name in zip(flat, names):
        # an Identity per output keeps the names as asked, and gives an input or a value
        # returned twice distinct graph outputs
        ctx.nodes.append(onnx.helper.make_node("Identity", [env[node.name]], [name], name=ctx.fresh("node_Identity")))
        shape, dtype = _meta(node)
        dims = syms.get(node.name, shape)
        for axis, axis_name in dyn_outputs.get(name, {}).items():
            if not 0 <= axis < len(dims) or not isinstance(dims[axis], Sym):
                raise OnnxExporterError(f"output {name!r} axis {axis} ({axis_name!r}) was declared dynamic, but it "
                                        f"does not change with any dynamic input axis (output shape {list(shape)})")
        ctx.meta[name] = (shape, dtype)
        infos.append(_value_info(name, dims, dtype, dyn_outputs.get(name)))
    return infos


# emitters reading the result's dims from ``out``
_SIZED = {"view", "reshape", "_unsafe_view", "expand", "zeros", "ones", "empty"}
_SCALAR_OPERAND = {"add", "sub", "mul", "div", "rsub"}  # a computed size as a number operand broadcasts


def _name_value(ctx, node, name) -> None:
    """Remember which ONNX value holds the recording's value ``node`` stands for."""
    index = node.meta.get("value_index")
    if index is not None:
        ctx.value_names[index] = name


def _given_sizes(bound, op) -> list:
    """A view's or expand's size arguments: ints and the ONNX names of computed sizes
    (expand's -1, keep the size, is 1 for ONNX's broadcasting Expand)."""
    sizes = bound.get("sizes" if op == "expand" else "shape", bound.get("size"))
    sizes = list(sizes) if isinstance(sizes, (list, tuple)) else [sizes]
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        sizes = list(sizes[0])
    return [1 if op == "expand" and s == -1 else s for s in sizes]


def _check_sizes(ctx, op, node, call_args, call_kwargs) -> None:
    """A size computed from a dynamic axis may reach the ops that read it as a shape
    (``view``, ``reshape``, ``expand``, a slice bound) or as a number operand (``x + n``);
    any other op fixes the axis."""
    found = []

    def walk(v, in_slice):
        if isinstance(v, str) and v in ctx.size_axes:
            found.append((v, in_slice))
        elif isinstance(v, slice):
            for x in (v.start, v.stop, v.step):
                walk(x, True)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x, in_slice)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x, in_slice)

    walk((call_args, call_kwargs), False)
    for name, in_slice in found:
        if op in _SIZED or op in _SCALAR_OPERAND or (op == "getitem" and in_slice):
            continue
        axes = ", ".join(repr(a) for a in ctx.size_axes[name])
        raise OnnxExporterError(f"dynamic axis {axes} is fixed by the op {op!r} (node {node.name!r}): it is given "
                                f"a size computed from the axis, and its ONNX form takes that argument as a constant")


def _unsupported(model, args, kwargs, op, node) -> str:
    where = _module_path(model, args, kwargs, op)
    return (f"ember.onnx.export: the op {op!r} (node {node.name!r}) has no ONNX mapping; it was met in "
            f"{where}")


def _module_path(model, args, kwargs, op) -> str:
    """Run the model once more, watching for the first call of ``op`` with a stack of the
    modules entered, and name where it happened (``layer1.0.conv1 (Conv2d)``)."""
    from ..nn.modules.module import Module
    from ..ops._dispatch import Mode
    if not isinstance(model, Module):
        return f"function {_graph_name(model)}"
    stack: list[tuple[str, str]] = []
    found: list[str] = []

    class Watch(Mode):
        def wants(self, entry):
            return entry.name == op

        def __ember_op__(self, entry, a, k, proceed):
            if not found:
                found.extend(stack[-1] if stack else ("", type(model).__name__))
            return proceed(a, k)

    def enter(module, inputs, _name):
        stack.append((_name, type(module).__name__))

    def leave(module, inputs, output):
        stack.pop()  # returns None: a forward hook's result would replace the module's output

    handles = []
    for name, mod in model.named_modules():
        handles.append(mod.register_forward_pre_hook(lambda m, i, _n=name: enter(m, i, _n)))
        handles.append(mod.register_forward_hook(leave))
    try:
        with Watch():  # grad mode as in the capture: some ops take other paths under no_grad
            model(*args, **(kwargs or {}))
    except Exception:  # noqa: BLE001 - the location is a courtesy; the error itself is raised by the caller
        pass
    finally:
        for h in handles:
            h.remove()
    if not found:
        return f"module {type(model).__name__}"
    path = found[0]
    return f"module '{path}' ({found[1]})" if path else f"the top-level module ({found[1]})"


def check_opset(opset_version) -> int:
    opset = ONNX_DEFAULT_OPSET if opset_version is None else opset_version
    if not isinstance(opset, int) or not ONNX_MIN_OPSET <= opset <= ONNX_MAX_OPSET:
        raise ValueError(f"opset_version must be an int from {ONNX_MIN_OPSET} to {ONNX_MAX_OPSET}, got {opset!r}")
    return opset


def is_path(f) -> bool:
    return isinstance(f, (str, os.PathLike))
