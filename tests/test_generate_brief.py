"""`generate` on a real model, sized for a person (issue 23): its default JSON document is each step in short
(the chosen token, its probability, the five most likely, the cache) with the ids and the decoded text, under
the 5,000,000-number cap, still a pipe document that other commands read; every tensor only with --full or
--only. A document too big for the cap is refused from the weights' shapes before any weight is read
(issue 19), for generate and for the stage commands with --model."""

import json
import re

import numpy as np
import pytest
from conftest import doc
from test_checkpoints_real import SMOL, need_smol
from test_checkpoints_tiny import llama, randomise, save
from test_schemas import errors

from attncalc.inputs.checkpoints.tensors import Lazy


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    return save(randomise(llama(), seed=1).eval(), tmp_path_factory.mktemp("brief") / "llama")


@pytest.fixture
def nothing_read(monkeypatch):
    """Any checkpoint weight read (or dequantised) fails the test: the refusal must come from shapes alone."""

    def refuse(self, *args, **kw):
        raise AssertionError(f"weight {self.name} was read before the size was checked")

    monkeypatch.setattr(Lazy, "value", refuse)
    monkeypatch.setattr(Lazy, "_fresh", refuse)


def numbers(value) -> int:
    """How many numbers a JSON value holds (booleans are not numbers)."""
    if isinstance(value, dict):
        return sum(numbers(v) for v in value.values())
    if isinstance(value, list):
        return sum(numbers(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


ARGS = ("--ids", "3,17,5", "-n", "6")


def test_a_real_models_default_document_is_each_step_in_short(cli, tiny_llama):
    brief = doc(cli("generate", "--model", tiny_llama, *ARGS, "-f", "json"))
    assert errors("document", brief) == []
    assert brief["tensors"] == {} and brief["fixture"]["ids"] == [3, 17, 5]
    probs = doc(cli("generate", "--model", tiny_llama, *ARGS, "-f", "json", "--only", "probs"))["tensors"]
    steps = brief["steps"]
    assert len(steps) == 6 and brief["generated"] == [s["token"] for s in steps]
    assert brief["generated_ids"] == [s["token_id"] for s in steps]
    assert brief["generated"] == [f"#{i}" for i in brief["generated_ids"]]  # no tokenizer: labelled by id
    assert brief["text"] == " ".join(brief["generated"])
    for s in steps:
        p = np.array(probs[f"step.{s['step']}.probs"])[-1]  # the last row predicts the next token
        order = np.argsort(-p, kind="stable")[:5]
        assert [t["token_id"] for t in s["top"]] == order.tolist()
        assert [t["probability"] for t in s["top"]] == p[order].tolist()
        assert s["token_id"] == order[0] and s["probability"] == p[order[0]]  # greedy: the most likely
        assert s["cache_rows"] == 3 + s["step"]


def test_full_and_only_keep_every_steps_tensors(cli, tiny_llama):
    full = doc(cli("generate", "--model", tiny_llama, *ARGS, "-f", "json", "--full"))
    assert errors("document", full) == []
    names = {k.split(".", 2)[2] for k in full["tensors"]}
    assert {"dec.0.self.q", "dec.1.self.K", "dec.1.self.A", "logits", "probs"} <= names
    assert len([k for k in full["tensors"] if k.endswith(".probs")]) == 6
    brief = doc(cli("generate", "--model", tiny_llama, *ARGS, "-f", "json"))
    assert full["steps"] == brief["steps"] and full["text"] == brief["text"]


def test_a_sampled_brief_step_counts_what_each_warper_kept(cli, tiny_llama):
    args = ("generate", "--model", tiny_llama, *ARGS, "--top-k", "7", "--top-p", "0.5", "--seed", "4", "-f", "json")
    brief = doc(cli(*args))
    p_sample = doc(cli(*args, "--only", "p_sample"))["tensors"]
    assert errors("document", brief) == []
    for s in brief["steps"]:
        p = np.array(p_sample[f"step.{s['step']}.p_sample"])
        assert s["kept"] == {"top_k": 7, "top_p": int(np.count_nonzero(p))}
        assert [t["p_sample"] for t in s["top"]] == [p[t["token_id"]] for t in s["top"]]
        assert p[s["token_id"]] == s["p_sample"] > 0 and "kept_top_k" not in s


def test_the_brief_document_reads_back_into_the_stages_and_generate(cli, tiny_llama):
    text = cli("generate", "--model", tiny_llama, *ARGS, "-f", "json").stdout
    step0 = json.loads(text)["steps"][0]
    probs = np.array(doc(cli("decoder", "-f", "json", "--only", "probs", input=text))["tensors"]["probs"])[-1]
    assert probs[step0["token_id"]] == step0["probability"]  # the same model, reopened from the reference
    again = doc(cli("generate", "-n", "6", "-f", "json", input=text))
    assert again["generated"] == json.loads(text)["generated"] and again["tensors"] == {}


def test_a_bundled_example_keeps_its_whole_document_and_gains_the_top_tokens(cli):
    d = doc(cli("generate", "--example", "woaini", "-f", "json"))
    assert d["generated"] == ["I", "love", "you", "</s>"] and "text" not in d
    assert "step.0.probs" in d["tensors"] and "step.3.dec.0.self.A" in d["tensors"]
    for s in d["steps"]:
        p = np.array(d["tensors"][f"step.{s['step']}.probs"])[-1]
        assert s["top"][0] == {"token": s["token"], "token_id": s["token_id"], "probability": p.max()}


# ---- sized before a weight is read ----------------------------------------------------------------


def test_the_estimate_of_a_whole_generation_is_what_it_writes():
    import attncalc
    from attncalc.run.decoding import Settings, generate
    from attncalc.run.generation_size import generation_numbers

    for example, settings in [
        ("tinyllama", Settings(max_new_tokens=7)),
        ("woaini", Settings(max_new_tokens=5, strategy="sample", seed=2)),  # an encoder, cross-attention
        ("tinyllama", Settings(max_new_tokens=1)),
        ("tinyllama", Settings(max_new_tokens=4, use_cache=False)),
    ]:
        model = attncalc.load(example).decoder_model()
        run = generate(model, settings, stop_at_eos=False)
        written = sum(np.size(t.value) for s in run.steps for t in s.tensors.values())
        written += len(model.vocab) * len(run.steps) if settings.strategy == "sample" else 0
        written += sum(np.size(model.encoder.value(n)) for n in model.encoder.shown()) if model.encoder else 0
        first = sum(np.size(t.value) for t in run.steps[0].tensors.values())
        assert generation_numbers(model, settings)[1] == written, example
        assert first <= generation_numbers(model, settings)[0] <= written


def test_generate_full_json_on_a_model_is_refused_before_a_weight_is_read(cli, tiny_llama, nothing_read, monkeypatch):
    import attncalc.render.output

    monkeypatch.setattr(attncalc.render.output, "HUGE", 5_000)  # its first step: 2,238 numbers, 6 steps: 7,278
    r = cli("generate", "--model", tiny_llama, *ARGS, "--full", "-f", "json")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith(
        "attncalc: error: -f json: expected at most 5,000 numbers in one document (pick tensors with --only "
        "logits,probs), found "
    )
    assert " numbers over 6 new tokens, about " in r.stderr and r.stderr.count("\n") == 1
    r = cli("decoder", "--model", tiny_llama, "--ids", " ".join(["3"] * 60), "-f", "json")
    assert r.exit_code == 2 and "(pick tensors with --only A,O), found at least " in r.stderr


@need_smol
def test_smollm2_stage_and_generate_refusals_come_before_a_weight_is_read(cli, nothing_read):
    words = " ".join(["word"] * 300)
    r = cli("decoder", "--model", SMOL, "--text", words, "-f", "json")
    head = "attncalc: error: -f json: expected at most 5,000,000 numbers in one document (pick tensors with --only "
    assert r.exit_code == 2 and r.stdout == ""
    found = re.fullmatch(
        re.escape(head + "A,O), found at least ") + r"([\d,]+) numbers, about [\d,]+ MB of JSON\n", r.stderr
    )
    assert found and int(found[1].replace(",", "")) > 200_000_000  # 300 tokens: 9 heads × 300² a score tensor
    r = cli("generate", "--model", SMOL, "--text", "The capital of France is", "-n", "10", "--full", "-f", "json")
    assert r.exit_code == 2 and r.stdout == ""
    found = re.fullmatch(
        re.escape(head + "logits,probs), found ") + r"([\d,]+) numbers over 10 new tokens, .*\n", r.stderr
    )
    assert found and int(found[1].replace(",", "")) > 5_000_000


@need_smol
def test_smollm2s_ten_tokens_fit_a_screen_and_a_document(cli):
    args = ("generate", "--model", SMOL, "--text", "The capital of France is", "-n", "10")
    table = cli(*args, "-f", "table")
    assert table.exit_code == 0, table.stderr
    lines = table.stdout.splitlines()
    assert len(lines) < 60, len(lines)
    brief = doc(cli(*args, "-f", "json"))
    assert errors("document", brief) == []
    assert numbers(brief) < 1000 and brief["tensors"] == {}
    assert brief["text"] == " Paris.\n\nThe answer is: 2"
    assert table.stdout.endswith("Generated text:\n" + brief["text"] + "\n")
    tops = [line.strip() for line in lines if line.strip().startswith("top 5: ")]
    for s, top in zip(brief["steps"], tops, strict=True):
        shown = "  ".join(f"{t['token']} {t['probability']:.3f}" for t in s["top"])
        assert top == "top 5: " + shown
