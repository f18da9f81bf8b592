"""attncalc: a step-by-step calculator for Transformer attention.

References: Vaswani et al., "Attention Is All You Need" (2017); Su et al., RoFormer (2021);
Press et al., ALiBi (2022); Ainslie et al., GQA (2023); Hugging Face `modeling_rope_utils`.
"""

__version__ = "0.1.0"
