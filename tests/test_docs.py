"""docs/ is the reference users have: its examples run, its links resolve, every command is in it,
and nothing in the package, README or docs points to a file outside the repository."""

import ast
import os
import re
from pathlib import Path

import pytest

from attncalc.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), re.S)


def claim(comment: str):
    """What a `# LITERAL: words` comment says the line gives, or None (a comment of words only)."""
    try:
        return ast.literal_eval(comment.split(":")[0].strip())
    except (ValueError, SyntaxError):
        return None


def test_the_readme_python_example_runs_and_shows_what_it_says(tmp_path, monkeypatch):
    """Each line of README's block that says what it gives (`# ['I', 'love', 'you', '</s>']`) gives that."""
    monkeypatch.chdir(tmp_path)
    (block,) = python_blocks("../README.md")
    names, checked = {"__name__": "docs"}, 0
    for statement in ast.parse(block).body:
        code = ast.get_source_segment(block, statement)
        line = block.splitlines()[statement.end_lineno - 1]
        said = claim(line.split("  # ", 1)[1]) if "  # " in line else None
        if said is None or not isinstance(statement, ast.Expr):
            exec(compile(code, "README.md", "exec"), names)
            continue
        got = eval(compile(code, "README.md", "eval"), names)
        if isinstance(said, float):  # to the decimals written
            got = round(float(got), len(repr(said).split(".")[1]))
        assert got == said, f"README: {code} gives {got!r}, its comment says {said!r}"
        checked += 1
    assert checked >= 4


@pytest.mark.parametrize("k", range(len(python_blocks("api.md"))))
def test_the_api_examples_run(k, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(python_blocks("api.md")[k], f"docs/api.md block {k}", "exec"), {"__name__": "docs"})
    assert capsys.readouterr().out  # each block shows something


def test_api_md_has_examples_to_run():
    assert len(python_blocks("api.md")) >= 3


def test_the_transpose_example_of_conventions_runs():
    pytest.importorskip("torch")
    (block,) = python_blocks("conventions.md")
    exec(compile(block, "docs/conventions.md", "exec"), {"__name__": "docs"})


def shipped_text_files():
    for base in ("attncalc", "docs", "fixtures", "bench"):
        for path in (ROOT / base).rglob("*"):
            if path.suffix in (".py", ".md", ".json") and "__pycache__" not in path.parts:
                yield path
    yield from (ROOT / "README.md", ROOT / "HACKING.md", ROOT / "pyproject.toml")


def test_nothing_refers_to_a_spec_outside_the_repository():
    for path in shipped_text_files():
        text = path.read_text(encoding="utf-8")
        assert "SPEC" not in text, f"{path.relative_to(ROOT)} cites SPEC: link to docs/ instead"
        assert "../shared" not in text and "/work/" not in text, f"{path.relative_to(ROOT)} points outside"


def test_every_relative_link_in_readme_and_docs_resolves():
    pages = [ROOT / "README.md", ROOT / "HACKING.md", *DOCS.glob("*.md")]
    for page in pages:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target:
                assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to missing {target}"
        for cited in re.findall(r"\bdocs/[\w-]+\.md", page.read_text(encoding="utf-8")):
            assert (ROOT / cited).exists(), f"{page.relative_to(ROOT)} names missing {cited}"


def test_code_and_help_point_only_to_docs_that_exist():
    for path in (ROOT / "attncalc").rglob("*.py"):
        for cited in re.findall(r"\bdocs/[\w-]+\.md", path.read_text(encoding="utf-8")):
            assert (ROOT / cited).exists(), f"{path.relative_to(ROOT)} names missing {cited}"


def test_every_command_is_documented():
    documented = (DOCS / "commands.md").read_text(encoding="utf-8")
    names = [c.name or c.callback.__name__ for c in app.registered_commands]
    assert len(names) >= 16
    for name in names:
        assert f"| `{name}` |" in documented, f"docs/commands.md does not describe `attncalc {name}`"


def test_readme_links_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in sorted(os.listdir(DOCS)):
        assert f"docs/{page}" in readme or page == "README.md", f"README does not link docs/{page}"


def command_names() -> list[str]:
    return [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands]


@pytest.mark.parametrize("columns", ["60", "100"])
def test_no_help_line_is_cut_with_dots(cli, monkeypatch, columns):
    """Click shortens a command's help in `attncalc --help` to its line with "...": each is shown whole."""
    monkeypatch.setenv("COLUMNS", columns)
    helps = {"attncalc": cli("--help").stdout, **{n: cli(n, "--help").stdout for n in command_names()}}
    listed = helps["attncalc"].split("Commands:")[1]
    assert "Positional encoding (sinusoidal, learned, RoPE, ALiBi, none) and H" in " ".join(listed.split())
    for name, text in helps.items():
        assert "Usage:" in text, name
        cut = [line for line in text.splitlines() if line.rstrip().endswith("...")]
        assert cut == [], f"{name} --help: {cut}"


EXITING = {"Exit", "SystemExit", "fail", "leave", "exit"}  # typer.Exit, options.fail/leave, Textual's App.exit


def exit_codes_in_code() -> set[int]:
    """Every status attncalc's source ends with: the numbers given to EXITING calls (and their defaults),
    `code or N`, a key binding's "leave(N)", and Click's usage errors."""
    import typer.core

    codes = {typer.core._click.exceptions.UsageError.exit_code}
    for path in (ROOT / "attncalc").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in EXITING:
                given = [*node.args, *(k.value for k in node.keywords if k.arg in ("code", "return_code"))]
                codes |= {a.value for a in given if isinstance(a, ast.Constant) and isinstance(a.value, int)}
                codes |= {0} if not given else set()  # typer.Exit(): success
            elif isinstance(node, ast.FunctionDef) and node.name in EXITING:
                codes |= {d.value for d in node.args.defaults if isinstance(d, ast.Constant) and type(d.value) is int}
            elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and "code" in ast.unparse(node.values[0]):
                codes |= {v.value for v in node.values[1:] if isinstance(v, ast.Constant) and type(v.value) is int}
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                codes |= {int(n) for n in re.findall(r"^leave\((\d+)\)$", node.value)}
    return codes


def test_every_exit_code_the_program_returns_is_documented_in_docs_and_readme():
    codes = exit_codes_in_code()
    assert {0, 1, 2, 70, 74, 130} <= codes  # the scan finds what the program is known to return
    table = {int(n) for n in re.findall(r"^\| (\d+) \|", (DOCS / "exit-codes.md").read_text(encoding="utf-8"), re.M)}
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("## Exit codes")[1].split("\n## ")[0]
    in_readme = {int(n) for n in re.findall(r"(?:^|· )(\d+) ", readme.strip())}
    (row,) = re.findall(
        r"\| \[exit-codes\.md\]\(exit-codes\.md\) \| (.*) \|", (DOCS / "README.md").read_text(encoding="utf-8")
    )
    in_index = {int(n) for n in re.findall(r"\d+", row)}
    assert table == codes, f"docs/exit-codes.md lists {sorted(table)}, the program returns {sorted(codes)}"
    assert in_readme == codes, f"README lists {sorted(in_readme)}, the program returns {sorted(codes)}"
    assert in_index == codes, f"docs/README.md lists {sorted(in_index)}, the program returns {sorted(codes)}"
