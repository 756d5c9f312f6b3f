"""Shared by every package's tests: in CI (CI=true), a skipped test fails the run, so a
missing dependency can never pass silently."""

import os


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; skips are failures in CI", red=True)
        session.exitstatus = 1
