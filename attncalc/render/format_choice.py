"""Which format `-f auto` means, in a module without NumPy so the sizing commands (kvcache, cost) start fast."""

import sys


def resolve_format(fmt: str) -> str:
    """auto: tables on a terminal, JSON in a pipe; any other format as given."""
    if fmt == "auto":
        return "table" if sys.stdout.isatty() else "json"
    return fmt
