"""KGE models written in plain PyTorch, the way users write them — no KGE
in sight. `torch.compile(model, backend="kge")` replaces their score
functions by KGE kernels (kge.torch_backend); the tests and the benchmark
compare them with eager PyTorch and with Inductor.

    model = TransE(14951, 1345, 128)
    fast = torch.compile(model, backend="kge")
    scores = fast(h, r, t)
"""

import torch
import torch.nn.functional as F
from torch import nn


class TransE(nn.Module):
    def __init__(self, entities, relations, dim, p=2):
        super().__init__()
        self.entity = nn.Embedding(entities, dim)
        self.relation = nn.Embedding(relations, dim)
        self.p = p

    def forward(self, h, r, t):
        return -torch.norm(self.entity(h) + self.relation(r) - self.entity(t), p=self.p, dim=-1)


class DistMult(nn.Module):
    def __init__(self, entities, relations, dim):
        super().__init__()
        self.entity = nn.Embedding(entities, dim)
        self.relation = nn.Embedding(relations, dim)

    def forward(self, h, r, t):
        return (self.entity(h) * self.relation(r) * self.entity(t)).sum(dim=-1)


class ComplEx(nn.Module):
    """Real and imaginary parts in one embedding of twice the rank."""

    def __init__(self, entities, relations, rank):
        super().__init__()
        self.entity = nn.Embedding(entities, 2 * rank)
        self.relation = nn.Embedding(relations, 2 * rank)

    def forward(self, h, r, t):
        # (Indexing the chunks rather than unpacking them keeps the model
        # traceable by torch.fx.symbolic_trace as well as by Dynamo.)
        head, rel, tail = (torch.chunk(self.entity(h), 2, dim=-1),
                           torch.chunk(self.relation(r), 2, dim=-1),
                           torch.chunk(self.entity(t), 2, dim=-1))
        h_re, h_im, r_re, r_im, t_re, t_im = head[0], head[1], rel[0], rel[1], tail[0], tail[1]
        return (h_re * r_re * t_re + h_im * r_re * t_im
                + h_re * r_im * t_im - h_im * r_im * t_re).sum(dim=-1)


class TransR(nn.Module):
    """Entities projected into each relation's space by its matrix."""

    def __init__(self, entities, relations, dim, relation_dim):
        super().__init__()
        self.entity = nn.Embedding(entities, dim)
        self.relation = nn.Embedding(relations, relation_dim)
        self.projection = nn.Parameter(torch.randn(relations, dim, relation_dim) / dim ** 0.5)

    def forward(self, h, r, t):
        m = self.projection[r]
        head = torch.bmm(self.entity(h).unsqueeze(1), m).squeeze(1)
        tail = torch.bmm(self.entity(t).unsqueeze(1), m).squeeze(1)
        return -torch.norm(head + self.relation(r) - tail, p=2, dim=-1)


class RotatE(nn.Module):
    """Relations as rotations (phases) in the complex plane."""

    def __init__(self, entities, relations, rank):
        super().__init__()
        self.entity = nn.Embedding(entities, 2 * rank)
        self.phase = nn.Embedding(relations, rank)

    def forward(self, h, r, t):
        rank = self.phase.embedding_dim
        head, tail = self.entity(h), self.entity(t)
        h_re, h_im = head[..., :rank], head[..., rank:]
        t_re, t_im = tail[:, :rank], tail[:, rank:]
        phase = self.phase(r)
        r_re, r_im = torch.cos(phase), torch.sin(phase)
        re = h_re * r_re - h_im * r_im - t_re
        im = h_re * r_im + h_im * r_re - t_im
        return -torch.sqrt(re * re + im * im).sum(dim=-1)


class FunctionalDistMult(nn.Module):
    """Tables as plain parameters read with F.embedding, index_select and
    indexing: the forms Dynamo records once it inlines nn.Modules."""

    def __init__(self, entities, relations, dim):
        super().__init__()
        self.E = nn.Parameter(torch.randn(entities, dim) * 0.1)
        self.R = nn.Parameter(torch.randn(relations, dim) * 0.1)

    def forward(self, h, r, t):
        head = F.embedding(h, self.E)
        rel = torch.index_select(self.R, 0, r)
        tail = self.E[t]
        return torch.einsum("bd,bd->b", head * rel, tail)


class SoftplusLoss(nn.Module):
    """A model's scores in the usual logistic loss: the loss stays PyTorch
    (Inductor), the scores become a KGE kernel."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, h, r, t, labels):
        return F.softplus(-labels * self.model(h, r, t)).mean()


MODELS = {"transe": lambda n, m, d: TransE(n, m, d),
          "transe_l1": lambda n, m, d: TransE(n, m, d, p=1),
          "distmult": DistMult, "complex": lambda n, m, d: ComplEx(n, m, d // 2),
          "transr": lambda n, m, d: TransR(n, m, d, d // 2),
          "rotate": lambda n, m, d: RotatE(n, m, d // 2),
          "functional_distmult": FunctionalDistMult}
