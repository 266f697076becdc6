"""What `ebm` prints: results on stdout, progress on stderr (so --json output stays parseable)."""

from __future__ import annotations

import sys


def say(message: str) -> None:
    print(message, flush=True)


def progress(message: str) -> None:
    """Progress goes to stderr so that --json output stays parseable."""
    print(message, file=sys.stderr, flush=True)
