"""The words the model and the command line share, NumPy-free so that option checking and `--help`
can use them without loading the math: the stages in order and the mask kinds."""

STAGES = ("embed", "pe", "qkv", "scores", "mask", "softmax", "attend", "encoder", "decoder")
MASK_KINDS = ("none", "causal", "padding", "causal+padding")
