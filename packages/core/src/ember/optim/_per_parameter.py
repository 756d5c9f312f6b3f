"""The step loop that the elementwise algorithms share: for each parameter with a
gradient, its state (made on first use, tensors so that state_dict moves to torch), the
'step' counter advanced, then the algorithm's update on plain arrays."""

from __future__ import annotations

from .optimizer import Optimizer, _step_tensor, _step_wrapper


class PerParameterOptimizer(Optimizer):
    """Subclasses give ``_init_state(p, state, group)`` (state tensors besides 'step') and
    ``_update(param, grad, state, group, step)``, where param, grad and the state values
    are arrays to update in place and ``step`` the step number (>= 1) as a float."""

    def _init_state(self, p, state, group) -> None:
        raise NotImplementedError

    def _update(self, param, grad, state, group, step) -> None:
        raise NotImplementedError

    def _update_group(self, group, updates) -> None:
        """Every ``(param, grad, state, step)`` of one group (a subclass may fuse them into
        one launch on a GPU); by default one ``_update`` each."""
        for param, grad, state, step in updates:
            self._update(param, grad, state, group, step)

    @_step_wrapper
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            updates, updated = [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if type(p.grad._data) is not type(p._data):
                    raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                                       f"devices, {p.device} and {p.grad.device}!")
                state = self.state[p]
                if "step" not in state:
                    state["step"] = _step_tensor()
                    self._init_state(p, state, group)
                state["step"]._data += 1
                grad = p.grad._data
                if group.get("maximize", False):
                    grad = -grad
                arrays = {k: v._data for k, v in state.items()}
                updates.append((p._data, grad, arrays, float(state["step"]._data)))
                updated.append((p, state))
            self._update_group(group, updates)
            for p, state in updated:
                p._vc[0] += 1
                for value in state.values():
                    value._vc[0] += 1
        return loss
