"""KV-cache size from a Hugging Face config.json (docs/kvcache-config.md).

    bytes = 2 × layers × kv_heads × head_dim × tokens × batch × bytes_per_value

2 = one K and one V tensor per layer; head_dim = config `head_dim`, else hidden_size / num_attention_heads;
kv_heads = `num_key_value_heads`, else num_attention_heads (Falcon `num_kv_heads`, `multi_query` → 1).
A sliding-window layer keeps at most `sliding_window` tokens, so its tokens term is min(tokens, window)
(Mistral: every layer; Qwen2: only if `use_sliding_window`, layers i >= `max_window_layers`;
Gemma-2/3: `layer_types`, else layer i slides when (i + 1) % `sliding_window_pattern` != 0).
Past the window one more token costs nothing on a sliding layer (the oldest K and V are dropped).
An encoder-only model (BERT and kin) reads its input in one pass and keeps no cache: 0 bytes.
The context a config reaches follows `rope_scaling` as transformers' `modeling_rope_utils` reads it.
Pure: no printing, no I/O (the files are read by `attncalc.inputs.model_config`); notes are sentences of `attncalc.texts` (keys `kvcache.`).
"""

from attncalc import texts
from attncalc.errors import InputError, describe
from attncalc.inputs.model_config import read_config  # noqa: F401 (re-exported: kvcache reads a config.json)
from attncalc.serving import mla
from attncalc.serving.fields import (
    check_count,
    human,  # noqa: F401 (re-exported)
)
from attncalc.serving.fields import get_int as _get_int

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
_TORCH_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
_DEFAULT_PATTERN = {"gemma2": 2, "gemma3": 6, "gemma3_text": 6}  # HF defaults when the file omits it
_KINDS = ("full_attention", "sliding_attention")
ENCODER_ONLY_TYPES = (
    "bert",
    "roberta",
    "xlm-roberta",
    "distilbert",
    "albert",
    "electra",
    "deberta",
    "deberta-v2",
    "mpnet",
)
ENCODER_HEADS = ("ForMaskedLM", "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering")


def _check_arg(name: str, value) -> None:
    check_count(name, value)


def _layer_split(cfg: dict, layers: int, at: str, notes: list):
    """(full_layers, sliding_layers, window) following the HF Mistral / Qwen2 / Gemma semantics."""
    model_type = str(cfg.get("model_type", ""))
    use = cfg.get("use_sliding_window", not model_type.startswith("qwen"))  # Qwen* default False in HF
    if cfg.get("sliding_window") is None or use is False:
        if cfg.get("sliding_window") is not None:
            window = describe(cfg["sliding_window"])
            if "use_sliding_window" in cfg:
                notes.append(texts.t("kvcache.window_off", window=window))
            else:
                notes.append(texts.t("kvcache.window_off_default", window=window, model_type=model_type))
        return layers, 0, None
    _, window = _get_int(cfg, ("sliding_window",), at)
    kinds = cfg.get("layer_types")
    if kinds is not None:
        if not isinstance(kinds, list) or len(kinds) != layers:
            raise InputError(at + "layer_types", f"a list of {layers} layer kinds", describe(kinds))
        for i, kind in enumerate(kinds):
            if kind not in _KINDS:
                raise InputError(f"{at}layer_types[{i}]", "'full_attention' or 'sliding_attention'", describe(kind))
        sliding = kinds.count("sliding_attention")
        notes.append(texts.t("kvcache.layer_types", sliding=sliding, full=layers - sliding))
    elif cfg.get("max_window_layers") is not None:
        _, first = _get_int(cfg, ("max_window_layers",), at, minimum=0)
        sliding = max(0, layers - first)
        notes.append(texts.t("kvcache.qwen_layers", first=first, sliding=sliding, full=layers - sliding))
    elif cfg.get("sliding_window_pattern") is not None or model_type in _DEFAULT_PATTERN:
        key, pattern = _get_int(cfg, ("sliding_window_pattern",), at, required=False)
        pattern = pattern or _DEFAULT_PATTERN[model_type]
        sliding = sum(1 for i in range(layers) if (i + 1) % pattern)
        which = "kvcache.pattern" if cfg.get(key) is not None else "kvcache.pattern_default"
        notes.append(texts.t(which, model_type=model_type, pattern=pattern, sliding=sliding, layers=layers))
    else:
        sliding = layers
        notes.append(texts.t("kvcache.every_layer_slides", window=window))
    return layers - sliding, sliding, window if sliding else None


