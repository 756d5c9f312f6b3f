"""Shared by every package's tests: in CI (CI=true), a skipped test fails the run, so a
missing dependency can never pass silently; the tests marked ``cuda`` are the exception
(CI has no GPU), and the run prints how many of them were skipped."""

import os

_CUDA_TESTS: set = set()  # node ids of the collected tests marked cuda


def pytest_collection_modifyitems(session, config, items):
    _CUDA_TESTS.update(item.nodeid for item in items if item.get_closest_marker("cuda"))


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    # tests marked cuda need a GPU, which CI does not have: counted, not failed
    gpu_only = [r for r in skipped if r.nodeid in _CUDA_TESTS]
    if gpu_only:
        reporter.ensure_newline()
        reporter.write_line(f"CI: {len(gpu_only)} cuda test(s) skipped (no GPU on this machine)")
    skipped = [r for r in skipped if r not in gpu_only]
    if skipped:
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; skips are failures in CI", red=True)
        session.exitstatus = 1
