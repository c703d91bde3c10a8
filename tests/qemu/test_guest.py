"""The host side of the qemu guest (guest.py), without booting it: the
initramfs archive, the module load order, decompression, the library list
and the kernel cache. No root, no qemu; the kernel tests skip without an
installed kernel package.

    /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/qemu
"""

import gzip
import importlib.util
import lzma
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import guest


def installed_kernel():
    try:
        return guest.installed_kernel_version()
    except guest.GuestError as error:
        pytest.skip(str(error))


def test_initramfs_archive_lists_parents_first_and_keeps_device_nodes(tmp_path):
    if not shutil.which("cpio"):
        pytest.skip("no cpio to read the archive back")
    image = guest.Cpio()
    image.char_device("/dev/console", 5, 1)
    image.file("/usr/lib/x86_64-linux-gnu/libx.so", b"abc", 0o755)
    image.symlink("/usr/sbin/ip", "/bin/busybox")
    archive = gzip.decompress(image.gzipped())
    listing = subprocess.run(
        ["cpio", "-itv", "--quiet"], input=archive, capture_output=True, check=True
    ).stdout.decode()
    names = [line.split()[-1] if "->" not in line else line.split()[-3]
             for line in listing.splitlines()]
    assert names == ["dev", "dev/console", "usr", "usr/lib", "usr/lib/x86_64-linux-gnu",
                     "usr/lib/x86_64-linux-gnu/libx.so", "usr/sbin", "usr/sbin/ip"]
    console = next(line for line in listing.splitlines() if line.endswith("dev/console"))
    assert console.startswith("crw-------") and "5,   1" in console
    assert "-> /bin/busybox" in listing
    extracted = tmp_path / "x"
    extracted.mkdir()
    subprocess.run(["cpio", "-id", "--quiet", "--no-absolute-filenames",
                    "usr/lib/x86_64-linux-gnu/libx.so"], input=archive, cwd=extracted,
                   check=True)
    assert (extracted / "usr/lib/x86_64-linux-gnu/libx.so").read_bytes() == b"abc"


def test_initramfs_refuses_a_path_twice():
    image = guest.Cpio()
    image.file("/init", b"1")
    with pytest.raises(guest.GuestError, match="added twice"):
        image.file("/init", b"2")


def test_init_mounts_only_the_folders_build_initramfs_keeps_empty():
    mounted = re.findall(r"^mount -t \S+ \S+ (\S+)$", guest.INIT_SCRIPT, re.MULTILINE)
    assert tuple(mounted) == guest.MOUNTED_FOLDERS


def test_initramfs_keeps_a_checkout_under_tmp_and_refuses_a_file_under_a_mount(tmp_path):
    # A clone under /tmp puts the scenario's scripts at /tmp/...; before, /init
    # mounted a tmpfs over /tmp and the guest could not open them.
    if not shutil.which("cpio"):
        pytest.skip("no cpio to read the archive back")
    try:
        guest.busybox_path()
    except guest.GuestError as error:
        pytest.skip(str(error))
    kernel = guest.Kernel("test", tmp_path / "vmlinuz", ())
    script = "/tmp/clone/tests/qemu/guest_client.py"
    archive = gzip.decompress(guest.build_initramfs(kernel, "true", files={script: b"x = 1\n"}))
    listing = subprocess.run(
        ["cpio", "-it", "--quiet"], input=archive, capture_output=True, check=True
    ).stdout.decode().split()
    assert script.lstrip("/") in listing
    with pytest.raises(guest.GuestError, match="hidden by the guest's mount on /proc"):
        guest.build_initramfs(kernel, "true", files={"/proc/x": b""})


def test_load_order_puts_crc32c_generic_before_libcrc32c_and_dependencies_first():
    version = installed_kernel()
    order = [name for name, _ in guest.load_order(version, ["ip_vs_sh", "nft_nat"])]
    assert order.index("crc32c_generic") < order.index("libcrc32c")
    for name, path in guest.load_order(version, ["ip_vs_sh", "nft_nat"]):
        depends = subprocess.run(["modinfo", "-F", "depends", str(path)], capture_output=True,
                                 text=True, check=True).stdout.strip()
        for dependency in filter(None, depends.split(",")):
            assert order.index(dependency) < order.index(name), (dependency, name)
    assert len(order) == len(set(order))
    assert order[-1] == "nft_nat"


