#!/usr/bin/env python3
"""The floors of the engine, checked on every #include: runtime -> model -> rl -> rl/run -> apps, data beside,
and the paper's math (rl/math/) on its own. scripts/test.sh runs it before building; an include that reaches a floor
it may not fails the run, naming the file, the line and the rule.

  python3 scripts/check_layers.py [--root DIR]

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    root = os.path.normpath(parser.parse_args().root)
    failures, checked = [], 0
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
                    if not target.startswith(PROJECT_FOLDERS) or (target.startswith(allowed)
                                                                  and not target.startswith(denied)):
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    rule = ", ".join(allowed) + "".join(f" (not {d})" for d in denied)
                    failures.append(f"{rel}:{line}: includes {target}, but {folder}/ may include only {rule}")
    print(f"layers: {checked} files checked")
    for f in failures:
        print(f"layers: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