def pick_dtype(dtype, cfg: dict, top: dict, notes: list, option: str = "--dtype", known=DTYPE_BYTES) -> str:
    """`dtype` (an option's value) checked against `known`, else the config's torch_dtype, else fp16; says which."""
    if dtype is not None:
        name = _TORCH_DTYPES.get(dtype.lower(), dtype.lower()) if isinstance(dtype, str) else None
        if name not in known:
            raise InputError(option, "one of " + ", ".join(known), describe(dtype))
        notes.append(texts.t("kvcache.dtype_option", name=name, option=option))
        return name
    for src in (cfg, top):
        for key in ("torch_dtype", "dtype"):
            if src.get(key) is not None:
                if isinstance(src[key], str) and src[key] in _TORCH_DTYPES:
                    notes.append(
                        texts.t("kvcache.dtype_config", name=_TORCH_DTYPES[src[key]], field=key, value=src[key])
                    )
                    return _TORCH_DTYPES[src[key]]
                notes.append(texts.t("kvcache.dtype_unknown", field=key, value=describe(src[key])))
                return "fp16"
    notes.append(texts.t("kvcache.dtype_default"))
    return "fp16"


def is_encoder_only(cfg: dict) -> bool:
    """BERT and kin: an encoder-only model_type, or a masked-LM / classifier head, unless the config says is_decoder."""
    if cfg.get("is_decoder") is True:
        return False
    heads = [a for a in cfg.get("architectures") or [] if isinstance(a, str)]
    return cfg.get("model_type") in ENCODER_ONLY_TYPES or any(a.endswith(ENCODER_HEADS) for a in heads)


def _rope_scaling(cfg: dict, at: str):
    """(key, the scaling object) from rope_scaling or transformers v5's rope_parameters; (key, None) if none."""
    for key in ("rope_scaling", "rope_parameters"):
        scaling = cfg.get(key)
        if scaling is None:
            continue
        if not isinstance(scaling, dict):
            raise InputError(at + key, 'an object such as {"rope_type": "yarn", "factor": 4}', describe(scaling))
        if isinstance(scaling.get("full_attention"), dict):  # v5: one entry per layer type; full layers set the reach
            scaling = scaling["full_attention"]
        return key, scaling
    return "rope_scaling", None


def reach(cfg: dict, at: str, notes: list):
    """The context the config reaches: max_position_embeddings, extended by rope_scaling where HF extends it."""
    pos_key, max_pos = _get_int(cfg, ("max_position_embeddings", "n_positions"), at, required=False)
    key, scaling = _rope_scaling(cfg, at)
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "default" or max_pos is None:
        return max_pos, pos_key
    factor = scaling.get("factor")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor < 1:
        if kind in ("yarn", "longrope") and factor is None:  # HF: factor = max_position_embeddings / original
            notes.append(texts.t("kvcache.context_as_is", kind=kind, context=max_pos))
            return max_pos, pos_key
        raise InputError(f"{at}{key}.factor", "a number >= 1", describe(factor))
    if kind in ("yarn", "longrope"):
        original = scaling.get("original_max_position_embeddings", cfg.get("original_max_position_embeddings"))
        if original is None:
            original = max_pos  # HF's standardize_rope_params default
        elif isinstance(original, bool) or not isinstance(original, int) or original < 1:
            raise InputError(f"{at}{key}.original_max_position_embeddings", "an integer >= 1", describe(original))
        context = max(max_pos, int(original * factor))
        notes.append(texts.t("kvcache.context_scaled", kind=kind, context=context, original=original, factor=factor))
        return context, f"{key} {kind}"
    if kind == "dynamic":
        context = int(max_pos * factor)
        notes.append(texts.t("kvcache.context_dynamic", context=context, max_pos=max_pos, factor=factor))
        return context, f"{key} {kind}"
    # llama3 and linear configs already give the extended length as max_position_embeddings
    notes.append(texts.t("kvcache.context_as_is", kind=kind, context=max_pos))
    return max_pos, pos_key


