"""The findings on every shared sample and benchmark are the ones recorded (benchmarks/findings.py): a
change made for speed or tidiness must change no detection and no lesson. A change meant to change them
records them again (`benchmarks/findings.py --write`) and says why."""

import json
import shutil
import sys

import pytest

from conftest import REPO, SHARED

sys.path.insert(0, str(REPO))
from benchmarks import findings  # noqa: E402

needs_shared = pytest.mark.skipif(not (SHARED / "samples").is_dir(), reason="needs ../shared")


@needs_shared
@pytest.mark.slow
def test_the_shared_findings_are_the_recorded_ones():
    recorded = json.loads(findings.RECORD.read_text())
    now = findings.everything(SHARED)
    assert findings.differences(recorded, now) == []
    assert now == recorded  # the same digests, not only the same counts


def test_a_changed_finding_is_named():
    """The comparison can fail, and says where: one detection fewer, one more lesson, other evidence."""
    before = {"samples/x": {"traces": 3, "quarantined": 0, "rejected": 0, "lessons": 2, "detections": {"retry": 2},
                            "detections_sha256": "a", "lessons_sha256": "b"}}
    fewer = {"samples/x": dict(before["samples/x"], detections={"retry": 1}, lessons=3)}
    reworded = {"samples/x": dict(before["samples/x"], detections_sha256="c")}
    reranked = {"samples/x": dict(before["samples/x"], lessons_sha256="d")}
    assert findings.differences(before, fewer) == ["samples/x: lessons 2 -> 3", "samples/x: retry 2 -> 1 detections"]
    assert findings.differences(before, reworded) == [
        "samples/x: same counts, other detections (evidence, titles, causes or severities changed)"]
    assert findings.differences(before, reranked) == [
        "samples/x: same counts, other lessons (rules, texts, representative findings, recovery or priorities changed)"]
    assert findings.differences(before, {}) == ["samples/x: folder gone"]


@needs_shared
def test_the_digest_does_not_depend_on_where_the_folder_is(tmp_path):
    """Traces without ids of their own get ids hashed from their file's path (tau-bench results here): the
    digest must not, or a clean checkout in another folder would fail the comparison above."""
    source = SHARED / "samples" / "tau-bench"
    here, there = tmp_path / "a" / "tau-bench", tmp_path / "b" / "deeper" / "tau-bench"
    for target in (here, there):
        shutil.copytree(source, target)
    work = tmp_path / "work"
    work.mkdir()
    first, second = findings.findings(here, work), findings.findings(there, work)
    assert first["detections"] and first == second


@needs_shared
@pytest.mark.slow
def test_a_lesson_does_not_depend_on_where_its_files_are(tmp_path):
    """The SWE-agent runs make one lesson of a retry and a fallback of the same failing tool; which finding
    speaks for it went by trace id, a hash of the file's path, so the same files read from another folder
    gave a lesson of the other detector, as a coin falls. Read from ten places, they make one and the same
    lesson (by the trace ids alone, all ten would agree once in 512 tries)."""
    source = SHARED / "samples" / "swe-agent"
    work = tmp_path / "work"
    work.mkdir()
    seen = []
    for place in ("a", "b/c", "runs", "d/e/f", "swe", "g", "h/i", "nightly", "j/k", "copy"):
        target = tmp_path / place / "swe-agent"
        shutil.copytree(source, target)
        seen.append(findings.findings(target, work))
    assert seen[0]["lessons"] >= 1 and all(s == seen[0] for s in seen)
