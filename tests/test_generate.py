"""Generation (docs/commands.md, docs/document.md): sampling warpers on hand-made vectors and against Hugging Face's, greedy decoding
against a PyTorch loop over the same weights, the KV cache against recomputing every step, and the CLI."""

import json

import numpy as np
import pytest
from conftest import doc

from attncalc.core.build import Options
from attncalc.core.build_graph import build
from attncalc.core.fixture import Fixture
from attncalc.errors import InputError
from attncalc.run.decoding import Model, Settings, choose, generate, softmax, top_k_keep, top_p_keep


def random_fixture(
    seed,
    d=8,
    heads=2,
    kv_heads=None,
    layers=2,
    dff=16,
    vocab=10,
    decoder_only=False,
    position="sinusoidal",
    norm="layernorm",
    norm_first=False,
    act="relu",
    src=4,
    scale=0.2,
):
    """A random model as a fixture ([in, out] weights, every bias), encoder–decoder or decoder-only."""
    rng = np.random.default_rng(seed)
    kv, dk = kv_heads or heads, d // heads
    voc = [f"t{i}" for i in range(vocab - 2)] + ["<s>", "</s>"]

    def r(*shape):
        return (rng.standard_normal(shape) * scale).tolist()

    def attn():
        return {
            "heads": heads,
            "kv_heads": kv,
            "Wq": r(d, heads * dk),
            "Wk": r(d, kv * dk),
            "Wv": r(d, kv * dk),
            "Wo": r(heads * dk, d),
            "bq": r(heads * dk),
            "bk": r(kv * dk),
            "bv": r(kv * dk),
            "bo": r(d),
        }

    def norm_():
        return {"gamma": (1 + 0.1 * rng.standard_normal(d)).tolist(), "beta": r(d)}

    def stack(cross):
        out = {"norm": norm, "norm_first": norm_first, "activation": act, "layers": []}
        for _ in range(layers):
            layer = {
                "self_attention": attn(),
                "ffn": {"W1": r(d, dff), "b1": r(dff), "W2": r(dff, d), "b2": r(d)},
                "norm1": norm_(),
                "norm2": norm_(),
            }
            if act == "swiglu":
                layer["ffn"]["W3"] = r(d, dff)
            if cross:
                layer.update(cross_attention=attn(), norm3=norm_())
            out["layers"].append(layer)
        if norm_first:
            out["final_norm"] = norm_()
        return out

    fx = {
        "name": "random",
        "vocab": voc,
        "special": {"bos": "<s>", "eos": "</s>"},
        "d_model": d,
        "embedding": r(vocab, d),
        "position": {"type": position},
        "source": [voc[i] for i in rng.integers(0, vocab - 2, src)],
        "decoder": stack(not decoder_only),
        "output": {"W": r(d, vocab), "b": r(vocab)},
    }
    if position == "learned":
        fx["position"]["table"] = r(64, d)
    if not decoder_only:
        fx["encoder"] = stack(False)
    return fx


LLAMA = dict(decoder_only=True, position="rope", norm="rmsnorm", norm_first=True, act="swiglu", heads=4, kv_heads=2)

# ---- warpers --------------------------------------------------------------------------------------


def kept(mask):
    return sorted(np.flatnonzero(mask).tolist())


@pytest.mark.parametrize(
    "p,top_p,expected",
    [
        ([0.5, 0.3, 0.2], 0.5, [0]),
        ([0.5, 0.3, 0.2], 0.6, [0, 1]),
        ([0.5, 0.3, 0.2], 0.8, [0, 1]),  # 0.5 + 0.3 reaches 0.8 exactly: the third is not needed
        ([0.5, 0.3, 0.2], 0.81, [0, 1, 2]),
        ([0.5, 0.3, 0.2], 1.0, [0, 1, 2]),
        ([0.2, 0.5, 0.3], 0.7, [1, 2]),  # not in id order
        ([0.9, 0.1], 0.01, [0]),  # the most likely token always stays
        ([0.25, 0.25, 0.25, 0.25], 0.5, [0, 1]),  # ties: the smallest set, lower ids first
        ([0.25, 0.25, 0.25, 0.25], 0.51, [0, 1, 2]),
        ([0.1] * 10, 0.7, list(range(7))),  # 0.1 summed seven times is 0.7000000000000001 in floating point
        ([0.1] * 10, 0.3, [0, 1, 2]),
        ([0.6, 0.4, 0.0], 1.0, [0, 1]),  # p = 1 keeps every token that can be drawn, not those already removed
    ],
)
def test_top_p_keeps_the_smallest_set_that_reaches_p(p, top_p, expected):
    assert kept(top_p_keep(np.array(p), top_p)) == expected


