#!/usr/bin/env python3
"""The size budget, in the spirit of tinygrad's line count: the engine's production code (apps, data, model,
rl, runtime together) has one line cap, tests/ and scripts/ keep a cap each, and no function in the engine is
longer than 80 lines. scripts/test.sh (and so CI) runs it before building; a total or function over its cap
fails the run with the numbers. With --diff it also prints each production folder's lines against a base
(the merge base with origin/main or main, else the last tag, else HEAD~1), e.g. `size: rl 8797 -> 8760 (-37)`.

  python3 scripts/size_budget.py [--root DIR] [--function-cap N] [--production-cap N] [--diff]

Lines are physical lines of C++/CUDA (.cpp .h .cu .cuh), Python and shell files, blank lines and comments
included (test fixtures and fuzz corpora are data, not counted). A function's length runs from the line of
its opening brace to the line of its closing one, lambdas and nested blocks inside it included.
"""
import argparse
import os
import re
import subprocess
import sys

# One cap for the production folders together: features move lines between folders freely, and the total is
# what a reader pays. Raise it in the commit that needs it, with a line in docs/ARCHITECTURE.md ("Budget")
# saying what the lines bought.
PRODUCTION_FOLDERS = ("apps", "data", "model", "rl", "runtime")
PRODUCTION_CAP = 37750
# tests/ and scripts/ are not production: each keeps its own cap (raised the same way, with the reason).
OTHER_CAPS = {
    "tests": 20400,
    "scripts": 4450,
}
# Folders whose functions the 80-line cap covers (tests are left free to be long and literal).
FUNCTION_FOLDERS = PRODUCTION_FOLDERS
FUNCTION_CAP = 80
SOURCE_SUFFIXES = (".cpp", ".h", ".cu", ".cuh")
COUNTED_SUFFIXES = SOURCE_SUFFIXES + (".py", ".sh")
SKIPPED_PARTS = ("fixtures", "corpus")
MAX_FILE_BYTES = 4 << 20


def source_files(root, folder, suffixes):
    for directory, subdirs, files in os.walk(os.path.join(root, folder)):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_PARTS)
        for name in sorted(files):
            if name.endswith(suffixes):
                yield os.path.join(directory, name)


