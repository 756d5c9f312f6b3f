"""``spawn`` and ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes, and
end the whole job with the failing process's traceback when one fails (torch's API)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import time
import traceback
import warnings

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException",
           "SpawnContext", "spawn", "start_processes"]


class ProcessException(Exception):
    """A process of a ``spawn`` job failed. ``msg`` says how, ``error_index`` is the process's
    index and ``pid`` its pid (attributes of the same names)."""

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """The process raised: the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """The process exited with a non-zero code or was killed by a signal. ``msg`` says which,
    ``error_index`` is the process's index, ``error_pid`` its pid (the ``pid`` attribute),
    ``exit_code`` its exit code (minus the signal's number when killed) and ``signal_name``
    the signal's name (None when it exited)."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_file):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent interrupted the job: it reports that itself
    except Exception:
        with open(error_file, "w") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes of a ``start_processes(..., join=False)`` job.

    Args:
        processes: the ``multiprocessing`` processes, in index order.
        error_files: for each process, the path of the file where it writes its traceback
            when it fails.
    """

    def __init__(self, processes, error_files):
        self.processes, self.error_files = processes, error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list:
        """The processes' pids, in index order."""
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait for the processes.

        Args:
            timeout: seconds to wait at most; None waits until one fails or all end.
            grace_period: when one failed, seconds the others get to end after SIGTERM
                before SIGKILL.

        Returns:
            True when every process has ended successfully, False while some still run.

        Raises:
            ProcessRaisedException: a process raised (the message holds its traceback); the
                others were ended (SIGTERM, then SIGKILL after ``grace_period`` seconds).
            ProcessExitedException: a process exited with a non-zero code or was killed by a
                signal; the others were ended the same way.
        """
        if not self.sentinels:
            return True
        failed = None
        for sentinel in multiprocessing.connection.wait(list(self.sentinels), timeout=timeout):
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            if not self.sentinels:
                self._remove_error_files()
            return not self.sentinels
        self._end_all(grace_period)
        raise self._error(failed)

    def _end_all(self, grace_period):
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        deadline = time.monotonic() + (grace_period or 0)
        for p in self.processes:
            p.join(max(deadline - time.monotonic(), 0) if grace_period else None)
            if p.is_alive():
                p.kill()
                p.join()

    def _error(self, index) -> ProcessException:
        process, path = self.processes[index], self.error_files[index]
        try:
            with open(path) as f:
                trace = f.read()
        except OSError:
            trace = ""
        self._remove_error_files()
        if trace:
            return ProcessRaisedException(f"\n\n-- Process {index} terminated with the following error:\n{trace}",
                                          index, process.pid)
        code = process.exitcode
        if code < 0:
            name = signal.Signals(-code).name
            return ProcessExitedException(f"process {index} terminated with signal {name}", index, process.pid,
                                          code, name)
        return ProcessExitedException(f"process {index} terminated with exit code {code}", index, process.pid, code)

    def _remove_error_files(self):
        for path in self.error_files:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


class SpawnContext(ProcessContext):
    """The ``spawn(..., join=False)`` spelling of :class:`ProcessContext` (deprecated in torch: making
    one gives a FutureWarning). ``processes`` and ``error_files`` are ProcessContext's."""

    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", FutureWarning, stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start ``nprocs`` processes, process ``i`` (from 0) running ``fn(i, *args)``.

    Args:
        fn: the function each process runs; it must be importable by the children (a
            module-level function).
        args: the arguments passed to ``fn`` after the process's index.
        nprocs: how many processes to start.
        join: wait for them all to end (True) or return at once (False).
        daemon: start them as daemonic processes.
        start_method: multiprocessing's start method (``"spawn"``, ``"fork"``,
            ``"forkserver"``).

    Returns:
        None after all succeed when ``join``, else a :class:`ProcessContext`.

    Raises:
        ProcessRaisedException: a process raised, when ``join`` (as :meth:`ProcessContext.join`).
        ProcessExitedException: a process exited with a non-zero code or was killed, when
            ``join``.
    """
    ctx = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        fd, path = tempfile.mkstemp(prefix="ember-spawn-error-")
        os.close(fd)
        os.unlink(path)  # the child creates it only when it fails
        process = ctx.Process(target=_wrap, args=(fn, i, args, path), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(path)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """:func:`start_processes` with the ``spawn`` start method (torch.multiprocessing.spawn).

    ``fn``, ``args``, ``nprocs``, ``join`` and ``daemon`` are start_processes'; a
    ``start_method`` other than ``"spawn"`` gives a FutureWarning and is not used.
    """
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      f"start_method use:\n\t\t torch.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
