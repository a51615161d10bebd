"""SQL file headers, and the checks that make a broken detector a clear message."""

from pathlib import Path

import pytest

from lessonweaver.detectors import load_detectors
from lessonweaver.sqlfile import SqlFileError, read_sql_file


def test_header_continuation_and_prose(tmp_path: Path):
    f = tmp_path / "d.sql"
    f.write_text("-- id: x\n-- description: first part\n--   second part\n--\n-- prose: not a key\nSELECT 1\n")
    parsed = read_sql_file(f)
    assert parsed.header == {"id": "x", "description": "first part second part"}
    assert parsed.body == "SELECT 1"


@pytest.mark.parametrize("text, message", [
    ("-- id: Bad-Id\n-- title: t\n-- severity: low\n-- description: d\nSELECT 1", "id must be lowercase"),
    ("-- id: ok\n-- title: t\n-- severity: urgent\n-- description: d\nSELECT 1", "severity must be one of"),
    ("-- id: ok\n-- title: t\n-- severity: low\n-- description: d\n", "no SQL after the header"),
    ("-- id: retry\n-- title: t\n-- severity: low\n-- description: d\nSELECT 1", "defined twice"),
])
def test_broken_detector_files(tmp_path: Path, text: str, message: str):
    (tmp_path / "mine.sql").write_text(text)
    with pytest.raises(SqlFileError, match=message):
        load_detectors([str(tmp_path)])
