"""Process groups on MPI communicators: the default group (init_process_group), sub-groups
(new_group), and the rank, size and backend queries (torch.distributed's names).

Backends: "mpi" and "gloo" run CPU tensors on MPI; "nccl" runs cuda tensors on NCCL
(``_nccl``, through cupy), and a group of it still has its MPI communicator for what NCCL
needs around it (the unique id, the object collectives, the watchdog); torch's
per-device form "cpu:gloo,cuda:nccl" runs CPU tensors on MPI and cuda tensors on NCCL.

Source: https://pytorch.org/docs/stable/distributed.html
"""

from __future__ import annotations

import enum
import os
from datetime import timedelta

from . import _mpi

__all__ = ["Backend", "ReduceOp", "ProcessGroup", "GroupMember", "init_process_group", "destroy_process_group",
           "is_initialized", "is_available", "new_group", "get_rank", "get_world_size", "get_backend",
           "get_process_group_ranks", "get_global_rank", "get_group_rank", "default_pg_timeout",
           "is_mpi_available", "is_gloo_available", "is_nccl_available", "is_torchelastic_launched"]

default_pg_timeout = timedelta(minutes=30)


class Backend(str):
    """Backend names (torch.distributed.Backend): ``Backend(name)`` is the lower-case name,
    ``Backend("GLOO") == "gloo"``; an unknown ``name`` is kept lower-cased. A ``name`` that
    is not a string raises ValueError."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got {type(name)}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        return str.__new__(cls, value if value != Backend.UNDEFINED else name.lower())


class ReduceOp:
    """Reduction operations of the collectives (torch.distributed.ReduceOp): SUM, AVG, PRODUCT,
    MIN, MAX, BAND, BOR, BXOR, PREMUL_SUM (made with a factor by ``_make_nccl_premul_sum``).

    ``ReduceOp(op, factor)`` wraps the RedOpType ``op`` (SUM by default); ``factor`` is
    PREMUL_SUM's multiplier (None for the others). A ReduceOp equals its RedOpType."""

    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8

        def __str__(self):
            return f"RedOpType.{self.name}"

    def __init__(self, op=RedOpType.SUM, factor=None):
        self.op = ReduceOp.RedOpType(op)
        self.factor = factor

    def __eq__(self, other):
        other_op = other.op if isinstance(other, ReduceOp) else other
        return self.op == other_op

    def __hash__(self):
        return hash(self.op)

    def __repr__(self):
        return f"<ReduceOp.{self.op.name}: {int(self.op)}>"


for _member in ReduceOp.RedOpType:
    setattr(ReduceOp, _member.name, _member)


def _make_nccl_premul_sum(factor) -> ReduceOp:
    """PREMUL_SUM with its factor: every rank's input is multiplied by ``factor`` before the sum."""
    return ReduceOp(ReduceOp.RedOpType.PREMUL_SUM, factor)


class ProcessGroup:
    """Ranks on one MPI communicator (a duplicate of the world's, so that ember's traffic never
    matches the user's own mpi4py messages) (torch.distributed.ProcessGroup).

    ``comm`` is the mpi4py communicator, ``ranks`` the global ranks in group order,
    ``backend`` the backend name, ``timeout`` (a timedelta) the watchdog's limit on a
    collective, ``name`` the group's name, ``nccl`` the NCCL communicator that runs its cuda
    tensors (None without one), ``cpu`` whether its CPU tensors run on MPI (False for a group
    made with backend "nccl" alone). Made by ``init_process_group`` and ``new_group``."""

    def __init__(self, comm, ranks, backend: str, timeout: timedelta, name: str = "", nccl=None, cpu=True):
        self._comm = comm
        self._ranks = list(ranks)
        self._backend = backend
        self._nccl = nccl  # the NCCL communicator of cuda tensors (_nccl.Communicator), or None
        self._cpu = cpu  # whether CPU tensors run (on MPI); a "nccl" group has no CPU backend
        self.timeout = timeout
        self.group_name = name
        self._seq = 0
        from ._debug import enabled
        self._debug = enabled()

    @property
    def timeout(self) -> timedelta:
        """The limit on each collective of this group (a timedelta)."""
        return self._timeout

    @timeout.setter
    def timeout(self, value: timedelta) -> None:
        self._timeout = value
        # in seconds, kept beside it: every collective's deadline is computed from it
        self._limit = value.total_seconds()

    def rank(self) -> int:
        return self._comm.Get_rank()

    def size(self) -> int:
        return self._comm.Get_size()

    def name(self) -> str:
        return self._backend

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def __repr__(self):
        return f"ProcessGroup(backend={self._backend!r}, ranks={self._ranks})"


class GroupMember:
    """``GroupMember.WORLD`` is the default group once made; ``NON_GROUP_MEMBER`` is what
    ``new_group`` gives a rank that is not in it."""
    WORLD = None
    NON_GROUP_MEMBER = object()


_world = {"pg": None, "groups": []}


def is_available() -> bool:
    """True when mpi4py can be imported (ember's process groups run on MPI)."""
    return _mpi.available()


