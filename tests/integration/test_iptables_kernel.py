"""The iptables backend against the real kernel (legacy x_tables, through
libiptc), never touching the host's tables.

The backend's own cases live in the C++ driver kernel_iptables (Catch2; each
case unshares a fresh network namespace); this file runs each as a pytest
test. The binary cases run `switchboard --proxy-mode=iptables` inside a
network namespace (conftest's `netns`): --dry-run prints
iptables-restore text and touches nothing, the daemon writes its chains,
--cleanup removes them and leaves others' rules alone.
"""
import pathlib
import subprocess
import time

import pytest

import network_namespace
from catch_driver import require_cases, run_case
from conftest import BUILD

DRIVER = BUILD / "tests" / "unit" / "rules" / "iptables" / "kernel_iptables"
EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "deploy" / "examples" / "nodeport.json"

CASES = [
    "kernel: a plan is applied, hooks inserted once at the top, others' rules kept",
    "kernel: render_text loads with iptables-restore --noflush into the same ruleset",
    "kernel: a resync deletes stale chains and repairs drift",
    "kernel: a partial sync rewrites only the chains that changed",
    "kernel: cleanup removes hooks and own chains only, is idempotent, creates nothing",
    "kernel: an invalid service port is skipped, the rest applied",
    "kernel: every sync, full ones included, deletes the UDP flows of removed endpoints",
    "kernel: a refused filter table leaves both tables as they were",
    "kernel: a refused nat table puts the committed filter table back",
]


def test_every_driver_case_is_listed(root):
    require_cases(DRIVER, CASES)


@pytest.mark.parametrize("case", CASES)
def test_kernel(root, case):
    run_case(DRIVER, case)


def in_ns(ns, *argv, check=True):
    return network_namespace.run_in(ns, *argv, check=check)


def switchboard_args(binary, *extra):
    return [binary, "--proxy-mode=iptables", f"--source=file:{EXAMPLE}",
            "--hostname-override=node-a", "--cluster-cidr=10.244.0.0/16", *extra]


def saved(ns):
    return in_ns(ns, "iptables-legacy-save").stdout + in_ns(ns, "ip6tables-legacy-save").stdout


def test_dry_run_prints_restore_text_and_touches_nothing(netns, switchboard_bin):
    result = in_ns(netns, *switchboard_args(switchboard_bin, "--dry-run"), check=False)
    assert result.returncode == 0, result.stderr
    assert "*nat\n" in result.stdout and "*filter\n" in result.stdout
    assert "-A SWITCHBOARD-NODEPORTS -p tcp" in result.stdout
    assert "--dport 30007" in result.stdout
    assert "SWITCHBOARD" not in saved(netns)


def test_daemon_writes_chains_and_cleanup_removes_them(netns, switchboard_bin):
    in_ns(netns, "iptables-legacy", "-A", "FORWARD", "-d", "192.0.2.1", "-j", "DROP")
    argv = ["ip", "netns", "exec", netns,
            *map(str, switchboard_args(switchboard_bin, "--metrics-bind-address=127.0.0.1:10249",
                                       "--healthz-bind-address=127.0.0.1:10256"))]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 15
        while "--dport 30007" not in saved(netns) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read()
            time.sleep(0.1)
        rules = saved(netns)
        assert "--dport 30007" in rules
        assert "-A PREROUTING -j SWITCHBOARD-SERVICES" in rules
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    result = in_ns(netns, *switchboard_args(switchboard_bin, "--cleanup"), check=False)
    assert result.returncode == 0, result.stderr
    rules = saved(netns)
    assert "SWITCHBOARD" not in rules
    assert "-A FORWARD -d 192.0.2.1/32 -j DROP" in rules
    again = in_ns(netns, *switchboard_args(switchboard_bin, "--cleanup"), check=False)
    assert again.returncode == 0, again.stderr
