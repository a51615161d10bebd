"""A detector added later changes what no other test expects. The worst case, one that fires on every
trace, dropped into a folder beside the shipped ones: the demo data still shows what it must, a format's
exact findings stay as they were, and `detectors test` tests it alone and asks for its cases."""

from pathlib import Path

import pytest

from conftest import REPO, rows, stage
from lessonweaver.cli import main
from test_demo_data import check_demo_data

EVERYWHERE = """-- id: zz_everywhere
-- title: Fires on every trace
-- severity: high
-- description: A detector added after the tests were written.
SELECT trace_id, 'seen' AS evidence FROM traces
"""


@pytest.fixture(scope="module")
def added(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("added")
    (folder / "zz_everywhere.sql").write_text(EVERYWHERE, encoding="utf-8")
    return folder


def test_the_demo_data_still_shows_what_it_must(added: Path):
    con = stage([REPO / "data"], detector_dirs=(str(added),))
    assert rows(con, "SELECT count(*) AS n FROM detections WHERE detector = 'zz_everywhere'") == \
        rows(con, "SELECT count(*) AS n FROM traces")
    check_demo_data(con)


def test_exact_findings_of_a_format_stay_as_they_were(added: Path):
    gdev = REPO / "tests" / "fixtures" / "formats" / "gdev"
    found = "SELECT detector, trace_id, event_id, evidence FROM known_detections ORDER BY ALL"
    with_it = stage([gdev], detector_dirs=(str(added),))
    assert rows(with_it, "SELECT count(*) AS n FROM detections WHERE detector = 'zz_everywhere'") != [{"n": 0}]
    assert rows(with_it, found) == rows(stage([gdev]), found)


def test_the_command_tests_it_alone(added: Path, capsys):
    assert main(["detectors", "test", str(added)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "detectors test: 1 detector, 0 passed, 2 failed"
