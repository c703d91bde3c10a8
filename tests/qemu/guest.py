"""A real Linux kernel under qemu (TCG) for the tests the host kernel cannot run.

The build machines' kernel has no IPVS, so the IPVS tests boot Debian's
kernel (package linux-image-amd64, which ships ip_vs*.ko) in qemu with a
busybox initramfs holding the switchboard binary, its shared libraries, the
modules a scenario needs and a guest /init. See docs/testbed.md ("The qemu
guest") for the image, the module order and the measured times.

Standard library only. Nothing here needs root or KVM: the initramfs is
written as a cpio archive by this module (so /dev/console is a device node
without mknod), and qemu runs with TCG.

    kernel = prepare_kernel()      # unpacked once per kernel version and module set
    run = boot(kernel, scenario="echo hi", binaries={"/usr/bin/switchboard": path})
    run.rc, run.console, run.boot_seconds

Contract with a scenario: it is a /bin/sh script run as /scenario.sh in the
guest after every module was tried (the failures are printed as
SB-GUEST-MODULE-FAILED lines, and /etc/sb-modules lists the modules in load
order); its exit status comes back as GuestRun.rc. Its output is on the
serial console, returned as GuestRun.console.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import importlib.util
import io
import json
import lzma
import os
import py_compile
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QEMU = "qemu-system-x86_64"

# What the IPVS backend and its nftables helper rules need, by module name.
# Their dependencies are added from modinfo, so this lists what the tests use
# directly. Loading only these matters: the whole netfilter tree takes
# minutes under TCG.
DEFAULT_MODULES = (
    "ip_vs",
    "ip_vs_rr",
    "ip_vs_lc",
    "ip_vs_dh",
    "ip_vs_sh",
    "ip_vs_sed",
    "ip_vs_nq",
    "dummy",
    # Pods are network namespaces joined to the node by veth pairs, as in
    # the network-namespace test bed.
    "veth",
    "nf_tables",
    "nf_nat",
    "nft_nat",
    "nft_chain_nat",
    "nft_ct",
    # masquerade and reject are expression modules of their own; the helper
    # rules (masquerade off-cluster sources, reject without endpoints) use both.
    "nft_masq",
    "nft_reject_inet",
)

# Soft dependencies name an alias, not a module: libcrc32c's "pre: crc32c"
# is the crypto algorithm, provided by crc32c_generic (portable; crc32c-intel
# would need SSE4.2 in the emulated CPU). Without it loaded first, libcrc32c
# fails ("unknown symbol") and with it every module that needs libcrc32c.
SOFTDEP_ALIASES = {"crc32c": "crc32c_generic"}

RESULT_RE = re.compile(r"^SB-GUEST-RESULT rc=(\d+)\s*$", re.MULTILINE)
INIT_RE = re.compile(r"SB-GUEST-INIT uptime=([0-9.]+)")  # after firmware escapes
SCENARIO_RE = re.compile(r"^SB-GUEST-SCENARIO uptime=([0-9.]+)", re.MULTILINE)
MODULE_FAILED_RE = re.compile(r"^SB-GUEST-MODULE-FAILED (\S+)", re.MULTILINE)

# The folders /init mounts a file system over. Nothing else is mounted: the
# initramfs is itself a writable tmpfs, so /run and /tmp need no mount, and a
# mount there would hide the files the image holds at their host paths (a
# checkout under /tmp: the scenario's scripts). build_initramfs refuses a file
# under one of these.
MOUNTED_FOLDERS = ("/proc", "/sys", "/dev")

# The guest's /init. Prints the markers the host parses (above); a scenario
# should not print lines starting with "SB-GUEST-".
INIT_SCRIPT = r"""#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /run /tmp /dev/pts
echo "SB-GUEST-INIT uptime=$(cut -d' ' -f1 /proc/uptime)"
while read -r module; do
  if ! insmod "/lib/modules/sb/$module.ko" 2>/tmp/insmod.err; then
    echo "SB-GUEST-MODULE-FAILED $module $(cat /tmp/insmod.err)"
  fi
