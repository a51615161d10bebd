"""Redetect: run the current detectors over the traces already stored, so a new or fixed detector sees
history (a run reads only new files), and let lessons and reports follow.

The detectors run (all, or those named) replace their stored detections (lessonweaver.regrain), on a
copy of the database published when done (store.writing); a detector that fails keeps what it had. A
database woven at an earlier grain of lessons moves to the new one: every detector runs, and review
decisions follow their findings into the lessons that absorb them. Then the lessons are woven again as the
latest run left them (lessons.reweave), each new detection counting for the night its trace came in,
and the reports rendered from the database and audited (pipeline.render_stored). A lesson none of whose
detections remain leaves the lessons table, as when `forget` removes its traces; its review decision
stays in `reviews` and applies again if it comes back. The detectors' fingerprints are brought up to
date (lessonweaver.versions), so the next run no longer warns about them.
"""

from lessonweaver import detectors, lessons, pipeline, regrain, store
from lessonweaver.config import Settings
from lessonweaver.queries import execute
from lessonweaver.words import plural


def chosen(found: list[detectors.Detector], only: list[str]) -> list[detectors.Detector]:
    """The detectors named (all when none is), or ValueError naming one that does not exist."""
    known = {d.id for d in found}
    unknown = [i for i in only if i not in known]
    if unknown:
        raise ValueError(f"no detector '{unknown[0]}' (list them with: lessonweaver detectors; "
                         "your own need --detectors DIR)")
    return [d for d in found if not only or d.id in only]


def redetect(settings: Settings, only: list[str]) -> regrain.Redetected:
    """Run the detectors again over the stored traces of database `settings.db`, weave and render (see
    the module's docstring). Returns what changed."""
    found = detectors.load_detectors(settings.detector_dirs)
    picked = chosen(found, only)
    with store.writing(settings.db, "redetect") as work:
        con = store.connect(work, threads=settings.threads, memory_limit=settings.memory_limit)
        try:
            moving = lessons.grain(con) < lessons.GRAIN
            if moving:  # every detector again: the findings carry what the new grain groups by
                picked = found
                execute(con, "regrain/reviewed.sql")
            done = regrain.replace(con, found, picked)
            lessons.reweave(con, store.resolve_after(con), settings.merge_threshold, done.detectors)
            if moving:
                done.regrained, done.moved = True, regrain.carry_reviews(con, settings.merge_threshold)
            done.lessons_after = regrain.lesson_ids(con)
            tenant = pipeline.tenant_key(con, settings.tenant, settings.tenant_salt)
            done.run = pipeline.render_stored(con, settings.out, settings.db, settings.templates, tenant)
        finally:
            con.close()
    return done


def summary(done: regrain.Redetected) -> list[str]:
    """What `lessonweaver redetect` prints: detections before and after, per detector that changed."""
    changed = [f"{i} {done.before[i]} -> {done.after[i]}" for i in done.detectors if done.before[i] != done.after[i]]
    lines = [f"redetect: {plural(len(done.detectors), 'detector')} over {plural(done.traces, 'stored trace')}; "
             f"detections {done.total[0]} -> {done.total[1]}"
             + (f" ({', '.join(changed)})" if changed else " (no detector's changed)")]
    if done.regrained:
        lines.append("  the lessons moved to the new grain: one lesson per cause, across tasks, sessions and tenants")
    lines += [f"  {i:<22} FAILED, its detections kept: {why}" for i, why in sorted(done.failed.items())]
    if done.kept:
        lines.append(f"  {plural(done.kept, 'detection')} kept: their traces' events are no longer stored (--retain-days)")
    if done.held:
        lines.append(f"  {plural(done.held, 'new detection')} held back: the text looks like it holds sensitive data")
    added, gone = done.lessons_after - done.lessons_before, done.lessons_before - done.lessons_after
    lines.append(f"lessons:  {len(done.lessons_before)} -> {len(done.lessons_after)} "
                 f"({len(added)} added, {len(gone)} gone)")
    if done.regrained and done.moved:
        lines += regrain.regrain_lines(done.moved)
    lines += [f"report:   {path}" for path in (done.run.written if done.run else [])]
    return lines
