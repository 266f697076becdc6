"""Landing sensor (new or changed files -> an observation of landing_files and a run for exactly
those partitions) and the automation sensor (eager downstream assets, the weekly on_cron refresh)."""

import json

import dagster as dg

from ebm_platform.defs.corpus import LANDING_DIGEST, landing_files, source_documents
from ebm_platform.defs.resources import LakeResource
from ebm_platform.landing_state import FileState, content_digest, scan_folder


def scan_landing(lake: LakeResource, previous: dict[str, FileState]) -> dict[str, FileState]:
    """{code: {relative path: [mtime_ns, size, sha256]}} for every non-empty landing folder."""
    state = {code: scan_folder(lake.landing_dir / code, previous.get(code)) for code in lake.catalogue().codes}
    return {code: files for code, files in state.items() if files}


def materialised_digest(instance: dg.DagsterInstance, code: str) -> str | None:
    """The landing digest source_documents[code] last materialised from (None if never)."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=source_documents.key, asset_partitions=[code]), limit=1
    ).records
    if not records:
        return None
    value = records[0].asset_materialization.metadata.get(LANDING_DIGEST)
    return value.value if value is not None else None


@dg.sensor(
    target=[source_documents],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def landing_sensor(context: dg.SensorEvaluationContext, lake: LakeResource) -> dg.SensorResult:
    """Request a source_documents run for each partition whose landing files changed since the
    last tick and differ from what source_documents last materialised (so a fresh sensor over a
    built lake requests nothing, and a folder reverted to earlier content runs again); downstream
    assets follow eagerly. Run keys carry the tick number, so a repeated content is not dropped.
    Every requested folder is also recorded as an observation of `landing_files[code]`."""
    cursor = json.loads(context.cursor) if context.cursor else {}
    previous, tick = cursor.get("files", {}), cursor.get("tick", 0) + 1
    current = scan_landing(lake, previous)
    requests, observations = [], []
    for code in sorted(set(previous) | set(current)):
        before = {r: m[2] for r, m in previous.get(code, {}).items()}
        after = {r: m[2] for r, m in current.get(code, {}).items()}
        if context.cursor and before == after:
            continue
        files = current.get(code, {})
        digest = content_digest(files)
        if digest == materialised_digest(context.instance, code):
            continue
        # observed together with the run it triggers, so automation never sees a landing change
        # that no source_documents run will handle
        observations.append(
            dg.AssetObservation(
                asset_key=landing_files.key,
                partition=code,
                metadata={
                    "files": dg.MetadataValue.int(len(files)),
                    "bytes": dg.MetadataValue.int(sum(m[1] for m in files.values())),
                    LANDING_DIGEST: dg.MetadataValue.text(digest),
                },
            )
        )
        requests.append(
            dg.RunRequest(partition_key=code, run_key=f"{code}:{digest}:{tick}", tags={"ebm/trigger": "landing"})
        )
    return dg.SensorResult(
        run_requests=requests,
        asset_events=observations,
        cursor=json.dumps({"files": current, "tick": tick}, sort_keys=True),
    )


automation_sensor = dg.AutomationConditionSensorDefinition(
    "eager_downstream",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
)
