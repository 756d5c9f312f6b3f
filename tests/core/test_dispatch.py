"""The dispatch seam: a mode sees every call of the ops it wants, through every reference
to them, on its own thread only, and leaves nothing behind when it exits."""

import collections
import threading

import pytest

import ember
from ember import add as captured_add
from ember.ops import _dispatch


class Count(_dispatch.Mode):
    def __init__(self, only=None):
        self.only = only
        self.calls = collections.Counter()

    def wants(self, op):
        return self.only is None or op.name in self.only

    def __ember_op__(self, op, args, kwargs, proceed):
        self.calls[op.name] += 1
        return proceed(args, kwargs)


def test_every_reference_to_an_op_is_seen():
    a, b = ember.ones(2), ember.ones(2)
    with Count({"add"}) as mode:
        ember.add(a, b)
        a.add(b)
        _ = a + b
        captured_add(a, b)
        ember.ops.elementwise.add(a, b)
        ember.mul(a, b)  # not wanted
    assert mode.calls == {"add": 5}


def test_modules_calling_ops_they_imported_by_name_are_seen():
    layer = ember.nn.Linear(3, 2)
    with Count({"linear"}) as mode:
        layer(ember.ones(4, 3))
    assert mode.calls["linear"] == 1


def test_no_trampoline_is_left_when_modes_exit():
    code = ember.add.__code__
    with Count({"add"}):
        assert ember.add.__code__ is not code
        with Count({"add"}):
            pass
        assert ember.add.__code__ is not code  # the outer mode still listens
    assert ember.add.__code__ is code


def test_results_and_errors_pass_through_unchanged():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    with Count() as mode:
        out = (a * 3).sum()
        out.backward()
        with pytest.raises(RuntimeError, match="must match the size"):
            ember.add(ember.ones(2), ember.ones(3))
    assert a.grad.tolist() == [3.0, 3.0] and out.item() == 9.0
    assert mode.calls["mul"] >= 1 and mode.calls["add"] == 1
    assert ember.add.__code__ is _dispatch.entry_of(ember.add).code


def test_inner_modes_run_first_and_proceed_reaches_the_op():
    order = []

    class Tag(_dispatch.Mode):
        def __init__(self, tag):
            self.tag = tag

        def wants(self, op):
            return op.name == "neg"

        def __ember_op__(self, op, args, kwargs, proceed):
            order.append(self.tag)
            return proceed(args, kwargs)

    with Tag("outer"), Tag("inner"):
        assert ember.neg(ember.ones(1)).item() == -1.0
    assert order == ["inner", "outer"]


def test_a_mode_may_change_the_arguments():
    class Double(_dispatch.Mode):
        def wants(self, op):
            return op.name == "neg"

        def __ember_op__(self, op, args, kwargs, proceed):
            return proceed((args[0] * 2,), kwargs)

    with Double():
        assert ember.neg(ember.ones(1)).item() == -2.0
    assert ember.neg(ember.ones(1)).item() == -1.0


def test_modes_belong_to_the_thread_that_entered_them():
    seen_elsewhere = []

    def other():
        seen_elsewhere.append(ember.add(ember.ones(1), ember.ones(1)).item())

    with Count({"add"}) as mode:
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        ember.add(ember.ones(1), ember.ones(1))
    assert seen_elsewhere == [2.0]
    assert mode.calls == {"add": 1}


def test_autocast_casts_through_the_seam_on_its_thread_only():
    a, b = ember.ones(2, 2), ember.ones(2, 2)
    dtypes = []
    worker = threading.Thread(target=lambda: dtypes.append(ember.matmul(a, b).dtype))
    with ember.autocast("cpu"):
        assert ember.matmul(a, b).dtype is ember.bfloat16
        assert a.matmul(b).dtype is ember.bfloat16  # the Tensor method is the same op
        worker.start()
        worker.join()
    assert dtypes == [ember.float32]
    assert ember.matmul.__code__ is _dispatch.entry_of(ember.matmul).code


def test_every_public_op_is_registered():
    import ember.nn.functional as F

    for fn in (ember.add, ember.matmul, ember.sum, ember.cat, ember.linalg.inv, ember.fft.rfft, ember.special.erfcx,
               F.conv2d, F.embedding, F.scaled_dot_product_attention):
        assert _dispatch.entry_of(fn) is not None, fn.__name__
