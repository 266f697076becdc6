"""Stage 4, human review: export a sheet; decisions saved back are honoured on the next run.

Sheet columns: question_id, condition, source, split_kind, certainty, question, exact_answer,
decision (keep / discard; empty = undecided), note. Save the edited sheet as
<lake>/review/decisions.csv (`ebm benchmark export-review` writes it there to start from)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

COLUMNS = ("question_id", "condition", "source", "split_kind", "certainty", "question", "exact_answer")


def decisions_path(lake: Path) -> Path:
    return Path(lake) / "review" / "decisions.csv"


def export_sheet(bench: pl.DataFrame, path: Path) -> int:
    """Write the review sheet, keeping decisions already made for the same question ids."""
    sheet = bench.select(*COLUMNS)
    if path.is_file():
        previous = pl.read_csv(path, infer_schema_length=0).select("question_id", "decision", "note")
        sheet = sheet.join(previous, on="question_id", how="left")
    else:
        sheet = sheet.with_columns(pl.lit(None, pl.String).alias("decision"), pl.lit(None, pl.String).alias("note"))
    path.parent.mkdir(parents=True, exist_ok=True)
    sheet.write_csv(path)
    return sheet.height


def discarded(lake: Path) -> set[str]:
    """Question ids a reviewer marked `discard`."""
    path = decisions_path(lake)
    if not path.is_file():
        return set()
    sheet = pl.read_csv(path, infer_schema_length=0)
    if "decision" not in sheet.columns:
        raise ValueError(f"{path} has no 'decision' column")
    return set(sheet.filter(pl.col("decision").str.strip_chars().str.to_lowercase() == "discard")["question_id"])
