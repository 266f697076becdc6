"""Whole builds, as the last runs recorded them (they take minutes, so `make bench` reads their
records rather than re-running them): `make demo` (data_lake/reports/demo_timing.json) and every
evaluation lake (its COMPLETE.json), with when they finished and on how many cores."""

from __future__ import annotations

import json

from ebm_platform.lake_layout import LakeLayout
from ebm_platform.settings import get_settings

GOALS = {"demo": 6 * 60, "evidence-inference": 15 * 60}


def run() -> None:
    lake = get_settings().lake
    records = []
    demo = lake / "reports" / "demo_timing.json"
    if demo.is_file():
        records.append(("make demo, empty lake", "demo", json.loads(demo.read_text())))
    for marker in sorted(LakeLayout(lake).eval_lakes.glob("*/COMPLETE.json")):
        data = json.loads(marker.read_text())
        scope = (
            "resumed"
            if data.get("resumed")
            else "rebuilt, stored encodings reused"
            if data.get("encodings_reused")
            else "from empty"
        )
        records.append((f"evaluation lake {marker.parent.name} ({scope})", data["benchmark"], data))
    if not records:
        print("no recorded builds yet: run `make demo` and `ebm eval retrieval ...`")
    for name, kind, data in records:
        goal = GOALS.get(kind)
        print(
            f"{name:<58} {data['seconds'] / 60:6.1f} min  finished {data.get('finished', '?')} on "
            f"{data.get('cores', '?')} cores" + (f"  (goal <= {goal // 60} min)" if goal else "")
        )
