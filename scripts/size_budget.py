#!/usr/bin/env python3
"""The size budget, in the spirit of tinygrad's line count: every source folder has a line cap a little above
its size when the cap was set, and no function in the engine is longer than 80 lines. scripts/test.sh (and so
CI) runs it before building; a folder or function over its cap fails the run with the numbers.

  python3 scripts/size_budget.py [--root DIR] [--function-cap N]

Lines are physical lines of C++/CUDA (.cpp .h .cu .cuh), Python and shell files, blank lines and comments
included (test fixtures and fuzz corpora are data, not counted). A function's length runs from the line of
its opening brace to the line of its closing one, lambdas and nested blocks inside it included.
"""
import argparse
import os
import re
import sys

# Lines per folder. Raise a cap in the commit that needs it, with the reason in the message.
FOLDER_CAPS = {
    "apps": 3520,
    "data": 9300,
    "model": 2300,
    "rl": 9300,
    "runtime": 13400,
    "tests": 20100,
    "scripts": 4300,
}
# Folders whose functions the 80-line cap covers (tests are left free to be long and literal).
FUNCTION_FOLDERS = ("apps", "data", "model", "rl", "runtime")
FUNCTION_CAP = 80
# Functions still over the cap, each held at its length today: they may shrink, not grow. Empty is the goal.
# The three CUDA kernels stay whole until a GPU can show that splitting them costs no registers or speed.
KNOWN_LONG = {
    "runtime/cuda/cuda_attention_backward.cuh:bwd_kv_kernel": 90,
}

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--root", default=default_root)
    parser.add_argument("--function-cap", type=int, default=FUNCTION_CAP)
    args = parser.parse_args()
    root = os.path.normpath(os.path.abspath(args.root))
    failures = []
    print(f"{'folder':10} {'lines':>7} {'cap':>7}")
    for folder, cap in FOLDER_CAPS.items():
        lines = sum(read(p).count("\n") for p in source_files(root, folder, COUNTED_SUFFIXES))
        print(f"{folder:10} {lines:7d} {cap:7d}")
        if lines > cap:
            failures.append(f"{folder}/ has {lines} lines, over its cap of {cap}")
    held, seen = 0, set()
    for folder in FUNCTION_FOLDERS:
        for path in source_files(root, folder, SOURCE_SUFFIXES):
            rel = os.path.relpath(path, root)
            for length, name, start in long_functions(path, args.function_cap):
                key = f"{rel}:{name}"
                seen.add(key)
                if key in KNOWN_LONG and length <= KNOWN_LONG[key] and args.function_cap == FUNCTION_CAP:
                    held += 1
                    continue
                failures.append(f"{rel}:{start}: {name} is {length} lines, over the cap of {args.function_cap}")
    if args.function_cap == FUNCTION_CAP:  # a held function that shrank or went must leave the list
        for key in sorted(set(KNOWN_LONG) - seen):
            if os.path.exists(os.path.join(root, key.split(":")[0])) or root == default_root:
                failures.append(f"{key} is no longer over the cap (or was renamed): take it out of KNOWN_LONG")
    print(f"functions: cap {args.function_cap} lines; {held} known ones held at today's length")
    for f in failures:
        print(f"size budget: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
