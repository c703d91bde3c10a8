"""image_podman: the runtime image of deploy/image/pack under podman, for
tests/integration/test_image.py and tests/bench/bench-image.

podman runs on a storage of its own (`--root`, `--runroot` under a caller's
directory), so the machine's podman state is untouched; close() removes the
containers and images, the caller the directory. It runs runc, not crun:
Debian 12's crun refuses a hybrid cgroup hierarchy (v1 controllers plus an
empty v2 mount), which some CI hosts have. A container's RLIMIT_NOFILE is this
process's own and its RLIMIT_NPROC a fixed 4096: podman's defaults are higher
than a nested test host lets runc set.
"""
import hashlib
import pathlib
import resource
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACK = ROOT / "deploy" / "image" / "pack"
PACK_TIMEOUT = 600
NPROC = 4096  # the daemon runs a handful of threads


def pack(binary, outdir):
    """deploy/image/pack BINARY OUTDIR: (archive path, manifest digest)."""
    result = subprocess.run([str(PACK), str(binary), str(outdir)], capture_output=True,
                            text=True, timeout=PACK_TIMEOUT, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    archive, digest = result.stdout.split()
    return pathlib.Path(archive), digest


def version_output(binary):
    return subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                          check=True).stdout


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Podman:
    """podman on its own storage (`--root`, `--runroot` under `workdir`) with the
    image of `archive` loaded; `reference` is the tag the archive carries."""

    def __init__(self, workdir, archive):
        self.base = ["podman", f"--root={workdir / 'storage'}", f"--runroot={workdir / 'run'}",
                     "--storage-driver=vfs", "--runtime=runc", "--cgroup-manager=cgroupfs",
                     "--events-backend=none"]
        loaded = self.podman("load", "--input", str(archive))
        assert loaded.returncode == 0, loaded.stderr
        self.reference = loaded.stdout.strip().rsplit(" ", 1)[-1]

    def podman(self, *args, timeout=120):
        return subprocess.run([*self.base, *args], capture_output=True, text=True,
                              timeout=timeout, check=False)

    def run_argv(self, *options_and_args):
        """`podman run --rm` of the image with this process's rlimits."""
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        limits = [f"--ulimit=nofile={soft}:{hard}", f"--ulimit=nproc={NPROC}:{NPROC}"]
        return [*self.base, "run", "--rm", *limits, *options_and_args]

    def run(self, *options_and_args, timeout=60):
        return subprocess.run(self.run_argv(*options_and_args), capture_output=True, text=True,
                              timeout=timeout, check=False)

    def close(self):
        self.podman("rm", "--all", "--force")
        self.podman("rmi", "--all", "--force")
