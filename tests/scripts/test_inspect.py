"""Tests for scripts/inspect.py.

fixtures/hexagon/known_spills.S is hand-written Hexagon code whose loops, spills and promotions
are known by construction (see its comments). The C fixtures are compiled at test time with
clang-22; fixtures/hexagon/disassembly.txt holds saved llvm-objdump output of known_spills.S and
vector_spills.c so that the parsing is tested without the toolchain too.
"""

import contextlib
import importlib.util
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "inspect.py"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hexagon"
DISASSEMBLY = FIXTURES / "disassembly.txt"

# Only a missing clang-22 skips: with it, a missing ld.lld-22 or llvm-22 tool is a failure.
needs_toolchain = pytest.mark.skipif(
    shutil.which("clang-22") is None,
    reason="clang-22 is not installed (CI installs it: apt-get install clang-22 lld-22 llvm-22)")
COMPILE = ["clang-22", "--target=hexagon", "-mv73", "-mhvx", "-mhvx-length=128b", "-O2", "-g", "-c"]
SOURCES = ("known_spills.S", "vector_spills.c", "no_spills.c", "promotions.c", "clean.c")

KNOWN_FUNCTIONS = ("^(hw_loop_spills|nested_loops|shared_loop_end|branch_loop|no_loop|split_loop|"
                   "late_loop_end|switch_loop|flow_order|double_math|float_math)$")


def known_spill_report(source):
    """--spills over known_spills.S, from the counts written in its comments."""
    return [
        f"{source}: hw_loop_spills: warning: 2 vector spills, 2 vector reloads in loops (first at 0x10)",
        f"{source}: hw_loop_spills: warning: 1 scalar spill in loops (first at 0x30)",
        f"{source}: hw_loop_spills: info: 1 scalar spill, 1 scalar reload outside loops",
        f"{source}: nested_loops: warning: 1 vector spill, 2 vector reloads in loops (first at 0x58)",
        f"{source}: shared_loop_end: warning: 1 vector reload in loops (first at 0x90)",
        f"{source}: branch_loop: warning: 1 scalar reload in loops (first at 0x98)",
        f"{source}: no_loop: info: 1 vector spill, 1 scalar reload outside loops",
        f"{source}: split_loop: warning: 1 vector reload in loops (first at 0xb4)",
        f"{source}: split_loop: warning: 1 scalar spill in loops (first at 0xc0)",
        f"{source}: split_loop: info: 1 scalar reload outside loops",
        f"{source}: late_loop_end: warning: 1 vector spill in loops (first at 0xe0)",
        f"{source}: switch_loop: warning: 1 scalar spill in loops (first at 0xf4)",
        f"{source}: flow_order: info: 1 vector spill outside loops",
        "summary: 11 functions in 1 file: 5 with vector spill code in loops, "
        "4 with scalar spill code in loops, 4 with spill code outside loops",
    ]


def known_promotion_line(source, severity="warning"):
    return (f"{source}: double_math: {severity}: 1 float->double conversion, "
            "2 double-precision instructions (dfadd, dfcmp), 1 other double conversion (convert_df2sf), "
            "2 double-precision calls (__hexagon_divdf3, sin) (first at 0x12c)")


