"""Object collectives (with the restricted unpickler by default) and monitored_barrier on 3 ranks."""

from mpilaunch import mpirun


def test_object_collectives_and_monitored_barrier(tmp_path):
    done = mpirun(3, "objects.py", tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {line for r in range(3) for line in (tmp_path / f"rank{r}.txt").read_text().splitlines()}

    def obj(r):
        return {"rank": r, "t": [float(r)] * 2, "name": "x" * (100 * r), "items": [r, None, 1.5]}
    everyone = [obj(r) for r in range(3)]
    for r in range(3):
        assert f"all_gather_object {r} {everyone}" in lines
        assert f"gather_object {r} {everyone if r == 1 else None}" in lines
        assert f"broadcast_object_list {r} {[obj(2), 'text', 7]}" in lines
        assert f"scatter_object_list {r} {[f'for {r}']}" in lines
        assert f"refused {r}" in lines and f"trusted {r} [0, 1, 2]" in lines
    assert "late 0 Rank_2_failed_to_pass_monitoredBarrier_in_1000_ms" in lines, lines
    # rank 1 arrived, but rank 0 gave up before releasing it: rank 1's own timeout ends its wait
    assert any(line.startswith("late 1 [Rank_1]_monitored_barrier") and "did_not_release" in line for line in lines)
