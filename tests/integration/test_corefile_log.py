"""The Corefile's `log` and `errors` (issue 9, point 2): a line per query on
stdout in CoreDNS's common log format, the `class` filter, and the errors
plugin's `[ERROR] plugin/errors: 2 NAME. TYPE: why` for a forward that timed
out, only in a server block that has `errors`.

Root: the daemon programs nftables, so it runs in a plain network namespace
(conftest's `netns`). The upstream on 127.0.0.2 (a silent dns_stub) reads
queries and never answers (every forward times out).
"""
import json
import re

import pytest

from clusters import ONE_SERVICE
from daemons import start_corefile_daemon, stop_processes
from network_namespace import run_in
from probes import wait_for

COMMON_LINE = re.compile(
    r'^\[INFO\] 127\.0\.0\.1:(\d+) - (\d+) "(\S+) IN (\S+) udp (\d+) (true|false) (\d+)" '
    r'(\S+) (\S+) (\d+) (\d+\.\d+)s$')


@pytest.fixture
def start(switchboard_bin, netns, tmp_path):
    processes = []

    def run(corefile):
        (tmp_path / "cluster.json").write_text(json.dumps(ONE_SERVICE))
        (tmp_path / "Corefile").write_text(corefile)
        stdout_path = tmp_path / "stdout.log"
        with open(stdout_path, "w") as out:
            start_corefile_daemon(switchboard_bin, netns, tmp_path, processes, stdout=out)
        wait_for(lambda: dig(netns, "web.default.svc.cluster.local") == "10.96.0.10",
                 f"DNS serving; log: {tmp_path / 'daemon.log'}")
        return netns, stdout_path

    try:
        yield run
    finally:
        stop_processes(processes)


def dig(namespace, name, *options):
    result = run_in(namespace, "dig", "+short", "+time=5", "+tries=1", *options,
                    "@127.0.0.1", name)
    return result.stdout.strip()


def lines(path, pattern):
    return [line for line in path.read_text().splitlines() if re.search(pattern, line)]


def test_log_prints_a_common_log_format_line_per_query(start):
    run = start
    netns, stdout = run(".:53 {\n bind 127.0.0.1\n kubernetes cluster.local\n log\n}\n")
    # The fixture's readiness digs are logged already (a line is written
    # before its reply): one, or more when the first came while the zone
    # waited for the first sync (SERVFAIL: docs/dns.md, "Publish after
    # programming"). Each is a valid line.
    readiness = lines(stdout, "default.svc.cluster.local")
    assert readiness and all(COMMON_LINE.match(line) for line in readiness), readiness
    assert dig(netns, "WEB.default.svc.cluster.local") == "10.96.0.10"
    assert dig(netns, "missing.default.svc.cluster.local") == ""
    logged = wait_for(lambda: len(lines(stdout, "default.svc.cluster.local")) >= len(readiness) + 2
                      and lines(stdout, "default.svc.cluster.local")[len(readiness):],
                      "two query lines")
    # The two above, once each, in order.
    assert len(logged) == 2, logged
    fields = [COMMON_LINE.match(line) for line in logged]
    assert all(fields), logged
    web, missing = fields
    assert web.group(3, 4) == ("A", "web.default.svc.cluster.local.")  # lower-cased
    assert web.group(8) == "NOERROR"
    assert web.group(9) in ("qr,aa,rd", "qr,aa,rd,ra")  # ra: upstreams from resolv.conf
    assert missing.group(4, 8) == ("missing.default.svc.cluster.local.", "NXDOMAIN")
    assert web.group(6) == "false"


def test_log_class_denial_logs_only_denials(start):
    run = start
    netns, stdout = run(
        ".:53 {\n bind 127.0.0.1\n kubernetes cluster.local\n log . {\n  class denial\n }\n}\n")
    assert dig(netns, "web.default.svc.cluster.local") == "10.96.0.10"
    assert dig(netns, "missing.default.svc.cluster.local") == ""
    # A line is written before its reply: once the second is there, the first would be too.
    wait_for(lambda: lines(stdout, "missing.default.svc.cluster.local"), "the denial's line")
    assert lines(stdout, r" web\.default") == []
    assert lines(stdout, "NXDOMAIN")


def test_errors_logs_a_timed_out_forward_only_where_configured(start, netns, dns_stubs):
    run = start
    dns_stubs(netns, "127.0.0.2", silent=True)
    netns, stdout = run(
        ".:53 {\n bind 127.0.0.1\n errors\n kubernetes cluster.local\n forward . 127.0.0.2\n}\n"
        "quiet.example:53 {\n forward . 127.0.0.2\n}\n")
    assert dig(netns, "www.example.com", "+time=10") == ""  # SERVFAIL after the attempts
    error = wait_for(lambda: lines(stdout, r"^\[ERROR\] plugin/errors: "), "the error line")
    assert len(error) == 1
    assert re.match(r"^\[ERROR\] plugin/errors: 2 www\.example\.com\. A: .+$", error[0]), error
    # The stub block has no `errors`: its failed forward is not logged.
    assert dig(netns, "host.quiet.example", "+time=10") == ""
    assert dig(netns, "www2.example.com", "+time=10") == ""
    wait_for(lambda: len(lines(stdout, r"plugin/errors")) == 2, "the second error line")
    assert lines(stdout, "quiet.example") == []