def test_top_p_on_random_vectors_is_minimal():
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = softmax(rng.standard_normal(12) * 2)
        top_p = float(rng.uniform(0.05, 1.0))
        mask = top_p_keep(p, top_p)
        assert p[mask].sum() >= top_p - 1e-12  # reaches p …
        assert p[mask].sum() - p[mask].min() < top_p or mask.sum() == 1  # … and one fewer would not
        assert p[mask].min() >= p[~mask].max(initial=0)  # and they are the most likely ones


@pytest.mark.parametrize(
    "logits,k,expected",
    [
        ([1.0, 3.0, 2.0], 2, [1, 2]),
        ([1.0, 2.0, 2.0, 0.0], 2, [1, 2]),
        ([2.0, 2.0, 1.0], 1, [0, 1]),
        ([1.0, 3.0, 2.0], 0, [0, 1, 2]),
        ([1.0, 3.0, 2.0], 5, [0, 1, 2]),
        ([1.0, 2.0, 2.0, 0.0], 3, [0, 1, 2]),
    ],
)
def test_top_k_keeps_the_k_largest_and_ties_with_the_kth(logits, k, expected):
    assert kept(top_k_keep(np.array(logits), k)) == expected


@pytest.mark.parametrize("temperature,top_k,top_p", [(1.0, 0, 0.9), (0.7, 5, 1.0), (1.5, 4, 0.6), (0.5, 3, 0.3)])
def test_warpers_equal_hugging_face(temperature, top_k, top_p):
    torch = pytest.importorskip("torch")
    lp = pytest.importorskip("transformers.generation.logits_process")
    rng = np.random.default_rng(int(temperature * 10) + top_k)
    s = Settings(strategy="sample", temperature=temperature, top_k=top_k, top_p=top_p)
    for _ in range(50):
        logits = rng.standard_normal(20) * 2
        scores = torch.tensor(logits)[None]
        scores = lp.TemperatureLogitsWarper(temperature)(None, scores)
        if top_k:
            scores = lp.TopKLogitsWarper(top_k)(None, scores)
        if top_p < 1:
            scores = lp.TopPLogitsWarper(top_p)(None, scores)
        c = choose(logits, s, np.random.default_rng(0))
        ref = torch.softmax(scores[0], -1).numpy()
        assert kept(c.kept_p) == kept(np.isfinite(scores[0].numpy()))
        np.testing.assert_allclose(c.p_sample, ref, atol=1e-12)


@pytest.mark.parametrize(
    "field,value,option",
    [
        ("temperature", 0.0, "--temperature"),
        ("temperature", -1.0, "--temperature"),
        ("temperature", float("nan"), "--temperature"),
        ("top_p", 0.0, "--top-p"),
        ("top_p", 1.5, "--top-p"),
        ("top_k", -1, "--top-k"),
        ("max_new_tokens", 0, "--max-new-tokens"),
        ("strategy", "beam", "--strategy"),
        ("seed", -3, "--seed"),
    ],
)
def test_bad_settings_name_the_option(field, value, option):
    with pytest.raises(InputError, match=option):
        Settings(**{field: value}).check()


# ---- the KV cache gives the same numbers as recomputing every step --------------------------------


def run_both(raw, n=8, **settings):
    model = Model(raw)
    a = generate(model, Settings(max_new_tokens=n, **settings), stop_at_eos=False)
    b = generate(model, Settings(max_new_tokens=n, use_cache=False, **settings), stop_at_eos=False)
    return a, b


CASES = {
    "encoder-decoder": {},
    "decoder-only llama": LLAMA,
    "decoder-only alibi post-norm": dict(decoder_only=True, position="alibi", heads=4),
    "learned positions, gelu, mqa": dict(position="learned", act="gelu", kv_heads=1),
    "decoder-only, no positions, rmsnorm": dict(decoder_only=True, position="none", norm="rmsnorm", norm_first=True),
}