def is_mpi_available() -> bool:
    """True when mpi4py can be imported (torch.distributed.is_mpi_available)."""
    return _mpi.available()


def is_gloo_available() -> bool:
    """True when mpi4py can be imported: backend "gloo" runs on ember's MPI engine."""
    return _mpi.available()


def is_nccl_available() -> bool:
    """Whether backend "nccl" can be used: cupy imports with its NCCL bindings
    (torch.distributed.is_nccl_available; no GPU is asked for)."""
    from . import _nccl
    return _nccl.available()


def is_torchelastic_launched() -> bool:
    """True when the process was started by torchrun (TORCHELASTIC_RUN_ID is set in the
    environment) (torch.distributed.is_torchelastic_launched)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    """Whether the default process group exists."""
    return _world["pg"] is not None


def _default():
    pg = _world["pg"]
    if pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return pg


def _resolve(group):
    if group is None:
        pg = _world["pg"]  # looked up here, not through _default(): a call fewer per collective
        return pg if pg is not None else _default()
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("this rank is not a member of the given group")
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup or None, got {type(group).__name__}")
    return group


_DEVICES = ("cpu", "cuda")


def _parse_backend(backend):
    """(name, NCCL for cuda tensors, MPI for CPU tensors) of a backend string: "mpi", "gloo",
    "nccl", or torch's per-device form "cpu:gloo,cuda:nccl". ValueError for another name;
    torch's RuntimeError where NCCL is asked for and cannot run here."""
    if backend is None:
        return Backend.MPI, False, True
    text = str(backend).lower()
    cpu = nccl = False
    for part in text.split(","):
        device, _, name = part.strip().rpartition(":")
        if device and device not in _DEVICES:
            raise ValueError(f"Invalid backend: '{backend}'; the devices of a per-device backend are cpu and cuda")
        if name == "nccl":
            if device == "cpu":
                raise ValueError(f"Invalid backend: '{backend}'; NCCL runs cuda tensors only")
            nccl = True
        elif name in ("gloo", "mpi"):
            cpu = cpu or device in ("", "cpu")
        else:
            raise ValueError(f"Invalid backend: '{backend}'; ember runs 'gloo' and 'mpi' on MPI and 'nccl' for "
                             f"cuda tensors")
    if nccl:
        from . import _nccl
        error = _nccl.unavailable_reason()
        if error is not None:
            raise error
    return (Backend(text) if "," not in text and ":" not in text else text), nccl, cpu


def _check_backend(backend) -> str:
    return _parse_backend(backend)[0]


