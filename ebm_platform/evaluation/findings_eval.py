"""How the findings rules (`retrieval.findings.is_finding`) read Evidence Inference articles: the share of the
annotated evidence sentences (every one a trial's result) read as findings, and of the other sentences."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ebm_platform.benchmark.evidence_inference import labelled_prompts
from ebm_platform.benchmark.gold import fold, gold_for_spans
from ebm_platform.corpus.readers import parse_jats
from ebm_platform.corpus.windows import flatten, sentence_spans, split_blocks
from ebm_platform.retrieval.findings import is_finding


def evaluate_findings(
    datasets_dir: Path, split: str, articles: int | None = None, seed: int = 13, progress: Callable | None = None
) -> dict:
    """Every sentence of the split's articles (a seeded sample of `articles` of them), split as windows are and
    read with its section path (the title first, as in the lake): evidence sentences are those holding an
    annotated evidence span of any of the article's prompts."""
    by_article: dict[str, list[list[str]]] = {}
    for row in labelled_prompts(datasets_dir, split).iter_rows(named=True):
        by_article.setdefault(row["pmcid"], []).append(row["evidence"])
    pmcids = sorted(by_article)
    if articles and articles < len(pmcids):
        pmcids = sorted(pmcids[i] for i in np.random.default_rng(seed).choice(len(pmcids), articles, replace=False))
    counts = {"evidence": [0, 0], "other": [0, 0]}  # [sentences, read as findings]
    started = time.perf_counter()
    for done, pmcid in enumerate(pmcids, 1):
        article = parse_jats((Path(datasets_dir) / "evidence_inference" / "xml" / f"{pmcid}.nxml").read_bytes())
        parts = [(article.title, article.title)] + [
            (f"{article.title} > {block.section}", block.text) for block in split_blocks(article.markdown)
        ]
        located = [(section, flatten(text[s:e])) for section, text in parts for s, e in sentence_spans(text)]
        folded = [(i, fold(sentence)) for i, (_, sentence) in enumerate(located)]
        evidence: set[int] = set()
        for spans in by_article[pmcid]:
            evidence |= gold_for_spans(folded, spans)
            evidence |= {i for i, s in folded if len(s) >= 40 and any(s in fold(e) for e in spans)}
        for i, (section, sentence) in enumerate(located):
            tally = counts["evidence" if i in evidence else "other"]
            tally[0] += 1
            tally[1] += is_finding(sentence, section)
        if progress and (done % 50 == 0 or done == len(pmcids)):
            rate = done / max(time.perf_counter() - started, 1e-9)
            progress(f"findings: {done}/{len(pmcids)} articles read ({rate:.0f}/s)")
    return {
        "split": split,
        "articles": len(pmcids),
        **{
            f"{kind}_sentences": {"n": n, "read_as_findings": round(found / n, 3) if n else None}
            for kind, (n, found) in counts.items()
        },
    }
