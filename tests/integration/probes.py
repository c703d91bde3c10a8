"""probes: looking at a running daemon from the test, in one place: waiting
(bounded) for a condition, asking its HTTP endpoints from inside its
network namespace, reading one metric out of its exposition, and running
a small Python client inside a namespace.

Every wait here is a bounded polling loop (the machine may be loaded); no
helper judges elapsed time. Commands are argument lists (network_namespace).
"""
import json
import os
import pathlib
import socket
import sys
import time

import pytest

from network_namespace import in_ns, run, run_in

HERE = pathlib.Path(__file__).resolve().parent
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def wait_for(predicate, what, timeout=20.0):
    """predicate()'s first true value, polled every 0.1 s; fails the test naming `what`
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def free_port(kind=socket.SOCK_STREAM):
    """A loopback port free for `kind` now. Ports are per namespace; any port free in
    ours is free in a new one."""
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def python_argv(ns, script, *args):
    """The argument list that runs `python3 -c script args...` inside ns with this folder
    on PYTHONPATH, so the script can import the test bed's standard-library modules
    (dns_wire)."""
    return in_ns(ns, ["env", f"PYTHONPATH={HERE}", PYTHON, "-c", script, *args])


def python_in(ns, script, *args, timeout=30, input=None):
    """Runs python_argv(); the CompletedProcess, its exit code the caller's to judge."""
    return run(python_argv(ns, script, *args), check=False, timeout=timeout, input=input)


_HTTP_GET = """\
import json, sys, urllib.error, urllib.request
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=10)
    out = (r.status, dict(r.headers), r.read().decode())
except urllib.error.HTTPError as e:
    out = (e.code, dict(e.headers), e.read().decode())
except OSError as e:
    out = (0, {}, str(e))
print(json.dumps(out))
"""


def http_get(namespace, port, path):
    """(status, headers, body) of GET http://127.0.0.1:port/path inside the namespace;
    status 0 (and the error as the body) when nothing answered."""
    result = python_in(namespace, _HTTP_GET, f"http://127.0.0.1:{port}{path}")
    assert result.returncode == 0, result.stderr
    return tuple(json.loads(result.stdout))


def curl(namespace, url):
    """(status, body) of curl inside the namespace; status 0 when nothing answered."""
    result = run_in(namespace, "curl", "-s", "--max-time", "5", "-o", "-",
                    "-w", "\n%{http_code}", url)
    body, _, status = result.stdout.rpartition("\n")
    return int(status or 0), body


def metric(text, series):
    """The value of one exposition series (name and labels, as printed), or None."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


def sample(text, series):
    """metric(), failing the test when the series is absent."""
    value = metric(text, series)
    if value is None:
        pytest.fail(f"{series} not in {text}")
    return value
