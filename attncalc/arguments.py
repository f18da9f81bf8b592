"""What every argument a person gives must be, said once for the command line and the Python API.

The CLI's option coercion (`cli/options.plain_coercion`), its word checks (`cli/options.check_choices`)
and the API's keywords (`api.load`, `Calculation.check`, `Calculation.generate`) all call `check`
(or `parse`, for the text an option gets), so `--scale nan` and `load(scale=float("nan"))` are
refused by the same rule, naming the option (`--scale`) or the keyword (`scale`).

NumPy-free: `--help` and option parsing use it.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass

from attncalc.core.exercise import KINDS as EXERCISE_KINDS
from attncalc.core.exercise import POSITIONS as EXERCISE_POSITIONS
from attncalc.core.exercise_spec import OPTIONS as EXERCISE_OPTIONS
from attncalc.core.exercise_spec import Spec
from attncalc.core.names import MASK_KINDS, OPTIMIZERS
from attncalc.errors import InputError, one_of, plain

INTEGER = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)", re.IGNORECASE)
NAMES = {int: "an integer", float: "a finite number", bool: "true or false", str: "text"}
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Rule:
    """One argument: its type, bounds (`above` is a strict lower bound) and fixed words."""

    kind: type
    lo: float | None = None
    hi: float | None = None
    above: float | None = None
    choices: tuple[str, ...] | None = None
    nonempty: bool = False
    what: str | None = None  # what is expected, in words, where the type alone says too little

    def expected(self) -> str:
        if self.what:
            return self.what
        if self.choices:
            return one_of(self.choices)
        if self.above is not None and self.hi is not None:
            return f"a number in ({self.above:g}, {self.hi:g}]"
        if self.above is not None:
            return f"a number > {self.above:g}"
        if self.lo is not None and self.hi is not None:
            return f"{NAMES[self.kind]} from {self.lo:g} to {self.hi:g}"
        if self.lo is not None:
            return f"{NAMES[self.kind]} of at least {self.lo:g}"
        return "non-empty text" if self.nonempty else NAMES[self.kind]


def _langs() -> tuple[str, ...]:
    from attncalc.texts import LANGS

    return LANGS


ONLY = "tensor names separated by commas, such as A,O"
RULES = {
    # the attention block and its input (Request fields)
    "kind": Rule(str, choices=MASK_KINDS),
    "scale": Rule(float),
    "block": Rule(str, nonempty=True, what="a block path such as decoder.layers[0].cross_attention"),
    "heads": Rule(int, lo=1),
    "kv_heads": Rule(int, lo=1),
    "layer": Rule(int, lo=0),
    "head": Rule(int, lo=0),
    "example": Rule(str, nonempty=True),
    "exercise": Rule(str, nonempty=True, what="SEED or SEED:key=value,… such as 7:tokens=4,heads=2"),
    "fixture": Rule(str, nonempty=True),
    "document": Rule(str, nonempty=True),
    "model": Rule(str, nonempty=True),
    "text": Rule(str),
    "ids": Rule(str),
    # output and checking
    "precision": Rule(int, lo=0, hi=12),
    "tol": Rule(float, lo=0, hi=1e15),  # beyond it float64 holds no decimals to compare (and rounds to ∞)
    "only": Rule(str, nonempty=True, what=ONLY),
    "quiz": Rule(bool),
    "hint": Rule(bool),
    "export": Rule(str, nonempty=True, what="a file name ending in .html or .svg"),
    "lang": Rule(str, choices=None),  # filled from texts.LANGS when checked (texts is imported lazily)
    # generation
    "max_new_tokens": Rule(int, lo=1),
    "strategy": Rule(str, choices=("greedy", "sample")),
    "temperature": Rule(float, above=0),
    "top_k": Rule(int, lo=0),
    "top_p": Rule(float, above=0, hi=1),
    "seed": Rule(int, lo=0),
    "kv_cache": Rule(bool),
    # training (issue 25): the optimiser step after the backward pass
    "optimizer": Rule(str, choices=OPTIMIZERS),
    "lr": Rule(float, above=0, hi=100),
    "steps": Rule(int, lo=1, hi=1000),  # each step is a forward and a backward pass
}


def rule(name: str) -> Rule:
    r = RULES[name]
    return Rule(str, choices=_langs()) if name == "lang" else r


def option(name: str) -> str:
    return "--" + name.replace("_", "-")


def limits(name: str) -> dict:
    """Typer's min/max for an option's help (`[x>=1]`), from its rule."""
    r = RULES[name]
    return {k: v for k, v in (("min", r.lo), ("max", r.hi)) if v is not None}


def names(text: str | None, where: str = "--only") -> list[str] | None:
    """`--only A,O` as ["A", "O"]; None when not given; no name at all (`--only ''`, `--only ,`) refused."""
    if text is None:
        return None
    listed = [n.strip() for n in text.split(",") if n.strip()]
    if not listed:
        raise InputError(where, ONLY, repr(text))
    return listed


def found(value) -> str:
    value = plain(value)
    if isinstance(value, (str, bool)) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        return str(value)
    return f"{value!r} ({type(value).__name__})"


def check(name: str, value, *, cli: bool = False):
    """`value` if it is what argument `name` must be (NumPy numbers welcome, as plain Python values);
    else InputError naming the option (`cli`) or the keyword. None (not given) passes."""
    return _check(rule(name), option(name) if cli else name, value)


def check_document_options(options: dict, source: str) -> None:
    """A pipe document's `options` (kind, scale, block, layer, head) by the same rules as the options
    that wrote them: a hand-edited `"kind": "weird"` is refused, not echoed on."""
    for name, value in options.items():
        if name in RULES:
            _check(rule(name), f"{source}: options.{name}", value)


def parse(name: str, text, *, cli: bool = True, where: str | None = None):
    """The value of an option given as text (`--heads 2`, `--kv-cache true`), checked by the same rule;
    `where` names it otherwise (a worksheet header's `--precision`)."""
    return _parse(rule(name), where or (option(name) if cli else name), text)


def coerce(kind: type, text, where: str, lo=None, hi=None):
    """An option without a rule of its own: its plain type (and Typer's min/max), the same checks."""
    return _parse(Rule(kind, lo=lo, hi=hi), where, text)


def _check(r: Rule, where: str, value):
    if value is None:
        return None
    bad = InputError(where, r.expected(), found(value))
    if r.kind is bool:
        if type(value).__name__ not in ("bool", "bool_"):
            raise bad
        return bool(value)
    if r.kind is str:
        if not isinstance(value, str) or (r.nonempty and not value.strip()) or (r.choices and value not in r.choices):
            raise bad
        return value
    if isinstance(value, (bool, str)) or type(value).__name__ == "bool_":
        raise bad
    if r.kind is int:
        try:
            x = operator.index(value)  # int and NumPy integers; not 2.0, not 2.5
        except TypeError:
            raise bad from None
    else:
        try:
            x = float(value)
        except (TypeError, ValueError, OverflowError):
            raise bad from None
        if not math.isfinite(x):
            raise bad
    if (r.lo is not None and x < r.lo) or (r.hi is not None and x > r.hi) or (r.above is not None and x <= r.above):
        raise bad
    return x


def _parse(r: Rule, where: str, text):
    if r.kind is str or not isinstance(text, str):
        return _check(r, where, text)
    words = text.strip().lower()
    try:
        if r.kind is bool:
            if words not in TRUE + FALSE:
                raise ValueError
            value = words in TRUE
        elif not (INTEGER if r.kind is int else DECIMAL).fullmatch(text.strip()):
            raise ValueError  # ASCII digits as written everywhere: not `７`, `1_0` nor `١٢`, which int() takes
        else:
            value = r.kind(text)
    except (TypeError, ValueError, OverflowError):
        raise InputError(where, r.expected(), repr(text)) from None
    try:
        return _check(r, where, value)
    except InputError as e:
        raise InputError(e.where, e.expected, repr(text)) from None


STAGE_BLOCK_WHY = {  # why an option of one attention block means nothing to encoder and decoder
    "kind": "encoder and decoder mask as the model does: padding in the encoder, causal in the decoder",
    "block": "the block they show; encoder and decoder run every block",
    "heads": "encoder and decoder run every layer as the fixture says: --set {stage}.layers[0].self_attention.heads=2 "
    "changes a layer",
}
STAGE_BLOCK_WHY["kv_heads"] = STAGE_BLOCK_WHY["heads"].replace(".heads=2", ".kv_heads=1")


def check_stage_options(stage: str | None, given: dict, *, cli: bool = False) -> None:
    """encoder and decoder run every layer as the fixture says: the options that choose or change the one
    attention block the stage commands qkv … attend show would change nothing they compute."""
    if stage not in ("encoder", "decoder"):
        return
    for name, why in STAGE_BLOCK_WHY.items():
        if given.get(name) is not None:
            where = option(name) if cli else name
            raise InputError(where, f"a stage command from qkv to attend ({why.format(stage=stage)})", stage)


def check_whole_model_options(request, raw) -> None:
    """backward from a decoder's loss runs every layer as the fixture says, as the decoder stage does: --heads,
    --kv-heads, --kind and --block change one attention block, set where no layer reads them (woaini's
    `--heads 2` ended as `decoder.layers[0].self_attention.kv_heads: …found 2`, an option never given)."""
    whole = isinstance(raw, dict) and "decoder" in raw and (request.layer is None or "encoder" not in raw)
    if request.stage != "backward" or not whole:
        return
    for name in STAGE_BLOCK_WHY:
        if getattr(request, name) is not None:
            why = "backward from the loss runs every layer as the fixture says, as decoder does"
            raise InputError(option(name), f"a stage command from qkv to attend ({why})", "backward")


def check_fields(request) -> None:
    """Every field of a dataclass (the command line's Request) that has a rule, named by its keyword."""
    import dataclasses

    for f in dataclasses.fields(request):
        if f.name in RULES:
            check(f.name, getattr(request, f.name))


def check_head(graph, stage: str, head: int, where: str) -> None:
    """`--head H` draws one head of the per-head tensors: a head the block has, at a stage that has them."""
    from attncalc.core.names import STAGES
    from attncalc.core.ops import Scores

    upto = STAGES.index(stage)
    heads = [n.op.h for n in graph.nodes.values() if isinstance(n.op, Scores) and STAGES.index(n.stage) <= upto]
    if not heads and where == "--head":  # (a document's head, carried through a pipe, waits for a later stage)
        raise InputError(where, "a stage with per-head tensors (scores, mask, softmax or attend)", stage)
    if heads and head >= max(heads):
        n = max(heads)
        raise InputError(where, f"a head from 0 to {n - 1} (the block has {n} head{'s' if n > 1 else ''})", str(head))


# an exercise's seed and options (`attncalc exercise`, `--exercise 7:tokens=4`, docs/exercises.md)
EXERCISE_RULES = {
    "seed": Rule(int, lo=0, hi=2**32 - 1, what="an integer from 0 to 4294967295"),
    "tokens": Rule(int, lo=2, hi=6),
    "d_model": Rule(int, lo=2, hi=8, what="an even number from 2 to 8"),
    "heads": Rule(int, lo=1, hi=2, what="1 or 2"),
    "kind": Rule(str, choices=EXERCISE_KINDS),
    "position": Rule(str, choices=EXERCISE_POSITIONS),
}


def exercise(values: dict, name_of=option) -> Spec:
    """An exercise's seed and options (values, or their text) checked one by one and then together;
    `name_of(key)` is how messages name each (`--tokens`, or `--exercise tokens`)."""
    checked = {k: _parse(EXERCISE_RULES[k], name_of(k), v) for k, v in values.items() if v is not None}
    if "seed" not in checked:
        raise InputError(name_of("seed"), EXERCISE_RULES["seed"].expected(), "nothing")
    if checked.get("d_model", 4) % 2:
        raise InputError(name_of("d_model"), EXERCISE_RULES["d_model"].expected(), str(checked["d_model"]))
    spec = Spec(**checked)
    if spec.kind == "padding" and spec.tokens < 3:
        raise InputError(
            name_of("tokens"), "at least 3 with kind padding (one word and the pad token leave no choice)", "2"
        )
    if spec.heads == 2 and spec.d_model < 4:
        raise InputError(
            name_of("heads"), "1 with d_model 2 (two heads of one column each leave nothing to compare)", "2"
        )
    if spec.position == "rope" and spec.d_k % 2:
        raise InputError(
            name_of("heads"),
            f"1 with d_model {spec.d_model} and position rope (RoPE turns pairs: d_model/heads must be even)",
            str(spec.heads),
        )
    return spec


def exercise_spec(value, where: str = "--exercise") -> Spec:
    """The exercise a `--exercise` value names: a seed (`7`, or the int 7 in Python) or a seed and options
    (`7:tokens=4,heads=2`, the form `Spec.text()` writes)."""
    if not isinstance(value, str):  # a seed: an int, or a NumPy integer (as every keyword takes them)
        if type(value).__name__ in ("bool", "bool_"):
            raise InputError(where, "a seed or SEED:key=value,… such as 7:tokens=4,heads=2", found(value))
        try:
            value = operator.index(value)
        except TypeError:
            raise InputError(where, "a seed or SEED:key=value,… such as 7:tokens=4,heads=2", found(value)) from None
    seed, _, rest = str(value).strip().partition(":")
    values = {"seed": seed.strip()}
    for item in rest.split(",") if rest.strip() else []:
        key, eq, text = (part.strip() for part in item.partition("="))
        key = key.replace("-", "_")
        if not eq or key not in EXERCISE_OPTIONS[1:] or key in values:
            what = "key=value with a key of " + ", ".join(EXERCISE_OPTIONS[1:]) + ", each once"
            raise InputError(where, what, repr(item.strip()))
        values[key] = text
    return exercise(values, lambda key: f"{where} {key}")
