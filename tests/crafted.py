"""Tiny valid model files written without torch (a LLaMA-style folder: config.json, model.safetensors,
tokenizer.json; the same model as a GGUF file), for the crafted-file tests and the fuzz to break."""

import json

import numpy as np

VOCAB = ["[UNK]", "a", "b", "ab", "c", "Ġ", "Ġa", "d"]  # 8 tokens; "a b" and "Ġ a" merge
D, HEADS, KV_HEADS, FF, LAYERS = 4, 2, 1, 6, 1
CONFIG = {
    "model_type": "llama",
    "hidden_size": D,
    "intermediate_size": FF,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": HEADS,
    "num_key_value_heads": KV_HEADS,
    "vocab_size": len(VOCAB),
    "max_position_embeddings": 32,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "hidden_act": "silu",
}


def weights(seed: int = 0) -> dict:
    """Hugging Face names → float32 arrays ([out, in] as nn.Linear stores them)."""
    rng = np.random.default_rng(seed)
    dk = D // HEADS

    def r(*shape):
        return rng.normal(size=shape).astype(np.float32)

    w = {"model.embed_tokens.weight": r(len(VOCAB), D), "model.norm.weight": r(D), "lm_head.weight": r(len(VOCAB), D)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        w |= {
            p + "self_attn.q_proj.weight": r(HEADS * dk, D),
            p + "self_attn.k_proj.weight": r(KV_HEADS * dk, D),
            p + "self_attn.v_proj.weight": r(KV_HEADS * dk, D),
            p + "self_attn.o_proj.weight": r(D, HEADS * dk),
            p + "mlp.gate_proj.weight": r(FF, D),
            p + "mlp.up_proj.weight": r(FF, D),
            p + "mlp.down_proj.weight": r(D, FF),
            p + "input_layernorm.weight": r(D),
            p + "post_attention_layernorm.weight": r(D),
        }
    return w


def tokenizer_json(**changes) -> dict:
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {t: i for i, t in enumerate(VOCAB)}, "unk_token": "[UNK]"},
    }
    return spec | changes


def safetensors_bytes(tensors: dict) -> bytes:
    """The .safetensors layout written out by hand (so that a test can write any header it likes)."""
    header, data = {}, b""
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data


def folder(path, config=None, tokenizer=None, seed: int = 0) -> str:
    """A model folder: config.json, model.safetensors, tokenizer.json (None: none)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(CONFIG if config is None else config), encoding="utf-8")
    (path / "model.safetensors").write_bytes(safetensors_bytes(weights(seed)))
    if tokenizer is not False:
        spec = tokenizer_json() if tokenizer is None else tokenizer
        (path / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    return str(path)


GGUF_NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
}


def gguf_name(hf: str) -> str:
    if hf in GGUF_NAMES:
        return GGUF_NAMES[hf]
    _, _, i, rest = hf.split(".", 3)
    return f"blk.{i}.{GGUF_NAMES[rest]}"


GGUF_META = {
    "llama.block_count": LAYERS,
    "llama.embedding_length": D,
    "llama.feed_forward_length": FF,
    "llama.attention.head_count": HEADS,
    "llama.attention.head_count_kv": KV_HEADS,
    "llama.context_length": 32,
    "llama.attention.layer_norm_rms_epsilon": 1e-6,
    "llama.rope.freq_base": 10000.0,
    "tokenizer.ggml.model": "gpt2",
    "tokenizer.ggml.tokens": VOCAB,
    "tokenizer.ggml.merges": ["a b", "Ġ a"],
    "tokenizer.ggml.token_type": [1] * len(VOCAB),
}


def gguf_file(path, meta: dict | None = None, drop=(), seed: int = 0) -> str:
    """The same model as a GGUF file with a byte-level BPE vocabulary (gpt2); `meta` overrides keys,
    `drop` leaves keys out."""
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    keys = GGUF_META | (meta or {})
    for key, value in keys.items():
        if key in drop:
            continue
        if isinstance(value, list):
            w.add_array(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        else:
            w.add_uint32(key, value)
    for name, arr in weights(seed).items():
        w.add_tensor(gguf_name(name), arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)
