"""What names an exercise (`Spec`) and the attention block its hand-work rules judge (`Block`).

Shared by the generator (core/exercise.py) and the rules (core/exercise_rules.py), so neither imports the
other's module for them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from fractions import Fraction


@dataclass(frozen=True)
class Spec:
    """An exercise's identity: its seed and options (the defaults are those of `attncalc exercise`)."""

    seed: int
    tokens: int = 3
    d_model: int = 4
    heads: int = 1
    kind: str = "none"
    position: str = "sinusoidal"

    def text(self) -> str:
        """The compact form `--exercise` reads: `7`, or `7:tokens=4,heads=2` (only what differs from the
        defaults, in this order)."""
        extra = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)[1:] if getattr(self, f.name) != f.default]
        return str(self.seed) + (":" + ",".join(extra) if extra else "")

    def words(self) -> list[str]:
        """The command-line words that name this exercise on every command that reads one."""
        return ["--exercise", self.text()]

    def options(self) -> list[str]:
        """The options of `attncalc exercise` that make it: `--seed 7 --tokens 4` (defaults left out)."""
        out = ["--seed", str(self.seed)]
        for f in fields(self)[1:]:
            if getattr(self, f.name) != f.default:
                out += ["--" + f.name.replace("_", "-"), str(getattr(self, f.name))]
        return out

    @property
    def d_k(self) -> int:
        return self.d_model // self.heads


OPTIONS = tuple(f.name for f in fields(Spec))  # seed first, then the options in the order text() writes them


@dataclass
class Block:
    """The attention block the stage commands show: what the hand-work rules are judged on."""

    source: list[str]
    x: list[list[Fraction]]  # [n, d]: the source tokens' embedding rows (a pad token's row is zeros)
    wq: list[list[Fraction]]
    wk: list[list[Fraction]]
    wv: list[list[Fraction]]
