"""init_process_group's checks and sub-groups on 3 ranks, and the failures: outside a launch,
a rank that raises, a collective that times out (waited on or not)."""

import subprocess
import sys
import time

from mpilaunch import mpirun, rank_env


def test_groups_and_checks():
    done = mpirun(3, "groups.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(done.stdout.split()) == ["0", "1", "2", "OK", "OK", "OK"]


def test_outside_a_launch_says_how_to_launch():
    code = "import ember.distributed as d; d.init_process_group('gloo')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=rank_env({"WORLD_SIZE": "2", "RANK": "0"}))
    assert done.returncode != 0
    assert "ValueError" in done.stderr and "ember-run --nproc-per-node" in done.stderr, done.stderr


def test_single_process_world():
    code = ("import ember, ember.distributed as d; d.init_process_group('gloo', rank=0, world_size=1); "
            "t = ember.arange(3.); d.all_reduce(t); print(d.get_world_size(), t.tolist())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=rank_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1 [0.0, 1.0, 2.0]"


def test_a_rank_that_raises_ends_the_job_with_its_traceback():
    start = time.monotonic()
    done = mpirun(2, "raises.py", timeout=60)
    assert time.monotonic() - start < 30
    assert done.returncode != 0
    assert "[rank 1] uncaught exception" in done.stderr and "ValueError: rank 1 fails on purpose" in done.stderr


def test_timeout_names_rank_collective_and_sequence():
    start = time.monotonic()
    done = mpirun(2, "timeout.py", timeout=60)
    assert time.monotonic() - start < 30
    assert done.returncode != 0
    assert "DistBackendError: [Rank 0] all_reduce (sequence number 3) did not complete within 2 s" in done.stderr, \
        done.stderr
    # every rank's side: rank 1 (sleeping in Python) answers through its watchdog thread
    assert ("the last collective each rank entered: rank 0: all_reduce (sequence number 3); "
            "rank 1: all_reduce (sequence number 2)") in done.stderr, done.stderr


def test_a_barriers_own_timeout_bounds_it():
    start = time.monotonic()
    done = mpirun(2, "barrier_timeout.py", timeout=60)
    assert time.monotonic() - start < 30
    assert done.returncode != 0
    assert "DistBackendError: [Rank 0] barrier (sequence number 2) did not complete within 1 s" in done.stderr, \
        done.stderr


def test_signatures_as_torchs():
    """The public functions take torch.distributed's parameters, in its order (torch's private
    ``_ranks`` of init_process_group aside)."""
    import inspect

    import torch.distributed as tdist

    import ember.distributed as edist
    names = ["init_process_group", "destroy_process_group", "new_group", "barrier", "monitored_barrier", "all_reduce",
             "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
             "all_to_all", "all_to_all_single", "gather", "scatter", "send", "recv", "isend", "irecv", "get_rank",
             "get_world_size", "get_backend", "is_initialized", "is_available", "broadcast_object_list",
             "all_gather_object", "gather_object", "scatter_object_list", "get_process_group_ranks",
             "get_global_rank", "get_group_rank"]
    for name in names:
        theirs = [p for p in inspect.signature(getattr(tdist, name)).parameters if not p.startswith("_")]
        ours = list(inspect.signature(getattr(edist, name)).parameters)
        assert ours == theirs, name


def test_an_async_collective_nobody_waits_on_still_times_out():
    start = time.monotonic()
    done = mpirun(2, "unwaited.py", "late", timeout=60)
    assert time.monotonic() - start < 30
    assert done.returncode != 0
    # wait(timeout=) bounds that one wait: DistBackendError on the rank that waited
    assert "wait: [Rank 0] all_reduce (sequence number 3) did not complete within 0.5 s" in done.stdout, \
        done.stdout + done.stderr
    assert "DistBackendError: [Rank 0] all_reduce (sequence number 3) did not complete within 2 s" in done.stderr, \
        done.stderr
    assert ("the last collective each rank entered: rank 0: all_reduce (sequence number 3); "
            "rank 1: all_reduce (sequence number 2)") in done.stderr, done.stderr


def test_async_collectives_finish_without_a_wait_and_do_not_time_out():
    done = mpirun(2, "unwaited.py", "done", timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    # SUM of rank + 1 over ranks 0 and 1; AVG of 2 * rank
    assert sorted(done.stdout.splitlines()) == ["rank 0 [3.0, 3.0, 3.0] [1.0, 1.0]",
                                                "rank 1 [3.0, 3.0, 3.0] [1.0, 1.0]"], done.stdout


def test_reduce_op_members_as_torchs():
    import torch.distributed as tdist

    import ember.distributed as edist
    assert list(edist.ReduceOp.RedOpType.__members__) == list(tdist.ReduceOp.RedOpType.__members__)
    for name in tdist.ReduceOp.RedOpType.__members__:
        theirs, ours = getattr(tdist.ReduceOp, name), getattr(edist.ReduceOp, name)
        assert int(ours) == int(theirs) and str(ours) == str(theirs) and repr(ours) == repr(theirs)
