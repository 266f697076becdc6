"""Digests of the platform's own source: what an evaluation lake is keyed on, and each asset's
Dagster `code_version` (the packages whose code computes it), so a code change shows in the UI."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


@lru_cache(maxsize=32)
def package_digest(folders: tuple[str, ...], length: int = 16) -> str:
    """Hash of every .py and .yaml file (relative path and bytes) under the given package folders."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted((PACKAGE / folder).rglob("*")):
            if path.suffix in (".py", ".yaml") and path.is_file():
                digest.update(path.relative_to(PACKAGE).as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:length]
