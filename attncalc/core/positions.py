"""Position encodings: sinusoidal tables, rotary embeddings (RoPE) and ALiBi biases, in float64.

References:
- Vaswani et al., "Attention Is All You Need" (2017), sec. 3.5: the sinusoidal table.
- Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding" (2021): RoPE, interleaved pairs.
- Hugging Face transformers, `modeling_rope_utils.py` (v5): the scaled variants `linear`
  (kaiokendev), `dynamic` (NTK-aware, bloc97/emozilla), `yarn` (Peng et al., "YaRN", 2023) and
  `llama3` (Meta, Llama 3.1), and `modeling_llama.rotate_half` for the "half" layout.
- bloc97, "NTK-Aware Scaled RoPE" (r/LocalLLaMA, 2023), and YaRN sec. 3.1: static NTK-aware scaling,
  base × α^(d/(d−2)) with a fixed α (`ntk`; `dynamic` is the same formula with α growing with the length).
- Press et al., "Train Short, Test Long: Attention with Linear Biases" (ALiBi, 2022), and BLOOM's
  `build_alibi_tensor` in transformers.
"""

import math

import numpy as np

from attncalc.errors import InputError, describe

ROPE_TYPES = ("default", "linear", "ntk", "dynamic", "yarn", "llama3")
LAYOUTS = ("half", "interleaved")


def sinusoidal(n: int, d: int, base: float = 10000.0, offset: int = 0) -> np.ndarray:
    """Sinusoidal table [n, d]: even columns sin(pos / base^(2i/d)), odd columns the matching cos."""
    if n < 0:
        raise InputError("n", "a number of positions >= 0", describe(n))
    if d < 1:
        raise InputError("d", "a model dimension >= 1", describe(d))
    pos = np.arange(offset, offset + n, dtype=np.float64)  # [n]
    two_i = 2.0 * (np.arange(d) // 2)  # [d]: 0, 0, 2, 2, 4, ...
    angles = pos[:, None] / np.power(float(base), two_i / d)[None, :]  # [n, d]
    return np.where(np.arange(d) % 2 == 0, np.sin(angles), np.cos(angles))  # [n, d]


def _need(scaling: dict, key: str, why: str):
    """Return scaling[key] (a whole number ≥ 1: a context length), or raise InputError naming the key."""
    value = scaling.get(key)
    if value is None:
        raise InputError(f"position.scaling.{key}", why, "nothing")
    return _number(scaling, key, whole=True)


def _number(scaling: dict, key: str, default=None, least: float = 1, whole: bool = False):
    """scaling[key] (or `default` when absent), checked to be a finite number ≥ `least` (a whole one for a
    context length): a NaN, 0 or text would divide by zero or take the log of nothing further on."""
    value = scaling.get(key)
    if value is None:
        return default
    number = not isinstance(value, bool) and isinstance(value, (int, float))
    if not number or not math.isfinite(value) or not value >= least or (whole and value != int(value)):
        what = "a whole number" if whole else "a finite number"
        raise InputError(f"position.scaling.{key}", f"{what} >= {least:g}", _shown(value))
    return int(value) if whole else float(value)


def _shown(value) -> str:
    return str(value) if isinstance(value, float) else describe(value)


def _factor(scaling: dict) -> float:
    """The scaling factor, checked to be a number >= 1."""
    factor = _number(scaling, "factor")
    if factor is None:
        raise InputError("position.scaling.factor", "a number >= 1", "None")
    return factor


def _original_max(scaling: dict) -> int:
    """original_max_position_embeddings, defaulting to max_position_embeddings as HF's standardize_rope_params."""
    key = "original_max_position_embeddings"
    value = _number(scaling, key if key in scaling else "max_position_embeddings", whole=True)
    if value is None:
        raise InputError(
            "position.scaling.original_max_position_embeddings",
            "the pretraining context length (or max_position_embeddings)",
            "nothing",
        )
    return value


def _yarn(inv_freq: np.ndarray, dim: int, theta: float, scaling: dict) -> tuple[np.ndarray, float]:
    """YaRN as transformers' _compute_yarn_parameters: ramp between interpolated and extrapolated frequencies."""
    original_max = _original_max(scaling)
    if scaling.get("factor") is None and scaling.get("max_position_embeddings") is not None:
        factor = _number(scaling, "max_position_embeddings", whole=True) / original_max  # HF: DeepSeek-V3 style
        if factor < 1:
            raise InputError("position.scaling.factor", "a number >= 1", describe(factor))
    else:
        factor = _factor(scaling)

    def get_mscale(scale, mscale=1.0):
        return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0

    attention_factor = _number(scaling, "attention_factor", least=0)
    mscale, mscale_all_dim = _number(scaling, "mscale", least=0), _number(scaling, "mscale_all_dim", least=0)
    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
        else:
            attention_factor = get_mscale(factor)
    beta_fast = _number(scaling, "beta_fast", least=0) or 32  # HF uses `or`: 0 also means the default
    beta_slow = _number(scaling, "beta_slow", least=0) or 1

    def correction_dim(rotations):
        return (dim * math.log(original_max / (rotations * 2 * math.pi))) / (2 * math.log(theta))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # HF: prevent a division by zero
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)  # [dim/2]
    extrapolation = 1.0 - ramp  # [dim/2]: weight of the unscaled frequency
    inv = (inv_freq / factor) * (1.0 - extrapolation) + inv_freq * extrapolation  # [dim/2]
    return inv, float(attention_factor)