done </etc/sb-modules
ip link set lo up
echo "SB-GUEST-SCENARIO uptime=$(cut -d' ' -f1 /proc/uptime)"
sh /scenario.sh
echo "SB-GUEST-RESULT rc=$?"
sync
poweroff -f
"""


class GuestError(RuntimeError):
    """The guest could not be prepared or did not report a result."""


@dataclasses.dataclass(frozen=True)
class Kernel:
    """An unpacked kernel in the cache: its image and its modules in load order."""

    version: str
    image: Path
    modules: tuple[Path, ...]  # uncompressed .ko files, dependencies first

    @property
    def module_names(self) -> list[str]:
        return [path.stem for path in self.modules]


@dataclasses.dataclass
class GuestRun:
    rc: int  # the scenario's exit status, from the result line
    console: str  # the serial console, \r removed
    # qemu started -> scenario starting, host clock: the boot time. Under TCG
    # most of it passes before the guest's clock starts (firmware, loading and
    # decompressing the kernel), so the guest's uptime below is smaller.
    boot_seconds: float
    guest_uptime_at_scenario: float  # the guest's /proc/uptime as the scenario starts
    module_seconds: float  # /init loading the modules (guest clock)
    total_seconds: float  # qemu started -> qemu exited, last attempt
    attempts: int
    failed_modules: list[str]


def qemu_available() -> bool:
    return shutil.which(QEMU) is not None


def default_cache_dir() -> Path:
    if env := os.environ.get("SWITCHBOARD_QEMU_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "switchboard-qemu"


def installed_kernel_version() -> str:
    """The newest /boot/vmlinuz-* that has its modules installed."""
    if env := os.environ.get("SWITCHBOARD_QEMU_KERNEL"):
        return env
    versions = sorted(
        (path.name[len("vmlinuz-") :] for path in Path("/boot").glob("vmlinuz-*")),
        key=_version_key,
    )
    versions = [v for v in versions if Path("/lib/modules", v, "kernel").is_dir()]
    if not versions:
        raise GuestError(
            "no kernel: /boot/vmlinuz-* with /lib/modules/VERSION/kernel "
            "(install linux-image-amd64)"
        )
    return versions[-1]


def _version_key(version: str) -> list[int]:
    return [int(part) for part in re.findall(r"\d+", version)]


def _canonical(name: str) -> str:
    """Module names treat - and _ alike (file crc32c-intel.ko is module crc32c_intel)."""
    return name.replace("-", "_")


_MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")


def _module_files(version: str) -> dict[str, Path]:
    """Every module file of the kernel, by canonical module name. Walks the
    tree rather than reading modules.dep, which an unpacked package lacks."""
    files: dict[str, Path] = {}
    for root, _dirs, names in os.walk(Path("/lib/modules", version, "kernel")):
        for name in names:
            for suffix in _MODULE_SUFFIXES:
                if name.endswith(suffix):
                    files[_canonical(name[: -len(suffix)])] = Path(root, name)
                    break
    return files


def _modinfo(path: Path, field: str) -> str:
    out = subprocess.run(
        ["modinfo", "-F", field, str(path)], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise GuestError(f"modinfo -F {field} {path}: {out.stderr.strip()}")
    return out.stdout.strip()


def _prerequisites(path: Path, files: dict[str, Path]) -> list[str]:
    """A module's hard dependencies (modinfo depends) after its soft "pre:"
    ones, as module names."""
    names: list[str] = []
    for line in _modinfo(path, "softdep").splitlines():
        words = line.split()
        if "pre:" not in words:
            continue
        for word in words[words.index("pre:") + 1 :]:
            if word.endswith(":"):
                break
            module = _canonical(SOFTDEP_ALIASES.get(word, word))
            if module not in files:
                raise GuestError(f"{path.name}: soft dependency {word} names no module")
            names.append(module)
    names += [_canonical(n) for n in _modinfo(path, "depends").split(",") if n]
    return names


def load_order(version: str, wanted: tuple[str, ...] | list[str]) -> list[tuple[str, Path]]:
    """The wanted modules and everything they depend on, dependencies first."""
    files = _module_files(version)
    order: list[tuple[str, Path]] = []
    done: set[str] = set()
    visiting: set[str] = set()

    def visit(name: str, needed_by: str) -> None:
        if name in done:
            return
        if name in visiting:
            raise GuestError(f"module dependency cycle through {name}")
        if name not in files:
            raise GuestError(f"module {name} (needed by {needed_by}) is not in kernel {version}")
        visiting.add(name)
        for prerequisite in _prerequisites(files[name], files):
            visit(prerequisite, name)
        visiting.discard(name)
        done.add(name)
        order.append((name, files[name]))

    for name in wanted:
        visit(_canonical(name), "the test")
    return order


def _decompressed(path: Path) -> bytes:
    """A module's ELF bytes: busybox insmod hands the file to init_module as
    it is, so compressed modules are unpacked here."""
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".gz"):
        return gzip.decompress(data)
    if path.name.endswith(".zst"):
        out = subprocess.run(["zstd", "-dc", str(path)], capture_output=True, check=False)
        if out.returncode != 0:
            raise GuestError(f"zstd -dc {path}: {out.stderr.decode(errors='replace').strip()}")
        return out.stdout
    return data


def _cached_kernel(entry: Path, version: str, wanted: list[str], stamp: int) -> Kernel | None:
    try:
        manifest = json.loads((entry / "manifest.json").read_text())
        if manifest["wanted"] != wanted or manifest["image_mtime_ns"] != stamp:
            return None
        kernel = Kernel(
            version,
            entry / "vmlinuz",
            tuple(entry / "modules" / f"{name}.ko" for name in manifest["order"]),
        )
        if not all(path.is_file() for path in (kernel.image, *kernel.modules)):
            return None
        return kernel
    except (OSError, ValueError, KeyError):
        return None


def prepare_kernel(
    modules: tuple[str, ...] | list[str] = DEFAULT_MODULES,
    version: str | None = None,
    cache_dir: Path | None = None,
) -> Kernel:
    """The kernel image and the modules (with their dependencies), unpacked
    into CACHE/VERSION/SET (SET: a hash of the wanted module names) and
    reused while the installed image is unchanged. An entry is written to a
    temporary folder and renamed into place, so an interrupted run leaves no
    half entry and two concurrent runs both end up with a whole one."""
    version = version or installed_kernel_version()
    image = Path("/boot", f"vmlinuz-{version}")
    if not image.is_file():
        raise GuestError(f"no kernel image {image} (install linux-image-amd64)")
    wanted = sorted({_canonical(m) for m in modules})
    stamp = image.stat().st_mtime_ns
    folder = (cache_dir or default_cache_dir()) / version
    entry = folder / hashlib.sha256(" ".join(wanted).encode()).hexdigest()[:12]
    if kernel := _cached_kernel(entry, version, wanted, stamp):
        return kernel

    order = load_order(version, wanted)
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder))
    try:
        (staging / "modules").mkdir()
        shutil.copyfile(image, staging / "vmlinuz")
        for name, path in order:
            (staging / "modules" / f"{name}.ko").write_bytes(_decompressed(path))
        (staging / "manifest.json").write_text(
            json.dumps({"wanted": wanted, "image_mtime_ns": stamp, "order": [n for n, _ in order]})
        )
        # A stale entry (the image was reinstalled) is replaced; a rename
        # that fails because a concurrent run just put its entry there is fine.
        if entry.exists() and not _cached_kernel(entry, version, wanted, stamp):
            shutil.rmtree(entry)
        try:
            os.rename(staging, entry)
        except OSError:
            pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    kernel = _cached_kernel(entry, version, wanted, stamp)
    if kernel is None:
        raise GuestError(f"kernel cache {entry} could not be written")
    return kernel


class Cpio:
    """An initramfs as a cpio "newc" archive, built in memory. Parent
    folders are added before their entries (the kernel's unpacker does not
    create them)."""

    def __init__(self) -> None:
        self._out = io.BytesIO()
        self._paths: set[str] = set()
        self._inode = 1

    def _entry(
        self, path: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0)
    ) -> None:
        name = path.lstrip("/").encode() + b"\0"
        fields = (
            self._inode, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name), 0
        )
        self._inode += 1
        self._out.write(b"070701" + b"".join(b"%08x" % f for f in fields) + name)
        self._pad()
        self._out.write(data)
        self._pad()

    def _pad(self) -> None:
        self._out.write(b"\0" * (-self._out.tell() % 4))

    def directory(self, path: str) -> None:
        path = "/" + path.strip("/")
        if path == "/" or path in self._paths:
            return
        self.directory(os.path.dirname(path))
        self._paths.add(path)
        self._entry(path, stat.S_IFDIR | 0o755)

    def _claim(self, path: str) -> str:
        """Registers PATH (after its parent folders); each path is added once."""
        path = "/" + path.strip("/")
        if path in self._paths:
            raise GuestError(f"initramfs: {path} added twice")
        self.directory(os.path.dirname(path))
        self._paths.add(path)
        return path

    def file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._entry(self._claim(path), stat.S_IFREG | mode, data)

    def symlink(self, path: str, target: str) -> None:
        self._entry(self._claim(path), stat.S_IFLNK | 0o777, target.encode())

    def char_device(self, path: str, major: int, minor: int) -> None:
        self._entry(self._claim(path), stat.S_IFCHR | 0o600, rdev=(major, minor))

    def has(self, path: str) -> bool:
        return "/" + path.strip("/") in self._paths

    def gzipped(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        return gzip.compress(self._out.getvalue(), compresslevel=6)


def shared_libraries(binary: Path) -> list[str]:
    """The absolute paths ldd lists for a binary (the dynamic loader too);
    empty for a static one."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        if "not a dynamic executable" in out.stdout + out.stderr:
            return []
        raise GuestError(f"ldd {binary}: {(out.stdout + out.stderr).strip()}")
    paths: list[str] = []
    for line in out.stdout.splitlines():
        if "not found" in line:
            raise GuestError(f"ldd {binary}: {line.strip()}")
        match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if match:
            paths.append(match.group(1))
    return paths


