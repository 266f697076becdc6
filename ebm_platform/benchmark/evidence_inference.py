"""Evidence Inference: doctor-written prompts, v2 labels with evidence spans, article splits."""

from __future__ import annotations

from pathlib import Path

import polars as pl

LABELS = {"significantly increased", "significantly decreased", "no significant difference"}
# v2_annotations.csv spells one label two ways (617 rows say "significantly increase").
LABEL_VARIANTS = {"significantly increase": "significantly increased"}


def _root(datasets_dir: Path) -> Path:
    root = Path(datasets_dir) / "evidence_inference"
    if not (root / "prompts_merged.csv").is_file():
        raise FileNotFoundError(f"no Evidence Inference prompts at {root}")
    return root


def article_ids(datasets_dir: Path, split: str) -> set[str]:
    """'PMC<id>' for every article of a split (train or validation) whose XML is present."""
    root = _root(datasets_dir)
    path = root / "splits" / f"{split}_article_ids.txt"
    if not path.is_file():
        raise FileNotFoundError(f"no split file {path} (splits here: train, validation)")
    ids = {f"PMC{line.strip()}" for line in path.read_text().splitlines() if line.strip()}
    present = {p.stem for p in (root / "xml").glob("PMC*.nxml")}
    return ids & present


def prompts(datasets_dir: Path, split: str) -> pl.DataFrame:
    """Prompts (PromptID, pmcid, intervention, comparator, outcome) of a split's present articles."""
    frame = pl.read_csv(_root(datasets_dir) / "prompts_merged.csv", infer_schema_length=0)
    frame = frame.select(
        pl.col("PromptID").alias("prompt_id"),
        ("PMC" + pl.col("PMCID")).alias("pmcid"),
        pl.col("Intervention").str.strip_chars().alias("intervention"),
        pl.col("Comparator").str.strip_chars().alias("comparator"),
        pl.col("Outcome").str.strip_chars().alias("outcome"),
    )
    return (
        frame.filter(pl.col("pmcid").is_in(sorted(article_ids(datasets_dir, split))))
        .unique("prompt_id", keep="first")
        .sort("prompt_id")
    )


def labelled_prompts(datasets_dir: Path, split: str) -> pl.DataFrame:
    """Prompts with a valid v2 label (spelling variants folded): majority label and every
    annotated evidence string."""
    notes = pl.read_csv(_root(datasets_dir) / "v2_annotations.csv", infer_schema_length=0)
    notes = notes.with_columns(pl.col("Label").str.strip_chars().replace(LABEL_VARIANTS))
    notes = notes.filter((pl.col("Valid Label") == "True") & pl.col("Label").is_in(sorted(LABELS)))
    grouped = notes.group_by("PromptID").agg(
        pl.col("Label").mode().sort().first().alias("label"),
        pl.col("Annotations").drop_nulls().unique().sort().alias("evidence"),
    )
    # sorted: a join's row order is not stable between runs, and seeded samples are drawn from this order
    return (
        prompts(datasets_dir, split)
        .join(grouped.rename({"PromptID": "prompt_id"}), on="prompt_id", how="inner")
        .sort("prompt_id")
    )


def question_text(prompt: dict) -> str:
    """The clinical question a prompt asks (intervention, comparator and outcome in one sentence)."""
    return (
        f"What is the effect of {prompt['intervention']} compared with {prompt['comparator']} on {prompt['outcome']}?"
    )
