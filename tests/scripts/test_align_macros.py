"""Tests for scripts/align-macros.py against hand-made fixtures (fixtures/align/)."""

import contextlib
import importlib.util
import io
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "align-macros.py"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "align"

# Worked out by hand from fixtures/align/misaligned.h (columns are 1-based).
MISALIGNED_PROBLEMS = [
    "8: misaligned macro continuation (column 25, expected 23)",
    "9: misaligned macro continuation (column 25, expected 23)",
    "12: misaligned macro continuation (column 20, expected 31)",
    "13: misaligned macro continuation (column 20, expected 31)",
    "15: misaligned macro continuation (column 19, expected 31)",
    "18: misaligned macro continuation (column 25, expected 19)",
    "18: tab before macro continuation",
    "21: trailing whitespace after macro continuation",
]


def load_module():
    spec = importlib.util.spec_from_file_location("align_macros", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


align_tool = load_module()


def run(*args):
    """The tool's main() in this process (fast); run_script runs it as a program."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            returncode = align_tool.main([str(a) for a in args])
        except SystemExit as exit:
            returncode = exit.code
    return subprocess.CompletedProcess(args, returncode, stdout.getvalue(), stderr.getvalue())


def run_script(*args, cwd=None):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


@pytest.fixture
def misaligned_copy(tmp_path):
    path = tmp_path / "misaligned.h"
    shutil.copyfile(FIXTURES / "misaligned.h", path)
    return path


def test_check_reports_every_known_problem(misaligned_copy):
    result = run_script("--check", misaligned_copy)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [f"{misaligned_copy}:{p}" for p in MISALIGNED_PROBLEMS]
    assert "8 problem(s) in 1 file(s)" in result.stderr


def test_check_is_the_default_and_changes_nothing(misaligned_copy):
    before = misaligned_copy.read_bytes()
    result = run(misaligned_copy)
    assert result.returncode == 1
    assert len(result.stdout.splitlines()) == len(MISALIGNED_PROBLEMS)
    assert misaligned_copy.read_bytes() == before


def test_fix_gives_the_hand_aligned_file(misaligned_copy):
    result = run("--fix", misaligned_copy)
    assert result.returncode == 0
    assert result.stdout == f"{misaligned_copy}: fixed 7 line(s)\n"
    assert misaligned_copy.read_bytes() == (FIXTURES / "misaligned.expected.h").read_bytes()


def test_fix_is_idempotent(misaligned_copy):
    run("--fix", misaligned_copy)
    once = misaligned_copy.read_bytes()
    second = run("--fix", misaligned_copy)
    assert second.returncode == 0 and second.stdout == ""
    assert misaligned_copy.read_bytes() == once
    check = run("--check", misaligned_copy)
    assert check.returncode == 0 and check.stdout == "" and check.stderr == ""


def test_diff_shows_exactly_the_fix(misaligned_copy):
    before = misaligned_copy.read_bytes()
    result = run("--diff", misaligned_copy)
    assert result.returncode == 1
    assert misaligned_copy.read_bytes() == before
    lines = result.stdout.splitlines()
    assert lines[0] == f"--- a/{misaligned_copy}"
    assert lines[1] == f"+++ b/{misaligned_copy}"
    original = (FIXTURES / "misaligned.h").read_text().splitlines()
    expected = (FIXTURES / "misaligned.expected.h").read_text().splitlines()
    changed = [n for n in range(len(original)) if original[n] != expected[n]]
    assert [n + 1 for n in changed] == [8, 9, 12, 13, 15, 18, 21]
    removed = [line[1:] for line in lines[2:] if line.startswith("-")]
    added = [line[1:] for line in lines[2:] if line.startswith("+")]
    assert removed == [original[n] for n in changed]
    assert added == [expected[n] for n in changed]


def test_aligned_file_passes_every_mode(tmp_path):
    path = tmp_path / "aligned.h"
    shutil.copyfile(FIXTURES / "misaligned.expected.h", path)
    for mode in ("--check", "--diff", "--fix"):
        result = run(mode, path)
        assert (result.returncode, result.stdout) == (0, ""), mode
    assert path.read_bytes() == (FIXTURES / "misaligned.expected.h").read_bytes()


def test_non_macro_continuations_are_left_alone(tmp_path):
    # Block comments, spliced // comments, raw strings, spliced strings and #if continuations.
    path = tmp_path / "untouched.cpp"
    shutil.copyfile(FIXTURES / "untouched.cpp", path)
    assert run("--check", path).returncode == 0
    assert run("--diff", path).stdout == ""
    run("--fix", path)
    assert path.read_bytes() == (FIXTURES / "untouched.cpp").read_bytes()


def test_lexer_traps_do_not_hide_the_macros_after_them():
    result = run("--check", FIXTURES / "traps.cpp")
    lines = [int(line.split(":")[1]) for line in result.stdout.splitlines()]
    # Every AFTER_* macro; INSIDE_RAW_STRING (line 23) is string content.
    assert lines == [4, 7, 10, 13, 16, 20, 26]


def test_crlf_line_endings_are_kept(tmp_path):
    path = tmp_path / "crlf.c"
    path.write_bytes(b"#define A(x)   \\\r\n    (x) + \\\r\n    1\r\nint a;\r\n")
    assert run("--check", path).stdout.splitlines() == [
        f"{path}:1: misaligned macro continuation (column 16, expected 14)",
        f"{path}:2: misaligned macro continuation (column 11, expected 14)",
    ]
    run("--fix", path)
    assert path.read_bytes() == b"#define A(x) \\\r\n    (x) +    \\\r\n    1\r\nint a;\r\n"


def test_tabs_in_content_count_to_the_next_multiple_of_8(tmp_path):
    path = tmp_path / "tabs.c"
    # "\tx = 1;" spans columns 1..14, so the backslash belongs in column 16.
    path.write_text("#define T \\\n\tx = 1; \\\n\ty\n")
    assert run("--check", path).stdout.splitlines() == [
        f"{path}:1: misaligned macro continuation (column 11, expected 16)",
    ]
    run("--fix", path)
    assert path.read_text() == "#define T      \\\n\tx = 1; \\\n\ty\n"


def test_diff_marks_a_changed_last_line_without_newline(tmp_path):
    path = tmp_path / "eof.h"
    path.write_text("#define E \\\n  1  \\")
    assert run("--diff", path).stdout.splitlines()[-4:] == [
        "-  1  \\",
        "\\ No newline at end of file",
        "+  1       \\",
        "\\ No newline at end of file",
    ]


def test_folders_are_searched_for_c_sources_only(tmp_path):
    misaligned = "#define M(x)  \\\n    (x)\n"
    for name in ("src/kernel.c", "src/deep/ops.hpp", "src/notes.txt", "src/.cache/old.h"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(misaligned)
    result = run_script("--check", "src", cwd=tmp_path)
    assert result.stdout.splitlines() == [
        "src/deep/ops.hpp:1: misaligned macro continuation (column 15, expected 14)",
        "src/kernel.c:1: misaligned macro continuation (column 15, expected 14)",
    ]
    # A file named explicitly is checked whatever its extension.
    assert run("--check", tmp_path / "src/notes.txt").returncode == 1


def test_missing_path_is_a_usage_error(tmp_path):
    result = run("--check", tmp_path / "nowhere")
    assert result.returncode == 2
    assert "no such file or folder" in result.stderr


def test_random_macros_align_to_one_space_after_the_longest_line():
    rng = random.Random(7)
    words = ["x", "(a)", "v##_n", "\"s\\\\\"", "'\\''", "/* c */", "do {", "} while (0)", "\tint y;"]
    for _ in range(300):
        count = rng.randint(1, 6)
        contents = ["#define RANDOM(a)"] + [
            "    " + " ".join(rng.choice(words) for _ in range(rng.randint(0, 4))) for _ in range(count - 1)]
        lines = [c + rng.choice([" ", "  ", "\t", "", "      "]) + "\\" + rng.choice(["", " ", "\t"]) + "\n"
                 for c in contents] + ["    last\n", "int after = 0;\n"]
        problems, fixed = align_tool.check_lines(lines)
        widths = [len(c.rstrip(" \t").expandtabs(8)) for c in contents]
        for index, content in enumerate(contents):
            kept = content.rstrip(" \t")
            assert fixed[index] == kept + " " * (max(widths) + 1 - widths[index]) + "\\\n"
        assert fixed[count:] == lines[count:]
        assert (problems == []) == (fixed == lines)
        assert align_tool.check_lines(fixed) == ([], fixed)


def test_a_block_comment_carries_a_define_over_a_plain_line_break(tmp_path):
    path = tmp_path / "comment.h"
    path.write_text("#define C(x) (x) /* a comment\n   over two lines */ +  \\\n    1\n"
                    "int after; /* a comment\n   outside a macro */ +  \\\n    1;\n")
    assert run("--check", path).stdout.splitlines() == [
        f"{path}:2: misaligned macro continuation (column 25, expected 24)",
    ]
