#!/usr/bin/env python3
"""Checks, shows or fixes the trailing-backslash alignment of multi-line #define macros.

Rule: in one macro, every continuation backslash sits one space after the end of the longest
line that carries a backslash (columns count tabs to the next multiple of 8). The padding before
a backslash is spaces only, and nothing follows the backslash.

Only #define directives are touched. Continuation lines of other code (a string continued with
a backslash, #if/#pragma directives, // comments outside macros) are left alone, as is anything
inside block comments and C++ raw string literals.

Usage: align-macros.py [--check | --diff | --fix] PATH...
  --check  (default) print file:line: problems, exit 1 if any
  --diff   print a unified diff of what --fix would change, exit 1 if it is not empty
  --fix    rewrite the files in place (a second --fix changes nothing)
Folders are searched recursively for .c .cc .cpp .h .hpp files (hidden folders are skipped);
files named explicitly are processed whatever their extension.
"""

import os
import sys

# scripts/inspect.py shares its name with the standard library's inspect module, and a script's
# own folder comes first on sys.path: drop it before importing anything that imports inspect.
_SCRIPT_DIR = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != _SCRIPT_DIR]

import argparse
import difflib
import re
from pathlib import Path

SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp"}
TAB_WIDTH = 8

# A physical line that ends in a backslash, possibly followed by blanks (compilers still splice
# those lines, with a warning).
CONTINUATION_RE = re.compile(r"\\([ \t]*)$")
DEFINE_RE = re.compile(r"[ \t]*#[ \t]*define\b")
RAW_STRING_PREFIX_RE = re.compile(r"(?:u8|u|U|L)?R$")
IDENTIFIER_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class LexState:
    """What the line splices carry from one physical line to the next."""

    def __init__(self):
        self.block_comment = False
        self.line_comment = False
        self.quote = None            # '"' or "'" while inside a spliced literal
        self.raw_delimiter = None    # ")delim\"" while inside a raw string literal

    def scan(self, text):
        """Advances through one line's text (without its splice backslash)."""
        i = 0
        while i < len(text):
            if self.block_comment:
                end = text.find("*/", i)
                if end < 0:
                    return
                self.block_comment = False
                i = end + 2
            elif self.line_comment:
                return
            elif self.raw_delimiter is not None:
                end = text.find(self.raw_delimiter, i)
                if end < 0:
                    return
                i = end + len(self.raw_delimiter)
                self.raw_delimiter = None
            elif self.quote is not None:
                c = text[i]
                if c == "\\":
                    i += 2
                    continue
                if c == self.quote:
                    self.quote = None
                i += 1
            else:
                i = self._scan_code(text, i)

    def _scan_code(self, text, i):
        c = text[i]
        two = text[i:i + 2]
        if two == "//":
            self.line_comment = True
            return len(text)
        if two == "/*":
            self.block_comment = True
            return i + 2
        if c == '"':
            prefix = RAW_STRING_PREFIX_RE.search(text, 0, i)
            if prefix and (prefix.start() == 0 or text[prefix.start() - 1] not in IDENTIFIER_CHARS):
                open_paren = text.find("(", i + 1)
                if open_paren >= 0:
                    self.raw_delimiter = ")" + text[i + 1:open_paren] + '"'
                    return open_paren + 1
            self.quote = '"'
            return i + 1
        if c == "'" and not _is_digit_separator(text, i):
            self.quote = "'"
            return i + 1
        return i + 1

    def end_line(self, spliced):
        """A line break: without a splice it ends comments and (unterminated) literals."""
        if not spliced:
            self.line_comment = False
            self.quote = None


def _is_digit_separator(text, i):
    """True for the ' in 1'000'000: the token it continues starts with a digit."""
    start = i
    while start > 0 and (text[start - 1] in IDENTIFIER_CHARS or text[start - 1] in ".'"):
        start -= 1
    return start < i and text[start].isdigit()


def display_width(text):
    return len(text.expandtabs(TAB_WIDTH))


