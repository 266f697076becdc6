"""Dagster wiring: assets, checks, resources, sensors and automation over the domain packages."""

# What the multiprocess executor's forkserver imports before it forks a step process: the
# definitions, the libraries steps import lazily and the instance's storage (definitions.py); last,
# the module that makes the forkserver leave at once when its parent exits (forkserver_exit.py).
STEP_MODULES = (
    "ebm_platform.definitions",
    "great_expectations",
    "sentence_transformers",
    "litellm",
    "openvino",
    "dagster._core.storage.sqlite_storage",
    "dagster._core.storage.local_compute_log_manager",
    "ebm_platform.forkserver_exit",
)
