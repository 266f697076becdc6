"""Dagster wiring: assets, checks, resources, sensors and automation over the domain packages."""

# What the multiprocess executor's forkserver imports before it forks a step process: the
# definitions, the libraries steps import lazily and the instance's storage (definitions.py).
STEP_MODULES = (
    "ebm_platform.definitions",
    "great_expectations",
    "sentence_transformers",
    "litellm",
    "openvino",
    "dagster._core.storage.sqlite_storage",
    "dagster._core.storage.local_compute_log_manager",
)
