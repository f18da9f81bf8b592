"""One format registry (render/formats.py): it drives each command's --format help, the check of the
option, and the stage commands' dispatch."""

import pytest

from attncalc.render import formats


def test_every_stage_format_has_a_renderer_and_nothing_else_does():
    from attncalc.render.output import STAGE_RENDERERS

    assert set(STAGE_RENDERERS) == set(formats.OFFERED["stage"]) - {"auto"}


@pytest.mark.parametrize("command", sorted(formats.OFFERED))
def test_help_lists_exactly_the_formats_offered(cli, command):
    args = {"stage": ["softmax"], "kvcache": ["kvcache"]}.get(command, [command])
    out = " ".join(cli(*args, "--help").stdout.split())  # Rich wraps the help text
    offered = formats.OFFERED[command]
    assert "|".join(offered) + (" (auto:" if "auto" in offered else ".") in out  # a worksheet has no auto


@pytest.mark.parametrize(
    "args,offered",
    [
        (["softmax", "--example", "woaini"], "auto, table, json, markdown or latex"),
        (["check", "-", "--example", "woaini"], "auto, table, json, markdown or csv for check"),
        (["compare", "--example", "woaini"], "auto, table, json or markdown for compare"),
        (["walk", "--example", "woaini"], "auto, table or markdown for walk"),
        (["examples"], "auto, table or json for examples"),
    ],
)
def test_a_format_a_command_does_not_draw_is_refused_naming_what_it_offers(cli, args, offered):
    result = cli(*args, "-f", "latex" if args[0] != "softmax" else "yaml", input="{}")
    assert result.exit_code == 2
    bad = "'latex'" if args[0] != "softmax" else "'yaml'"
    assert result.stderr.strip() == f"attncalc: error: --format: expected {offered}, found {bad}"
