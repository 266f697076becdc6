"""Shared fixtures: the real datasets folder and a throw-away lake."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    """EBM_DATASETS_DIR, else ../shared/datasets beside the checkout."""
    path = Path(os.environ.get("EBM_DATASETS_DIR", REPO.parent / "shared" / "datasets"))
    if not (path / "evidence_inference" / "xml").is_dir():
        pytest.fail(f"datasets folder missing at {path}; set EBM_DATASETS_DIR")
    return path


@pytest.fixture()
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh lake folder, selected through EBM_LAKE for code that reads settings."""
    from ebm_platform.settings import get_settings

    root = tmp_path / "lake"
    (root / "landing").mkdir(parents=True)
    monkeypatch.setenv("EBM_LAKE", str(root))
    get_settings.cache_clear()
    yield root
    get_settings.cache_clear()


def lake_resources(root: Path) -> dict:
    """Resources bound to a test lake (offline LLM, bundled embedder)."""
    from dagster_duckdb import DuckDBResource

    from ebm_platform.defs.io import LakeParquetIOManager
    from ebm_platform.defs.resources import EmbedderResource, GraphResource, LakeResource, LLMResource
    from ebm_platform.settings import DEFAULT_CATALOGUE

    return {
        "lake": LakeResource(root=str(root), catalogue_path=str(DEFAULT_CATALOGUE)),
        "warehouse": DuckDBResource(database=str(root / "warehouse.duckdb")),
        "io_manager": LakeParquetIOManager(root=str(root)),
        "embedder": EmbedderResource(),
        "llm": LLMResource(),
        "graph": GraphResource(lake_root=str(root)),
    }
