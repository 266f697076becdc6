"""Stage 4, human review: an editable sheet and an append-only store of the decisions made in it.

The sheet (`<lake>/review/review_sheet.csv`, written by `ebm benchmark export-review`) has the
columns question_id, condition, source, split_kind, certainty, question, exact_answer, decision
(keep / discard; empty = undecided) and note. The decisions themselves live in their own store,
`<lake>/review/decisions.jsonl`: one JSON record per decision, keyed by question id, appended and
never rewritten (the latest record of a question wins). Every export and every `benchmark_qa`
materialisation first records the sheet's new decisions, so a re-export (which rebuilds the sheet
from the filtered benchmark plus the store) never loses one, and a discarded question stays out
until a reviewer marks it `keep`. Store writes take a file lock and replace the file atomically.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from ebm_platform.atomic import exclusive_lock, write_bytes_atomic
from ebm_platform.lake_layout import LakeLayout

COLUMNS = ("question_id", "condition", "source", "split_kind", "certainty", "question", "exact_answer")
DECISIONS = ("keep", "discard")


def sheet_path(lake: Path) -> Path:
    return LakeLayout(lake).review / "review_sheet.csv"


def store_path(lake: Path) -> Path:
    return LakeLayout(lake).review / "decisions.jsonl"


def _read_store(lake: Path) -> list[dict]:
    path = store_path(lake)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def latest(lake: Path) -> dict[str, dict]:
    """The latest recorded decision of every reviewed question."""
    return {record["question_id"]: record for record in _read_store(lake)}


def _read_sheet(path: Path) -> pl.DataFrame:
    sheet = pl.read_csv(path, infer_schema_length=0)
    missing = {"question_id", "decision"} - set(sheet.columns)
    if missing:
        raise ValueError(f"review sheet {path} lacks the column(s) {', '.join(sorted(missing))}")
    return sheet


def record_sheet(lake: Path, path: Path | None = None) -> int:
    """Append the sheet's decisions that differ from the store's latest; return how many."""
    path = Path(path) if path else sheet_path(lake)
    if not path.is_file():
        return 0
    sheet = _read_sheet(path).with_columns(pl.col("decision").str.strip_chars().str.to_lowercase())
    decided = sheet.filter(pl.col("decision").is_not_null() & (pl.col("decision") != ""))
    invalid = decided.filter(~pl.col("decision").is_in(DECISIONS))
    if invalid.height:
        rows = ", ".join(f"{q}={d!r}" for q, d in invalid.select("question_id", "decision").head(5).iter_rows())
        raise ValueError(f"review sheet {path}: decision must be keep, discard or empty; found {rows}")
    now = datetime.now(UTC).isoformat(timespec="seconds")
    with exclusive_lock(store_path(lake).with_suffix(".lock")):  # concurrent runs record one at a time
        current = latest(lake)
        new = []
        for row in decided.iter_rows(named=True):
            before = current.get(row["question_id"])
            note = row.get("note") or None
            if before and before["decision"] == row["decision"] and before.get("note") == note:
                continue
            snapshot = {c: row.get(c) for c in COLUMNS if c != "question_id"}
            new.append(
                {
                    "question_id": row["question_id"],
                    "decision": row["decision"],
                    "note": note,
                    "recorded_at": now,
                    **snapshot,
                }
            )
        if new:
            old = store_path(lake).read_bytes() if store_path(lake).is_file() else b""
            lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in new).encode("utf-8")
            write_bytes_atomic(store_path(lake), old + lines)
    return len(new)


def export_sheet(lake: Path, bench: pl.DataFrame, path: Path | None = None) -> int:
    """Record the current sheet, then rewrite it: every benchmark question plus every question the
    store holds out, each with its latest decision. Returns the number of rows written."""
    path = Path(path) if path else sheet_path(lake)
    record_sheet(lake, path)
    decisions = latest(lake)
    sheet = bench.select(*COLUMNS).with_columns(pl.all().cast(pl.String))
    present = set(sheet["question_id"].to_list())
    absent = [r for q, r in decisions.items() if q not in present]
    if absent:
        held_out = pl.DataFrame(
            [{c: r.get(c) for c in COLUMNS} for r in absent], schema={c: pl.String for c in COLUMNS}
        )
        sheet = pl.concat([sheet, held_out])
    known = pl.DataFrame(
        {
            "question_id": list(decisions),
            "decision": [r["decision"] for r in decisions.values()],
            "note": [r.get("note") for r in decisions.values()],
        },
        schema={"question_id": pl.String, "decision": pl.String, "note": pl.String},
    )
    sheet = sheet.join(known, on="question_id", how="left")
    buffer = io.BytesIO()
    sheet.write_csv(buffer)
    write_bytes_atomic(path, buffer.getvalue())
    return sheet.height


def discarded(lake: Path) -> set[str]:
    """Question ids whose latest decision is `discard`, after recording the sheet's new decisions."""
    record_sheet(lake)
    return {q for q, r in latest(lake).items() if r["decision"] == "discard"}
