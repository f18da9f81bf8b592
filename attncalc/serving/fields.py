"""Reading a count from a config, the one rule `kvcache`, `cost` and the parameter count share.

A count is a whole number (not a boolean, not a fraction) at least its minimum and at most 2^53, the largest
whole number a float holds exactly: past it a product of counts leaves float range ("int too large to convert
to float") and a time comes out as inf. Pure: no I/O.
"""

from __future__ import annotations

from attncalc.errors import InputError, describe
from attncalc.render.sizing import human  # noqa: F401 (re-exported: binary units are drawing, render's)

MAX_COUNT = 2**53


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_count(where: str, value, minimum: int = 1) -> int:
    """`value` if it is a whole number from `minimum` to 2^53, else InputError naming `where`."""
    if not is_int(value) or value < minimum:
        raise InputError(where, f"an integer >= {minimum}", describe(value))
    if value > MAX_COUNT:
        raise InputError(where, f"an integer <= 2^53 = {MAX_COUNT:,}", describe(value))
    return value


def get_int(cfg: dict, keys: tuple, at: str, minimum: int = 1, required: bool = True):
    """First present (non-null) key among `keys`, checked to be a count >= minimum; returns (key, value)."""
    for key in keys:
        if cfg.get(key) is not None:
            return key, check_count(at + key, cfg[key], minimum)
    if required:
        alts = " or ".join(keys)
        raise InputError(at + keys[0], f"an integer >= {minimum} (key {alts})", "no such key")
    return keys[0], None
