#!/usr/bin/python3
"""check_structure: the source tree's shape, measured from its own code
(docs/layout.md). Reads the `#include "..."` lines of base/ watch/ rules/
dns/ proxy/ and the extents of their functions (Universal Ctags), and checks
one rule per line of output:

- folders: no source folder holds more than 16 modules directly (a module
  is a .cpp/.h pair, or either alone);
- module cycles: no include cycle between modules;
- folder cycles: no include cycle between folders;
- layers: base <- watch <- dns, base <- rules, proxy on top (DESIGN.md);
- file size: no .cpp over 800 lines;
- function size: no function over 150 lines.

Prints each rule's result and what breaks it, then "N passed, N failed".
Exit status 0 when every rule holds. Usage: check_structure.py [ROOT]
(default: the repository this file is in).
"""
import collections
import os
import pathlib
import re
import shutil
import subprocess
import sys

LAYERS = ("base", "watch", "rules", "dns", "proxy")
# What each layer may include besides itself (DESIGN.md, "Data flow and layers").
ALLOWED = {
    "base": set(),
    "watch": {"base"},
    "rules": {"base"},
    "dns": {"watch", "base"},
    "proxy": {"base", "watch", "rules", "dns"},
}
MAX_MODULES = 16
MAX_CPP_LINES = 800
MAX_FUNCTION_LINES = 150
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def source_files(root):
    files = []
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*")):
            if path.suffix in (".cpp", ".h") and path.is_file():
                files.append(path.relative_to(root).as_posix())
    return files


def include_edges(root, files):
    """(module edges, folder edges, layer violations) from the include lines."""
    known = set(files)
    modules = collections.defaultdict(set)
    folders = collections.defaultdict(set)
    violations = []
    for name in files:
        source_module = os.path.splitext(name)[0]
        with open(root / name, encoding="utf-8", errors="replace") as text:
            for line in text:
                match = INCLUDE.match(line)
                if not match or match.group(1) not in known:
                    continue
                target = match.group(1)
                target_module = os.path.splitext(target)[0]
                if target_module != source_module:
                    modules[source_module].add(target_module)
                if os.path.dirname(name) != os.path.dirname(target):
                    folders[os.path.dirname(name)].add(os.path.dirname(target))
                layer, target_layer = name.split("/")[0], target.split("/")[0]
                if layer != target_layer and target_layer not in ALLOWED[layer]:
                    violations.append(f"{name} includes {target}")
    return modules, folders, violations


def cycles(edges):
    """The strongly connected components of more than one node (Tarjan,
    iterative so that depth is no limit)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    nodes = sorted(set(edges) | {t for targets in edges.values() for t in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def crowded_folders(files):
    modules = collections.defaultdict(set)
    for name in files:
        modules[os.path.dirname(name)].add(os.path.splitext(name)[0])
    return [f"{folder}: {len(m)} modules" for folder, m in sorted(modules.items())
            if len(m) > MAX_MODULES]


def long_files(root, files):
    out = []
    for name in files:
        if name.endswith(".cpp"):
            with open(root / name, encoding="utf-8", errors="replace") as text:
                count = sum(1 for _ in text)
            if count > MAX_CPP_LINES:
                out.append(f"{name}: {count} lines")
    return out


def long_functions(root, files):
    """Functions whose definition spans more lines than the limit, from
    Universal Ctags' start and end lines; None when ctags is missing."""
    ctags = shutil.which("ctags-universal") or shutil.which("ctags")
    if ctags is None:
        return None
    result = subprocess.run(
        [ctags, "-x", "--_xformat=%N\t%F\t%n\t%e", "--kinds-c++=f", "--fields=+ne", "-o", "-"]
        + files, cwd=root, capture_output=True, text=True, check=True)
    out = []
    for line in result.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 4 and parts[2].isdigit() and parts[3].isdigit():
            length = int(parts[3]) - int(parts[2]) + 1
            if length > MAX_FUNCTION_LINES:
                out.append(f"{parts[1]}: {parts[0]}: {length} lines")
    return sorted(out)


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parents[2])
    files = source_files(root)
    module_edges, folder_edges, violations = include_edges(root, files)
    functions = long_functions(root, files)
    checks = [
        (f"no folder holds more than {MAX_MODULES} modules", crowded_folders(files)),
        ("no include cycle between modules",
         [" <-> ".join(c) for c in cycles(module_edges)]),
        ("no include cycle between folders",
         [" <-> ".join(c) for c in cycles(folder_edges)]),
        ("no layer rule broken", violations),
        (f"no .cpp over {MAX_CPP_LINES} lines", long_files(root, files)),
        (f"no function over {MAX_FUNCTION_LINES} lines",
         functions if functions is not None else ["ctags (universal-ctags) is not installed"]),
    ]
    passed = failed = 0
    for rule, broken in checks:
        print(("ok     " if not broken else "FAILED ") + rule)
        for item in broken:
            print("         " + item)
        passed, failed = (passed + 1, failed) if not broken else (passed, failed + 1)
    print(f"structure: {len(files)} files read")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
