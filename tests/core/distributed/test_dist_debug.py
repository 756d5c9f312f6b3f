"""EMBER_DISTRIBUTED_DEBUG=DETAIL (and torch's TORCH_DISTRIBUTED_DEBUG): a mismatch of shape,
collective, dtype or reduce op is reported on every rank with each rank's side."""

import pytest
from mpilaunch import mpirun


@pytest.mark.parametrize("variable", ["EMBER_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG"])
def test_mismatched_collectives_are_reported_on_every_rank(variable, tmp_path):
    done = mpirun(2, "mismatch.py", tmp_path, env={variable: "DETAIL"}, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    for r in range(2):
        errors = (tmp_path / f"rank{r}.txt").read_text().splitlines()
        assert len(errors) == 4, errors
        assert all(e.startswith("Detected mismatch between collectives on ranks") for e in errors)
        shapes, kinds, dtypes, ops = errors
        assert "rank 0 is running (SequenceNumber=1, OpType=all_reduce, ReduceOp=SUM, TensorShape=[3]" in shapes
        assert "rank 1 is running (SequenceNumber=1, OpType=all_reduce, ReduceOp=SUM, TensorShape=[4]" in shapes
        assert "OpType=all_reduce" in kinds and "rank 1 is running (SequenceNumber=2, OpType=broadcast" in kinds
        assert "TensorDtype=float32" in dtypes and "TensorDtype=float64" in dtypes
        assert "ReduceOp=SUM" in ops and "ReduceOp=MAX" in ops
