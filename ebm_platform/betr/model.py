"""BETR at query time: r(q, d) = a * s(q, d) + u(Grade(d)) with fitted parameters."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ebm_platform.atomic import write_text_atomic
from ebm_platform.lake_layout import LakeLayout

GRADES = ("A", "B", "C", "D", "E")


@dataclass
class BetrParameters:
    """Scale a = exp(alpha) and grade biases u_A = 0 >= u_B >= ... >= u_E, with provenance."""

    a: float
    u: dict[str, float]
    tau: float = 1.0
    provenance: dict = field(default_factory=dict)

    def score(self, s: float, grade: str) -> float:
        return self.a * s + self.u.get(grade, self.u["E"])

    def save(self, path: Path) -> None:
        write_text_atomic(path, json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> BetrParameters | None:
        if not path.is_file():
            return None
        raw = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            a=float(raw["a"]),
            u={g: float(raw["u"][g]) for g in GRADES},
            tau=float(raw.get("tau", 1.0)),
            provenance=raw.get("provenance", {}),
        )


def parameters_path(lake: Path) -> Path:
    return LakeLayout(lake).betr_parameters
