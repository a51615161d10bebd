"""make eval's length baseline (benchmarks/eval.py): the runs longer than a graded set's median, scored like a
detector, on a set staged as eval stages one (three SWE-agent 0.x runs of 16, 32 and 43 events, graded here)."""

import json
import shutil
import sys

from conftest import REPO

sys.path.insert(0, str(REPO))
from benchmarks import eval as evaluation  # noqa: E402

RUNS = REPO / "tests" / "fixtures" / "formats" / "swe_agent0"


def graded(tmp_path, failed: set[str]) -> evaluation.Scored:
    folder = tmp_path / "set"
    shutil.copytree(RUNS, folder, ignore=shutil.ignore_patterns("make", "README.md"))
    runs = sorted(folder.glob("*.traj"))
    (folder / "labels.json").write_text(json.dumps({p.stem: {"failed": p.stem in failed} for p in runs}))
    return evaluation.graded("three runs", folder, runs, tmp_path / "work")


def test_the_runs_longer_than_the_median_are_the_baseline(tmp_path):
    s = graded(tmp_path, failed={"marshmallow-code__marshmallow-1867"})
    assert sorted(n["steps"] for n in s.lengths.values()) == [16, 32, 43]
    fired, median = evaluation.longer_than_median(s, "steps")
    assert median == 32 and [s.cases[t].positive for t in fired] == [True]
    assert evaluation.scores(s, fired) == (1.0, 1.0, 3.0)  # precision, recall, lift over a base rate of 1/3
    assert "baseline: longer than the median (32 steps): precision 1.000  recall 1.000  lift 3.00" \
        in "\n".join(evaluation.baseline_lines(s))


def test_a_baseline_that_flags_passing_runs_scores_below_the_base_rate(tmp_path):
    s = graded(tmp_path, failed={"swe-agent__test-repo-i1"})  # the shortest run failed
    fired, _ = evaluation.longer_than_median(s, "calls")
    assert evaluation.scores(s, fired) == (0.0, 0.0, 0.0)
    row = [line for line in evaluation.discrimination([s]).splitlines() if line.startswith("(length: calls")]
    assert row and row[0].split()[-3:] == ["0.00", "0.00", "0.00"]
