"""``ember.distributed``: torch.distributed's process groups and collectives on MPI (through
mpi4py, the ``distributed`` extra). Backends "mpi" and "gloo" both run on MPI, for CPU
tensors; backend "nccl" runs cuda tensors on NCCL through cupy (``cupy.cuda.nccl``, each
rank on device ``device_id`` or LOCAL_RANK), and "cpu:gloo,cuda:nccl" runs each tensor on
its device's engine; the ranks come from the MPI world that ``ember-run`` or ``mpiexec``
started. ``is_nccl_available()`` is True when cupy imports with its NCCL bindings.

``is_available()`` is True when mpi4py can be imported; MPI itself starts only at
``init_process_group``. Object collectives unpickle with ``ember.load``'s restricted rules
unless ``trust_object_collectives`` (or EMBER_DISTRIBUTED_TRUST_OBJECTS=1) says otherwise.
``EMBER_DISTRIBUTED_DEBUG=DETAIL`` (or torch's ``TORCH_DISTRIBUTED_DEBUG``) checks each
collective across ranks before it runs. ``ember.distributed.optim`` holds
ZeroRedundancyOptimizer, ``ember.distributed.algorithms`` the generic ``Join`` and the DDP
communication hooks.

A collective waited on at once runs as MPI's blocking call; ``async_op=True`` returns a Work
over MPI's non-blocking one. An NCCL collective is enqueued on cupy's current stream and its
Work is a cupy event. Either way the group's timeout bounds it: a watchdog thread (testing
MPI requests, polling NCCL events) ends the job (MPI_Abort, NCCL communicators aborted
first) with an error naming the rank, the collective, its sequence number and the last
collective every rank entered, as torch's watchdog does.

Source: https://pytorch.org/docs/stable/distributed.html
"""

from __future__ import annotations

from ._collectives import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
)
from ._grad_bucket import GradBucket
from ._group import (
    Backend,
    GroupMember,
    ProcessGroup,
    ReduceOp,
    _make_nccl_premul_sum,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    new_group,
)
from ._objects import all_gather_object, broadcast_object_list, gather_object, monitored_barrier, scatter_object_list
from ._work import DistBackendError, Work

group = GroupMember
# unpickle any object in the object collectives (see _objects); only between trusted ranks
trust_object_collectives = False

__all__ = ["GradBucket", "Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "DistBackendError", "group",
           "_make_nccl_premul_sum", "default_pg_timeout", "init_process_group", "destroy_process_group",
           "is_available", "is_initialized", "is_mpi_available", "is_gloo_available", "is_nccl_available",
           "is_torchelastic_launched", "new_group", "get_rank", "get_world_size", "get_backend",
           "get_process_group_ranks", "get_global_rank", "get_group_rank", "all_reduce", "broadcast", "reduce",
           "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
           "all_to_all_single", "gather", "scatter", "send", "recv", "isend", "irecv", "barrier",
           "broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
           "monitored_barrier", "trust_object_collectives"]
