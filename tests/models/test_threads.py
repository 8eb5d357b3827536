"""Jobs on threads of our own (pipeline/models/threads.py): order, limits, nesting."""

from __future__ import annotations

import threading

import pytest
import torch

from pipeline.models import threads


def test_results_come_back_in_job_order(torch_threads):
    torch_threads(2)
    jobs = [lambda i=i: i * i for i in range(7)]
    assert threads.run_jobs(jobs, 1) == threads.run_jobs(jobs, 3) == [i * i for i in range(7)]


def test_jobs_run_on_our_threads_each_on_one_torch_thread(torch_threads):
    torch_threads(2)

    def where() -> tuple[bool, int]:
        return threads.inside_job(), torch.get_num_threads()

    assert threads.run_jobs([where] * 4, 2) == [(True, 1)] * 4
    assert torch.get_num_threads() == 2  # the caller's count is restored


def test_workers_follow_torch_threads_the_jobs_and_the_cap(torch_threads):
    torch_threads(2)
    assert (threads.workers(1), threads.workers(5)) == (1, 2)
    torch_threads(1)
    assert threads.workers(5) == 1
    torch_threads(threads.MAX_WORKERS + 4)
    assert threads.workers(100) == threads.MAX_WORKERS


def test_a_job_that_splits_its_work_runs_it_in_turn(torch_threads):
    """Nested jobs run on the job's own thread (a pool thread waiting on its own pool
    would deadlock once every thread waits)."""
    torch_threads(2)

    def outer() -> set[str]:
        inner = [lambda: threading.current_thread().name] * 3
        assert threads.workers(3) == 1
        return set(threads.run_jobs(inner, 2)) | {threading.current_thread().name}

    names = threads.run_jobs([outer] * 4, 2)
    assert all(len(group) == 1 for group in names)


def test_a_lone_job_runs_here_and_leaves_the_threads_to_its_own_jobs(torch_threads):
    """One job runs in the caller's thread on one torch thread; blocks of its own
    (a kind's passes, the window kernel's tiles) may still take torch's count."""
    torch_threads(2)

    def lone() -> tuple[bool, int, int, int]:
        return (
            threads.inside_job(),
            torch.get_num_threads(),
            threads.available(),
            threads.workers(4),
        )

    assert threads.run_jobs([lone], 2) == [(False, 1, 2, 2)]
    assert (torch.get_num_threads(), threads.available()) == (2, 2)


@pytest.fixture
def stoppable():
    yield
    threads._stopping.clear()


def test_a_signal_cancels_the_queued_jobs_and_ends_the_running_ones(torch_threads, stoppable):
    """Issue 34, case 11: after SIGTERM a large grid cell printed "stopped" but ran on:
    the interpreter joined workers that still ran every queued chunk."""
    import time

    torch_threads(2)
    started: list[int] = []

    def job(i: int):
        def run():
            started.append(i)
            while True:  # a chunk that would train for a long time
                threads.check_stopped()
                time.sleep(0.001)

        return run

    def signal_arrives():
        while len(started) < 2:
            time.sleep(0.001)
        threads.stop()

    timer = threading.Thread(target=signal_arrives)
    timer.start()
    with pytest.raises(threads.JobsStopped):
        threads.run_jobs([job(i) for i in range(6)], threads=2)
    timer.join()
    assert sorted(started) == [0, 1]  # the four queued jobs never started


def test_training_ends_at_the_next_epoch_once_stopped(stoppable):
    from pipeline.models.train import train
    from tests.models.test_train import init_params, small_lesson

    inputs, labels = small_lesson(5150, 24, [12, 6, 6])
    threads.stop()
    with pytest.raises(threads.JobsStopped):
        train(init_params(5150, [1]), inputs, labels, 5, 0.6)
