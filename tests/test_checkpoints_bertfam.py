"""RoBERTa and DistilBERT on the BERT path: tiny random checkpoints written with transformers' save_pretrained
(the base model and the masked-LM head's prefixed names), read back through --model. Every layer's hidden
state and attention weights must equal transformers' in float64 (1e-9)."""

import numpy as np
import pytest
from conftest import doc
from test_checkpoints_tiny import attncalc_graph, randomise, save

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

IDS = [3, 17, 5, 29, 8, 0, 2]  # no 1: RoBERTa's pad, whose position transformers sets apart
LAYERS = 3


def tiny(classes, head: bool, **config):
    """A base model or its masked-LM head (the weights under "roberta." / "distilbert."), eager attention."""
    config_class, base, with_head = classes
    return (with_head if head else base)(config_class(vocab_size=40, attn_implementation="eager", **config))


def roberta(head: bool = False, **config):
    classes = transformers.RobertaConfig, transformers.RobertaModel, transformers.RobertaForMaskedLM
    shape = dict(hidden_size=16, intermediate_size=24, num_hidden_layers=LAYERS, num_attention_heads=4)
    # 7 tokens read rows 2 … 8 of the 12; the eps is the config's own (BERT's default is 1e-12)
    return tiny(classes, head, **shape, max_position_embeddings=12, type_vocab_size=1, layer_norm_eps=1e-5, **config)


def distilbert(head: bool = False, **config):
    classes = transformers.DistilBertConfig, transformers.DistilBertModel, transformers.DistilBertForMaskedLM
    return tiny(classes, head, dim=16, hidden_dim=24, n_layers=LAYERS, n_heads=4, max_position_embeddings=10, **config)


@pytest.mark.parametrize("head", [False, True], ids=["base", "masked_lm"])
@pytest.mark.parametrize("make", [roberta, distilbert], ids=["roberta", "distilbert"])
def test_tiny_bert_family_hidden_states_and_attention_equal_transformers(make, head, tmp_path):
    model = randomise(make(head), seed=11).eval()
    path = save(model, tmp_path / "m")
    g = attncalc_graph(path, "encoder", IDS)
    with torch.no_grad():
        out = model.double()(torch.tensor([IDS]), output_hidden_states=True, output_attentions=True)
    assert len(out.attentions) == LAYERS
    np.testing.assert_allclose(g.value("H"), out.hidden_states[0][0].numpy(), rtol=0, atol=1e-9)
    for i in range(LAYERS):
        np.testing.assert_allclose(g.value(f"enc.{i}.H2"), out.hidden_states[i + 1][0].numpy(), rtol=0, atol=1e-9)
        np.testing.assert_allclose(g.value(f"enc.{i}.A"), out.attentions[i][0].numpy(), rtol=0, atol=1e-9)


def test_roberta_position_i_reads_row_i_plus_2_of_its_own_table(tmp_path):
    model = randomise(roberta(), seed=12).eval()
    g = attncalc_graph(save(model, tmp_path / "m"), "encoder", IDS)
    table = model.embeddings.position_embeddings.weight.detach().double().numpy()
    assert g.value("P").shape == table.shape  # the checkpoint's whole table, not a slice
    np.testing.assert_allclose(g.value("PE"), table[2 : 2 + len(IDS)], rtol=0, atol=0)
    assert g.nodes["PE"].formula == "PE[pos] = P[pos + 2]"


def test_distilbert_adds_no_token_type(tmp_path):
    g = attncalc_graph(save(randomise(distilbert(), seed=13).eval(), tmp_path / "m"), "encoder", IDS)
    assert "TT" not in g.nodes and "T" not in g.nodes
    assert g.nodes["PE"].formula == "PE[pos] = P[pos]"


@pytest.mark.parametrize("make", [roberta, distilbert], ids=["roberta", "distilbert"])
def test_encoder_on_the_command_line(make, tmp_path, cli):
    model = randomise(make(), seed=14).eval()
    path = save(model, tmp_path / "m")
    d = doc(cli("encoder", "--model", path, "--ids", " ".join(map(str, IDS)), "-f", "json"))
    with torch.no_grad():
        out = model.double()(torch.tensor([IDS]), output_hidden_states=True)
    last = np.asarray(d["tensors"][f"enc.{LAYERS - 1}.H2"])
    np.testing.assert_allclose(last, out.hidden_states[-1][0].numpy(), rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    "make, config, field",
    [
        (roberta, {"position_embedding_type": "relative_key"}, "position_embedding_type"),
        (distilbert, {"sinusoidal_pos_embds": True}, "sinusoidal_pos_embds"),
        (distilbert, {"activation": "relu"}, "activation"),
    ],
    ids=["roberta_relative_positions", "distilbert_sinusoidal", "distilbert_relu"],
)
def test_what_the_map_does_not_compute_exits_2_naming_the_field(make, config, field, tmp_path, cli):
    path = save(make(**config), tmp_path / "m")
    r = cli("encoder", "--model", path, "--ids", "3 17", "-f", "json")
    assert r.exit_code == 2, r.output
    assert f"config.json: {field}" in r.output and "Traceback" not in r.output


def test_roberta_refuses_its_pad_token_in_the_ids(tmp_path, cli):
    path = save(randomise(roberta(), seed=15).eval(), tmp_path / "m")
    r = cli("encoder", "--model", path, "--ids", "3 1 5", "-f", "json")
    assert r.exit_code == 2 and "--ids[1]" in r.output and "pad token 1" in r.output