@pytest.mark.parametrize("case", CASES)
def test_cached_and_uncached_agree_on_every_tensor(case):
    a, b = run_both(random_fixture(3, **CASES[case]))
    assert a.generated == b.generated and len(a.steps) == 8
    for sa, sb in zip(a.steps, b.steps):
        assert list(sa.tensors) == list(sb.tensors)
        for name in sa.tensors:
            np.testing.assert_allclose(
                sa.tensors[name].value, sb.tensors[name].value, rtol=0, atol=1e-12, err_msg=f"step {sa.index} {name}"
            )
            assert sa.tensors[name].rows == sb.tensors[name].rows, name
        assert sa.macs == sb.macs  # each mode predicts the other's multiply-adds exactly
    step = a.steps[3].tensors
    assert step["dec.0.self.k_new"].value.shape[0] == 1 and step["dec.0.self.K"].value.shape[0] == a.steps[3].cache_rows
    a_row = step["dec.1.self.A"].value
    assert a_row.shape[-2:] == (1, a.steps[3].cache_rows) and np.allclose(a_row.sum(-1), 1)


def test_the_cache_saves_more_each_step():
    a, _ = run_both(random_fixture(4, **LLAMA), n=6)
    assert a.steps[0].macs["with_cache"] == a.steps[0].macs["without_cache"]  # the prompt: nothing cached yet
    saved = [s.macs["without_cache"] - s.macs["with_cache"] for s in a.steps]
    assert all(x < y for x, y in zip(saved, saved[1:]))
    assert a.steps[0].tensors["dec.0.self.k_new_rope"].value.shape[0] == len(a.prompt)  # the prompt fills it first


@pytest.mark.parametrize("case", ["encoder-decoder", "decoder-only llama"])
def test_each_step_equals_the_teacher_forced_decoder_graph(case):
    raw = random_fixture(5, **CASES[case])
    a, _ = run_both(raw, n=5)
    raw = dict(raw, target=a.generated[:-1])  # the decoder stage on what was generated: its rows are the steps
    logits = build(Fixture(raw), "decoder", Options()).value("logits")
    np.testing.assert_allclose(logits[-len(a.steps) :], [s.logits for s in a.steps], atol=1e-12)


# ---- greedy decoding against PyTorch -----------------------------------------------------------


def _load_layer(torch, layer, w, d):
    t = lambda x: torch.tensor(np.asarray(x, dtype=float))  # noqa: E731
    attn = [(layer.self_attn, w["self_attention"])]
    if "cross_attention" in w:
        attn.append((layer.multihead_attn, w["cross_attention"]))
    with torch.no_grad():  # torch stores [out, in]: the transpose of a fixture's x·W weights
        for mha, a in attn:
            mha.in_proj_weight.copy_(t(np.concatenate([np.asarray(a[k]).T for k in ("Wq", "Wk", "Wv")])))
            mha.in_proj_bias.copy_(t(np.concatenate([a[k] for k in ("bq", "bk", "bv")])))
            mha.out_proj.weight.copy_(t(np.asarray(a["Wo"]).T))
            mha.out_proj.bias.copy_(t(a["bo"]))
        for k in (1, 2):
            getattr(layer, f"linear{k}").weight.copy_(t(np.asarray(w["ffn"][f"W{k}"]).T))
            getattr(layer, f"linear{k}").bias.copy_(t(w["ffn"][f"b{k}"]))
        for k in (1, 2, 3):
            if f"norm{k}" in w:
                getattr(layer, f"norm{k}").weight.copy_(t(w[f"norm{k}"]["gamma"]))
                if getattr(layer, f"norm{k}").bias is not None:
                    getattr(layer, f"norm{k}").bias.copy_(t(w[f"norm{k}"]["beta"]))
    return layer.eval()


def _sinusoidal(n, d):
    pos, i = np.arange(n)[:, None], np.arange(d)[None, :]
    angle = pos / 10000 ** ((i - i % 2) / d)
    return np.where(i % 2 == 0, np.sin(angle), np.cos(angle))


