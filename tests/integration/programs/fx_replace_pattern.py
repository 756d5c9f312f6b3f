"""A torch.fx program: subgraph_rewriter.replace_pattern swaps every occurrence of a
pattern for a replacement (the example of torch.fx's documentation)."""

import torch
from torch.fx import subgraph_rewriter, symbolic_trace


class M(torch.nn.Module):
    def forward(self, x, w1, w2):
        m1 = torch.cat([w1, w2]).sum()
        m2 = torch.cat([w1, w2]).sum()
        return x + torch.max(m1) + torch.max(m2)


def pattern(w1, w2):
    return torch.cat([w1, w2]).sum()


def replacement(w1, w2):
    return torch.stack([w1, w2])


traced = symbolic_trace(M())
x, w1, w2 = torch.ones(3), torch.linspace(0, 1, 3), torch.linspace(-2, 5, 3)
print("before", [round(v, 4) for v in traced(x, w1, w2).tolist()])
matches = subgraph_rewriter.replace_pattern(traced, pattern, replacement)
print("matches", len(matches), sorted(n.name for m in matches for n in m.nodes_map))
print(traced.code)
print("after", [round(v, 4) for v in traced(x, w1, w2).tolist()])
