"""Named tuples returned by ops with several results (torch.return_types)."""

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])
min = namedtuple("min", ["values", "indices"])
sort = namedtuple("sort", ["values", "indices"])
topk = namedtuple("topk", ["values", "indices"])
var_mean = namedtuple("var_mean", ["var", "mean"])
std_mean = namedtuple("std_mean", ["std", "mean"])
