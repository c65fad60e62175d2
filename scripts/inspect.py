#!/usr/bin/env python3
"""Audits Hexagon ELF files: register spills inside loops, float->double promotions, annotated
disassembly of one function and address lookup.

  inspect.py --spills [--strict] [--func REGEX] FILE...
  inspect.py --promotions [--strict] [--func REGEX] FILE...
  inspect.py --disasm FUNC FILE...
  inspect.py --addr2line ADDR... FILE

FILE is a Hexagon ELF (object, shared object, executable or archive), disassembled with
llvm-objdump-22, or a text file holding the output of `llvm-objdump-22 -d -r -C FILE`.
Addresses are resolved with llvm-addr2line-22. Both come with Debian's llvm-22 package; the
environment variables LLVM_OBJDUMP and LLVM_ADDR2LINE name other binaries.

Loops come from each function's control flow, rebuilt from the disassembly: a loop is a cycle
of packets, closed by a branch or by a hardware loop (a packet marked :endloopN goes back to the
start that loopN/spNloopN set). Code laid out inside a loop's address range but off the cycle is
not in the loop; a backward jump that closes no cycle is no loop. A jumpr through a register
other than r31 (a switch's jump table) is taken to reach every packet that nothing else reaches.

A spill is a store of a register to the stack frame, a reload a load from it. Stack addresses
are r29 (sp), r30 (fp) and registers set from them with `rN = rM` or `rN = add(rM,#imm)`,
followed along the control flow (a register holds a stack address if it does on any path; a
call ends what r0-r15 and r28 held; the operations of a packet read the registers as they
were before it). Vector
spills are vmem/vmemu accesses, scalar spills memb/memh/memw/memd accesses of registers; stack
arrays of a kernel look the same and are equally worth knowing about in a loop.

--spills reports every function with in-loop spills or reloads (vector: error with --strict,
warning without; scalar: always a warning, because outgoing call arguments beyond r5 and
address-taken locals are stored the same way) and, as info, those outside loops.
--promotions reports functions that convert float to double, use double-precision instructions
or call double-precision libm and compiler-runtime functions (error with --strict).

--disasm prints every function named FUNC (the full demangled name, or the name without its
parameter list). --addr2line expects addresses as loaded: use it on linked files.

Exit status: 0 clean, 1 problems (--strict), 2 usage or tool errors.
"""

import os
import sys

# This file shares its name with the standard library's inspect module, and a script's own
# folder comes first on sys.path: drop it before importing anything that imports inspect.
_SCRIPT_DIR = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != _SCRIPT_DIR]

import argparse
import bisect
import difflib
import json
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

OBJDUMP = os.environ.get("LLVM_OBJDUMP", "llvm-objdump-22")
ADDR2LINE = os.environ.get("LLVM_ADDR2LINE", "llvm-addr2line-22")
TOOL_HINT = "install Debian's llvm-22 package (apt-get install llvm-22)"

# --- llvm-objdump output -----------------------------------------------------------------------

FILE_FORMAT_RE = re.compile(r"^(\S.*):\s+file format (\S+)$")
SECTION_RE = re.compile(r"^Disassembly of section (\S+):$")
FUNCTION_RE = re.compile(r"^([0-9a-f]+) <(.+)>:$")
RELOCATION_RE = re.compile(r"^\s+([0-9a-f]+):\s+R_\w+\s+(.+?)\s*$")
INSTRUCTION_RE = re.compile(r"^\s*([0-9a-f]+):\s(.*)$")
RAW_BYTES_RE = re.compile(r"^\s*(?:[0-9a-f]{2} ){3}[0-9a-f]{2}\s+[0-9a-f]{8}\s")
# The closing brace is the one followed only by packet flags such as :endloop0 (demangled
# names can hold braces: {lambda()#1}).
PACKET_END_RE = re.compile(r"^(.*?)\s*\}\s*((?::\w+\s*)*)$")
ENDLOOP_RE = re.compile(r":endloop([01]+)")
TARGET_SYMBOL_RE = re.compile(r"\s+<(.+)>$")


