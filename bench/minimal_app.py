"""The floor attncalc is measured against: the least a Typer app can do for one stage.

One command function, registered under attncalc's command names (so `--help` lists the same
commands), NumPy imported inside it, the stage's tensors for a bundled example computed with
plain NumPy and printed as one JSON document (with the fixture, as a pipe document has).

    python bench/minimal_app.py softmax --example woaini -f json
"""

import json
import os
from typing import Optional

import typer

app = typer.Typer()
STAGES = ["embed", "pe", "qkv", "scores", "mask", "softmax", "attend", "encoder", "decoder"]
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "attncalc", "examples")


def stage_command(stage: str):
    def command(
        example: str = typer.Option("woaini", "--example", "-e"),
        fmt: str = typer.Option("json", "--format", "-f"),
        only: Optional[str] = typer.Option(None, "--only"),
    ):
        import numpy as np

        with open(os.path.join(EXAMPLES, example + ".json"), encoding="utf-8") as f:
            fx = json.load(f)
        t, last = {}, STAGES.index(stage)
        vocab, d = fx["vocab"], fx["d_model"]
        src = fx["source"]

        def attention(p, x, kv, causal):
            h = p.get("heads", 1)
            q, k, v = x @ np.array(p["Wq"]), kv @ np.array(p["Wk"]), kv @ np.array(p["Wv"])
            dk = q.shape[1] // h
            qh, kh, vh = (m.reshape(len(m), h, -1).transpose(1, 0, 2) for m in (q, k, v))
            s = qh @ kh.transpose(0, 2, 1)
            ss = s / np.sqrt(dk)
            m = np.tril(np.ones(ss.shape[-2:])) if causal else np.ones(ss.shape[-2:])
            sm = np.where(m > 0, ss, -np.inf)
            a = np.exp(sm - sm.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            o = (a @ vh).transpose(1, 0, 2).reshape(len(x), -1)
            z = o @ np.array(p["Wo"]) if "Wo" in p else o
            sq = lambda y: y[0] if h == 1 else y
            return {
                "Q": q,
                "K": k,
                "V": v,
                "S": sq(s),
                "S_scaled": sq(ss),
                "M": m,
                "S_masked": sq(sm),
                "A": sq(a),
                "O": o,
                "Z": z,
            }

        def norm(x, p):
            mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
            return (x - mu) / np.sqrt(var + 1e-5) * np.array(p.get("gamma", 1.0)) + np.array(p.get("beta", 0.0))

        def ffn(x, p):
            return np.maximum(x @ np.array(p["W1"]) + p.get("b1", 0), 0) @ np.array(p["W2"]) + p.get("b2", 0)

        def embed(tokens):
            x = np.array(fx["embedding"])[[vocab.index(w) for w in tokens]]
            pos, i = np.arange(len(tokens))[:, None], np.arange(d)[None, :]
            pe = np.where(
                i % 2 == 0, np.sin(pos / 10000 ** ((i - i % 2) / d)), np.cos(pos / 10000 ** ((i - i % 2) / d))
            )
            return x, pe, x + pe

        t["X"], t["PE"], t["H"] = embed(src)
        block = fx.get("attention") or fx["encoder"]["layers"][0]["self_attention"]
        names = ["X", "PE", "H", "Q", "K", "V", "S", "S_scaled", "M", "S_masked", "A", "O", "Z"]
        if last >= 2:
            t.update(attention(block, t["H"], t["H"], False))
        t = {k: t[k] for k in names[: [1, 3, 6, 8, 10, 11, 13, 13, 13][last]]}
        x = t.get("H")
        for i, layer in enumerate(fx["encoder"]["layers"] if last >= 7 else []):
            t.update({f"enc.{i}.{k}": v for k, v in attention(layer["self_attention"], x, x, False).items()})
            t[f"enc.{i}.H1"] = x = norm(x + t[f"enc.{i}.Z"], layer["norm1"])
            t[f"enc.{i}.H2"] = x = norm(x + ffn(x, layer["ffn"]), layer["norm2"])
        if last >= 7:
            t["enc_out"] = enc = x
        if last >= 8:
            tokens = [fx["special"]["bos"]] + fx["target"]
            _, _, y = embed(tokens)
            for i, layer in enumerate(fx["decoder"]["layers"]):
                y = norm(y + attention(layer["self_attention"], y, y, True)["Z"], layer["norm1"])
                y = norm(y + attention(layer["cross_attention"], y, enc, False)["Z"], layer["norm2"])
                t[f"dec.{i}.D3"] = y = norm(y + ffn(y, layer["ffn"]), layer["norm3"])
            t["logits"] = y @ np.array(fx["output"]["W"]) + fx["output"].get("b", 0)
            e = np.exp(t["logits"] - t["logits"].max(-1, keepdims=True))
            t["probs"] = e / e.sum(-1, keepdims=True)
        if only:
            t = {k: t[k] for k in only.split(",")}
        tensors = {
            k: np.where(np.isneginf(v), 0, v).tolist() if np.isneginf(v).any() else v.tolist() for k, v in t.items()
        }
        print(json.dumps({"attncalc": 1, "fixture": fx, "stage": stage, "tensors": tensors}, ensure_ascii=False))

    return command


for name in STAGES:
    app.command(name, help=f"The {name} stage.")(stage_command(name))
for name in ("generate", "walk", "check", "kvcache", "compare", "examples"):
    app.command(name, help=f"The {name} command.")(stage_command("embed"))

if __name__ == "__main__":
    app()
