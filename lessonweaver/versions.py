"""Detector versions: which version of each detector the stored detections come from.

A detector's fingerprint is a hash of its header and query (Detector.fingerprint). The table
`detector_versions` keeps, per detector, the fingerprint of the version that made its detections of every
stored trace. A run reads only new files, so a detector changed since (or added once traces were stored)
has run over the new traces only: the run says so, every night until `lessonweaver redetect` runs it
over the stored traces and records its fingerprint here. A run records the fingerprints itself only
while the database holds no trace made by another version: its first run, or a detector's first use on
an empty database. A database from before fingerprints adopts the current ones (its detections were
made by versions nobody recorded).
"""

import duckdb

from lessonweaver.config import DEFAULT_DB
from lessonweaver.detectors import Detector
from lessonweaver.words import plural


def stale(con: duckdb.DuckDBPyConnection, found: list[Detector], had_traces: bool) -> dict[str, str]:
    """The detectors of `found` whose stored detections another version made, id -> 'changed', or 'new'
    for a detector that never ran over the traces stored before (`had_traces`). Records the fingerprints
    of the others that have none yet."""
    stored = dict(con.execute("SELECT detector, fingerprint FROM detector_versions").fetchall())
    if not stored and had_traces:  # a database from before fingerprints: adopt the versions in use
        record(con, found)
        return {}
    out_of_date = {d.id: "changed" for d in found if d.id in stored and stored[d.id] != d.fingerprint}
    if had_traces:
        out_of_date |= {d.id: "new" for d in found if d.id not in stored}
    record(con, [d for d in found if d.id not in stored and d.id not in out_of_date])
    return dict(sorted(out_of_date.items()))


def record(con: duckdb.DuckDBPyConnection, found: list[Detector]) -> None:
    """Note that the stored detections of `found` are those of these versions."""
    if not found:
        return
    rows = [(d.id, d.fingerprint) for d in found]
    con.execute("DELETE FROM detector_versions WHERE list_contains(?, detector)", [[d.id for d in found]])
    con.executemany("INSERT INTO detector_versions VALUES (?, ?, now()::TIMESTAMP)", rows)


def advice(out_of_date: dict[str, str], db: str, detector_dirs: tuple[str, ...] | list[str]) -> str:
    """One line for the run's summary and stderr: which detectors are out of date for the stored traces,
    and the command that brings them up to date (empty when none is; it renders where the runs publish)."""
    if not out_of_date:
        return ""
    command = ("lessonweaver redetect" + (f" --db {db}" if db != DEFAULT_DB else "")
               + "".join(f" --detectors {d}" for d in detector_dirs)
               + "".join(f" --detector {i}" for i in out_of_date))
    which = ", ".join(f"{i} ({why})" for i, why in out_of_date.items())
    return (f"{plural(len(out_of_date), 'detector')} changed or added since the stored traces were detected "
            f"({which}): this run used the new version on its own traces only; for every stored trace, run: {command}")