@dataclass
class Instruction:
    address: int
    text: str                  # one slot as printed; a duplex holds two operations
    operations: list[str]      # without the <symbol+offset> objdump prints after a target
    target: str | None = None  # that symbol, for a branch or call
    relocation: str | None = None   # symbol a relocation at this address points to (objects)


@dataclass
class Packet:
    instructions: list[Instruction]
    endloops: frozenset[int] = frozenset()   # hardware loops whose last packet this is
    trailer: str = ""

    @property
    def start(self):
        return self.instructions[0].address

    @property
    def end(self):
        return self.instructions[-1].address


@dataclass
class Function:
    name: str
    source: str                # file (or archive member) the function comes from
    section: str
    packets: list[Packet] = field(default_factory=list)

    @property
    def start(self):
        return self.packets[0].start

    @property
    def end(self):
        return self.packets[-1].end

    def instructions(self):
        for packet in self.packets:
            yield from packet.instructions


def parse_objdump(text, default_source=""):
    """Functions of `llvm-objdump -d [-r] [-C]` output, in order."""
    functions = []
    source, section, function, packet = default_source, "", None, None
    by_address = {}

    def close_packet(trailer=""):
        nonlocal packet
        if packet is not None and packet.instructions:
            endloops = frozenset(int(d) for m in ENDLOOP_RE.finditer(trailer) for d in m.group(1))
            packet.endloops, packet.trailer = endloops, trailer.strip()
            function.packets.append(packet)
        packet = None

    for line in text.splitlines():
        if m := FILE_FORMAT_RE.match(line):
            close_packet()
            source, function = m.group(1), None
        elif m := SECTION_RE.match(line):
            close_packet()
            section, function = m.group(1), None
        elif m := FUNCTION_RE.match(line):
            close_packet()
            function = Function(m.group(2), source, section)
            functions.append(function)
            by_address = {}
        elif function is None:
            continue
        elif m := RELOCATION_RE.match(line):
            instruction = by_address.get(int(m.group(1), 16))
            if instruction is not None:
                instruction.relocation = m.group(2)
        elif m := INSTRUCTION_RE.match(line):
            address, body = int(m.group(1), 16), RAW_BYTES_RE.sub("", m.group(2)).strip()
            standalone = False
            if body.startswith("{"):
                close_packet()
                packet = Packet([])
                body = body[1:]
            elif packet is None:        # no braces: a packet of its own
                packet = Packet([])
                standalone = True
            trailer = ""
            if end := PACKET_END_RE.match(body):
                body, trailer = end.group(1), end.group(2)
            body = re.sub(r"\s*;\s*", "; ", body.strip())
            operations, target = [], None
            for operation in filter(None, (op.strip() for op in body.split(";"))):
                if symbol := TARGET_SYMBOL_RE.search(operation):
                    operation, target = operation[:symbol.start()], symbol.group(1)
                operations.append(operation)
            instruction = Instruction(address, body, operations, target)
            packet.instructions.append(instruction)
            by_address[address] = instruction
            if end or standalone:
                close_packet(trailer)
    close_packet()
    return [f for f in functions if f.packets]


# --- loops -------------------------------------------------------------------------------------

HARDWARE_LOOP_RE = re.compile(r"\b(?:sp[123])?loop([01])\((0x[0-9a-f]+)\s*,")
CONDITION = r"(if\s*\(.*\)\s*)?"
JUMP_RE = re.compile(rf"^{CONDITION}jump(?::n?t)?\s+(0x[0-9a-f]+)$")
RETURN_RE = re.compile(rf"^{CONDITION}(?:jumpr(?::n?t)?\s+r31$|dealloc_return\b)")
INDIRECT_JUMP_RE = re.compile(rf"^{CONDITION}jumpr(?::n?t)?\s+r\d+$")


