"""Landing sensor (new or changed files -> runs for exactly those partitions) and refresh schedule."""


import hashlib
import json

import dagster as dg

from ebm_platform.corpus.landing import landing_files
from ebm_platform.defs.corpus import landing_imports, source_documents
from ebm_platform.defs.resources import LakeResource


def scan_landing(lake: LakeResource, previous: dict[str, dict[str, list]]) -> dict[str, dict[str, list]]:
    """{code: {relative path: [mtime_ns, size, sha256]}}; unchanged (mtime, size) reuse the old hash."""
    state: dict[str, dict[str, list]] = {}
    for code in lake.catalogue().codes:
        folder = lake.landing_dir / code
        old = previous.get(code, {})
        files: dict[str, list] = {}
        for path in landing_files(folder):
            rel = str(path.relative_to(folder))
            stat = path.stat()
            seen = old.get(rel)
            if seen and seen[0] == stat.st_mtime_ns and seen[1] == stat.st_size:
                files[rel] = seen
            else:
                files[rel] = [stat.st_mtime_ns, stat.st_size, hashlib.sha256(path.read_bytes()).hexdigest()]
        if files:
            state[code] = files
    return state


def _content_digest(files: dict[str, list]) -> str:
    items = sorted((rel, meta[2]) for rel, meta in files.items())
    return hashlib.sha256(json.dumps(items).encode()).hexdigest()[:16]


@dg.sensor(
    target=[source_documents], minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def landing_sensor(context: dg.SensorEvaluationContext, lake: LakeResource) -> dg.SensorResult:
    """Request a source_documents run for each partition whose landing files were added,
    changed or removed (run key = code + content hash); downstream assets follow eagerly."""
    previous = json.loads(context.cursor) if context.cursor else {}
    current = scan_landing(lake, previous)
    requests = []
    for code in sorted(set(previous) | set(current)):
        before = {r: m[2] for r, m in previous.get(code, {}).items()}
        after = {r: m[2] for r, m in current.get(code, {}).items()}
        if before != after:
            digest = _content_digest(current.get(code, {}))
            requests.append(dg.RunRequest(partition_key=code, run_key=f"{code}:{digest}",
                                          tags={"ebm/trigger": "landing"}))
    return dg.SensorResult(run_requests=requests, cursor=json.dumps(current, sort_keys=True))


refresh_job = dg.define_asset_job("corpus_refresh_job", selection=[landing_imports])

corpus_refresh_schedule = dg.ScheduleDefinition(
    name="weekly_corpus_refresh", job=refresh_job, cron_schedule="0 3 * * 1",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Weekly re-scan of the public datasets into landing files; the sensor does the rest.",
)

automation_sensor = dg.AutomationConditionSensorDefinition(
    "eager_downstream", target=dg.AssetSelection.all(), default_status=dg.DefaultSensorStatus.RUNNING,
)
