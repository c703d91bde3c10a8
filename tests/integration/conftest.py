"""Shared pytest fixtures for the integration tier.

Tests that need root (network namespaces, nftables) ask for the `root`
fixture. Outside CI they are skipped with a printed reason when not root;
in CI (CI=true) a missing privilege is a failure, never a skip.
"""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("SWITCHBOARD_BUILD_DIR", ROOT / "build"))
IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


@pytest.fixture(scope="session")
def switchboard_bin():
    path = BUILD / "proxy" / "switchboard"
    assert path.exists(), f"{path} is not built: run ./dev build"
    return path


@pytest.fixture(scope="session")
def root():
    """Requires root: fails in CI, skips (with the reason printed) elsewhere."""
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("CI=true but not running as root: network namespace tests cannot run")
        pytest.skip("needs root (network namespaces); run ./dev test as root")