@dataclass(frozen=True)
class Loop:
    packets: tuple[int, ...]    # indices into Function.packets, ascending
    depth: int                  # 1 for an outermost loop
    kind: str                   # "hardware loop0", "hardware loop1" or "branch loop"


def control_flow(function):
    """Successors of each packet (by index) and the hardware-loop back edges {(from, to): level}.

    A packet ending loop N goes back to the start address that the loopN instructions able to
    reach it set, which need not lie before it: the compiler may place a loop's last packet
    anywhere and jump to it. A jumpr through a register other than r31 (a switch's jump table)
    may go to any packet that nothing else reaches. Returns and jumps out of the function (tail
    calls, relocated jumps) leave it.
    """
    packets = function.packets
    index_of = {packet.start: index for index, packet in enumerate(packets)}
    successors = [set() for _ in packets]
    loop_starts = [{} for _ in packets]          # level -> start packet set up by this packet
    indirect_jumps = []
    for index, packet in enumerate(packets):
        falls_through = True
        for instruction in packet.instructions:
            for operation in instruction.operations:
                if m := HARDWARE_LOOP_RE.search(operation):
                    target = int(m.group(2), 16)
                    if target in index_of:
                        loop_starts[index][int(m.group(1))] = index_of[target]
                elif m := JUMP_RE.match(operation):
                    target = int(m.group(2), 16)
                    if instruction.relocation is None and target in index_of:
                        successors[index].add(index_of[target])
                    falls_through &= m.group(1) is not None
                elif m := RETURN_RE.match(operation):
                    falls_through &= m.group(1) is not None
                elif m := INDIRECT_JUMP_RE.match(operation):
                    indirect_jumps.append(index)
                    falls_through &= m.group(1) is not None
        if falls_through and index + 1 < len(packets):
            successors[index].add(index + 1)
    if indirect_jumps:
        reached = set().union(*successors)
        unreached = {index for index in range(1, len(packets)) if index not in reached}
        for index in indirect_jumps:
            successors[index] |= unreached

    # Which loop starts each packet may see, propagated along the edges to a fixed point.
    seen = [{0: set(), 1: set()} for _ in packets]
    hardware_edges = {}
    pending = list(range(len(packets)))
    while pending:
        index = pending.pop()
        after = {level: {loop_starts[index][level]} if level in loop_starts[index]
                 else seen[index][level] for level in (0, 1)}
        for level in packets[index].endloops:
            for start in after[level]:
                successors[index].add(start)
                hardware_edges[(index, start)] = level
        for successor in successors[index]:
            for level in (0, 1):
                if not after[level] <= seen[successor][level]:
                    seen[successor][level] |= after[level]
                    pending.append(successor)
    return successors, hardware_edges


