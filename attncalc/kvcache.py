"""KV-cache size from a Hugging Face config.json (attncalc SPEC §7).

    bytes = 2 × layers × kv_heads × head_dim × tokens × batch × bytes_per_value

2 = one K and one V tensor per layer; head_dim = config `head_dim`, else hidden_size / num_attention_heads;
kv_heads = `num_key_value_heads`, else num_attention_heads (Falcon `num_kv_heads`, `multi_query` → 1).
A sliding-window layer keeps at most `sliding_window` tokens, so its tokens term is min(tokens, window)
(Mistral: every layer; Qwen2: only if `use_sliding_window`, layers i >= `max_window_layers`;
Gemma-2/3: `layer_types`, else layer i slides when (i + 1) % `sliding_window_pattern` != 0).
Pure: no printing, no I/O except `read_config`.
"""

import json

from attncalc.errors import InputError, describe
from attncalc.texts import t as say

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
_TORCH_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
_DEFAULT_PATTERN = {"gemma2": 2, "gemma3": 6, "gemma3_text": 6}  # HF defaults when the file omits it
_KINDS = ("full_attention", "sliding_attention")


def read_config(path: str) -> dict:
    """Load a config.json; unreadable files, invalid JSON and non-objects raise InputError(path, ...)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise InputError(path, "a readable config.json file", e.strerror or type(e).__name__) from None
    except ValueError as e:  # json.JSONDecodeError, UnicodeDecodeError
        raise InputError(path, "valid UTF-8 JSON", str(e)) from None
    if not isinstance(data, dict):
        raise InputError(path, "a JSON object", type(data).__name__)
    return data


def human(n: int) -> str:
    """Binary units: 1073741824 -> '1.00 GiB'; under 1 KiB -> '512 B'."""
    if n < 1024:
        return f"{n} B"
    value, units = n / 1024, ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    while value >= 1024 and len(units) > 1:
        value, units = value / 1024, units[1:]
    return f"{value:.2f} {units[0]}"


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _get_int(cfg: dict, keys: tuple, at: str, minimum: int = 1, required: bool = True):
    """First present (non-null) key among `keys`, checked to be an integer >= minimum; returns (key, value)."""
    for key in keys:
        if cfg.get(key) is not None:
            value = cfg[key]
            if not _is_int(value) or value < minimum:
                raise InputError(at + key, f"an integer >= {minimum}", describe(value))
            return key, value
    if required:
        alts = " or ".join(keys)
        raise InputError(at + keys[0], f"an integer >= {minimum} (key {alts})", "no such key")
    return keys[0], None


def _check_arg(name: str, value) -> None:
    if not _is_int(value) or value < 1:
        raise InputError(name, "an integer >= 1", describe(value))


def _layer_split(cfg: dict, layers: int, at: str, notes: list):
    """(full_layers, sliding_layers, window) following the HF Mistral / Qwen2 / Gemma semantics."""
    model_type = str(cfg.get("model_type", ""))
    use = cfg.get("use_sliding_window", not model_type.startswith("qwen"))  # Qwen* default False in HF
    if cfg.get("sliding_window") is None or use is False:
        if cfg.get("sliding_window") is not None:
            why = say("kv.is_false") if "use_sliding_window" in cfg else say("kv.is_absent", model_type=model_type)
            notes.append(say("kv.window_ignored", window=describe(cfg["sliding_window"]), why=why))
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
        notes.append(say("kv.layer_types", sliding=sliding, full=layers - sliding))
    elif cfg.get("max_window_layers") is not None:
        _, first = _get_int(cfg, ("max_window_layers",), at, minimum=0)
        sliding = max(0, layers - first)
        notes.append(say("kv.qwen2", first=first, sliding=sliding, full=layers - sliding))
    elif cfg.get("sliding_window_pattern") is not None or model_type in _DEFAULT_PATTERN:
        key, pattern = _get_int(cfg, ("sliding_window_pattern",), at, required=False)
        pattern = pattern or _DEFAULT_PATTERN[model_type]
        sliding = sum(1 for i in range(layers) if (i + 1) % pattern)
        source = key if cfg.get(key) is not None else say("kv.default_of", model_type=model_type)
        notes.append(say("kv.pattern", source=source, pattern=pattern, sliding=sliding, layers=layers))
    else:
        sliding = layers
        notes.append(say("kv.every_layer_slides", window=window))
    return layers - sliding, sliding, window if sliding else None


def _pick_dtype(dtype, cfg: dict, top: dict, notes: list) -> str:
    if dtype is not None:
        name = _TORCH_DTYPES.get(dtype.lower(), dtype.lower()) if isinstance(dtype, str) else None
        if name not in DTYPE_BYTES:
            raise InputError("--dtype", "one of " + ", ".join(DTYPE_BYTES), describe(dtype))
        notes.append(say("kv.dtype_option", dtype=name))
        return name
    for src in (cfg, top):
        for key in ("torch_dtype", "dtype"):
            if src.get(key) is not None:
                if isinstance(src[key], str) and src[key] in _TORCH_DTYPES:
                    notes.append(say("kv.dtype_config", dtype=_TORCH_DTYPES[src[key]], field=key, value=src[key]))
                    return _TORCH_DTYPES[src[key]]
                notes.append(say("kv.dtype_unknown", field=key, value=describe(src[key])))
                return "fp16"
    notes.append(say("kv.dtype_absent"))
    return "fp16"


def kv_cache(
    config: dict, tokens: int, batch: int = 1, dtype: str | None = None, *, source: str = "config.json"
) -> dict:
    """Size the KV cache of `config` for `tokens` tokens × `batch` sequences; every term is returned."""
    _check_arg("--tokens", tokens)
    _check_arg("--batch", batch)
    if not isinstance(config, dict):
        raise InputError(source, "a JSON object", type(config).__name__)
    at, cfg, notes = f"{source}: ", config, []
    if config.get("text_config") is not None:
        if not isinstance(config["text_config"], dict):
            raise InputError(at + "text_config", "a JSON object", describe(config["text_config"]))
        at, cfg = at + "text_config.", config["text_config"]
        notes.append(say("kv.text_config"))
    _, layers = _get_int(cfg, ("num_hidden_layers", "n_layer"), at)
    hkey, heads = _get_int(cfg, ("num_attention_heads", "n_head"), at)
    dkey, d_model = _get_int(cfg, ("hidden_size", "n_embd"), at)
    kvkey, kv = _get_int(cfg, ("num_key_value_heads",), at, required=False)
    if kv is None:
        falcon_kv = cfg.get("new_decoder_architecture") is True or cfg.get("multi_query") is False
        if cfg.get("num_kv_heads") is not None and falcon_kv:
            kvkey, kv = _get_int(cfg, ("num_kv_heads",), at)
        elif cfg.get("multi_query") is True:
            kvkey, kv = "multi_query", 1
        else:
            kvkey, kv = hkey, heads
    if heads % kv:
        raise InputError(at + kvkey, f"a divisor of {hkey} ({heads})", str(kv))
    group = heads // kv
    kind = "MHA" if kv == heads else "MQA" if kv == 1 else "GQA"
    notes.append(
        say("kv.heads_one" if group == 1 else "kv.heads", kind=kind, heads=heads, kv=kv, field=kvkey, group=group)
    )
    _, head_dim = _get_int(cfg, ("head_dim",), at, required=False)
    if head_dim is None:
        if d_model % heads:
            raise InputError(at + dkey, f"a multiple of {hkey} ({heads}) when head_dim is absent", str(d_model))
        head_dim = d_model // heads
        notes.append(f"head_dim = {dkey} / {hkey} = {d_model} / {heads} = {head_dim}")  # a formula: no words
    elif head_dim * heads != d_model:
        notes.append(say("kv.head_dim_config", head_dim=head_dim, dkey=dkey, hkey=hkey, ratio=f"{d_model / heads:g}"))
    name = _pick_dtype(dtype, cfg, config, notes)
    nbytes = DTYPE_BYTES[name]
    full, sliding, window = _layer_split(cfg, layers, at, notes)
    cached_full = tokens if full else 0
    cached_sliding = min(tokens, window) if sliding else 0
    if sliding and tokens > window:
        notes.append(say("kv.sliding_keeps", window=window, tokens=tokens))
    _, max_pos = _get_int(cfg, ("max_position_embeddings", "n_positions"), at, required=False)
    if max_pos is not None and tokens > max_pos:
        notes.append(say("kv.too_long", tokens=tokens, max_pos=max_pos))
    total = 2 * kv * head_dim * batch * nbytes * (full * cached_full + sliding * cached_sliding)
    n, t = (full, cached_full) if full else (sliding, cached_sliding)
    formula = f"2 × {n} × {kv} × {head_dim} × {t} × {batch} × {nbytes} = {total:,}"
    if full and sliding:  # the layers × tokens product becomes a sum over the two layer kinds
        formula = (
            f"2 × ({full} × {t} + {sliding} × {cached_sliding}) × {kv} × {head_dim} × {batch} × {nbytes} = {total:,}"
        )
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
        "K cache (per layer)": [batch, kv, cached_full if full else cached_sliding, head_dim],
        "query heads per KV head": group,
    }
    if full and sliding:
        shapes["K cache (sliding layer)"] = [batch, kv, cached_sliding, head_dim]
    return {
        "bytes": total,
        "human": human(total),
        "per_token_bytes": 2 * layers * kv * head_dim * batch * nbytes,
        "terms": {
            "layers": layers,
            "kv_heads": kv,
            "head_dim": head_dim,
            "tokens": tokens,
            "batch": batch,
            "bytes_per_value": nbytes,
            "dtype": name,
            "full_layers": full,
            "sliding_layers": sliding,
            "sliding_window": window,
            "cached_tokens_full": cached_full,
            "cached_tokens_sliding": cached_sliding,
            "query_heads": heads,
            "d_model": d_model,
            "query_heads_per_kv_head": group,
        },
        "formula": formula,
        "notes": notes,
        "shapes": shapes,
    }