def test_load_order_names_a_missing_module():
    version = installed_kernel()
    with pytest.raises(guest.GuestError, match="no_such_module .*not in kernel"):
        guest.load_order(version, ["no_such_module"])


@pytest.mark.parametrize("suffix", [".ko", ".ko.xz", ".ko.gz", ".ko.zst"])
def test_compressed_modules_are_unpacked(tmp_path, suffix):
    elf = b"\x7fELF" + bytes(range(256)) * 64
    path = tmp_path / f"m{suffix}"
    if suffix == ".ko.xz":
        path.write_bytes(lzma.compress(elf, format=lzma.FORMAT_XZ))
    elif suffix == ".ko.gz":
        path.write_bytes(gzip.compress(elf))
    elif suffix == ".ko.zst":
        if not shutil.which("zstd"):
            pytest.skip("no zstd")
        path.write_bytes(subprocess.run(["zstd", "-c"], input=elf, capture_output=True,
                                        check=True).stdout)
    else:
        path.write_bytes(elf)
    assert guest._decompressed(path) == elf


def test_shared_libraries_include_the_dynamic_loader_and_none_for_static():
    libraries = guest.shared_libraries(Path("/bin/ls"))
    assert any(Path(p).name.startswith("ld-linux") for p in libraries)
    assert any(Path(p).name.startswith("libc.so") for p in libraries)
    static = guest.busybox_path()
    if "statically linked" in subprocess.run(["file", "-L", str(static)], capture_output=True,
                                             text=True).stdout:
        assert guest.shared_libraries(static) == []


def test_kernel_cache_is_reused_and_kept_per_module_set(tmp_path):
    installed_kernel()
    first = guest.prepare_kernel(["dummy"], cache_dir=tmp_path)
    stamp = first.image.stat().st_mtime_ns
    again = guest.prepare_kernel(["dummy"], cache_dir=tmp_path)
    assert again == first and again.image.stat().st_mtime_ns == stamp
    other = guest.prepare_kernel(["ip_vs_rr"], cache_dir=tmp_path)
    assert other.image.parent != first.image.parent
    assert first.image.is_file() and all(m.is_file() for m in first.modules)
    assert "libcrc32c" in other.module_names and first.module_names == ["dummy"]
    assert not [p for p in tmp_path.rglob(".staging-*")]


def test_checks_scenario_runs_each_check_and_exits_with_the_failures(tmp_path):
    script = guest.checks_scenario({
        "holds": "echo fine",
        "breaks": "echo 'not here' >&2; false",
        "after_a_failure": "[ 1 -eq 1 ]",
    })
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                         env={"TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 1
    assert guest.check_results(out.stdout) == {
        "holds": "pass", "breaks": "fail", "after_a_failure": "pass"}
    assert "SB-CHECK fail breaks\n    not here\n" in out.stdout


def test_checks_scenario_refuses_a_name_the_console_parser_could_not_read():
    with pytest.raises(guest.GuestError, match="check name"):
        guest.checks_scenario({"two words": "true"})


def test_python_for_brings_lazy_imports_startup_codecs_and_unchecked_pycs():
    podserver = Path(__file__).resolve().parents[1] / "integration/podserver.py"
    binaries, files = guest.python_for([podserver])
    assert binaries["/usr/bin/python3"] == Path("/usr/bin/python3")
    assert files[str(podserver)] == podserver.read_bytes()
    # selectors: a top-level import; locale: argparse's lazy one (inside a
    # function); encodings/utf_8: the interpreter's own at startup; idna and
    # its stringprep: the codec a str host name in a socket call looks up.
    for suffix in ("/selectors.py", "/locale.py", "/encodings/utf_8.py", "/encodings/idna.py",
                   "/stringprep.py"):
        assert any(p.endswith(suffix) for p in files), suffix
    locale_py = next(p for p in files if p.endswith("/locale.py"))
    pyc = files[importlib.util.cache_from_source(locale_py)]
    # PEP 552 flags word: 1 = hash-based and not checked against the source.
    assert int.from_bytes(pyc[4:8], "little") == 1
    assert any("/lib-dynload/_json." in p for p in binaries)