def _llama3(inv_freq: np.ndarray, scaling: dict) -> np.ndarray:
    """Llama 3.1 as transformers' _compute_llama3_parameters: divide low frequencies, keep high, blend between."""
    factor = _factor(scaling)
    low_ff = _number(scaling, "low_freq_factor", 1.0, least=0)
    high_ff = _number(scaling, "high_freq_factor", 4.0, least=0)
    if high_ff <= low_ff:
        raise InputError(
            "position.scaling.high_freq_factor", f"a number > low_freq_factor ({low_ff})", describe(high_ff)
        )
    old_len = _original_max(scaling)
    low_wavelen, high_wavelen = old_len / low_ff, old_len / high_ff
    wavelen = 2 * math.pi / inv_freq  # [dim/2]
    inv = np.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)  # [dim/2]
    smooth = (old_len / wavelen - low_ff) / (high_ff - low_ff)  # [dim/2]
    smoothed = (1 - smooth) * inv / factor + smooth * inv  # [dim/2]
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)  # [dim/2]
    return np.where(medium, smoothed, inv)  # [dim/2]


def rope_inv_freq(
    head_dim: int, theta: float = 10000.0, scaling: dict | None = None, seq_len: int | None = None
) -> tuple[np.ndarray, float]:
    """RoPE inverse frequencies [head_dim//2] and attention factor, with optional Hugging Face scaling.

    `scaling` keys (type key "rope_type" wins over "type"; missing type means "default"):
      linear:  factor (>= 1, required).
      ntk:     factor α (>= 1, required): static NTK-aware, base θ' = θ · α^(d/(d−2)) at every length.
      dynamic: factor (>= 1, required), max_position_embeddings (required when seq_len is given);
               base grows only when seq_len > max_position_embeddings; seq_len None means no growth.
      yarn:    factor (>= 1; if missing, max_position_embeddings / original_max_position_embeddings),
               original_max_position_embeddings (default max_position_embeddings, as HF),
               beta_fast (32), beta_slow (1), attention_factor (None: from factor, mscale, mscale_all_dim),
               truncate (True). seq_len is unused.
      llama3:  factor (>= 1, required), low_freq_factor (1.0), high_freq_factor (4.0) (HF requires both;
               the defaults are Llama 3.1's), original_max_position_embeddings (default max_position_embeddings).
    """
    if isinstance(head_dim, bool) or not isinstance(head_dim, (int, np.integer)) or head_dim < 2 or head_dim % 2:
        raise InputError("head_dim", "an even number >= 2 for RoPE", describe(head_dim))
    scaling = dict(scaling or {})
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind not in ROPE_TYPES:
        raise InputError("position.scaling.type", "one of " + ", ".join(ROPE_TYPES), describe(kind))
    theta = float(theta)
    dim = int(head_dim)
    if kind == "ntk":
        if dim < 4:
            raise InputError("head_dim", "an even number >= 4 for NTK scaling", describe(head_dim))
        # the highest frequency stays 1 while the lowest is divided by α: θ'^((d−2)/d) = θ^((d−2)/d) · α
        theta = theta * _factor(scaling) ** (dim / (dim - 2))
    if kind == "dynamic":
        factor = _factor(scaling)
        if seq_len is not None:
            if dim < 4:
                raise InputError("head_dim", "an even number >= 4 for dynamic scaling", describe(head_dim))
            max_pos = _need(scaling, "max_position_embeddings", "the context length beyond which the base grows")
            seq = max(seq_len, max_pos)
            theta = theta * ((factor * seq / max_pos) - (factor - 1)) ** (dim / (dim - 2))
    inv_freq = 1.0 / np.power(theta, np.arange(0, dim, 2, dtype=np.float64) / dim)  # [dim/2]
    if kind == "linear":
        return inv_freq / _factor(scaling), 1.0
    if kind == "yarn":
        return _yarn(inv_freq, dim, theta, scaling)
    if kind == "llama3":
        return _llama3(inv_freq, scaling), 1.0
    return inv_freq, 1.0


