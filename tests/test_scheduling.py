"""Batches share the workers: a slot frees when any batch finishes, so a small batch done early lets the
next one start beside a large one still staging. (Waiting for the oldest batch instead left a worker idle
whenever batch sizes differed: 79 s against 48 s of staging for 300k traces in 16 batches of 67 and 14 MB.)"""

import threading
from concurrent.futures import ThreadPoolExecutor

from lessonweaver import pipeline
from lessonweaver.batch import BatchResult
from lessonweaver.config import Settings


def test_a_slot_frees_when_any_batch_finishes(tmp_path):
    """Four batches on two workers: the first stays busy until the third has started, which only a
    scheduler that refills the slot of the second (finished at once) lets happen."""
    third_started = threading.Event()
    started, finished = [], []

    def stage(files, settings, folder, known_hashes, label):
        started.append(label)
        if label == "1/4":
            third_started.wait(timeout=20)
        elif label == "3/4":
            third_started.set()
        finished.append(label)
        return BatchResult(folders=[folder], detector_errors={})

    plan = pipeline.Plan(batches=[[], [], [], []], files_seen=4, files_skipped=0, known_hashes=frozenset(),
                         tenant_salt="")
    with ThreadPoolExecutor(max_workers=2) as pool:
        steps = pipeline.Steps(plan=lambda s: plan, stage=lambda **kw: pool.submit(stage, **kw),
                               load=lambda *a: None, render=lambda *a: None)
        results = pipeline._stage_all(Settings(workers=2), steps, plan, str(tmp_path))
    assert third_started.is_set(), "the third batch waited for the first although the second had finished"
    assert finished.index("3/4") < finished.index("1/4")
    assert [r.folders[0] for r in results] == [f"{tmp_path}/batch-{i:05d}" for i in range(4)]  # in plan order
    assert sorted(started) == ["1/4", "2/4", "3/4", "4/4"]


def test_never_more_batches_at_once_than_workers(tmp_path):
    running, most = [0], [0]
    lock = threading.Lock()

    def stage(files, settings, folder, known_hashes, label):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        threading.Event().wait(0.02)
        with lock:
            running[0] -= 1
        return BatchResult(folders=[folder], detector_errors={})

    plan = pipeline.Plan(batches=[[]] * 12, files_seen=12, files_skipped=0, known_hashes=frozenset(), tenant_salt="")
    with ThreadPoolExecutor(max_workers=8) as pool:  # a pool larger than the share: the window must hold
        steps = pipeline.Steps(plan=lambda s: plan, stage=lambda **kw: pool.submit(stage, **kw),
                               load=lambda *a: None, render=lambda *a: None)
        assert len(pipeline._stage_all(Settings(workers=3), steps, plan, str(tmp_path))) == 12
    assert most[0] == 3
