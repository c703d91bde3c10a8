"""The nftables backend against the real kernel, each case in a fresh network
namespace the driver unshares for itself (the host's ruleset is never read or
changed): apply and list back, render_text loading with `nft -f` to the same
ruleset, incremental updates, drift repair, adopting a table without
recreating it, cleanup, UDP conntrack cleanup, netlink answers matched to
their request by sequence number.

The cases live in the C++ driver kernel_nftables (Catch2); this file runs it
under the `root` fixture and reports each case as its own pytest test.
"""
import pytest

from catch_driver import require_cases, run_case
from conftest import BUILD

DRIVER = BUILD / "tests" / "unit" / "rules" / "nftables" / "kernel_nftables"

CASES = [
    "kernel: a plan is applied in one batch and listed back by nft",
    "kernel: render_text loads with nft -f into the same ruleset",
    "kernel: an endpoint change is sent incrementally",
    "kernel: a full resync repairs drift",
    "kernel: a restarted backend adopts the table without recreating it",
    "kernel: cleanup removes the table and is idempotent; foreign tables stay",
    "kernel: an invalid service port is skipped, the rest applied",
    "kernel: UDP conntrack entries of a removed endpoint are deleted, others kept",
    "kernel: affinity entries of a removed endpoint are deleted, others kept",
    "kernel: a full sync (no previous plan) deletes the flows of a removed endpoint",
    "kernel: a stale netlink refusal is skipped, not charged to the next batch",
    "kernel: kube-proxy cleanup's socket skips a stale refusal in dumps and batches",
]


def test_every_driver_case_is_listed(root):
    require_cases(DRIVER, CASES)


@pytest.mark.parametrize("case", CASES)
def test_kernel(root, case):
    run_case(DRIVER, case)