def torch_greedy(raw, n):
    """Greedy decoding with torch.nn.Transformer{Encoder,Decoder}Layer, recomputing every step."""
    torch = pytest.importorskip("torch")
    d, heads = raw["d_model"], raw["decoder"]["layers"][0]["self_attention"]["heads"]
    dff, vocab, f64 = len(raw["decoder"]["layers"][0]["ffn"]["b1"]), raw["vocab"], torch.float64
    emb, out_w, out_b = (np.asarray(raw[k] if k == "embedding" else raw["output"][k]) for k in ("embedding", "W", "b"))
    embed = lambda toks: torch.tensor(emb[[vocab.index(x) for x in toks]] + _sinusoidal(len(toks), d))[None]  # noqa
    only = "encoder" not in raw
    kw = dict(
        dim_feedforward=dff,
        dropout=0.0,
        batch_first=True,
        dtype=f64,
        norm_first=only,
        activation="gelu" if only else "relu",
    )
    dec_layers = [
        _load_layer(
            torch,
            (torch.nn.TransformerEncoderLayer if only else torch.nn.TransformerDecoderLayer)(d, heads, **kw),
            w,
            d,
        )
        for w in raw["decoder"]["layers"]
    ]
    if only:  # decoder-only: pre-norm RMSNorm layers, causal self-attention, a final norm
        for layer, w in zip(dec_layers, raw["decoder"]["layers"]):
            for k in (1, 2):
                norm = torch.nn.RMSNorm(d, eps=1e-6, dtype=f64)
                with torch.no_grad():
                    norm.weight.copy_(torch.tensor(w[f"norm{k}"]["gamma"], dtype=f64))
                setattr(layer, f"norm{k}", norm)
            layer.train()  # dropout is 0; train mode keeps torch off its fused path, which assumes LayerNorm
        final = torch.nn.RMSNorm(d, eps=1e-6, dtype=f64)
        with torch.no_grad():
            final.weight.copy_(torch.tensor(raw["decoder"]["final_norm"]["gamma"], dtype=f64))
        tokens = list(raw["source"])
    else:
        memory = embed(raw["source"])
        for w in raw["encoder"]["layers"]:
            memory = _load_layer(torch, torch.nn.TransformerEncoderLayer(d, heads, **kw), w, d)(memory)
        tokens = ["<s>"]
    generated, all_logits = [], []
    with torch.no_grad():
        for _ in range(n):
            y = embed(tokens)
            mask = torch.nn.Transformer.generate_square_subsequent_mask(len(tokens), dtype=f64)
            for layer in dec_layers:
                y = (
                    layer(y, src_mask=mask, is_causal=True)
                    if only
                    else layer(y, memory, tgt_mask=mask, tgt_is_causal=True)
                )
            y = final(y) if only else y
            logits = y[0, -1].numpy() @ out_w + out_b
            all_logits.append(logits)
            generated.append(vocab[int(np.argmax(logits))])
            tokens.append(generated[-1])
    return generated, all_logits


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ["encoder-decoder", "decoder-only"])
def test_greedy_equals_a_pytorch_decoding_loop(kind, seed):
    only = kind == "decoder-only"
    raw = random_fixture(
        seed, decoder_only=only, **(dict(norm="rmsnorm", norm_first=True, act="gelu", scale=1.0) if only else {})
    )
    ours = generate(Model(raw), Settings(max_new_tokens=8), stop_at_eos=False)
    tokens, logits = torch_greedy(raw, 8)
    assert ours.generated == tokens and len(set(tokens)) > 1  # (a model that repeats one token would test less)
    np.testing.assert_allclose([s.logits for s in ours.steps], logits, atol=1e-10)


# ---- the command ----------------------------------------------------------------------------------


def test_woaini_generates_i_love_you(cli):
    d = doc(cli("generate", "--example", "woaini", "-f", "json"))
    assert d["generated"] == ["I", "love", "you", "</s>"]
    assert [s["input"] for s in d["steps"]] == [["<s>"], ["I"], ["love"], ["you"]]
    t = d["tensors"]
    for name in ("dec.0.self.q", "dec.0.self.k_new", "dec.0.self.v_new", "dec.0.self.A", "logits", "probs"):
        assert f"step.0.{name}" in t and f"step.3.{name}" in t
    assert np.shape(t["step.3.dec.0.self.K"]) == (4, 4) and np.shape(t["step.3.dec.0.self.A"]) == (1, 4)
    assert "enc_out" in t and d["macs"]["saved"] > 0


def test_woaini_table_walks_the_steps(cli):
    r = cli("generate", "--example", "woaini", "-f", "table")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    for text in (
        "Step 0: input <s> at position 0 → I",
        "Step 3: input you at position 3 → </s>",
        "dec.0.self.k_new: the K rows the cache gains",
        "dec.0.self.A: weights over the cached positions",
        "dec.0.cross.A: weights over the source",
        "← argmax",
        "MACs with cache",
        "generated: I love you </s>",
    ):
        assert text in out, text


