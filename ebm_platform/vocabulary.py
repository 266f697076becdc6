"""The platform's shared vocabulary: small value types that several layers read (the graph channel,
retrieval, answers, evaluation), kept on the bottom floor so that none of them imports another to get one."""

from __future__ import annotations

from dataclasses import dataclass, field

# where on the body care is applied ("knee bracing", "ankle taping", "spinal manipulation")
BODY_SITE_WORDS = frozenset(
    "knee ankle hip shoulder neck back lumbar cervical thoracic spinal spine wrist elbow foot heel leg thigh calf".split()
)


@dataclass
class Anchors:
    """A question's P/I/C/O/T anchors; a field is None when the question does not state it."""

    population: str | None = None
    intervention: str | None = None
    comparator: str | None = None
    outcome: str | None = None
    timepoint: str | None = None
    condition: str | None = None
    terms: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}
