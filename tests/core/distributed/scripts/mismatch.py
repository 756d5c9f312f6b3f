"""Mismatched collectives under the debug mode: each rank writes the errors it got to
OUT/rank<r>.txt (argv: OUT), one per line."""
import sys

import ember
import ember.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
errors = []
cases = [lambda: dist.all_reduce(ember.ones(3 + rank)),                     # shapes differ
         lambda: dist.all_reduce(ember.ones(2)) if rank == 0 else dist.broadcast(ember.ones(2), src=0),
         lambda: dist.all_reduce(ember.ones(2, dtype=ember.float64 if rank else ember.float32)),
         lambda: dist.all_reduce(ember.ones(2), op=dist.ReduceOp.MAX if rank else dist.ReduceOp.SUM)]
for case in cases:
    try:
        case()
    except RuntimeError as e:
        errors.append(str(e))
t = ember.ones(2)
dist.all_reduce(t)  # matching collectives still run
assert t.tolist() == [2.0, 2.0]
with open(f"{sys.argv[1]}/rank{rank}.txt", "w") as f:
    f.write("\n".join(errors))