def split_line_ending(line):
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    if line.endswith("\n"):
        return line[:-1], "\n"
    return line, ""


def macro_continuations(lines):
    """Groups of line indices: the lines of one #define that end in a continuation backslash."""
    groups = []
    state = LexState()
    continues = False         # the previous line's logical line goes on
    is_define = False
    current = []
    for index, line in enumerate(lines):
        body, _ = split_line_ending(line)
        if not continues and not state.block_comment and state.raw_delimiter is None:
            is_define = DEFINE_RE.match(body) is not None
        match = CONTINUATION_RE.search(body)
        state.scan(body[:match.start()] if match else body)
        spliced = match is not None and state.raw_delimiter is None
        if spliced and is_define:
            current.append(index)
        state.end_line(spliced)
        # A block comment inside a directive carries the directive over the line break.
        continues = spliced or (is_define and state.block_comment)
        if not continues:
            if current:
                groups.append(current)
            current = []
            is_define = False
    if current:
        groups.append(current)
    return groups


def check_lines(lines):
    """Problems as (line index, message), in line order, and the aligned replacement lines."""
    problems = []
    fixed = list(lines)
    for group in macro_continuations(lines):
        parts = []
        for index in group:
            body, ending = split_line_ending(lines[index])
            match = CONTINUATION_RE.search(body)
            before = body[:match.start()]
            parts.append((index, before, before.rstrip(" \t"), match.group(1), ending))
        expected = max(display_width(content) for _, _, content, _, _ in parts) + 2
        for index, before, content, after, ending in parts:
            column = display_width(before) + 1
            if column != expected:
                problems.append(
                    (index, f"misaligned macro continuation (column {column}, expected {expected})"))
            if "\t" in before[len(content):]:
                problems.append((index, "tab before macro continuation"))
            if after:
                problems.append((index, "trailing whitespace after macro continuation"))
            fixed[index] = content + " " * (expected - 1 - display_width(content)) + "\\" + ending
    return problems, fixed


def source_files(paths):
    for path in paths:
        if path.is_dir():
            found = []
            for root, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                found += [Path(root) / name for name in files if Path(name).suffix in SOURCE_SUFFIXES]
            yield from sorted(found)
        else:
            yield path


def read_lines(path):
    """Lines with their endings; only \\n ends a line (str.splitlines also splits at \\f, \\v, ...)."""
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def unified_diff(path, lines, fixed):
    for line in difflib.unified_diff(lines, fixed, f"a/{path}", f"b/{path}"):
        yield line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Check, diff or fix the trailing-backslash alignment of multi-line #define macros.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", dest="mode", action="store_const", const="check",
                      help="report misaligned continuations, exit 1 if any (default)")
    mode.add_argument("--diff", dest="mode", action="store_const", const="diff",
                      help="print the unified diff --fix would apply, exit 1 if not empty")
    mode.add_argument("--fix", dest="mode", action="store_const", const="fix",
                      help="rewrite the files in place")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders")
    args = parser.parse_args(argv)
    mode = args.mode or "check"

    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        parser.error("no such file or folder: " + ", ".join(missing))

    problem_count = 0
    changed_files = 0
    for path in source_files(args.paths):
        lines = read_lines(path)
        problems, fixed = check_lines(lines)
        if not problems:
            continue
        problem_count += len(problems)
        changed_files += 1
        if mode == "check":
            for index, message in problems:
                print(f"{path}:{index + 1}: {message}")
        elif mode == "diff":
            sys.stdout.writelines(unified_diff(path, lines, fixed))
        else:
            path.write_bytes("".join(fixed).encode("utf-8", errors="surrogateescape"))
            print(f"{path}: fixed {len({index for index, _ in problems})} line(s)")

    if mode == "check" and problem_count:
        print(f"{problem_count} problem(s) in {changed_files} file(s); run with --fix to align",
              file=sys.stderr)
    if mode == "fix":
        return 0
    return 1 if problem_count else 0


if __name__ == "__main__":
    sys.exit(main())
