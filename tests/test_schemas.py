"""The JSON Schemas (attncalc/schemas, `attncalc schema NAME`): every bundled example and the document of
every stage, decoder and generate validate; malformed ones (wrong types, missing fields, NaN) do not."""

import importlib.util
import json
import math
from pathlib import Path

import pytest
from conftest import doc

from attncalc import schemas
from attncalc.core.names import STAGES
from attncalc.inputs.examples import example_names, examples_dir, load_example

jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")

ROOT = Path(__file__).resolve().parent.parent


def validator(name: str):
    """A Draft 2020-12 validator of schema `name` that finds the other two by their relative $id."""
    loaded = {n: json.loads(schemas.text(n)) for n in schemas.NAMES}
    registry = referencing.Registry().with_resources(
        (f"{n}.schema.json", referencing.Resource.from_contents(s)) for n, s in loaded.items()
    )
    jsonschema.Draft202012Validator.check_schema(loaded[name])
    return jsonschema.Draft202012Validator(loaded[name], registry=registry)


def errors(name: str, instance) -> list[str]:
    return [e.message for e in validator(name).iter_errors(instance)]


@pytest.mark.parametrize("name", ["woaini", "wochiyu", "tinyllama", "multihead", "padding", "rope", "order"])
def test_every_bundled_example_validates_and_names_its_schema(name):
    assert name in example_names()
    fixture = load_example(name)
    assert fixture["$schema"] == "../schemas/fixture.schema.json"
    assert (examples_dir() / fixture["$schema"]).resolve() == schemas.path("fixture").resolve()  # an editor finds it
    assert errors("fixture", fixture) == []


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "fixtures" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_scripts_still_write_every_example_byte_for_byte():
    examples = load_script("make_examples")
    for make in examples.EXAMPLES:
        text = (examples_dir() / f"{make.__name__}.json").read_text(encoding="utf-8")
        assert text == json.dumps(make(), ensure_ascii=False, indent=1) + "\n"
    tiny = load_script("make_tinyllama")
    assert (examples_dir() / "tinyllama.json").read_text(encoding="utf-8") == tiny.text(tiny.tinyllama())


@pytest.mark.parametrize("stage", STAGES)
def test_the_document_of_every_stage_validates(cli, stage):
    document = doc(cli(stage, "--example", "woaini", "-f", "json"))
    assert errors("document", document) == []
    assert errors("worksheet", document) == []  # a document is a worksheet too (check reads its tensors)


@pytest.mark.parametrize(
    "args",
    [
        ["generate", "--example", "woaini", "-f", "json"],
        ["generate", "--example", "tinyllama", "--strategy", "sample", "--seed", "3", "-n", "3", "-f", "json"],
        ["decoder", "--example", "tinyllama", "-f", "json"],
        ["mask", "--example", "woaini", "--kind", "causal", "--cell", "S_masked:我,爱", "-f", "json"],
        ["softmax", "--scores", "5.1 1.0 4.3", "-f", "json"],  # a calculator's document: no vocab
    ],
)
def test_the_documents_of_generate_decoder_cells_and_calculators_validate(cli, args):
    result = cli(*args)
    assert result.exit_code == 0, result.stderr
    assert errors("document", json.loads(result.stdout)) == []


def test_malformed_fixtures_do_not_validate():
    good = load_example("woaini")
    assert "is not of type 'integer'" in " ".join(errors("fixture", {**good, "d_model": "4"}))
    assert "'vocab' is a required property" in errors("fixture", {k: v for k, v in good.items() if k != "vocab"})
    nan = json.loads(json.dumps(good).replace('"embed_scale": 1.0', '"embed_scale": NaN'))
    assert math.isnan(nan["embed_scale"]) and errors("fixture", nan)  # a NaN token
    inf = {**good, "attention": {**good["attention"], "Wq": [[1e999, 0, 0, 0]]}}
    assert errors("fixture", inf)
    assert errors("fixture", {**good, "position": {"type": "spiral"}})
    assert errors("fixture", {**good, "attention": {**good["attention"], "heads": 0}})
    assert errors("fixture", {**good, "vocab": ["我", "我"]})  # tokens must be unique
    assert errors("fixture", {**good, "embedding": [[1, 0, "x", 0]]})
    for number in (0, -2.5, 3, 1e-300, -1e300):  # NaN's guard lets every finite number through
        assert errors("fixture", {**good, "embed_scale": number}) == []


def test_malformed_documents_and_worksheets_do_not_validate(cli):
    document = doc(cli("softmax", "--example", "woaini", "-f", "json"))
    assert errors("document", {**document, "attncalc": 2})
    assert errors("document", {k: v for k, v in document.items() if k != "fixture"})
    assert errors("document", {**document, "tensors": {"A": [[0.3, "high"]]}})
    assert errors("document", {**document, "tensors": {"A": [[float("nan")]]}})
    assert errors("document", {**document, "stage": "dance"})
    assert errors("worksheet", {"S": [[4.0, 4.392, 3.513]], "A": [[0.3, "x"]]})
    assert errors("worksheet", {"S": [[float("nan")]]})
    assert errors("worksheet", {})
    assert errors("worksheet", {"S": [[4.0, "−∞"]], "M": [[1, 0]], "loss": 0.15}) == []


def test_schema_command_prints_each_schema_and_names_an_unknown_one(cli):
    for name in schemas.NAMES:
        result = cli("schema", name)
        assert result.exit_code == 0
        assert json.loads(result.stdout) == json.loads(schemas.text(name))
        assert json.loads(result.stdout)["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    bad = cli("schema", "fixtures")
    assert bad.exit_code == 2
    assert bad.stderr.strip() == "attncalc: error: NAME: expected fixture, document or worksheet, found 'fixtures'"