def read(path):
    if os.path.getsize(path) > MAX_FILE_BYTES:
        sys.exit(f"size budget: {path}: larger than {MAX_FILE_BYTES} bytes; is it a source file?")
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def blank_comments_and_literals(src):
    """The source with comments, string and character literals and preprocessor lines emptied, newlines
    kept (so braces and parentheses inside them do not count and line numbers stay). A preprocessor line
    ends what came before it, as a ';' does."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src[i] == "#" and src[src.rfind("\n", 0, i) + 1:i].strip() == "":
            k = src.find("\n", i)
            while k >= 0 and src[k - 1] == "\\":  # a directive continued on the next line
                k = src.find("\n", k + 1)
            k = n if k < 0 else k
            out.append(";" + "\n" * src.count("\n", i, k))
            i = k
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
            continue
        raw = re.match(r'R"([^()\\\s]{0,16})\(', src[i:i + 20]) if src[i] == "R" else None
        if raw and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            j = src.find(close, i + raw.end())
            j = n if j < 0 else j + len(close)
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
            continue
        quote = src[i]
        is_digit_separator = quote == "'" and i > 0 and src[i - 1].isalnum() and i + 1 < n and src[i + 1].isalnum()
        if quote in "\"'" and not is_digit_separator:
            j = i + 1
            while j < n and src[j] != quote and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(quote * 2)
            i = j + 1
            continue
        out.append(src[i])
        i += 1
    return "".join(out)


SCOPE_HEADER = re.compile(r'^(template\s*<.*>\s*)?(inline\s+)?(namespace|class|struct|union|enum)\b|extern\s*""')


def function_name(header):
    header = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", header)
    before_paren = header.split("(", 1)[0]
    names = re.findall(r"(operator\s*\S+|[\w:~]+)\s*$", before_paren)
    return names[0] if names else "?"


def long_functions(path, cap):
    """(length, name, first line) of each top-level function body longer than cap lines."""
    text = blank_comments_and_literals(read(path))
    found, stack, header_start, line = [], [], 0, 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            in_function = any(kind == "function" for kind, _, _ in stack)
            header = " ".join(text[header_start:i].split())
            if in_function:
                kind = "block"
            elif SCOPE_HEADER.search(header):
                kind = "scope"
            elif "(" in header and not header.endswith("="):
                kind = "function"
            else:
                kind = "other"
            stack.append((kind, line, function_name(header) if kind == "function" else ""))
            header_start = i + 1
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                length = line - start + 1
                if kind == "function" and length > cap:
                    found.append((length, name, start))
            if not any(kind == "function" for kind, _, _ in stack):
                header_start = i + 1
        elif c == ";" and not any(kind == "function" for kind, _, _ in stack):
            header_start = i + 1
    return found


def folder_lines(root, folder):
    return sum(read(p).count("\n") for p in source_files(root, folder, COUNTED_SUFFIXES))


def git(root, *args):
    """git's stdout (bytes), or None when git fails (no repository, no such revision)."""
    try:
        done = subprocess.run(["git", "-C", root, *args], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def diff_base(root):
    """(revision, what it is) to compare with: the first of the merge base with origin/main or main, the last
    tag and HEAD~1 that is not HEAD itself; None when there is none (not a checkout, a single commit)."""
    head = git(root, "rev-parse", "HEAD")
    tag = git(root, "describe", "--tags", "--abbrev=0")
    candidates = [(git(root, "merge-base", "HEAD", "origin/main"), "merge base with origin/main"),
                  (git(root, "merge-base", "HEAD", "main"), "merge base with main"),
                  (tag and git(root, "rev-parse", tag.decode().strip() + "^{commit}"), "last tag"),
                  (git(root, "rev-parse", "HEAD~1"), "HEAD~1")]
    for rev, what in candidates:
        if rev and rev != head:
            return rev.decode().strip(), what
    return None


def lines_at(root, rev, folder):
    """Lines of FOLDER at commit REV, counted as folder_lines counts the working tree: one ls-tree and one
    cat-file process per folder, nothing written to disk."""
    listing = git(root, "ls-tree", "-r", "-z", rev, "--", folder + "/")
    if listing is None:
        return 0
    blobs = []
    for entry in listing.decode("utf-8", "replace").split("\0"):  # "<mode> <type> <object>\t<path>"
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        parts = path.split("/")
        if (len(fields) == 3 and fields[1] == "blob" and path.endswith(COUNTED_SUFFIXES)
                and not any(p in SKIPPED_PARTS for p in parts[:-1])):
            blobs.append(fields[2])
    if not blobs:
        return 0
    done = subprocess.run(["git", "-C", root, "cat-file", "--batch"], input="\n".join(blobs).encode() + b"\n",
                          capture_output=True, check=True, timeout=120)
    out, at, total = done.stdout, 0, 0
    for _ in blobs:  # each: "<oid> blob <size>\n<content>\n"
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        total += out.count(b"\n", header_end + 1, header_end + 1 + size)
        at = header_end + 1 + size + 1
    return total


def print_diff(root, now):
    base = diff_base(root)
    if base is None:
        print("size: no base to compare with (not a git checkout, or a single commit)")
        return
    rev, what = base
    print(f"size: production lines against {what} ({rev[:10]})")
    before_total = 0
    for folder in PRODUCTION_FOLDERS:
        before = lines_at(root, rev, folder)
        before_total += before
        print(f"size: {folder} {before} -> {now[folder]} ({now[folder] - before:+d})")
    total = sum(now.values())
    print(f"size: production {before_total} -> {total} ({total - before_total:+d})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--root", default=default_root)
    parser.add_argument("--function-cap", type=int, default=FUNCTION_CAP)
    parser.add_argument("--production-cap", type=int, default=PRODUCTION_CAP)
    parser.add_argument("--diff", action="store_true", help="also print the size diff against a base commit")
    args = parser.parse_args()
    root = os.path.normpath(os.path.abspath(args.root))
    failures = []
    print(f"{'folder':10} {'lines':>7} {'cap':>7}")
    production = {folder: folder_lines(root, folder) for folder in PRODUCTION_FOLDERS}
    for folder, lines in production.items():
        print(f"{folder:10} {lines:7d}")
    total = sum(production.values())
    print(f"{'production':10} {total:7d} {args.production_cap:7d}")
    if total > args.production_cap:
        failures.append(f"production ({' + '.join(PRODUCTION_FOLDERS)}) has {total} lines, over its cap of "
                        f"{args.production_cap}")
    for folder, cap in OTHER_CAPS.items():
        lines = folder_lines(root, folder)
        print(f"{folder:10} {lines:7d} {cap:7d}")
        if lines > cap:
            failures.append(f"{folder}/ has {lines} lines, over its cap of {cap}")
    for folder in FUNCTION_FOLDERS:
        for path in source_files(root, folder, SOURCE_SUFFIXES):
            rel = os.path.relpath(path, root)
            for length, name, start in long_functions(path, args.function_cap):
                failures.append(f"{rel}:{start}: {name} is {length} lines, over the cap of {args.function_cap}")
    print(f"functions: cap {args.function_cap} lines")
    if args.diff:
        print_diff(root, production)
    for f in failures:
        print(f"size budget: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