def _add_executable(image: Cpio, guest_path: str, host_path: Path) -> None:
    """An executable and its shared libraries at the paths ldd names.
    Debug info is stripped: the daemon's debug build is 160 MB, stripped 7."""
    with tempfile.TemporaryDirectory() as tmp:
        stripped = Path(tmp, "stripped")
        out = subprocess.run(
            ["strip", "--strip-debug", "-o", str(stripped), str(host_path)],
            capture_output=True,
            text=True,
            check=False,
        )
        # strip refuses what is not ELF (a script): that goes in as it is.
        data = stripped.read_bytes() if out.returncode == 0 else host_path.read_bytes()
    image.file(guest_path, data, 0o755)
    for library in shared_libraries(host_path):
        if not image.has(library):
            image.file(library, Path(library).resolve().read_bytes(), 0o755)


PYTHON = Path("/usr/bin/python3")

# Lists every module file the scripts could import: modulefinder reads the
# import statements (those inside functions too, such as argparse's lazy
# gettext -> locale) without running the scripts; the modules already loaded
# add what the interpreter itself imports at startup. The codecs are looked
# up by name, never imported by a statement (encodings.utf_8 at startup,
# encodings.idna when a socket call gets a host name as str), so all of
# encodings goes in, with what each codec imports (idna: stringprep). Run by
# the host's python with -S -I, the way the guest runs the scripts, so
# site-packages stay out.
_MODULE_FILES = """
import encodings, glob, modulefinder, os, sys
finder = modulefinder.ModuleFinder(path=sys.argv[1].split(":") + sys.path)
codecs = glob.glob(os.path.join(os.path.dirname(encodings.__file__), "*.py"))
for script in sys.argv[2:]:
    finder.run_script(script)
for codec in codecs:
    finder.import_hook("encodings." + os.path.basename(codec)[:-3])
for module in [*finder.modules.values(), *sys.modules.values()]:
    if getattr(module, "__file__", None) and module.__name__ != "__main__":
        print(module.__file__)
print("\\n".join(codecs))
"""


