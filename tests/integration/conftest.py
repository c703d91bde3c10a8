"""Shared pytest fixtures for the integration tier.

Tests that need root (network namespaces, nftables) ask for the `root`
fixture. Outside CI they are skipped with a printed reason when not root;
in CI (CI=true) a missing privilege is a failure, never a skip.

The test-bed helpers themselves are modules of this folder (docs/testbed.md):
kube_objects (the objects), network_namespace (the namespaces), dns_stub (the
fake DNS servers), netbed (a whole node of namespaces), daemons (the daemon
under test as a process), probes (waiting, HTTP, metrics). The fixtures here
only tie their lifetimes to a test's.
"""
import os
import pathlib

import pytest

import dns_stub
import netbed
import network_namespace
from daemons import Daemon

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("SWITCHBOARD_BUILD_DIR", ROOT / "build"))
IN_CI = os.environ.get("CI", "").lower() == "true"
# The proxy modes the datapath modules run in (SWITCHBOARD_PROXY_MODES,
# comma-separated); the default is the ones this machine can run (no IPVS).
PROXY_MODES = os.environ.get("SWITCHBOARD_PROXY_MODES", "nftables,iptables").split(",")


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


@pytest.fixture(scope="session")
def switchboard_bin():
    path = BUILD / "proxy" / "switchboard"
    assert path.exists(), f"{path} is not built: run ./dev build"
    return path


@pytest.fixture(scope="module", params=PROXY_MODES)
def mode(request):
    """The proxy mode of a module's datapath tests, one module run per mode."""
    return request.param


@pytest.fixture
def proxy(bed, mode, switchboard_bin):
    """switchboard in `mode` on node-a of the module's own `bed` fixture (a
    netbed.Bed), not started; closed after the test (stopped, its kernel state
    and conntrack entries removed)."""
    daemon = netbed.Switchboard(bed, switchboard_bin, mode)
    yield daemon
    daemon.close()


@pytest.fixture(scope="session")
def root():
    """Requires root: fails in CI, skips (with the reason printed) elsewhere."""
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("CI=true but not running as root: network namespace tests cannot run")
        pytest.skip("needs root (network namespaces); run ./dev test as root")


@pytest.fixture
def netns(root):
    """A fresh network namespace (its name) with `lo` up, deleted after the test."""
    with network_namespace.namespace() as ns:
        yield ns


@pytest.fixture
def dns_stubs():
    """start(ns, address, answer=dns_stub.own_address, **options): a dns_stub.Stub serving
    until the end of the test (closed then, failing the test if a serving thread failed)."""
    started = []

    def start(ns, address, answer=dns_stub.own_address, **options):
        started.append(dns_stub.Stub(ns, address, answer, **options))
        return started[-1]

    yield start
    for stub in started:
        stub.close()


@pytest.fixture
def daemon_factory(switchboard_bin, netns, tmp_path):
    """start(source, *flags, supervised=False, ports=None): a daemons.Daemon in `netns`
    on cluster file `source`, stopped at the end of the test."""
    started = []

    def start(source, *extra, **options):
        log_path = tmp_path / f"daemon-{len(started)}.log"
        started.append(Daemon(switchboard_bin, netns, source, log_path, *extra, **options))
        return started[-1]

    yield start
    for daemon in started:
        daemon.stop()
