"""Print docs/cost.md's validation tables (every group) and their summaries from tests/validation_rows.py.

    .venv/bin/python bench/validation_table.py [chosen] [inspected] [held] [batch1] [tp8] [gf] [versions] [course]   (default: every group)

Every figure is recomputed by `attncalc.serving.cost.serving_cost`; tests/test_serving.py checks the page
against the same computation, so paste the output when the model or a row changes.
"""

import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from validation_rows import GROUPS, figures  # noqa: E402

from attncalc.inputs.model_config import read_config  # noqa: E402
from attncalc.serving.cost import serving_cost  # noqa: E402
from attncalc.serving.hardware import preset  # noqa: E402

CONFIGS = os.path.join(HERE, "..", "tests", "configs")
HEAD = (
    "| row | figure | model | GPU | precision | TP | in → out | batch | measured | bound | estimate | error | source |"
)


def evaluate(row):
    key, figure, model, gpu, kw, measured, source = row
    r = serving_cost(read_config(os.path.join(CONFIGS, model)), hardware=preset(gpu), **kw)
    bound, estimate = figures(figure, r)
    return bound, estimate, (estimate - measured) / measured, precision(r["terms"])


def precision(t):
    weights, kv = t["weights_dtype"], t["kv_dtype"]
    return weights if kv == weights else f"{weights}, KV {kv}"


def cell(value):
    return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def line(row, bound, estimate, error, dtypes):
    key, figure, model, gpu, kw, measured, source = row
    batch = kw.get("batch", 1) if not figure.startswith("in-flight") else "load"
    error_text = f"{error:+.0%}".replace("-", "−")
    return (
        f"| {key} | {figure} | {model.removesuffix('.json')} | {gpu} | {dtypes} | {kw.get('tp', 1)}"
        f" | {kw['prompt']} → {kw['generate']} | {batch} | {measured:,} | {cell(bound)} | {cell(estimate)}"
        f" | {error_text} | [{source}] |"
    )


def summary(errors):
    within = sum(abs(e) <= 0.25 for e in errors)
    median = statistics.median(abs(e) for e in errors)
    return within, len(errors), median


if __name__ == "__main__":
    wanted = sys.argv[1:] or [key for key, _, _ in GROUPS]
    for _, name, rows in (group for group in GROUPS if group[0] in wanted):
        print(f"\n{name}\n\n{HEAD}\n|" + "---|" * 13)
        results = [evaluate(row) for row in rows]
        for row, result in zip(rows, results):
            print(line(row, *result))
        within, count, median = summary([e for _, _, e, _ in results])
        print(f"\n{name}: {within:,} of {count:,} within ±25 %, median absolute error {median:.0%}.")