def kv_cache(
    config: dict,
    tokens: int,
    batch: int = 1,
    dtype: str | None = None,
    *,
    source: str = "config.json",
    option: str = "--dtype",
) -> dict:
    """Size the KV cache of `config` for `tokens` tokens × `batch` sequences; every term is returned."""
    _check_arg("--tokens", tokens)
    _check_arg("--batch", batch)
    at, cfg, notes = _text_config(config, source)
    _, layers = _get_int(cfg, ("num_hidden_layers", "n_layer"), at)
    h = mla.heads(cfg, at, notes) if mla.is_mla(cfg) else _heads(cfg, at, notes)
    name = pick_dtype(dtype, cfg, config, notes, option=option)
    nbytes = DTYPE_BYTES[name]
    encoder_only = is_encoder_only(cfg)
    if encoder_only:
        full, sliding, window = 0, 0, None
        notes.append(texts.t("kvcache.encoder_only", model_type=cfg.get("model_type") or "?"))
    else:
        full, sliding, window = _layer_split(cfg, layers, at, notes)
    cached_full = tokens if full else 0
    cached_sliding = min(tokens, window) if sliding else 0
    if sliding and tokens >= window:
        notes.append(texts.t("kvcache.window_full", window=window, tokens=tokens, sliding=sliding))
    context, context_from = reach(cfg, at, notes)
    if context is not None and tokens > context:
        notes.append(texts.t("kvcache.beyond_context", tokens=tokens, context=context, source=context_from))
    per_value = h["tensors"] * h["kv"] * h["head_dim"] * nbytes  # one token's K and V (MLA: its latent) on one layer
    total = per_value * batch * (full * cached_full + sliding * cached_sliding)
    per_token = per_value * (full + sliding)
    next_token = per_value * (full + (sliding if tokens < (window or 0) else 0))
    if not encoder_only:
        notes.append(texts.t("kvcache.per_sequence", per_token=per_token, next_token=next_token, batch=batch))
    counts = {"full": full, "sliding": sliding, "cached_full": cached_full, "cached_sliding": cached_sliding}
    return {
        "bytes": total,
        "human": human(total),
        "per_token_bytes": per_token,
        "next_token_bytes": next_token,
        "context": context,
        "encoder_only": encoder_only,
        "terms": {
            "layers": layers,
            "kv_heads": h["kv"],
            "head_dim": h["head_dim"],
            "tokens": tokens,
            "batch": batch,
            "bytes_per_value": nbytes,
            "dtype": name,
            "full_layers": full,
            "sliding_layers": sliding,
            "sliding_window": window,
            "cached_tokens_full": cached_full,
            "cached_tokens_sliding": cached_sliding,
            "query_heads": h["heads"],
            "d_model": h["d_model"],
            "query_heads_per_kv_head": h["group"],
            "cache_tensors": h["tensors"],
            "mla": h.get("mla"),
            "qk_dim": h["qk_dim"],
            "v_dim": h["v_dim"],
            "decode_qk_dim": h["decode_qk_dim"],
            "decode_v_dim": h["decode_v_dim"],
        },
        "formula": mla.formula(layers, h["mla"], tokens, batch, nbytes, total)
        if "mla" in h
        else _formula(counts, h, batch, nbytes, total, encoder_only),
        "notes": notes,
        "shapes": mla.shapes(h, tokens, batch) if "mla" in h else _shapes(counts, h, tokens, batch),
    }


def _text_config(config, source: str):
    """(where to point, the text model's config, notes): a multimodal config's `text_config`, else itself."""
    if not isinstance(config, dict):
        raise InputError(source, "a JSON object", type(config).__name__)
    at, cfg, notes = f"{source}: ", config, []
    if config.get("text_config") is not None:
        if not isinstance(config["text_config"], dict):
            raise InputError(at + "text_config", "a JSON object", describe(config["text_config"]))
        at, cfg = at + "text_config.", config["text_config"]
        notes.append(texts.t("kvcache.nested"))
    return at, cfg, notes


