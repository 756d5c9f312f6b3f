"""The events a profile records, and their averages (torch.autograd.profiler_util's
FunctionEvent, FunctionEventAvg and EventList, with the fields programs read)."""

from __future__ import annotations

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList"]


class FunctionEvent:
    """One op call or ``record_function`` range (torch.autograd.profiler_util.FunctionEvent):
    times in microseconds since the profile began, the thread, the enclosing event
    (``cpu_parent``) and the ones it enclosed.

    ``name`` is the op's (``ember::<op>``) or the range's name, also the event's ``key``;
    ``start_us`` its start time; ``thread`` the id of the thread it ran on; ``input_shapes``
    the shapes of its tensor arguments (empty unless the profile records them);
    ``is_user_annotation`` True for a ``record_function`` range."""

    def __init__(self, name, start_us, thread, input_shapes=None, is_user_annotation=False):
        self.name = self.key = name
        self.time_range_start, self.time_range_end = start_us, start_us
        self.thread = thread
        self.input_shapes = input_shapes or []
        self.is_user_annotation = is_user_annotation
        self.cpu_parent = None
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_memory_usage = 0
        self.count = 1

    @property
    def cpu_time_total(self) -> float:
        return self.time_range_end - self.time_range_start

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent name={self.name} self_cpu_time_total={self.self_cpu_time_total:.3f} "
                f"cpu_time_total={self.cpu_time_total:.3f} thread={self.thread}>")


class FunctionEventAvg:
    """Events of one key added up (torch.autograd.profiler_util.FunctionEventAvg): ``key`` is
    the events' name, ``input_shapes`` their shapes when grouped by them (else None),
    ``is_user_annotation`` whether they are ``record_function`` ranges."""

    def __init__(self, key, input_shapes=None, is_user_annotation=False):
        self.key = key
        self.input_shapes = input_shapes
        self.is_user_annotation = is_user_annotation
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0

    def add(self, event: FunctionEvent) -> FunctionEventAvg:
        self.count += 1
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage
        return self

    @property
    def cpu_time(self) -> float:
        """The average total time of one call, in microseconds."""
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f} "
                f"cpu_time={self.cpu_time_total:.3f} count={self.count}>")


def _format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_memory(nbytes: int) -> str:
    for unit, size in (("Gb", 1024 ** 3), ("Mb", 1024 ** 2), ("Kb", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


_SORT_KEYS = {"cpu_time", "cpu_time_total", "self_cpu_time_total", "count", "cpu_memory_usage",
              "self_cpu_memory_usage"}


class EventList(list):
    """A list of ``events`` (or of their averages) with torch's ``table`` and ``key_averages``
    (torch.autograd.profiler_util.EventList); ``profile_memory`` adds the memory columns to
    ``table``, ``show_shapes`` the input-shape column."""

    def __init__(self, events=(), profile_memory=False, show_shapes=False):
        super().__init__(events)
        self._profile_memory = profile_memory
        self._show_shapes = show_shapes

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        groups: dict = {}
        for e in self:
            shapes = str(e.input_shapes) if group_by_input_shape else None
            key = (e.key, shapes)
            if key not in groups:
                groups[key] = FunctionEventAvg(e.key, e.input_shapes if group_by_input_shape else None,
                                               e.is_user_annotation)
            groups[key].add(e)
        return EventList(groups.values(), self._profile_memory, group_by_input_shape)

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """The averages as torch prints them: self and total CPU time, their shares of the
        profile's self CPU time, the average time per call, memory (with ``profile_memory``),
        calls, input shapes (when grouped by them).

        Raises AttributeError for an unknown ``sort_by``."""
        rows = list(self if all(isinstance(e, FunctionEventAvg) for e in self) else self.key_averages())
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise AttributeError(f"'FunctionEventAvg' object has no attribute '{sort_by}'")
            rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        rows = rows[:row_limit] if row_limit and row_limit > 0 else rows
        total = self.self_cpu_time_total or 1.0  # every event's self time: the profile's CPU time
        name_w = min(max([len(e.key) for e in rows] + [4]) + 4, max_name_column_width)
        headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        if self._profile_memory:
            headers += ["CPU Mem", "Self CPU Mem"]
        headers.append("# of Calls")
        widths = [name_w] + [12] * (len(headers) - 1)
        if self._show_shapes:
            headers.append("Input Shapes")
            widths.append(min(max([len(str(e.input_shapes)) for e in rows] + [12]) + 4, max_shapes_column_width))
        line = "".join("-" * w + "  " for w in widths)

        def fmt(cells):
            return "".join(str(c)[:w].rjust(w) + "  " for c, w in zip(cells, widths))

        out = [line, fmt(headers), line]
        for e in rows:
            name = e.key if len(e.key) <= name_w - 2 else e.key[:name_w - 5] + "..."
            cells = [name, f"{100 * e.self_cpu_time_total / total:.2f}%", _format_time(e.self_cpu_time_total),
                     f"{100 * e.cpu_time_total / total:.2f}%", _format_time(e.cpu_time_total),
                     _format_time(e.cpu_time)]
            if self._profile_memory:
                cells += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
            cells.append(e.count)
            if self._show_shapes:
                cells.append(str(e.input_shapes))
            out.append(fmt(cells))
        out += [line, f"Self CPU time total: {_format_time(total)}", ""]
        return "\n".join(out)

    def __str__(self):
        return self.table()
