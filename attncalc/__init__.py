"""attncalc: a step-by-step calculator for Transformer attention.

    import attncalc
    calc = attncalc.load("woaini")
    calc["A"], calc.explain("A", "爱", "你"), calc.check({...}), calc.generate()

The API (attncalc/api.py, docs/api.md) is imported on first use, so `import attncalc` and the
command line's `--help` stay free of NumPy.

References: Vaswani et al., "Attention Is All You Need" (2017); Su et al., RoFormer (2021);
Press et al., ALiBi (2022); Ainslie et al., GQA (2023); Hugging Face `modeling_rope_utils`.
"""

__version__ = "0.1.0"
__all__ = [
    "Calculation",
    "CheckReport",
    "Explanation",
    "InputError",
    "Tensor",
    "__version__",
    "exercise_words",
    "load",
]
_API = {"load", "Calculation", "CheckReport", "Explanation", "Tensor", "exercise_words"}


def __getattr__(name: str):
    if name in _API:
        from attncalc import api

        return getattr(api, name)
    if name == "InputError":
        from attncalc.errors import InputError

        return InputError
    raise AttributeError(f"module 'attncalc' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