def _timeout(timeout, backend=None) -> timedelta:
    if timeout is None:
        # torch's defaults: 10 minutes for NCCL, 30 for the other backends
        return timedelta(minutes=10) if backend == Backend.NCCL else default_pg_timeout
    if not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}")
    return timeout


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None) -> None:
    """Make the default process group from the MPI world the launcher started
    (``ember-run`` / ``mpiexec``). ``backend``: "mpi" or "gloo" (both run on MPI, CPU tensors),
    "nccl" (cuda tensors, on NCCL through cupy; RuntimeError("Distributed package doesn't
    have NCCL built in") without cupy's NCCL, as torch's CPU build raises, and torch's "no
    GPUs found" error without a GPU), or "cpu:gloo,cuda:nccl" (both). With NCCL each rank
    joins on its own device, ``device_id`` (an index or a cuda device) else LOCAL_RANK, which
    becomes the current device; NCCL refuses two ranks on one device.
    ``init_method`` and ``store`` are accepted and unused: MPI already connected the ranks.
    RANK / WORLD_SIZE from the environment, and ``rank`` / ``world_size`` when given, must
    agree with MPI's (RuntimeError otherwise). Outside an MPI launch only a world of one
    process can be made; anything else raises ValueError saying how to launch.
    Installs an exception hook that aborts the whole job when a rank raises.

    ``timeout`` (a timedelta, 30 minutes by default; another type raises TypeError) bounds
    each collective (10 minutes by default for "nccl", as torch); ``group_name`` names the
    default group. ``pg_options`` is accepted and unused (torch.distributed.init_process_group).
    A second call raises ValueError."""
    if _world["pg"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name, nccl, cpu = _parse_backend(backend)
    limit = _timeout(timeout, name)
    if not _mpi.available():
        raise RuntimeError("ember.distributed needs mpi4py: pip install 'ember-core[distributed]' "
                           "(and an MPI library: Open MPI or MPICH)")
    env_world = int(os.environ.get("WORLD_SIZE", -1))
    if not _mpi.launched_by_mpi():
        wanted = world_size if world_size != -1 else env_world
        if wanted not in (-1, 1):
            raise ValueError(f"this process was not started by an MPI launcher, so it cannot join a "
                             f"world of {wanted} processes: {_mpi.LAUNCH_HINT}")
    MPI = _mpi.mpi()
    world = MPI.COMM_WORLD
    mpi_rank, mpi_size = world.Get_rank(), world.Get_size()
    for label, given, actual in (("rank", rank, mpi_rank), ("world_size", world_size, mpi_size),
                                 ("RANK", int(os.environ.get("RANK", -1)), mpi_rank),
                                 ("WORLD_SIZE", env_world, mpi_size)):
        if given != -1 and given != actual:
            raise RuntimeError(f"init_process_group: {label} is {given} but MPI started this process as "
                               f"rank {mpi_rank} of {mpi_size}; {_mpi.LAUNCH_HINT}")
    comm = world.Dup()
    communicator = _nccl_communicator(comm, device_id) if nccl else None
    pg = ProcessGroup(comm, range(mpi_size), name, limit, group_name or "default", nccl=communicator, cpu=cpu)
    _world["pg"] = pg
    GroupMember.WORLD = pg
    if mpi_size > 1:
        _mpi.install_abort_hook(mpi_rank)
        from . import _watchdog
        _watchdog.start(world)


def _nccl_communicator(comm, device_id):
    """This rank's NCCL communicator over ``comm``, on its device (made the current one)."""
    from .. import cuda
    from . import _nccl
    device = _nccl.local_device(device_id)
    communicator = _nccl.Communicator(comm, device)
    cuda.set_device(device)
    return communicator


def _free(pg) -> None:
    if pg._nccl is not None:
        pg._nccl.destroy()
        pg._nccl = None
    if pg._comm is not None:
        pg._comm.Free()
        pg._comm = None


def destroy_process_group(group=None) -> None:
    """Free the group's communicator; without a group, every group and the default one.

    ``group`` is the process group to free (torch.distributed.destroy_process_group)."""
    if group is None or group is _world["pg"]:
        for pg in [*_world["groups"], _world["pg"]]:
            if pg is not None:
                _free(pg)
        _world["pg"], _world["groups"] = None, []
        GroupMember.WORLD = None
        from . import _watchdog
        _watchdog.stop_()
        return
    if isinstance(group, ProcessGroup) and group._comm is not None:
        _free(group)
        _world["groups"] = [g for g in _world["groups"] if g is not group]


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None, sort_ranks=True):
    """A process group of the global ``ranks`` (all ranks by default), sorted, as torch does
    (torch.distributed.new_group); with ``sort_ranks=False`` a rank's place in ``ranks`` is its
    rank in the group (every rank must then pass the same list).

    Every rank of the default group must call it (MPI_Comm_create is collective); a rank
    outside ``ranks`` gets ``GroupMember.NON_GROUP_MEMBER``. ``timeout`` and ``backend``
    default to the default group's; ``group_desc`` names the group; with NCCL the group's
    communicator is on the default group's device (or ``device_id``'s). ``pg_options`` and
    ``use_local_synchronization`` are accepted and unused. A rank outside the world, or a
    repeated one, raises ValueError."""
    pg = _default()
    size = pg.size()
    members = list(range(size)) if ranks is None else [int(r) for r in ranks]
    if sort_ranks:
        members.sort()
    for r in members:
        if not 0 <= r < size:
            raise ValueError(f"The new group's rank should be within the world_size set by init_process_group, "
                             f"got rank {r} for world size {size}")
    if len(set(members)) != len(members):
        raise ValueError(f"new_group: duplicate ranks in {members}")
    comm = pg._comm.Create(pg._comm.Get_group().Incl(members))
    from mpi4py import MPI
    if comm == MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    if backend:
        name, nccl, cpu = _parse_backend(backend)
    else:
        name, nccl, cpu = pg._backend, pg._nccl is not None, pg._cpu
    # NCCL on the members' devices: the default group's, else device_id / LOCAL_RANK
    device = pg._nccl.device if pg._nccl is not None and device_id is None else device_id
    group = ProcessGroup(comm, members, name, _timeout(timeout) if timeout is not None else pg.timeout,
                         group_desc or "", nccl=_nccl_communicator(comm, device) if nccl else None, cpu=cpu)
    _world["groups"].append(group)
    return group


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (the default group when None); -1 outside the group."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _resolve(group).rank()


def get_world_size(group=None) -> int:
    """The number of processes in ``group``; -1 for a rank outside it."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _resolve(group).size()


def get_backend(group=None) -> str:
    """The backend name ``group`` (the default group when None) was made with ("mpi" when
    ``init_process_group`` got None) (torch.distributed.get_backend)."""
    return _resolve(group)._backend


def get_process_group_ranks(group) -> list[int]:
    """The global ranks of ``group``, in group order."""
    return list(_resolve(group)._ranks)


def get_global_rank(group, group_rank: int) -> int:
    """The global rank of the process whose rank in ``group`` is ``group_rank``
    (torch.distributed.get_global_rank); ValueError when ``group`` has no such rank."""
    ranks = _resolve(group)._ranks
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {ranks}")
    return ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    """The rank in ``group`` of the process whose global rank is ``global_rank``
    (torch.distributed.get_group_rank); ValueError when it is not in ``group``."""
    ranks = _resolve(group)._ranks
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {ranks}")
    return ranks.index(global_rank)
