"""daemons: the switchboard daemon under test as a process inside a network
namespace, started the two ways the tests start it: on a cluster file with
its own flags (Daemon; conftest's `daemon_factory` fixture), or as a DNS
server from a Corefile (start_corefile_daemon).

Ownership: the caller stops what it started (Daemon.stop(),
stop_processes()); the fixtures do it at the end of the test. stderr goes
to a file, never a pipe: a pipe nobody reads could fill and stall the
daemon.
"""
import subprocess

from network_namespace import in_ns
from probes import free_port, http_get


class Daemon:
    """The daemon on `source` (--source=file:) in `namespace`, its metrics and healthz
    listeners on free loopback ports (or `ports`: (metrics, healthz)),
    --min-sync-period=100ms, and `extra` flags; under `switchboard supervise` when
    `supervised` (then `process` is the supervisor's)."""

    def __init__(self, binary, namespace, source, log_path, *extra, supervised=False,
                 ports=None):
        self.namespace = namespace
        self.metrics_port, self.healthz_port = ports or (free_port(), free_port())
        self.log_path = log_path
        wrapper = [binary, "supervise", "--"] if supervised else []
        with open(log_path, "w") as log:
            self.process = subprocess.Popen(
                in_ns(namespace, [*wrapper, binary, f"--source=file:{source}",
                 "--hostname-override=node-a",
                 f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
                 f"--healthz-bind-address=127.0.0.1:{self.healthz_port}",
                 "--min-sync-period=100ms", *extra]),
                stdout=subprocess.DEVNULL, stderr=log)

    def stderr(self):
        with open(self.log_path) as log:
            return log.read()

    def get(self, path, port=None):
        """(status, headers, body) of GET path on the metrics port (or `port`)."""
        return http_get(self.namespace, port or self.metrics_port, path)

    def stop(self):
        """terminate(); the exit code."""
        return terminate(self.process)


def terminate(process, timeout=20):
    """SIGTERM to `process` if it runs, SIGKILL after `timeout` seconds; reaps it and
    returns its exit code."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return process.returncode


def start_corefile_daemon(switchboard_bin, netns, tmp_path, processes, *, corefile=None,
                          stdout=subprocess.DEVNULL):
    """Starts the daemon in `netns` on tmp_path/cluster.json with --dns-corefile
    (tmp_path/Corefile unless `corefile`), appending it to `processes`; returns
    the path its stderr goes to."""
    log_path = tmp_path / "daemon.log"
    with open(log_path, "w") as log:
        processes.append(subprocess.Popen(
            in_ns(netns, [switchboard_bin, f"--source=file:{tmp_path / 'cluster.json'}",
                          "--hostname-override=node-a",
                          f"--dns-corefile={corefile or tmp_path / 'Corefile'}"]),
            stdout=stdout, stderr=log))
    return log_path


def stop_processes(processes):
    """Kills what is still running of `processes` and reaps each."""
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
