"""The condition catalogue: codes, names and tagging terms, loaded from a YAML file."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml


class CatalogueError(ValueError):
    """The catalogue file is missing or malformed."""


@dataclass(frozen=True)
class Condition:
    """One sub-condition or guideline set (a partition of every per-condition asset)."""

    code: str
    name: str
    terms: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    requires_grade: tuple[str, ...] = ()
    catch_all: bool = False
    patterns: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)

    def matches(self, text: str) -> bool:
        """Whether `text` names this condition by one of its catalogue terms."""
        return any(p.search(text) for p in self.patterns)


@dataclass(frozen=True)
class Catalogue:
    """An ordered set of conditions plus the body-hit threshold for tagging."""

    name: str
    conditions: tuple[Condition, ...]
    body_min_hits: int = 3
    path: str = ""

    @property
    def codes(self) -> list[str]:
        return [c.code for c in self.conditions]

    def get(self, code: str) -> Condition:
        for condition in self.conditions:
            if code in (condition.code, *condition.aliases):
                return condition
        raise KeyError(f"unknown condition code {code!r}; known: {', '.join(self.codes)}")

    def canonical(self, code: str) -> str:
        """Map an alias (e.g. the release's ACSM) to its catalogue code (GL-GEN)."""
        return self.get(code).code


def load_catalogue(path: str | Path) -> Catalogue:
    """Parse and validate a catalogue file."""
    path = Path(path)
    if not path.is_file():
        raise CatalogueError(f"catalogue file not found: {path}")
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    entries = raw.get("conditions")
    if not isinstance(entries, list) or not entries:
        raise CatalogueError(f"{path}: 'conditions' must be a non-empty list")
    conditions: list[Condition] = []
    seen: set[str] = set()
    for entry in entries:
        code = str(entry.get("code", "")).strip()
        if not re.fullmatch(r"[A-Za-z0-9_-]+", code):
            raise CatalogueError(f"{path}: invalid condition code {code!r}")
        if code in seen:
            raise CatalogueError(f"{path}: duplicate condition code {code}")
        seen.add(code)
        terms = tuple(str(t) for t in entry.get("terms") or ())
        try:
            patterns = tuple(re.compile(t, re.IGNORECASE) for t in terms)
        except re.error as exc:
            raise CatalogueError(f"{path}: bad term for {code}: {exc}") from exc
        conditions.append(
            Condition(
                code=code,
                name=str(entry.get("name", code)),
                terms=terms,
                aliases=tuple(str(a) for a in entry.get("aliases") or ()),
                requires_grade=tuple(str(g) for g in entry.get("requires_grade") or ()),
                catch_all=bool(entry.get("catch_all", False)),
                patterns=patterns,
            )
        )
    return Catalogue(
        name=str(raw.get("name", path.stem)),
        conditions=tuple(conditions),
        body_min_hits=int(raw.get("body_min_hits", 3)),
        path=str(path),
    )


@lru_cache(maxsize=8)
def _cached(path: str) -> Catalogue:
    return load_catalogue(path)


def active_catalogue() -> Catalogue:
    """The catalogue selected by EBM_CATALOGUE (default: the paper's 23 codes)."""
    from ebm_platform.settings import get_settings

    return _cached(str(Path(get_settings().catalogue).resolve()))
