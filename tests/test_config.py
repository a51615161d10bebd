"""How a run's threads and memory limit are shared by the batches it stages at once."""

import pytest

from lessonweaver.batch import connect_staging
from lessonweaver.config import Settings, batch_memory_limit, batch_threads, database_memory_limit, memory_bytes


@pytest.mark.parametrize("text, expected", [("1536MB", 1_536_000_000), ("2GB", 2_000_000_000),
                                            ("1.5GiB", 1_610_612_736), (" 512 mib ", 536_870_912)])
def test_memory_sizes_as_duckdb_writes_them(text, expected):
    assert memory_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "lots", "12", "80%", "-1GB"])
def test_a_size_that_is_not_one_says_so(text):
    with pytest.raises(ValueError, match="memory limit must be a size such as 1536MB or 2GB"):
        memory_bytes(text)


def test_batches_on_one_machine_share_its_cores_and_memory():
    one = Settings(threads=2, memory_limit="2GiB", workers=1)
    two = Settings(threads=2, memory_limit="2GiB", workers=2)
    assert (batch_threads(one), batch_memory_limit(one)) == (2, "2048MiB")
    assert (batch_threads(two), batch_memory_limit(two)) == (1, "1024MiB")
    assert batch_threads(Settings(threads=2, workers=8)) == 1  # never fewer than one thread


def test_the_database_connection_gets_one_share_so_the_load_peaks_no_higher_than_staging():
    assert database_memory_limit(Settings(memory_limit="2GiB", workers=2)) == "1024MiB"
    assert database_memory_limit(Settings(memory_limit="2GiB", workers=1)) == "2048MiB"
    # batches on remote workers take no memory here: the load has the whole limit
    assert database_memory_limit(Settings(memory_limit="2GiB", workers=4, shared_machine=False)) == "2GiB"


def test_remote_workers_each_get_the_whole_limit():
    remote = Settings(threads=4, memory_limit="2GiB", workers=4, shared_machine=False)
    assert (batch_threads(remote), batch_memory_limit(remote)) == (4, "2GiB")


def test_a_staging_database_gets_its_share():
    con = connect_staging(Settings(threads=2, memory_limit="2GiB", workers=2))
    try:
        threads, limit = con.execute(
            "SELECT current_setting('threads'), current_setting('memory_limit')").fetchone()
    finally:
        con.close()
    assert threads == 1
    assert limit == "1.0 GiB"
