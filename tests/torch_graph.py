"""The forward graph run again in PyTorch (float64), one torch function per operation written from the
math, not from attncalc's NumPy, so that autograd gives an independent gradient of every tensor.

`run(graph, seed)` returns {name: (value, gradient)} for every tensor `seed` is computed from, with
d`seed` = 1 in every cell (the loss, or a block's output summed). Operations whose output depends on
positions only (the mask, ALiBi's bias, RoPE's angles, sinusoidal PE) are taken from the graph as
constants, as attncalc treats them. A fully blocked row of scores gives weights 0 (not torch's NaN),
so its gradient is 0: softmax over a row of zeros, times 0.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from attncalc.core import layer_ops as lo
from attncalc.core import ops
from attncalc.core import position_ops as po

CONSTANT = (po.MaskMatrix, po.Alibi, po.Angles, po.Sinusoidal)


def _heads(x, h):
    n, w = x.shape
    return x.reshape(n, h, w // h).transpose(0, 1)  # [h, n, d]


def _rope(x, angles, h, layout, factor):
    xh = _heads(x, h)
    cos, sin = torch.cos(angles) * factor, torch.sin(angles) * factor
    if layout == "half":
        half = xh.shape[-1] // 2
        x1, x2 = xh[..., :half], xh[..., half:]
        out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    else:
        x1, x2 = xh[..., 0::2], xh[..., 1::2]
        out = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)
    return out.transpose(0, 1).reshape(x.shape)


def _softmax(s):
    dead = torch.isinf(s).all(dim=-1, keepdim=True)  # a fully blocked row
    return torch.softmax(torch.where(dead, torch.zeros_like(s), s), dim=-1) * (~dead)


def _apply(op, xs):
    if isinstance(op, ops.Lookup):
        return xs[0][torch.as_tensor(op.ids)] * op.scale
    if isinstance(op, ops.Identity):
        return xs[0]
    if isinstance(op, ops.Add):
        return xs[0] + xs[1]
    if isinstance(op, ops.Affine):
        y = xs[0] @ (xs[1].T if op.transpose else xs[1])
        return y + xs[2] if len(xs) > 2 else y
    if isinstance(op, ops.Scores):
        q, k = _heads(xs[0], op.h), _heads(xs[1], op.g).repeat_interleave(op.h // op.g, dim=0)
        s = q @ k.transpose(1, 2)
        return s[0] if op.h == 1 else s
    if isinstance(op, ops.Scale):
        return xs[0] * op.c + (xs[1] if len(xs) > 1 else 0)
    if isinstance(op, ops.Mask):
        return xs[0].masked_fill(xs[1] == 0, -math.inf)
    if isinstance(op, ops.Softmax):
        return _softmax(xs[0])
    if isinstance(op, ops.Attend):
        a = xs[0][None] if xs[0].ndim == 2 else xs[0]
        v = _heads(xs[1], op.g).repeat_interleave(op.h // op.g, dim=0)
        o = a @ v
        return o.transpose(0, 1).reshape(o.shape[1], -1)
    if isinstance(op, po.Rope):
        return _rope(xs[0], xs[1], op.h, op.layout, op.factor)
    if isinstance(op, lo.Activation):
        return {
            "relu": torch.relu,
            "gelu": F.gelu,
            "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
            "silu": F.silu,
        }[op.fn](xs[0])
    if isinstance(op, lo.SwiGLU):
        return F.silu(xs[0]) * xs[1]
    if isinstance(op, lo.LayerNorm):
        return F.layer_norm(xs[0], xs[0].shape[-1:], xs[1], xs[2], op.eps)
    if isinstance(op, lo.RMSNorm):
        return xs[0] * torch.rsqrt((xs[0] ** 2).mean(-1, keepdim=True) + op.eps) * xs[1]
    if isinstance(op, lo.NegLogLikelihood):
        return F.cross_entropy(xs[0][torch.as_tensor(op.rows)], torch.as_tensor(op.labels), reduction="none")
    if isinstance(op, lo.Mean):
        return xs[0].mean()
    raise TypeError(type(op).__name__)


def run(graph, seed: str, stop=()) -> dict:
    """{tensor: (torch value, autograd gradient)} for every tensor `seed` depends on (through `stop`'s
    inputs no gradient is asked for)."""
    order = [n for n in graph.nodes if n in graph.upstream([seed])]
    vals = {}
    for name in order:
        node = graph.nodes[name]
        if node.is_leaf or name in stop or isinstance(node.op, CONSTANT):
            t = torch.tensor(np.asarray(graph.value(name), dtype=float), dtype=torch.float64)
            vals[name] = t.requires_grad_(not isinstance(node.op, CONSTANT))
        else:
            vals[name] = _apply(node.op, [vals[i] for i in node.inputs])
            if vals[name].requires_grad:
                vals[name].retain_grad()
    vals[seed].backward(torch.ones_like(vals[seed]))
    return {n: (t.detach().numpy(), None if t.grad is None else t.grad.numpy()) for n, t in vals.items()}
