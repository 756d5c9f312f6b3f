"""The generic Join with a joinable of its own: rank r runs 2 + r iterations, each an
all-reduce of r + 1; a joined rank's hook answers with 0. Every rank writes, one per line,
the sums it saw ("sum i s"), how many iterations its hook shadowed ("shadowed n") and
is_last_joiner ("last b") to OUT/rank<r>.txt. argv: OUT."""
import sys

import ember
import ember.distributed as dist
from ember.distributed.algorithms import Join, Joinable, JoinHook

dist.init_process_group("gloo")
rank = dist.get_rank()
lines = []


class Counter(Joinable):
    def __init__(self):
        super().__init__()
        self.shadowed = 0

    def step(self):
        Join.notify_join_context(self)
        value = ember.tensor([rank + 1.0])
        dist.all_reduce(value)
        return value.item()

    def join_hook(self, **kwargs):
        counter, scale = self, kwargs["scale"]

        class Hook(JoinHook):
            def main_hook(self):
                counter.shadowed += 1
                dist.all_reduce(ember.zeros(1) * scale)

            def post_hook(self, is_last_joiner):
                lines.append(f"last {is_last_joiner}")
        return Hook()

    @property
    def join_device(self):
        return ember.device("cpu")

    @property
    def join_process_group(self):
        return dist.group.WORLD


counter = Counter()
with Join([counter], scale=2.0):
    for i in range(2 + rank):
        lines.append(f"sum {i} {counter.step():g}")
lines.append(f"shadowed {counter.shadowed}")
# outside a Join (or with enable=False) notify_join_context does nothing
assert Join.notify_join_context(counter) is None
with Join([counter], enable=False, scale=1.0):
    lines.append(f"even {counter.step():g}")
try:
    Join([])
except ValueError as e:
    lines.append(f"empty {e}")
with open(f"{sys.argv[1]}/rank{rank}.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
