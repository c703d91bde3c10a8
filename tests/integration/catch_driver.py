"""Runs a Catch2 driver binary one case at a time, so that each C++ case is
its own pytest test (used by test_nftables_kernel.py and
test_iptables_kernel.py). Callers hold the `root` fixture when the driver
needs it.
"""
import subprocess


def require_cases(driver, cases):
    """The driver is built and lists exactly `cases` (none added unseen)."""
    assert driver.exists(), f"{driver} is not built: run ./dev build"
    out = subprocess.run([str(driver), "--list-test-names-only"], capture_output=True,
                         text=True, timeout=30).stdout
    names = [line for line in out.splitlines() if line.strip()]
    assert sorted(names) == sorted(cases)


def run_case(driver, case):
    """Runs the one case named `case`; fails with the driver's output tail."""
    assert driver.exists(), f"{driver} is not built: run ./dev build"
    spec = case.replace(",", "\\,")  # Catch2 separates test specs with commas
    result = subprocess.run([str(driver), spec], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "All tests passed" in result.stdout
