"""The JSON Schemas (attncalc/schemas, `attncalc schema NAME`): every bundled example and the document of
every stage, decoder and generate validate; malformed ones (wrong types, missing fields, NaN) do not."""

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
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
    """A Draft 2020-12 validator of schema `name` as `attncalc schema NAME` prints it, with no other schema to
    find (an empty registry: a `$ref` outside the one file fails)."""
    schema = json.loads(schemas.text(name))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=referencing.Registry())


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


def refs(node) -> list[str]:
    """Every `$ref` in a schema."""
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    if not isinstance(node, dict):
        return []
    own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
    return own + [r for v in node.values() for r in refs(v)]


@pytest.mark.parametrize("name", schemas.NAMES)
def test_each_printed_schema_stands_alone(cli, name, tmp_path):
    """`attncalc schema NAME > file`: that one file is the whole schema (every $ref a pointer inside it)."""
    (tmp_path / "only.schema.json").write_text(cli("schema", name).stdout, encoding="utf-8")
    schema = json.loads((tmp_path / "only.schema.json").read_text(encoding="utf-8"))
    assert refs(schema) and all(r.startswith("#") for r in refs(schema))
    resolver = referencing.Registry().with_resource("", referencing.Resource.from_contents(schema)).resolver()
    for ref in set(refs(schema)):
        assert resolver.lookup(ref).contents is not None  # every pointer lands on a schema in the file


def test_a_document_and_a_worksheet_validate_against_the_printed_schema_alone(cli, tmp_path):
    document = doc(cli("mask", "--example", "woaini", "--kind", "causal", "-f", "json"))
    worksheet = {"S": [[4.0, 4.39, 3.51]], "S_masked": [[2.0, "-inf", "−∞"]], "loss": 0.151}
    for name, instance in (("document", document), ("worksheet", worksheet), ("worksheet", document)):
        schema = json.loads(cli("schema", name).stdout)
        alone = jsonschema.Draft202012Validator(schema, registry=referencing.Registry())
        assert list(alone.iter_errors(instance)) == []
        assert list(alone.iter_errors({**document, "tensors": {"A": [[0.3, "high"]]}}))  # and it still judges
    shipped = jsonschema.Draft202012Validator(schemas.shipped("document"), registry=referencing.Registry())
    with pytest.raises(referencing.exceptions.Unresolvable):  # as shipped it names fixture.schema.json
        list(shipped.iter_errors(document))


def fixture_block() -> str:
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "docs" / "fixture.md").read_text(encoding="utf-8"), re.S)
    (block,) = [b for b in blocks if "attncalc schema fixture" in b]
    return block


def validate_where_it_points(copy: Path) -> list[str]:
    """What an editor does: read the copy's "$schema" as a path from the copy's folder, and validate."""
    fixture = json.loads(copy.read_text(encoding="utf-8"))
    schema = json.loads((copy.parent / fixture["$schema"]).read_text(encoding="utf-8"))
    alone = jsonschema.Draft202012Validator(schema, registry=referencing.Registry())
    return [e.message for e in alone.iter_errors(fixture)]


def test_a_copied_example_validates_where_docs_fixture_md_says(tmp_path):
    """docs/fixture.md's commands, run from a clone: the copy keeps its "$schema" and the schema sits where it
    points; a copy beside the schema names "fixture.schema.json" instead (as the page says too)."""
    (tmp_path / "bin").mkdir()
    shim = tmp_path / "bin" / "attncalc"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m attncalc "$@"\n')
    shim.chmod(0o755)
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "attncalc").symlink_to(ROOT / "attncalc")
    env = {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    subprocess.run(["sh", "-euc", fixture_block()], cwd=clone, env=env, check=True, timeout=120)
    copies = [p for p in clone.rglob("*.json") if "attncalc" not in p.relative_to(clone).parts[:1]]
    (copy,) = [p for p in copies if "vocab" in json.loads(p.read_text(encoding="utf-8"))]  # the copy, not the schema
    assert json.loads(copy.read_text(encoding="utf-8"))["$schema"] == "../schemas/fixture.schema.json"
    assert (copy.parent / "../schemas/fixture.schema.json").resolve().is_relative_to(clone.resolve())
    assert validate_where_it_points(copy) == []
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / "fixture.schema.json").write_text(schemas.text("fixture"), encoding="utf-8")
    mine = {**load_example("woaini"), "$schema": "fixture.schema.json"}
    (beside / "mine.json").write_text(json.dumps(mine, ensure_ascii=False), encoding="utf-8")
    assert validate_where_it_points(beside / "mine.json") == []
    assert '"$schema": "fixture.schema.json"' in (ROOT / "docs" / "fixture.md").read_text(encoding="utf-8")
    broken = {**mine, "d_model": "four"}
    (beside / "mine.json").write_text(json.dumps(broken, ensure_ascii=False), encoding="utf-8")
    assert validate_where_it_points(beside / "mine.json")  # and a wrong field is flagged