def rope_angles(positions: np.ndarray, inv_freq: np.ndarray) -> np.ndarray:
    """Rotation angles [n, head_dim//2]: each position times each inverse frequency."""
    positions = np.asarray(positions, dtype=np.float64).reshape(-1)  # [n]
    inv_freq = np.asarray(inv_freq, dtype=np.float64).reshape(-1)  # [head_dim/2]
    return positions[:, None] * inv_freq[None, :]  # [n, head_dim/2]


def _check_layout(layout: str) -> None:
    """Raise InputError unless layout is "half" or "interleaved"."""
    if layout not in LAYOUTS:
        raise InputError("layout", "one of " + ", ".join(LAYOUTS), describe(layout))


_last_trig: list = [None]  # (angles, factor, cos, sin) of the last rope_trig: every layer's Q and K share them


def rope_trig(angles: np.ndarray, attention_factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) of angles [n, head_dim//2], each times attention_factor (read-only). A 512-token forward
    asks for the same ones 60 times (Q and K of every layer): the last pair is kept with a copy of its
    angles and given again when the angles equal it, value for value (a comparison costs a tenth of them)."""
    angles = np.asarray(angles, dtype=np.float64)
    last = _last_trig[0]
    if (
        last is not None
        and last[1] == attention_factor
        and last[0].shape == angles.shape
        and np.array_equal(last[0], angles)
    ):
        return last[2], last[3]
    cos, sin = np.cos(angles) * attention_factor, np.sin(angles) * attention_factor
    for a in (cos, sin):
        a.flags.writeable = False
    _last_trig[0] = (angles.copy(), attention_factor, cos, sin)
    return cos, sin


def rope_rotate(
    x: np.ndarray, angles: np.ndarray, layout: str = "half", attention_factor: float = 1.0, out=None, trig=None
) -> np.ndarray:
    """Rotate x [..., n, head_dim] by angles [n, head_dim//2]; cos and sin scaled by attention_factor as HF
    (`trig`: those two, [n, head_dim//2] each, when the caller has them). Into `out` (x's shape, any strides)
    when given; each half is x₁·cos − x₂·sin (x₂·cos + x₁·sin) written product by product into it, with one
    temporary of half its size."""
    _check_layout(layout)
    x = np.asarray(x, dtype=np.float64)  # [..., n, head_dim]
    angles = np.asarray(angles, dtype=np.float64)  # [n, head_dim/2]
    if x.ndim < 2 or x.shape[-1] % 2:
        raise InputError("head_dim", "an even last dimension of x for RoPE", describe(x.shape))
    if angles.shape != (x.shape[-2], x.shape[-1] // 2):
        raise InputError("angles", f"shape {(x.shape[-2], x.shape[-1] // 2)}", describe(angles.shape))
    cos, sin = rope_trig(angles, attention_factor) if trig is None else trig  # [n, head_dim/2] each
    out = np.empty_like(x) if out is None else out  # [..., n, head_dim]
    halves = (
        (slice(None, x.shape[-1] // 2), slice(x.shape[-1] // 2, None))
        if layout == "half"
        else (slice(0, None, 2), slice(1, None, 2))
    )
    x1, x2 = x[..., halves[0]], x[..., halves[1]]  # [..., n, head_dim/2] each
    o1, o2 = out[..., halves[0]], out[..., halves[1]]
    product = np.empty(x1.shape)
    np.subtract(np.multiply(x1, cos, out=o1), np.multiply(x2, sin, out=product), out=o1)
    np.add(np.multiply(x2, cos, out=o2), np.multiply(x1, sin, out=product), out=o2)
    return out


def rope_pair(j: int, head_dim: int, layout: str) -> tuple[int, int, int]:
    """For output dim j: (angle index p, partner dim, sign) with out[j] = x[j]cos(a_p) + sign*x[partner]sin(a_p)."""
    _check_layout(layout)
    if head_dim < 2 or head_dim % 2:
        raise InputError("head_dim", "an even number >= 2 for RoPE", describe(head_dim))
    if not 0 <= j < head_dim:
        raise InputError("j", f"a dimension in 0..{head_dim - 1}", describe(j))
    if layout == "half":
        h = head_dim // 2
        return (j, j + h, -1) if j < h else (j - h, j - h, 1)
    return (j // 2, j + 1, -1) if j % 2 == 0 else (j // 2, j - 1, 1)


def alibi_slopes(n_heads: int) -> np.ndarray:
    """ALiBi head slopes [h]: 2^(-8k/n), k = 1..n, with the paper's rule when n is not a power of two."""
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads < 1:
        raise InputError("n_heads", "a number of heads >= 1", describe(n_heads))
    m = 2 ** int(math.floor(math.log2(n_heads)))  # closest power of two <= n_heads
    slopes = 2.0 ** (-8.0 * np.arange(1, m + 1, dtype=np.float64) / m)  # [m]
    if m == n_heads:
        return slopes
    odd = np.arange(1, 2 * (n_heads - m), 2, dtype=np.float64)  # every other slope of 2m heads
    return np.concatenate([slopes, 2.0 ** (-8.0 * odd / (2 * m))])  # [h]


def alibi_bias(n_heads: int, n_q: int, n_k: int, q_offset: int | None = None) -> np.ndarray:
    """ALiBi bias [h, n_q, n_k] = -slope_h * (i - j), i the absolute query position, j the key position.

    By default q_offset = n_k - n_q, so the last query sits at the last key (decoding with a cache).
    BLOOM's `build_alibi_tensor` adds slope_h * j instead; that differs from this by -slope_h * i, a
    constant per query row, which softmax cancels, so both give the same attention weights, causal or not.
    """
    slopes = alibi_slopes(n_heads)  # [h]
    if n_q < 0 or n_k < 0:
        raise InputError("n_q" if n_q < 0 else "n_k", "a length >= 0", describe(min(n_q, n_k)))
    offset = n_k - n_q if q_offset is None else q_offset
    i = offset + np.arange(n_q, dtype=np.float64)  # [n_q]
    j = np.arange(n_k, dtype=np.float64)  # [n_k]
    return -slopes[:, None, None] * (i[:, None] - j[None, :])[None, :, :]  # [h, n_q, n_k]
