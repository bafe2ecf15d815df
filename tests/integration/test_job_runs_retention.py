"""Job-run records do not pile up forever: the decay job deletes a person's records older than
`cognition.job_runs_keep_days`, except each job's newest run and newest success (which the
minimum intervals and `strata jobs status` read); runs still open and other people's records
are left alone. Real store, the injected clock."""

from __future__ import annotations

from strata.core.clock import ManualClock
from strata.memory.coordination.jobruns import JobRunRepo
from tests.integration.conftest import AppFactory
from tests.memory_helpers import person


async def test_the_decay_job_deletes_old_run_records_and_keeps_what_is_read(
        make_app: AppFactory, clock: ManualClock) -> None:
    app = await make_app(job_runs_keep_days=30.0)
    assert app.runner is not None
    ann, bob = await person(app.db, "ann", clock), await person(app.db, "bob", clock)
    runs = JobRunRepo(app.db)

    async def run(job: str, who: int, status: str) -> int:
        rid = await runs.start(job, who, clock.now())
        await runs.finish(rid, now=clock.now(), status=status, tokens=5)
        return rid

    old_ok = await run("digest", ann.id, "ok")  # older than a newer success: goes
    newest_ok = await run("digest", ann.id, "ok")  # the newest success: stays
    for _ in range(3):
        await run("digest", ann.id, "error")  # go: a newer run comes later
        await runs.record_usage("extract:turn", ann.id, clock.now(), tokens=7)  # newest stays
    open_run = await runs.start("reflect", ann.id, clock.now())  # still running: stays
    bobs = await run("digest", bob.id, "ok")  # another person's: stays
    clock.advance(days=31)
    recent = await run("digest", ann.id, "error")  # now the newest run: stays

    report = await app.runner.run_job(app.runner.registry.get("decay"), ann, force=True,
                                      asked=True)
    assert report.status == "ok", report.detail
    assert "job runs older than 30 days deleted: 6" in report.detail
    assert report.details["job_runs_deleted"] == 6  # old_ok, 3 errors, 2 of 3 usage rows
    left = {r.id for r in await runs.runs(person_id=ann.id)} - {
        r.id for r in await runs.runs(person_id=ann.id, job="decay")}
    usage = [r.id for r in await runs.runs(person_id=ann.id, job="extract:turn")]
    assert left == {newest_ok, open_run, recent, *usage} and len(usage) == 1
    assert old_ok not in left
    assert await runs.last_ok_started("digest", ann.id) is not None
    assert [r.id for r in await runs.runs(person_id=bob.id)] == [bobs]
    # Run again at once: nothing more to delete.
    again = await app.runner.run_job(app.runner.registry.get("decay"), ann, force=True,
                                     asked=True)
    assert again.details.get("job_runs_deleted", 0) == 0
