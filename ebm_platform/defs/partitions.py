"""The one partitions definition shared by every per-condition asset, and the automation conditions."""

import dagster as dg

from ebm_platform.conditions import active_catalogue

conditions_partitions = dg.StaticPartitionsDefinition(active_catalogue().codes)

EAGER = dg.AutomationCondition.eager()
ANCESTRY = 4  # how far up "something upstream is busy" looks (a waiting asset is itself due, so it propagates)


# Assets whose automation waits for their dependencies' blocking checks: a partition of one whose
# benchmark failed benchmark_structure will not run, so it must not count as due (else the globals
# below it would wait for it for ever).
CHECK_GATED = dg.AssetSelection.assets("evaluation_report")


def _ancestor_busy(depth: int) -> dg.AutomationCondition:
    """A dependency, or one of its dependencies up to `depth` levels, is running or is itself due
    to run (one of its own dependencies was updated since it last ran or was requested; for a
    CHECK_GATED asset, only once those dependencies' blocking checks passed). Dagster's
    will_be_requested() only sees requests that share a run, never a global's partitioned parent."""
    running, updated = (
        dg.AutomationCondition.in_progress(),
        dg.AutomationCondition.any_deps_updated().since_last_handled(),
    )
    due = {
        False: running | updated,
        True: running | (updated & dg.AutomationCondition.all_deps_blocking_checks_passed()),
    }
    condition: dg.AutomationCondition | None = None
    for _ in range(depth):
        level = {gated: busy if condition is None else busy | condition for gated, busy in due.items()}
        condition = dg.AutomationCondition.any_deps_match(level[False]).ignore(
            CHECK_GATED
        ) | dg.AutomationCondition.any_deps_match(level[True]).allow(CHECK_GATED)
    return condition


# A global asset, or one that reads globals: runs once a dependency was updated, but never while
# anything upstream is running or due to run, so it waits for the changed partition's chain and for
# the globals it reads and then runs once, on their new outputs. Unlike eager() it does not wait
# for parent partitions that were never built: a condition with no files never holds back globals.
AFTER_DEPS = (
    dg.AutomationCondition.any_deps_updated().since_last_handled()
    & ~_ancestor_busy(ANCESTRY)
    & ~dg.AutomationCondition.in_progress()
).with_label("after everything upstream settles")
