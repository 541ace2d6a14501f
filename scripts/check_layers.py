#!/usr/bin/env python3
"""The floors of the engine, checked on every #include: runtime -> model -> rl -> rl/run -> apps, data beside,
and the paper's math (rl/math/) on its own. scripts/test.sh runs it before building; an include that reaches
a floor it may not fails the run, naming the file, the line and the rule.

  python3 scripts/check_layers.py [--root DIR]

Inside rl/math/ no file reaches itself through its includes (NAME.h and NAME.cpp count as one).
(The build enforces rl/math/ too: it is compiled seeing only itself, runtime/error.h,
runtime/config_codec.h and runtime/random.h, CMakeLists.txt.)
"""
import argparse
import os
import re
import sys

# Folder -> the project folders (or single headers) its files may include, and the folders inside those it
# may not. The first matching folder wins. rl/run/ (the trainer, its state, run directory and logs) is a floor
# above the rest of rl/: the step, SFT, evaluation and the schema never reach up into it.
RULES = [
    ("rl/math", ("rl/math/", "runtime/error.h", "runtime/config_codec.h", "runtime/random.h"), ()),
    ("rl/run", ("rl/", "model/", "runtime/", "data/"), ()),
    ("runtime", ("runtime/",), ()),
    ("data", ("data/", "runtime/"), ()),
    ("model", ("model/", "runtime/", "data/"), ()),
    ("rl", ("rl/", "model/", "runtime/", "data/"), ("rl/run/",)),
    ("apps", ("apps/", "rl/", "model/", "runtime/", "data/"), ()),
]
PROJECT_FOLDERS = ("runtime/", "data/", "model/", "rl/", "apps/", "tests/")
SUFFIXES = (".cpp", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)
# Folders whose files may not reach themselves through their includes, a file pair NAME.h + NAME.cpp taken as
# one unit: the paper's math stays a stack of files, each testable with what is below it.
ACYCLIC = ("rl/math",)


def loops(includes):
    """A failure for each loop: an include (unit, file, line, target unit) through which its unit reaches
    itself, named once per set of units."""
    graph = {}
    for unit, _, _, target in includes:
        graph.setdefault(unit, set()).add(target)
    found, named = [], set()
    for unit, rel, line, target in includes:
        path, seen = {target: None}, [target]  # breadth-first from the target back to the unit
        while seen and unit not in path:
            here = seen.pop(0)
            for nxt in sorted(graph.get(here, ())):
                if nxt not in path:
                    path[nxt] = here
                    seen.append(nxt)
        if unit in path:
            chain, at = [unit], path[unit]
            while at is not None:
                chain.append(at)
                at = path[at]
            if frozenset(chain) in named:
                continue
            named.add(frozenset(chain))
            found.append(f"{rel}:{line}: includes a loop: {unit} -> " + " -> ".join(reversed(chain)))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    root = os.path.normpath(parser.parse_args().root)
    failures, checked, acyclic_includes = [], 0, []
    for folder, allowed, denied in RULES:
        for directory, subdirs, files in os.walk(os.path.join(root, folder)):
            subdirs.sort()
            for name in sorted(files):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(directory, name)
                rel = os.path.relpath(path, root)
                if next(f for f, _, _ in RULES if rel.startswith(f + "/")) != folder:
                    continue  # a deeper rule (rl/math, rl/run inside rl) owns it
                checked += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    target = m.group(1)
                    line = text.count("\n", 0, m.start()) + 1
                    unit, target_unit = os.path.splitext(rel)[0], os.path.splitext(target)[0]
                    if rel.startswith(tuple(f + "/" for f in ACYCLIC)) and unit != target_unit:
                        acyclic_includes.append((unit, rel, line, target_unit))
                    if not target.startswith(PROJECT_FOLDERS) or (target.startswith(allowed)
                                                                  and not target.startswith(denied)):
                        continue
                    rule = ", ".join(allowed) + "".join(f" (not {d})" for d in denied)
                    failures.append(f"{rel}:{line}: includes {target}, but {folder}/ may include only {rule}")
    failures += loops(acyclic_includes)
    print(f"layers: {checked} files checked")
    for f in failures:
        print(f"layers: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