def strongly_connected(nodes, successors):
    """Tarjan's strongly connected components of the graph restricted to nodes, iteratively."""
    order, low, on_stack, stack, components = {}, {}, set(), [], []
    for root in sorted(nodes):
        if root in order:
            continue
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(successors(root))))]
        while work:
            node, edges = work[-1]
            for successor in edges:
                if successor not in nodes:
                    continue
                if successor not in order:
                    order[successor] = low[successor] = len(order)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(successors(successor)))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], order[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == order[node]:
                    component = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    components.append(sorted(component))
    return components


def find_loops(function):
    """The loop nesting forest of the control-flow graph, outer loops first.

    A loop is a cycle of packets (a strongly connected component); its headers are the packets
    entered from outside it. Without the edges back to its headers, the cycles left inside
    are its inner loops. Code laid out between the parts of a loop is not in it, and a jump
    back to an earlier address that closes no cycle is no loop.
    """
    successors, hardware_edges = control_flow(function)
    predecessors = [set() for _ in successors]
    for source, targets in enumerate(successors):
        for target in targets:
            predecessors[target].add(source)
    loops = []

    def find(nodes, cut_headers, depth):
        def kept(node):
            return successors[node] - cut_headers

        for component in strongly_connected(nodes, kept):
            members = set(component)
            if len(component) == 1 and component[0] not in kept(component[0]):
                continue
            headers = {n for n in component if n == 0 or predecessors[n] - members} or {component[0]}
            levels = sorted({hardware_edges[(source, header)] for header in headers
                             for source in predecessors[header] & members
                             if (source, header) in hardware_edges})
            kind = f"hardware loop{levels[0]}" if levels else "branch loop"
            loops.append(Loop(tuple(component), depth, kind))
            find(members, headers, depth + 1)

    find(set(range(len(function.packets))), set(), 1)
    return sorted(loops, key=lambda loop: (loop.packets[0], loop.depth))


def packet_depths(function, loops):
    """How many loops each packet is in."""
    depths = [0] * len(function.packets)
    for loop in loops:
        for index in loop.packets:
            depths[index] = max(depths[index], loop.depth)
    return depths


# --- stack spills ------------------------------------------------------------------------------

STACK_POINTERS = frozenset({"r29", "r30"})
CALLER_SAVED = frozenset({f"r{n}" for n in range(16)} | {"r28"})
PREDICATED = r"(?:if\s*\([^)]*\)\s*)?"
OFFSET = r"\+\s*#{1,2}-?(?:0x[0-9a-f]+|\d+)\)"
ACCESS_PATTERNS = [
    ("vector", "spill", re.compile(rf"^{PREDICATED}vmemu?\((r\d+)\s*{OFFSET}(?::nt)?\s*=\s*v\d+")),
    ("vector", "reload", re.compile(rf"^{PREDICATED}v\d+(?:\.\w+)?\s*=\s*vmemu?\((r\d+)\s*{OFFSET}")),
    ("scalar", "spill", re.compile(rf"^{PREDICATED}mem[bhwd]\((r\d+)\s*{OFFSET}\s*=\s*r\d+")),
    ("scalar", "reload",
     re.compile(rf"^{PREDICATED}r\d+(?::\d+)?\s*=\s*mem(?:b|ub|h|uh|w|d)\((r\d+)\s*{OFFSET}")),
]
ASSIGNMENT_RE = re.compile(rf"^{PREDICATED}([^=]*?)\s*[-+&|^]?=\s*(.*)$")
WRITTEN_REGISTER_RE = re.compile(r"\br(\d+)(?::(\d+))?")
STACK_COPY_RE = re.compile(r"^(?:(r\d+)|add\((r\d+),\s*#{1,2}-?(?:0x[0-9a-f]+|\d+)\))$")
CALL_RE = re.compile(r"\bcallr?\b")


@dataclass(frozen=True)
class StackAccess:
    address: int
    kind: str           # "vector" or "scalar"
    direction: str      # "spill" (store to the stack) or "reload" (load from it)
    operation: str


def stack_registers_after(packet, stack):
    """Registers holding stack addresses after a packet; its operations all read `stack`."""
    after = set(stack)
    for instruction in packet.instructions:
        for operation in instruction.operations:
            if CALL_RE.search(operation):
                after -= CALLER_SAVED
            m = ASSIGNMENT_RE.match(operation)
            if not m or m.group(1).startswith(("mem", "vmem")):
                continue
            copy = STACK_COPY_RE.match(m.group(2))
            from_stack = copy is not None and (copy.group(1) or copy.group(2)) in stack
            for register in WRITTEN_REGISTER_RE.finditer(m.group(1)):
                for number in filter(None, register.groups()):
                    written = f"r{number}"
                    if from_stack:
                        after.add(written)
                    elif written not in STACK_POINTERS:
                        after.discard(written)
    return after


def stack_accesses(function):
    """Spills and reloads; a register holds a stack address if it does on any path to its use."""
    successors, _ = control_flow(function)
    packets = function.packets
    before = [None] * len(packets)          # registers holding stack addresses at packet entry
    before[0] = set(STACK_POINTERS)
    pending = [0]
    while pending:
        index = pending.pop()
        after = stack_registers_after(packets[index], before[index])
        for successor in successors[index]:
            if before[successor] is None or not after <= before[successor]:
                before[successor] = after | (before[successor] or set())
                pending.append(successor)

    accesses = []
    for packet, stack in zip(packets, before):
        stack = stack or STACK_POINTERS     # code the entry does not reach (padding)
        for instruction in packet.instructions:
            for operation in instruction.operations:
                for kind, direction, pattern in ACCESS_PATTERNS:
                    m = pattern.match(operation)
                    if m and m.group(1) in stack:
                        accesses.append(StackAccess(instruction.address, kind, direction, operation))
                        break
    return accesses


# --- float->double promotions ------------------------------------------------------------------

FLOAT_TO_DOUBLE_RE = re.compile(r"\bconvert_sf2df\(")
DOUBLE_CONVERSION_RE = re.compile(r"\b(convert_(?:\w+2df|df2\w+))\(")
DOUBLE_INSTRUCTION_RE = re.compile(r"\b(df[a-z]+)(?:\.\w+)?\(")
BRANCH_RE = re.compile(r"\b(?:call|jump)(?::n?t)?\s+0x[0-9a-f]+$")
DOUBLE_RUNTIME_RE = re.compile(r"^__\w*df\w*$")     # __divdf3, __hexagon_sqrtdf2, __extendsfdf2
DOUBLE_LIBM = frozenset("""
    acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2 expm1
    fabs fdim floor fma fmax fmin fmod frexp hypot ilogb ldexp lgamma llrint llround log log10
    log1p log2 logb lrint lround modf nan nearbyint nextafter pow remainder remquo rint round
    scalbln scalbn sin sincos sinh sqrt tan tanh tgamma trunc""".split())


@dataclass(frozen=True)
class Promotion:
    address: int
    kind: str           # "float->double", "double instruction", "double conversion", "double call"
    detail: str         # mnemonic or called function


def called_symbol(instruction, operation):
    """The function a call or jump goes to; in an object file its relocation tells."""
    if not BRANCH_RE.search(operation):
        return None
    symbol = instruction.relocation or instruction.target or ""
    return re.sub(r"(@plt)?(\+0x[0-9a-f]+)?$", "", symbol)


def find_promotions(function):
    promotions = []
    for instruction in function.instructions():
        for operation in instruction.operations:
            if FLOAT_TO_DOUBLE_RE.search(operation):
                promotions.append(Promotion(instruction.address, "float->double", "convert_sf2df"))
            elif m := DOUBLE_CONVERSION_RE.search(operation):
                promotions.append(Promotion(instruction.address, "double conversion", m.group(1)))
            elif m := DOUBLE_INSTRUCTION_RE.search(operation):
                promotions.append(Promotion(instruction.address, "double instruction", m.group(1)))
            elif (symbol := called_symbol(instruction, operation)) and (
                    symbol in DOUBLE_LIBM or DOUBLE_RUNTIME_RE.match(symbol)):
                promotions.append(Promotion(instruction.address, "double call", symbol))
    return promotions


# --- reports -----------------------------------------------------------------------------------

def plural(count, noun):
    return f"{count} {noun}{'' if count == 1 else 's'}"


def describe_accesses(accesses, kinds=("vector", "scalar")):
    """'3 vector spills, 1 scalar reload': the non-zero counts."""
    parts = []
    for kind in kinds:
        for direction in ("spill", "reload"):
            count = sum(a.kind == kind and a.direction == direction for a in accesses)
            if count:
                parts.append(plural(count, f"{kind} {direction}"))
    return ", ".join(parts)


def split_by_loops(function):
    """The function's stack accesses inside loops and outside them."""
    depths = packet_depths(function, find_loops(function))
    depth_at = {instruction.address: depth
                for packet, depth in zip(function.packets, depths) for instruction in packet.instructions}
    inside, outside = [], []
    for access in stack_accesses(function):
        (inside if depth_at[access.address] else outside).append(access)
    return inside, outside


def report_spills(functions, strict):
    """Prints one line per finding and a summary; returns the exit status."""
    counts = {"vector": 0, "scalar": 0, "outside": 0}
    for function in functions:
        where = f"{function.source}: {function.name}"
        inside, outside = split_by_loops(function)
        for kind in ("vector", "scalar"):
            found = [a for a in inside if a.kind == kind]
            if found:
                counts[kind] += 1
                severity = "error" if strict and kind == "vector" else "warning"
                print(f"{where}: {severity}: {describe_accesses(found, [kind])} in loops "
                      f"(first at {found[0].address:#x})")
        if outside:
            counts["outside"] += 1
            print(f"{where}: info: {describe_accesses(outside)} outside loops")
    files = len({f.source for f in functions})
    print(f"summary: {plural(len(functions), 'function')} in {plural(files, 'file')}: "
          f"{counts['vector']} with vector spill code in loops, "
          f"{counts['scalar']} with scalar spill code in loops, "
          f"{counts['outside']} with spill code outside loops")
    return 1 if strict and counts["vector"] else 0


def describe_promotions(promotions):
    parts = []
    for kind, noun in (("float->double", "float->double conversion"),
                       ("double instruction", "double-precision instruction"),
                       ("double conversion", "other double conversion"),
                       ("double call", "double-precision call")):
        details = [p.detail for p in promotions if p.kind == kind]
        if details:
            names = "" if kind == "float->double" else f" ({', '.join(sorted(set(details)))})"
            parts.append(plural(len(details), noun) + names)
    return ", ".join(parts)


def report_promotions(functions, strict):
    flagged = 0
    for function in functions:
        promotions = find_promotions(function)
        if promotions:
            flagged += 1
            print(f"{function.source}: {function.name}: {'error' if strict else 'warning'}: "
                  f"{describe_promotions(promotions)} (first at {promotions[0].address:#x})")
    files = len({f.source for f in functions})
    print(f"summary: {plural(len(functions), 'function')} in {plural(files, 'file')}: "
          f"{flagged} with double precision")
    return 1 if strict and flagged else 0


def report_calls(functions, pattern, strict):
    """Calls (and tail jumps) to symbols matching pattern, e.g. the compiler's division helpers that
    stand in for Hexagon's missing divide instruction: one line per function that makes them."""
    flagged = 0
    for function in functions:
        calls = [(instruction.address, symbol) for instruction in function.instructions()
                 for operation in instruction.operations
                 if (symbol := called_symbol(instruction, operation)) and pattern.search(symbol)]
        if calls:
            flagged += 1
            names = ", ".join(sorted({symbol for _, symbol in calls}))
            print(f"{function.source}: {function.name}: {'error' if strict else 'warning'}: "
                  f"{plural(len(calls), 'call')} to {names} (first at {calls[0][0]:#x})")
    files = len({f.source for f in functions})
    print(f"summary: {plural(len(functions), 'function')} in {plural(files, 'file')}: "
          f"{flagged} with calls matching {pattern.pattern}")
    return 1 if strict and flagged else 0


ANNOTATION_COLUMN = 64


def print_disassembly(function):
    loops = find_loops(function)
    depths = packet_depths(function, loops)
    notes = {}
    for access in stack_accesses(function):
        notes.setdefault(access.address, []).append(f"{access.kind} {access.direction}")
    for promotion in find_promotions(function):
        note = promotion.kind if promotion.kind != "double call" else f"double call: {promotion.detail}"
        notes.setdefault(promotion.address, []).append(note)
    starts, ends = {}, {}
    for number, loop in enumerate(loops, 1):
        starts.setdefault(loop.packets[0], []).append((number, loop))
        ends.setdefault(loop.packets[-1], []).insert(0, (number, loop))
    width = max(depths, default=0)

    print(f"{function.name}  ({function.source}, section {function.section}, "
          f"{function.start:#x}-{function.end:#x}, {plural(len(loops), 'loop')})")
    for index, (packet, depth) in enumerate(zip(function.packets, depths)):
        for number, loop in starts.get(index, []):
            first, last = function.packets[loop.packets[0]], function.packets[loop.packets[-1]]
            print(f"{'':10}{'|' * (loop.depth - 1)}+-- loop {number}: "
                  f"{first.start:#x}-{last.end:#x}, {loop.kind}")
        for position, instruction in enumerate(packet.instructions):
            text = ("{ " if position == 0 else "  ") + instruction.text
            if instruction.relocation:
                text += f" (relocation: {instruction.relocation})"
            if position == len(packet.instructions) - 1:
                text += " }" + (f"  {packet.trailer}" if packet.trailer else "")
            line = f"{instruction.address:>8x}: {'|' * depth:<{width}} {text}"
            if instruction.address in notes:
                line = f"{line:<{ANNOTATION_COLUMN}}  <-- {', '.join(notes[instruction.address])}"
            print(line)
        for number, loop in ends.get(index, []):
            print(f"{'':10}{'|' * (loop.depth - 1)}+-- end of loop {number}")
    inside, outside = split_by_loops(function)
    promotions = find_promotions(function)
    print(f"summary: {plural(len(loops), 'loop')}; in loops: {describe_accesses(inside) or 'no spills'}; "
          f"outside loops: {describe_accesses(outside) or 'no spills'}; "
          f"{describe_promotions(promotions) or 'no double precision'}")


# --- address lookup ----------------------------------------------------------------------------

# "000102d0 g     F .text	00000014 call_sin": address, flags, section, size, name.
SYMBOL_RE = re.compile(
    r"^([0-9a-f]+) (.{7}) (\S+)\s+([0-9a-f]+)\s+(?:\.(?:hidden|protected|internal)\s+)?(.+)$")


def function_symbols(path):
    """(start, size, name) of the function symbols, sorted by address."""
    symbols = []
    for line in run_tool([OBJDUMP, "-t", "-C", str(path)]).splitlines():
        m = SYMBOL_RE.match(line)
        if m and "F" in m.group(2):
            symbols.append((int(m.group(1), 16), int(m.group(4), 16), m.group(5)))
    return sorted(symbols)


def enclosing_function(symbols, address):
    index = bisect.bisect_right(symbols, (address, float("inf"), "")) - 1
    while index >= 0:
        start, size, name = symbols[index]
        if start <= address < start + max(size, 1):
            return f"{name}+{address - start:#x}"
        index -= 1
    return None


def source_location(frame):
    if not frame.get("Line") or frame.get("FileName") in (None, "", "??"):
        return None
    column = f":{frame['Column']}" if frame.get("Column") else ""
    return f"{frame['FileName']}:{frame['Line']}{column}"


def describe_frames(frames):
    """'at file:line' or, with inlining, 'at file:line in inner, inlined at file:line in outer'."""
    locations = [(source_location(f), f.get("FunctionName", "??")) for f in frames]
    if not locations or locations[0][0] is None:
        return "(no line information)"
    if len(locations) == 1:
        return f"at {locations[0][0]}"
    return ", inlined ".join(f"at {where or '??'} in {name}" for where, name in locations)


def print_locations(path, addresses):
    symbols = function_symbols(path)
    output = run_tool([ADDR2LINE, "--output-style=JSON", "-f", "-i", "-C", "-e", str(path)]
                      + [f"{a:#x}" for a in addresses])
    for address, entry in zip(addresses, json.loads(output)):
        function = enclosing_function(symbols, address)
        if function is None:
            print(f"{address:#x}  ??  (not inside any function)")
        else:
            print(f"{address:#x}  {function}  {describe_frames(entry.get('Symbol', []))}")


# --- inputs ------------------------------------------------------------------------------------

class ToolError(Exception):
    pass


def run_tool(command):
    try:
        result = subprocess.run(command, capture_output=True, text=True)
    except FileNotFoundError:
        raise ToolError(f"{command[0]} not found: {TOOL_HINT}") from None
    if result.returncode != 0:
        raise ToolError(f"{' '.join(command)} failed: {result.stderr.strip()}")
    return result.stdout


def is_binary(path):
    with open(path, "rb") as file:
        return file.read(8).startswith((b"\x7fELF", b"!<arch>\n"))


def load_functions(path):
    """Functions of an ELF file, or of saved llvm-objdump output."""
    if is_binary(path):
        text = run_tool([OBJDUMP, "-d", "-r", "-C", "--no-show-raw-insn", str(path)])
    else:
        text = path.read_text(errors="replace")
    formats = sorted({m.group(2) for m in map(FILE_FORMAT_RE.match, text.splitlines()) if m})
    if formats != ["elf32-hexagon"]:
        raise ToolError(f"{path}: not a Hexagon ELF file or llvm-objdump output of one "
                        f"(format: {', '.join(formats) or 'unknown'})")
    return parse_objdump(text, str(path))


def parse_address(text):
    try:
        return int(text, 16)
    except ValueError:
        raise ToolError(f"not a hexadecimal address: {text}") from None


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="inspect.py",
        description="Audit Hexagon ELF files for register spills in loops and float->double promotions.",
        epilog="Details of what counts as a loop, a spill and a promotion: see the top of this file.")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--spills", action="store_true",
                      help="report vector and scalar register spills inside (and outside) loops")
    mode.add_argument("--promotions", action="store_true",
                      help="report float->double conversions and double-precision code")
    mode.add_argument("--calls", metavar="REGEX",
                      help="report calls to symbols matching REGEX (e.g. __hexagon_udiv for software division)")
    mode.add_argument("--disasm", metavar="FUNC",
                      help="disassemble FUNC with loops marked and spills annotated")
    mode.add_argument("--addr2line", action="store_true",
                      help="resolve the hexadecimal addresses given before FILE (the last argument)")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 on in-loop vector spills (--spills), on any promotion (--promotions) or "
                             "on any matching call (--calls)")
    parser.add_argument("--func", metavar="REGEX", help="only functions whose name matches REGEX (re.search)")
    parser.add_argument("args", nargs="+", metavar="FILE",
                        help="Hexagon ELF files (--addr2line: ADDR... FILE)")
    args = parser.parse_args(argv)

    if (args.strict or args.func) and not (args.spills or args.promotions or args.calls):
        parser.error("--strict and --func go with --spills, --promotions or --calls")
    if args.addr2line and len(args.args) < 2:
        parser.error("--addr2line needs ADDR... FILE")
    paths = [Path(a) for a in (args.args[-1:] if args.addr2line else args.args)]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error("no such file: " + ", ".join(missing))
    try:
        func_filter = re.compile(args.func) if args.func else None
    except re.error as error:
        parser.error(f"bad --func regex: {error}")
    try:
        call_pattern = re.compile(args.calls) if args.calls else None
    except re.error as error:
        parser.error(f"bad --calls regex: {error}")

    try:
        if args.addr2line:
            addresses = [parse_address(a) for a in args.args[:-1]]
            if not is_binary(paths[0]):
                raise ToolError(f"{paths[0]}: --addr2line needs the ELF file itself")
            print_locations(paths[0], addresses)
            return 0
        functions = [f for path in paths for f in load_functions(path)]
        if args.disasm:
            chosen = [f for f in functions if args.disasm in (f.name, f.name.split("(")[0])]
            if not chosen:
                names = difflib.get_close_matches(args.disasm, [f.name for f in functions], n=5)
                raise ToolError(f"no function {args.disasm}"
                                + (f" (close: {', '.join(names)})" if names else ""))
            for function in chosen:
                print_disassembly(function)
            return 0
        if func_filter:
            functions = [f for f in functions if func_filter.search(f.name)]
            if not functions:
                raise ToolError(f"no function matches --func {args.func}")
        if call_pattern:
            return report_calls(functions, call_pattern, args.strict)
        report = report_spills if args.spills else report_promotions
        return report(functions, args.strict)
    except ToolError as error:
        print(f"inspect.py: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # quiet exit when piped into head
    sys.exit(main())