def kv_heads_of(cfg: dict, at: str, hkey: str, heads: int):
    """(the key it came from, KV heads): num_key_value_heads, Falcon's num_kv_heads / multi_query, else MHA."""
    kvkey, kv = _get_int(cfg, ("num_key_value_heads",), at, required=False)
    if kv is not None:
        return kvkey, kv
    falcon_kv = cfg.get("new_decoder_architecture") is True or cfg.get("multi_query") is False
    if cfg.get("num_kv_heads") is not None and falcon_kv:
        return _get_int(cfg, ("num_kv_heads",), at)
    if cfg.get("multi_query") is True:
        return "multi_query", 1
    return hkey, heads


def _heads(cfg: dict, at: str, notes: list) -> dict:
    """Query heads, KV heads, their grouping, d_model and head_dim, each said where it came from."""
    hkey, heads = _get_int(cfg, ("num_attention_heads", "n_head"), at)
    dkey, d_model = _get_int(cfg, ("hidden_size", "n_embd"), at)
    kvkey, kv = kv_heads_of(cfg, at, hkey, heads)
    if heads % kv:
        raise InputError(at + kvkey, f"a divisor of {hkey} ({heads})", str(kv))
    group = heads // kv
    kind = "MHA" if kv == heads else "MQA" if kv == 1 else "GQA"
    noun = {n: texts.t("kvcache.head_noun" if n == 1 else "kvcache.heads_noun") for n in (kv, group)}
    notes.append(
        texts.t(
            "kvcache.heads",
            kind=kind,
            heads=heads,
            kv=kv,
            field=kvkey,
            group=group,
            kv_noun=noun[kv],
            group_noun=noun[group],
        )
    )
    _, head_dim = _get_int(cfg, ("head_dim",), at, required=False)
    if head_dim is None:
        if d_model % heads:
            raise InputError(at + dkey, f"a multiple of {hkey} ({heads}) when head_dim is absent", str(d_model))
        head_dim = d_model // heads
        notes.append(texts.t("kvcache.head_dim", dkey=dkey, hkey=hkey, d_model=d_model, heads=heads, head_dim=head_dim))
    elif head_dim * heads != d_model:
        notes.append(texts.t("kvcache.head_dim_given", head_dim=head_dim, dkey=dkey, hkey=hkey, ratio=d_model / heads))
    return {
        "heads": heads,
        "kv": kv,
        "group": group,
        "d_model": d_model,
        "head_dim": head_dim,
        "tensors": 2,  # K and V
        **dict.fromkeys(("qk_dim", "v_dim", "decode_qk_dim", "decode_v_dim"), head_dim),
    }


def _formula(c: dict, h: dict, batch: int, nbytes: int, total: int, encoder_only: bool) -> str:
    """The formula with its numbers; the layers × tokens product becomes a sum over two layer kinds."""
    if encoder_only:
        return texts.t("kvcache.no_cache_formula")
    kv, head_dim = h["kv"], h["head_dim"]
    if c["full"] and c["sliding"]:
        return (
            f"2 × ({c['full']} × {c['cached_full']} + {c['sliding']} × {c['cached_sliding']}) × {kv} × {head_dim}"
            f" × {batch} × {nbytes} = {total:,}"
        )
    n, t = (c["full"], c["cached_full"]) if c["full"] else (c["sliding"], c["cached_sliding"])
    return f"2 × {n} × {kv} × {head_dim} × {t} × {batch} × {nbytes} = {total:,}"


def _shapes(c: dict, h: dict, tokens: int, batch: int) -> dict:
    d_model, heads, kv, head_dim = h["d_model"], h["heads"], h["kv"], h["head_dim"]
    kv_shape = [batch, kv, tokens, head_dim]
    shapes = {
        "X": [batch, tokens, d_model],
        "W_Q": [d_model, heads * head_dim],
        "W_K": [d_model, kv * head_dim],
        "W_V": [d_model, kv * head_dim],
        "W_O": [heads * head_dim, d_model],
        "Q": [batch, heads, tokens, head_dim],
        "K": kv_shape,
        "V": list(kv_shape),
        "K cache (per layer)": [batch, kv, c["cached_full"] if c["full"] else c["cached_sliding"], head_dim],
        "query heads per KV head": h["group"],
    }
    if c["full"] and c["sliding"]:
        shapes["K cache (sliding layer)"] = [batch, kv, c["cached_sliding"], head_dim]
    return shapes
