"""Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): what its cache holds and what its attention weighs.

DeepSeek-V2 (arXiv 2405.04434, sec. 2.1): every head's key and value are up-projected from one compressed latent
c_KV of `kv_lora_rank` values per token, and RoPE rides on one extra key k_R of `qk_rope_head_dim` values shared
by all heads. The cache keeps only those two: per token per layer (kv_lora_rank + qk_rope_head_dim) values, one
row (no separate K and V), whatever the number of heads. DeepSeek-V3 in bf16: 61 × (512 + 64) × 2 = 70,272 B.

Attention FLOPs: prefill runs as multi-head attention on the up-projected keys (qk_nope_head_dim +
qk_rope_head_dim = 192 per head for the scores, v_head_dim = 128 for the values); decode folds W_UK into the query
and W_UV into the output and attends in the latent (512 + 64 for the scores, 512 for the values), as vLLM's and
SGLang's MLA decode kernels do. Parameters per layer (transformers' DeepseekV3Attention): q_a_proj d × q_lora_rank,
its norm, q_b_proj q_lora_rank × heads·(nope + rope) (or q_proj d × heads·(nope + rope) without q_lora_rank),
kv_a_proj_with_mqa d × (kv_lora_rank + rope), its norm, kv_b_proj kv_lora_rank × heads·(nope + v), o_proj
heads·v × d. Pure: no I/O; notes are `attncalc.texts` sentences.
"""

from __future__ import annotations

from attncalc import texts
from attncalc.serving.fields import get_int

MLA_TYPES = ("deepseek_v2", "deepseek_v3", "kimi_k2")


def is_mla(cfg: dict) -> bool:
    return cfg.get("model_type") in MLA_TYPES or cfg.get("kv_lora_rank") is not None


def dims(cfg: dict, at: str) -> dict:
    """The latent's and the heads' widths, each read from its key."""
    names = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    d = {name: get_int(cfg, (name,), at)[1] for name in names}
    d["q_lora_rank"] = get_int(cfg, ("q_lora_rank",), at, required=False)[1]
    return d


def heads(cfg: dict, at: str, notes: list) -> dict:
    """MLA's heads for the cache: one latent row shared by every query head (like MQA, but up-projected)."""
    _, n_heads = get_int(cfg, ("num_attention_heads",), at)
    _, d_model = get_int(cfg, ("hidden_size",), at)
    d = dims(cfg, at)
    rank, rope = d["kv_lora_rank"], d["qk_rope_head_dim"]
    notes.append(texts.t("kvcache.mla", rank=rank, rope=rope, heads=n_heads))
    return {
        "heads": n_heads,
        "kv": 1,
        "group": n_heads,
        "d_model": d_model,
        "head_dim": rank + rope,
        "tensors": 1,
        "mla": d,
        "qk_dim": d["qk_nope_head_dim"] + rope,
        "v_dim": d["v_head_dim"],
        "decode_qk_dim": rank + rope,
        "decode_v_dim": rank,
    }


def formula(layers: int, mla: dict, tokens: int, batch: int, nbytes: int, total: int) -> str:
    rank, rope = mla["kv_lora_rank"], mla["qk_rope_head_dim"]
    return f"{layers} × ({rank} + {rope}) × {tokens} × {batch} × {nbytes} = {total:,}"


def shapes(h: dict, tokens: int, batch: int) -> dict:
    m, d_model, n_heads = h["mla"], h["d_model"], h["heads"]
    rank, rope = m["kv_lora_rank"], m["qk_rope_head_dim"]
    return {
        "X": [batch, tokens, d_model],
        "W_DKV (kv_a_proj_with_mqa)": [d_model, rank + rope],
        "W_UK, W_UV (kv_b_proj)": [rank, n_heads * (m["qk_nope_head_dim"] + m["v_head_dim"])],
        "Q": [batch, n_heads, tokens, m["qk_nope_head_dim"] + rope],
        "c_KV cache (per layer)": [batch, tokens, rank],
        "k_R cache (per layer)": [batch, tokens, rope],
    }


def attention_terms(cfg: dict, at: str, d_model: int, linear, term) -> list[dict]:
    """One MLA layer's attention weights, term by term (`linear`, `term` build the parameter rows)."""
    _, n_heads = get_int(cfg, ("num_attention_heads",), at)
    m = dims(cfg, at)
    rank, rope, nope, v = m["kv_lora_rank"], m["qk_rope_head_dim"], m["qk_nope_head_dim"], m["v_head_dim"]
    q_rank = m["q_lora_rank"]
    if q_rank is None:
        rows = [linear("q_proj", d_model, n_heads * (nope + rope), False)]
    else:
        rows = [
            linear("q_a_proj", d_model, q_rank, False),
            term("q_a_layernorm γ", q_rank, str(q_rank), matmul=False, per_layer=True),
            linear("q_b_proj", q_rank, n_heads * (nope + rope), False),
        ]
    return rows + [
        linear("kv_a_proj_with_mqa", d_model, rank + rope, False),
        term("kv_a_layernorm γ", rank, str(rank), matmul=False, per_layer=True),
        linear("kv_b_proj", rank, n_heads * (nope + v), False),
        linear("o_proj", n_heads * v, d_model, False),
    ]