def test_tinyllama_continues_its_prompt(cli):
    d = doc(cli("generate", "--example", "tinyllama", "-f", "json"))
    assert d["generated"] == ["sat", "on", "a", "mat", "</s>"]
    assert d["steps"][0]["input"] == ["<s>", "the", "cat"] and d["steps"][0]["cache_rows"] == 3


def _fixture_file(tmp_path, **kw):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(random_fixture(7, **kw)))
    return str(path)


def test_cli_no_kv_cache_gives_the_same_document(cli, tmp_path):
    path = _fixture_file(tmp_path, **LLAMA)
    a = doc(cli("generate", "--fixture", path, "-n", "6", "-f", "json"))
    b = doc(cli("generate", "--fixture", path, "-n", "6", "--no-kv-cache", "-f", "json"))
    assert a["generated"] == b["generated"] and a["tensors"].keys() == b["tensors"].keys()
    for name in a["tensors"]:
        np.testing.assert_allclose(
            np.array(a["tensors"][name], dtype=float),
            np.array(b["tensors"][name], dtype=float),
            atol=1e-12,
            err_msg=name,
        )
    assert a["macs"] == b["macs"] and a["macs"]["without_cache"] > a["macs"]["with_cache"]


def test_top_k_1_equals_greedy_and_seeds_repeat(cli, tmp_path):
    path = _fixture_file(tmp_path)
    gen = lambda *a: doc(cli("generate", "--fixture", path, "-n", "8", "-f", "json", *a))["generated"]  # noqa
    assert gen("--strategy", "sample", "--top-k", "1", "--seed", "5") == gen("--strategy", "greedy")
    hot = ("--temperature", "5")
    runs = {s: gen(*hot, "--seed", str(s)) for s in range(4)}
    assert gen(*hot, "--seed", "0") == runs[0]  # the same seed repeats exactly
    assert len({tuple(v) for v in runs.values()}) > 1  # and other seeds draw other tokens


def test_sampling_records_what_each_warper_kept(cli, tmp_path):
    d = doc(
        cli(
            "generate",
            "--fixture",
            _fixture_file(tmp_path),
            "--top-k",
            "4",
            "--top-p",
            "0.6",
            "--temperature",
            "0.8",
            "--seed",
            "1",
            "-f",
            "json",
        )
    )
    for s in d["steps"]:
        assert len(s["kept_top_k"]) == 4 and set(s["kept_top_p"]) <= set(s["kept_top_k"])
        assert s["token"] in s["kept_top_p"] and 0 <= s["u"] < 1
        p = np.array(d["tensors"][f"step.{s['step']}.p_sample"])
        assert abs(p.sum() - 1) < 1e-12 and np.count_nonzero(p) == len(s["kept_top_p"])
    assert d["options"]["seed"] == 1 and d["options"]["top_p"] == 0.6


def test_sampling_without_a_seed_says_which_it_used(cli, tmp_path):
    r = cli("generate", "--fixture", _fixture_file(tmp_path), "--strategy", "sample", "-f", "json")
    assert r.exit_code == 0 and "--seed" in r.stderr
    seed = json.loads(r.stdout)["options"]["seed"]
    again = doc(cli("generate", "--fixture", _fixture_file(tmp_path), "--seed", str(seed), "-f", "json"))
    assert again["generated"] == json.loads(r.stdout)["generated"]


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["--temperature", "0"], "--temperature"),
        (["--temperature", "-2"], "--temperature"),
        (["--top-p", "0"], "--top-p"),
        (["--top-p", "1.2"], "--top-p"),
        (["--top-k", "-1"], "--top-k"),
        (["--max-new-tokens", "0"], "--max-new-tokens"),
        (["--strategy", "beam"], "--strategy"),
        (["--example", "wochiyu"], "decoder"),
        (["--only", "nope", "-f", "json"], "--only"),
    ],
)
def test_bad_settings_exit_2_with_one_line(cli, args, fragment):
    base = [] if "--example" in args else ["--example", "woaini"]
    r = cli("generate", *base, *args)
    assert r.exit_code == 2 and fragment in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_set_and_only_behave_like_the_stage_commands(cli):
    d = doc(
        cli(
            "generate",
            "--example",
            "woaini",
            "--set",
            "decoder.layers[0].ffn.b2=[0, 0, 0, 9]",
            "--only",
            "logits,probs",
            "-f",
            "json",
        )
    )
    assert set(k.split(".", 2)[2] for k in d["tensors"]) == {"logits", "probs"}
    assert d["generated"] != ["I", "love", "you", "</s>"]  # the changed bias changes what comes out
