"""The words the model and the command line share, NumPy-free so that option checking and `--help`
can use them without loading the math: the stages in order and the mask kinds."""

import functools

STAGES = ("embed", "pe", "qkv", "scores", "mask", "softmax", "attend", "encoder", "decoder", "backward")
FORWARD_STAGES = STAGES[:-1]  # up to the loss; backward: the gradients (core/backward.py)
MASK_KINDS = ("none", "causal", "padding", "causal+padding")
VERDICTS = ("correct", "carried", "slip", "not_attempted")  # a checked cell (learn/check.py), in this order
OPTIMIZERS = ("sgd", "adam")  # the optimiser steps after the backward pass (core/optim.py)

# The tensors that may hold −∞ (blocked scores, and scores given with blocked cells); a pipe document's
# other tensors may not ("-inf" in Q would silently give a row of NaN or zeros further on).
SCORE_TENSORS = ("S", "S_scaled", "S_masked")


def may_be_blocked(name: str) -> bool:
    """Whether tensor `name` (`S_masked`, `enc.0.S_masked`, `step.3.dec.0.self.S`) may hold −∞."""
    return name.rpartition(".")[2] in SCORE_TENSORS


@functools.cache
def dim_labels(n):
    """Column labels 0 … n−1; one shared list per width (a real model asks for 1536 of them per node)."""
    return [str(j) for j in range(n)]
