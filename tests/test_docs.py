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


# ---- every attncalc and pip install command in README and docs/ names only what exists

PAGES = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted(DOCS.glob("*.md"))]
SYNOPSIS = re.compile(r"…|\[-|\b[A-Z]{2,}|\w\|\w")  # CONFIG, [--batch B], fixture|document: a pattern, not a command
COMMAND = re.compile(r"(?:^|[|;&]\s*)(?:\.venv/bin/)?(?:attncalc(?: |$)|(?:python3? -m )?pip install )")


def shell_lines(page: Path):
    """(line, how it is written) for each command line of a page: "block" for sh and plain blocks
    (continuations joined) and console blocks' `$ ` lines, "demo" for one whose output is `attncalc:
    error:`, "span" for inline code (which may name a command without its arguments: `attncalc check`)."""
    text = page.read_text(encoding="utf-8")
    for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S):
        if lang not in ("sh", "console", ""):
            continue
        lines = re.sub(r"\\\n|\n(?=\s)", " ", body).splitlines()
        for k, line in enumerate(lines):
            if lang != "console":
                yield line, "block"
            elif line.startswith("$ "):
                yield (
                    line[2:],
                    "demo" if lines[k + 1 : k + 2] and lines[k + 1].startswith("attncalc: error:") else "block",
                )
    for span in re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S)):
        yield span, "span"


def simple_commands(line: str):
    """The line's commands (split at |, &&, ;) as argument lists, and the files its redirections create."""
    import shlex

    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    argv, created, tokens = [], [], list(lexer)
    for k, token in enumerate(tokens):
        if token in ("|", "&&", "||", ";", "&"):
            yield argv, created
            argv = []
        elif token in (">", ">>", "<"):
            created.append(tokens[k + 1]) if token != "<" else None
        elif k == 0 or tokens[k - 1] not in (">", ">>", "<"):
            argv.append(token)
    yield argv, created


def pip_problems(args: list[str]) -> list[str]:
    """What a `pip install ARGS` names that a clone does not have: an extra pyproject lacks, or a package
    that CI (.ci/run) does not install."""
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ci_packages = {re.split(r"[=<>\[]", w)[0] for line in re.findall(r"pip install (.*)", ci) for w in line.split()}
    problems = []
    for arg in args:
        if arg in ("-q", "-e", "--no-deps", "--upgrade", "-U"):
            continue
        if arg.startswith("-"):
            problems.append(f"pip option {arg} (not one CI uses)")
        elif arg.startswith("."):
            asked = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", arg)
            missing = set(asked.group(1).split(",")) - set(extras) if asked and asked.group(1) else set()
            problems += [f"{arg}: not a path to the clone with its extras"] if not asked else []
            problems += [f"extra {e!r} (pyproject has {sorted(extras)})" for e in sorted(missing)]
        elif arg not in ci_packages:
            problems.append(f"package {arg!r}, which .ci/run never installs (attncalc is not on the index)")
    return problems


def attncalc_problems(args: list[str], created: set[str], written: str) -> list[str]:
    """What `attncalc ARGS` names that does not exist: a command, an option (Click parses the line), a
    bundled example, a GPU preset, a format, a schema, an input file (not for an error demo)."""
    import typer.main
    from typer.core import _click

    from attncalc import schemas
    from attncalc.inputs.examples import example_names
    from attncalc.render import formats
    from attncalc.serving import hardware

    group = typer.main.get_command(app)
    if not args or args[0].startswith("-"):
        unknown = [a for a in args if a.startswith("-") and a not in ("-h", "--help", "-V", "--version")]
        return [f"attncalc option {a}" for a in unknown]
    command = group.commands.get(args[0])
    if command is None:
        return [f"command {args[0]!r}"]
    if "--help" in args or "-h" in args:
        return []
    try:
        ctx = command.make_context(args[0], list(args[1:]), parent=_click.Context(group, info_name="attncalc"))
    except _click.exceptions.MissingParameter as e:
        return [] if written == "span" else [e.format_message()]
    except _click.exceptions.UsageError as e:
        return [e.format_message()]
    demo = written == "demo"
    params, problems = ctx.params, []
    choices = {"example": example_names(), "gpu": hardware.PRESETS, "fmt": formats.FORMATS}
    if args[0] == "schema":
        choices["name"] = schemas.NAMES
    for key, known in choices.items():
        if params.get(key) is not None and params[key] not in known and not demo:
            problems.append(f"{key} {params[key]!r} (there are {sorted(known)})")
    for key, value in params.items():
        pathlike = isinstance(value, str) and ("/" in value or value.endswith((".json", ".txt", ".gguf")))
        if pathlike and key != "export" and not value.startswith("$") and value not in created and not demo:
            problems += [] if (ROOT / value).exists() else [f"file {value} ({key}), which is not in the clone"]
    return problems


def test_every_attncalc_and_pip_install_command_in_readme_and_docs_names_only_what_exists():
    seen, problems = 0, []
    for page in PAGES:
        created: set[str] = set()
        for line, written in shell_lines(page):
            if not COMMAND.search(line.strip()):
                continue
            for argv, made in simple_commands(line) if not SYNOPSIS.search(line) else []:
                created |= set(made)
                if argv[:1] in (["attncalc"], [".venv/bin/attncalc"]):
                    found = attncalc_problems(argv[1:], created, written)
                elif "install" in argv and ("pip" in argv[:1] or argv[1:3] == ["-m", "pip"]):
                    found = pip_problems(argv[argv.index("install") + 1 :])
                else:
                    continue
                seen += 1
                problems += [f"{page.relative_to(ROOT)}: `{' '.join(argv)}`: {p}" for p in found]
            if SYNOPSIS.search(line):  # a pattern: its names must exist
                seen += 1
                problems += [f"{page.relative_to(ROOT)}: `{line}`: {p}" for p in synopsis_problems(line.strip())]
    assert seen >= 60
    assert problems == [], "\n".join(problems)


def synopsis_problems(line: str) -> list[str]:
    """`attncalc kvcache CONFIG.json --tokens N [--batch B]`: the command and every option it names exist."""
    import typer.main

    words = line.split()
    group = typer.main.get_command(app)
    name = words[1] if len(words) > 1 and re.fullmatch(r"[a-z][a-z-]*", words[1]) else None
    if name is not None and name not in group.commands:
        return [f"command {name!r}"]
    command = group.commands[name] if name else group
    known = {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"-h", "--help"}
    said = re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", line.split("|")[0] if name is None else line)
    return [f"option {o} of {name or 'attncalc'}" for o in said if o not in known]