def python_for(scripts: list[Path]) -> tuple[dict[str, Path], dict[str, bytes]]:
    """The host's /usr/bin/python3 and every standard-library module the
    SCRIPTS may import, at their host paths, so the scripts (put in at their
    host paths too) run in the guest as `python3 -S -I /PATH/SCRIPT.py`.
    Returns (binaries, files) for boot(): extension modules (.so) go in as
    binaries, so their shared libraries come along; each .py comes with its
    .pyc. For podserver.py: 420 .py modules and 26 extension modules, found
    and compiled in 3-5 s."""
    folders = sorted({str(script.resolve().parent) for script in scripts})
    out = subprocess.run(
        [str(PYTHON), "-S", "-I", "-c", _MODULE_FILES, ":".join(folders),
         *(str(script.resolve()) for script in scripts)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        raise GuestError(f"finding the modules of {scripts}: {out.stderr.strip()}")
    binaries: dict[str, Path] = {str(PYTHON): PYTHON}
    files: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(set(out.stdout.split())):
            if path.endswith(".so"):
                binaries[path] = Path(path)
                continue
            files[path] = Path(path).read_bytes()
            # Compiled here: compiling 300 modules in the guest takes seconds
            # under TCG at every start. Debian's own .pyc files are checked
            # against the source's mtime, which the archive does not keep; an
            # unchecked-hash .pyc is used as it is.
            compiled = Path(tmp, "module.pyc")
            py_compile.compile(
                path, cfile=str(compiled), doraise=True,
                invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
            )  # fmt: skip
            files[importlib.util.cache_from_source(path)] = compiled.read_bytes()
    for script in scripts:
        files[str(script.resolve())] = script.read_bytes()
    return binaries, files


def busybox_path() -> Path:
    path = shutil.which("busybox", path="/bin:/usr/bin:/sbin:/usr/sbin")
    if not path:
        raise GuestError("no busybox (install busybox-static)")
    return Path(path)


def build_initramfs(
    kernel: Kernel,
    scenario: str,
    binaries: dict[str, Path] | None = None,
    files: dict[str, bytes] | None = None,
) -> bytes:
    """The gzipped initramfs: busybox and its applet links, the given
    executables (guest path -> host path) with their libraries, extra files
    (guest path -> contents), the kernel's modules, /init and the scenario."""
    for guest_path in [*(binaries or {}), *(files or {})]:
        hidden_by = [f for f in MOUNTED_FOLDERS if guest_path.startswith(f + "/")]
        if hidden_by:
            raise GuestError(f"{guest_path} would be hidden by the guest's mount on {hidden_by[0]}")
    image = Cpio()
    for folder in ("/proc", "/sys", "/dev", "/run", "/tmp", "/etc", "/root"):
        image.directory(folder)
    # The kernel opens /dev/console for /init before devtmpfs is mounted.
    image.char_device("/dev/console", 5, 1)
    for guest_path, host_path in (binaries or {}).items():
        _add_executable(image, guest_path, Path(host_path))
    for guest_path, data in (files or {}).items():
        image.file(guest_path, data)
    # The applet links come after, so a given binary (iproute2's /sbin/ip,
    # say) takes the place of busybox's applet of that name.
    busybox = busybox_path()
    _add_executable(image, "/bin/busybox", busybox)
    listing = subprocess.run(
        [str(busybox), "--list-full"], capture_output=True, text=True, check=True
    ).stdout.split()
    for applet in listing:
        if not image.has(applet):
            image.symlink(applet, "/bin/busybox")
    for module in kernel.modules:
        image.file(f"/lib/modules/sb/{module.name}", module.read_bytes())
    image.file("/etc/sb-modules", "".join(f"{n}\n" for n in kernel.module_names).encode())
    image.file("/init", INIT_SCRIPT.encode(), 0o755)
    image.file("/scenario.sh", scenario.encode(), 0o755)
    return image.gzipped()


def _run_qemu(
    kernel: Kernel, initrd: Path, timeout: float
) -> tuple[str, float | None, float, bool]:
    """One boot: (console, seconds to the scenario marker, total seconds, timed out)."""
    argv = [
        "timeout", "--kill-after=5", f"{timeout:.0f}",
        QEMU, "-accel", "tcg", "-cpu", "max", "-smp", "1", "-m", "512",
        "-nographic", "-no-reboot", "-nic", "none",
        "-kernel", str(kernel.image), "-initrd", str(initrd),
        "-append", "console=ttyS0 quiet panic=-1",
    ]  # fmt: skip
    start = time.monotonic()
    scenario_at = None
    lines: list[str] = []
    with subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    ) as process:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode(errors="replace").replace("\r", "").rstrip("\n")
            lines.append(line)
            if scenario_at is None and SCENARIO_RE.match(line):
                scenario_at = time.monotonic() - start
        status = process.wait()
    # timeout exits 124 when it stopped qemu, 137 when it had to kill it.
    return "\n".join(lines) + "\n", scenario_at, time.monotonic() - start, status in (124, 137)


def _uptime(console: str, marker: re.Pattern[str]) -> float:
    """The guest uptime a marker line carries; NaN when it is missing."""
    match = marker.search(console)
    return float(match.group(1)) if match else float("nan")


def boot(
    kernel: Kernel,
    scenario: str,
    binaries: dict[str, Path] | None = None,
    files: dict[str, bytes] | None = None,
    timeout: float | None = None,
) -> GuestRun:
    """Boots the guest with SCENARIO and returns its result. A run that hits
    TIMEOUT (default $SWITCHBOARD_QEMU_TIMEOUT or 300 s) without a result
    line is retried once, for the rare host stall that freezes a TCG guest;
    a guest that reports no result otherwise raises GuestError with its
    console."""
    if not qemu_available():
        raise GuestError(f"{QEMU} not found (install qemu-system-x86)")
    timeout = timeout or float(os.environ.get("SWITCHBOARD_QEMU_TIMEOUT", "300"))
    with tempfile.TemporaryDirectory(prefix="sb-qemu-") as tmp:
        initrd = Path(tmp, "initrd.gz")
        initrd.write_bytes(build_initramfs(kernel, scenario, binaries, files))
        for attempt in (1, 2):
            console, scenario_at, total, timed_out = _run_qemu(kernel, initrd, timeout)
            result = RESULT_RE.search(console)
            if result or not timed_out:
                break
            print(f"qemu guest: no result after {timeout:.0f} s, attempt {attempt}",
                  file=sys.stderr)
    if not result:
        tail = "\n".join(console.splitlines()[-40:])
        why = (f"timed out after {timeout:.0f} s twice" if timed_out
               else "ended without a result line")
        raise GuestError(f"the guest {why}; console tail:\n{tail}")
    return GuestRun(
        rc=int(result.group(1)),
        console=console,
        boot_seconds=scenario_at if scenario_at is not None else float("nan"),
        guest_uptime_at_scenario=_uptime(console, SCENARIO_RE),
        module_seconds=_uptime(console, SCENARIO_RE) - _uptime(console, INIT_RE),
        total_seconds=total,
        attempts=attempt,
        failed_modules=MODULE_FAILED_RE.findall(console),
    )


# Checks: many small tests in one boot (a boot costs about 9 s). Each check
# is a shell body run in its own subshell; it passes when it exits 0. Its
# output follows its "SB-CHECK pass|fail NAME" line, indented.
CHECK_RE = re.compile(r"^SB-CHECK (pass|fail) (\S+)$", re.MULTILINE)


def checks_scenario(checks: dict[str, str]) -> str:
    """A scenario running CHECKS (name -> shell body) in order; it exits
    with the number that failed."""
    parts = ['failed=0 sb_check_out="${TMPDIR:-/tmp}/sb-check.out"']
    for name, body in checks.items():
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise GuestError(f"check name {name!r}: letters, digits, _ . - only")
        parts.append(
            f"if ( {body.strip()}\n) >\"$sb_check_out\" 2>&1; then echo 'SB-CHECK pass {name}'; "
            f"else echo 'SB-CHECK fail {name}'; failed=$((failed+1)); fi; "
            "sed 's/^/    /' \"$sb_check_out\""
        )
    parts.append("exit $failed")
    return "\n".join(parts) + "\n"


def check_results(console: str) -> dict[str, str]:
    """Check name -> "pass" or "fail", from a checks_scenario's console."""
    return {name: status for status, name in CHECK_RE.findall(console)}


def timing_line(run: GuestRun) -> str:
    return (
        f"qemu guest: boot {run.boot_seconds:.1f} s to the scenario (guest uptime "
        f"{run.guest_uptime_at_scenario:.1f} s, of which loading modules "
        f"{run.module_seconds:.1f} s), total {run.total_seconds:.1f} s, attempts {run.attempts}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description="Boot the qemu guest with a scenario script.")
    parser.add_argument("scenario", type=Path, help="a /bin/sh script run in the guest")
    parser.add_argument(
        "--binary", action="append", default=[], metavar="GUEST=HOST",
        help="an executable (with its libraries) at GUEST in the guest",
    )  # fmt: skip
    parser.add_argument(
        "--file", action="append", default=[], metavar="GUEST=HOST", help="a file at GUEST"
    )
    parser.add_argument("--timeout", type=float)
    args = parser.parse_args()

    def pairs(items: list[str]) -> dict[str, Path]:
        return {g: Path(h) for g, h in (item.split("=", 1) for item in items)}

    try:
        run = boot(
            prepare_kernel(),
            args.scenario.read_text(),
            binaries=pairs(args.binary),
            files={g: h.read_bytes() for g, h in pairs(args.file).items()},
            timeout=args.timeout,
        )
    except GuestError as error:
        print(f"qemu guest: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(run.console)
    print(timing_line(run))
    return run.rc


if __name__ == "__main__":
    sys.exit(main())