def load_module():
    # Not under the name "inspect": that would replace the standard library module.
    spec = importlib.util.spec_from_file_location("hexnpu_inspect", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


inspect_tool = load_module()


def run(*args):
    """The tool's main() in this process (fast); run_script runs it as a program."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            returncode = inspect_tool.main([str(a) for a in args])
        except SystemExit as exit:
            returncode = exit.code
    return subprocess.CompletedProcess(args, returncode, stdout.getvalue(), stderr.getvalue())


def run_script(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def flagged_functions(stdout, marker):
    """Function names of the report lines that contain marker."""
    return {line.split(": ")[1] for line in stdout.splitlines()
            if marker in line and not line.startswith("summary")}


# --- saved disassembly: no toolchain needed ------------------------------------------------------

def test_spills_of_the_known_fixture():
    # As a program: scripts/inspect.py must not be mistaken for the standard library's inspect.
    result = run_script("--spills", "--func", KNOWN_FUNCTIONS, DISASSEMBLY)
    assert result.returncode == 0
    assert result.stdout.splitlines() == known_spill_report("known_spills.o")


def test_strict_makes_vector_spills_in_loops_errors_only():
    result = run("--spills", "--strict", "--func", KNOWN_FUNCTIONS, DISASSEMBLY)
    assert result.returncode == 1
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    assert [line.split(": ")[1] for line in errors] == [
        "hw_loop_spills", "nested_loops", "shared_loop_end", "split_loop", "late_loop_end"]
    assert all(" vector " in line for line in errors)
    assert "known_spills.o: branch_loop: warning: 1 scalar reload in loops (first at 0x98)" in result.stdout


def test_strict_passes_with_scalar_spills_only():
    result = run("--spills", "--strict", "--func", "^(branch_loop|no_loop|switch_loop)$", DISASSEMBLY)
    assert result.returncode == 0
    assert "error" not in result.stdout


def test_compiled_vector_spills_are_all_the_stores_in_its_loop():
    # The kernel writes dst only after its loop, so every vector store inside the loop is a spill.
    text = DISASSEMBLY.read_text()
    listing = text[text.index("<compute_spilling_sums>:"):]
    loop_start = int(re.search(r"loop0\((0x[0-9a-f]+),", listing).group(1), 16)
    loop_end = int(re.search(r"^\s*([0-9a-f]+):.*:endloop0$", listing, re.M).group(1), 16)
    stores = [line for line in listing.splitlines()
              if (m := re.match(r"^\s*([0-9a-f]+):\s.*\bvmem\([^)]*\) = v", line))
              and loop_start <= int(m.group(1), 16) <= loop_end]
    assert len(stores) > 0
    result = run("--spills", "--func", "compute_spilling_sums", DISASSEMBLY)
    line = next(line for line in result.stdout.splitlines() if "in loops" in line)
    assert re.search(rf": warning: {len(stores)} vector spills, [1-9]\d* vector reloads in loops", line)


def test_promotions_of_the_known_fixture():
    result = run("--promotions", DISASSEMBLY)
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        known_promotion_line("known_spills.o"),
        "summary: 12 functions in 2 files: 1 with double precision",
    ]
    strict = run("--promotions", "--strict", DISASSEMBLY)
    assert strict.returncode == 1
    assert strict.stdout.splitlines()[0] == known_promotion_line("known_spills.o", "error")
    assert run("--promotions", "--strict", "--func", "float_math", DISASSEMBLY).returncode == 0


def test_calls_names_each_caller_of_a_matching_symbol():
    result = run("--calls", "^(__hexagon_divdf3|sinf)$", DISASSEMBLY)
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "known_spills.o: branch_loop: warning: 1 call to sinf (first at 0xa0)",  # its tail call
        "known_spills.o: double_math: warning: 1 call to __hexagon_divdf3 (first at 0x13c)",
        "known_spills.o: float_math: warning: 1 call to sinf (first at 0x14c)",
        r"summary: 12 functions in 2 files: 3 with calls matching ^(__hexagon_divdf3|sinf)$",
    ]
    strict = run("--calls", "sin", "--strict", "--func", "double_math", DISASSEMBLY)
    assert strict.returncode == 1
    assert strict.stdout.splitlines()[0] == "known_spills.o: double_math: error: 1 call to sin (first at 0x138)"
    assert run("--calls", "__hexagon_udiv", "--strict", DISASSEMBLY).returncode == 0
    assert run("--calls", "(", DISASSEMBLY).returncode == 2


def test_disasm_marks_nested_loops_and_annotates_spills():
    result = run("--disasm", "nested_loops", DISASSEMBLY)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("nested_loops  (known_spills.o, section .text, 0x3c-0x7c, 2 loops)")

    def line_at(address):
        return next(line for line in lines if line.startswith(f"{address:>8x}: "))

    assert "          +-- loop 1: 0x4c-0x78, hardware loop1" in lines
    assert "          |+-- loop 2: 0x60-0x68, hardware loop0" in lines
    assert lines.index("          |+-- end of loop 2") == lines.index(line_at(0x68)) + 1
    assert lines.index("          +-- end of loop 1") == lines.index(line_at(0x78)) + 1
    assert line_at(0x48).startswith("      48:    { loop1(0x4c,#0x4) }")
    assert line_at(0x58).startswith("      58: |  { v7 = vmem(r16+#0x0) }")
    assert line_at(0x60).startswith("      60: || { v8 = vmemu(r29+#0x1) }")
    assert line_at(0x58).endswith("<-- vector reload")
    assert line_at(0x60).endswith("<-- vector reload")
    assert line_at(0x68).endswith(":endloop0           <-- vector spill")
    for quiet in (0x54, 0x6c):      # r3 after a call; a stored immediate
        assert "<--" not in line_at(quiet)
    assert line_at(0x50).endswith("(relocation: external_helper) }")
    assert lines[-1] == ("summary: 2 loops; in loops: 1 vector spill, 2 vector reloads; "
                         "outside loops: no spills; no double precision")


def test_disasm_of_loops_ending_in_one_packet_and_of_a_branch_loop():
    shared = run("--disasm", "shared_loop_end", DISASSEMBLY).stdout.splitlines()
    end = next(i for i, line in enumerate(shared) if line.startswith("      90:"))
    assert shared[end].endswith(":endloop01                  <-- vector reload")
    assert shared[end + 1:end + 3] == ["          |+-- end of loop 2", "          +-- end of loop 1"]

    branch = run("--disasm", "branch_loop", DISASSEMBLY).stdout.splitlines()
    assert branch[0].endswith("0x98-0xa0, 1 loop)")          # the tail call is no loop
    assert branch[1] == "          +-- loop 1: 0x98-0x9c, branch loop"
    assert branch[2].endswith("<-- scalar reload")

    double = run("--disasm", "double_math", DISASSEMBLY).stdout
    for note in ("float->double", "double instruction", "double conversion",
                 "double call: sin", "double call: __hexagon_divdf3"):
        assert f"<-- {note}\n" in double


def test_loops_and_registers_follow_control_flow_not_address_order():
    def disassembly(function):
        lines = run("--disasm", function, DISASSEMBLY).stdout.splitlines()
        listing = [line for line in lines if re.match(r"^ +[0-9a-f]+: ", line)]
        return lines, {int(line.split(":")[0], 16): line for line in listing}

    # A jump back to an earlier address that closes no cycle.
    lines, at = disassembly("no_loop")
    assert lines[0].endswith(", 0 loops)")
    assert all(line[10] == " " for line in at.values())
    # The exit between the two parts of a loop is not in it.
    lines, at = disassembly("split_loop")
    assert [address for address, line in at.items() if line[10] == "|"] == [0xb4, 0xb8, 0xc0, 0xc4, 0xc8]
    assert at[0xbc].endswith("<-- scalar reload")
    # A hardware loop whose :endloop0 packet comes before its start.
    lines, at = disassembly("late_loop_end")
    assert "          +-- loop 1: 0xd4-0xe4, hardware loop0" in lines
    assert [address for address, line in at.items() if line[10] == "|"] == [0xd4, 0xd8, 0xe0, 0xe4]
    # A case reached only through a jump table.
    lines, at = disassembly("switch_loop")
    assert at[0xf4].startswith("      f4: | { memw(r29+#0x0) = r2 }")
    # r2 is the stack only on the path that jumps over the data store placed after it.
    lines, at = disassembly("flow_order")
    assert "<--" not in at[0x118]
    assert at[0x120].endswith("<-- vector spill")


def test_usage_errors(tmp_path):
    unknown = run("--disasm", "nested_loop", DISASSEMBLY)
    assert unknown.returncode == 2 and "no function nested_loop (close: nested_loops" in unknown.stderr
    no_match = run("--spills", "--func", "^compute_nothing", DISASSEMBLY)
    assert no_match.returncode == 2 and "no function matches --func" in no_match.stderr
    assert run("--disasm", "nested_loops", "--strict", DISASSEMBLY).returncode == 2
    assert run("--addr2line", "0x10", DISASSEMBLY).returncode == 2     # needs the ELF file
    assert run("--spills", tmp_path / "missing.so").returncode == 2
    x86 = tmp_path / "x86.txt"
    x86.write_text("a.o:\tfile format elf64-x86-64\n\nDisassembly of section .text:\n")
    wrong = run("--spills", x86)
    assert wrong.returncode == 2 and "not a Hexagon ELF" in wrong.stderr


def test_parser_handles_raw_bytes_and_braces_in_demangled_names():
    text = "\n".join([
        "k.o:\tfile format elf32-hexagon",
        "Disassembly of section .text.k:",
        "00000000 <k(int)::{lambda()#1}::operator()() const>:",
        "       0:\t00 40 00 7f\t7f004000 { \tnop",
        "       4:\t1e c0 9e 96\t969ec01e   \tcall 0x20 <f<{lambda()#2}>(int)> }",
        "       8:\t00 c0 9d a1\ta19dc000 { \tmemw(r29+#0x0) = r0 }  :endloop0",
    ])
    [function] = inspect_tool.parse_objdump(text)
    assert function.name == "k(int)::{lambda()#1}::operator()() const"
    assert function.section == ".text.k"
    assert [[i.address for i in p.instructions] for p in function.packets] == [[0, 4], [8]]
    assert function.packets[0].instructions[1].operations == ["call 0x20"]
    assert function.packets[0].instructions[1].target == "f<{lambda()#2}>(int)"
    assert function.packets[1].endloops == {0}
    assert [(a.kind, a.direction) for a in inspect_tool.stack_accesses(function)] == [("scalar", "spill")]


def test_inlined_frames_are_described_innermost_first():
    frames = [{"FunctionName": "helper", "FileName": "k.c", "Line": 2, "Column": 21},
              {"FunctionName": "outer", "FileName": "k.c", "Line": 7, "Column": 14}]
    assert inspect_tool.describe_frames(frames) == "at k.c:2:21 in helper, inlined at k.c:7:14 in outer"
    assert inspect_tool.describe_frames(frames[1:]) == "at k.c:7:14"
    assert inspect_tool.describe_frames([{"FunctionName": "f", "FileName": "??", "Line": 0}]) == \
        "(no line information)"


# --- fixtures compiled now -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("hexagon")
    for source in SOURCES:
        subprocess.run(COMPILE + [str(FIXTURES / source), "-o", str(out / f"{Path(source).stem}.o")],
                       check=True)
    objects = [str(out / f"{Path(source).stem}.o") for source in SOURCES]
    subprocess.run(["ld.lld-22", "-shared", "-nostdlib", *objects, "-o", str(out / "libfixtures.so")],
                   check=True)
    return out


@needs_toolchain
def test_assembled_fixture_gives_the_known_report(built):
    path = built / "known_spills.o"
    assert run("--spills", "--func", KNOWN_FUNCTIONS, path).stdout.splitlines() == known_spill_report(path)
    assert run("--promotions", path).stdout.splitlines()[0] == known_promotion_line(path)


@needs_toolchain
def test_only_the_spilling_kernel_spills_vectors_in_loops(built):
    objects = [built / f"{Path(source).stem}.o" for source in SOURCES[1:]]
    result = run("--spills", "--strict", *objects)
    assert result.returncode == 1
    assert flagged_functions(result.stdout, "vector spill") & flagged_functions(result.stdout, "in loops") \
        == {"compute_spilling_sums"}
    clean = run("--spills", "--strict", built / "no_spills.o", built / "clean.o", built / "promotions.o")
    assert clean.returncode == 0
    assert "in loops (" not in clean.stdout


@needs_toolchain
def test_only_promoting_functions_are_reported(built):
    objects = [built / f"{Path(source).stem}.o" for source in SOURCES[1:]]
    result = run("--promotions", *objects)
    assert flagged_functions(result.stdout, "warning") == {"scale_by_double_constant", "sine_through_double"}
    lines = result.stdout.splitlines()
    assert "1 float->double conversion" in next(line for line in lines if "scale_by_double_constant" in line)
    assert "1 double-precision call (sin)" in next(line for line in lines if "sine_through_double" in line)
    assert run("--promotions", "--strict", built / "clean.o", built / "no_spills.o").returncode == 0


@needs_toolchain
def test_shared_object_calls_through_the_plt(built):
    library = built / "libfixtures.so"
    promotions = run("--promotions", library)
    assert flagged_functions(promotions.stdout, "warning") == {
        "double_math", "scale_by_double_constant", "sine_through_double"}
    assert "2 double-precision calls (__hexagon_divdf3, sin)" in promotions.stdout
    spills = run("--spills", "--func", "^(compute_|hw_loop)", library)
    assert flagged_functions(spills.stdout, "vector spill") & flagged_functions(spills.stdout, "in loops") \
        == {"compute_spilling_sums", "hw_loop_spills"}


@needs_toolchain
def test_addr2line_names_function_offset_and_source_line(built):
    library = built / "libfixtures.so"
    symbols = subprocess.run(["llvm-nm-22", "--defined-only", str(library)],
                             capture_output=True, text=True, check=True).stdout
    start = int(re.search(r"^([0-9a-f]+) T scale_by_double_constant$", symbols, re.M).group(1), 16)
    result = run("--addr2line", f"{start + 4:#x}", "0", library)
    assert result.returncode == 0
    found, outside = result.stdout.splitlines()
    m = re.fullmatch(rf"{start + 4:#x}  scale_by_double_constant\+0x4  at (\S+):(\d+):\d+", found)
    assert m and Path(m.group(1)).name == "promotions.c"
    source = (FIXTURES / "promotions.c").read_text().splitlines()
    first = source.index("float scale_by_double_constant(float x) {") + 1
    assert first <= int(m.group(2)) <= first + 2
    assert outside == "0x0  ??  (not inside any function)"
