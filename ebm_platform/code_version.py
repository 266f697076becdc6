"""Digests of the platform's own source: what an evaluation lake and a trained model are keyed on,
and each asset's Dagster `code_version` (the packages whose code computes it), so a code change shows
in the UI. Python files are digested by their syntax tree, so formatting and comments change no key."""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def file_content(path: Path) -> bytes:
    """What a key reads of a file: a Python file's syntax tree (no comments, no layout), else its bytes."""
    return _syntax(path) if path.suffix == ".py" else path.read_bytes()


@lru_cache(maxsize=512)
def _syntax(path: Path) -> bytes:
    """A Python file's syntax tree, parsed once per process (asset groups share packages, and the
    source does not change under a running process)."""
    return ast.dump(ast.parse(path.read_text(encoding="utf-8"))).encode()


def update_digest(digest, paths: Iterable[Path]) -> None:
    """Feed each file's name and content (`file_content`) to a hashlib digest."""
    for path in paths:
        digest.update(path.name.encode())
        digest.update(file_content(path))


@lru_cache(maxsize=32)
def package_digest(folders: tuple[str, ...], length: int = 16) -> str:
    """Hash of every .py and .yaml file (relative path and content) under the given package folders."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted((PACKAGE / folder).rglob("*")):
            if path.suffix in (".py", ".yaml") and path.is_file():
                digest.update(path.relative_to(PACKAGE).as_posix().encode())
                digest.update(file_content(path))
    return digest.hexdigest()[:length]
