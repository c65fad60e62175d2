// The symbols libhexnpu-htp-vNN.so leaves undefined. A device port supplies the platform through
// the htp::platform table passed to htp_iface_open (htp/platform.h), not through symbols; the
// device's loader resolves the names below from the C library and compiler runtime already loaded
// in the NPU process (on QuRT, the Hexagon SDK's). Clang emits the calls itself — block clears and
// copies, and integer division, which Hexagon has no instruction for — so the sources never name
// them. scripts/hexagon-build.sh fails when `llvm-nm-22 -u` of a library and this list differ.
// One declaration per line: the script reads the names from them.
#pragma once

#include <stddef.h>
#include <stdint.h>

extern "C" {

// C library: zero-initialised structures and arrays.
void * memset(void * dst, int value, size_t size);

// Compiler runtime: struct copies clang knows to be 8-byte aligned and at least 32 bytes long.
void * __hexagon_memcpy_likely_aligned_min32bytes_mult8bytes(void * dst, const void * src, size_t size);
// Compiler runtime: 32-bit and 64-bit unsigned division (quotient).
uint32_t __hexagon_udivsi3(uint32_t dividend, uint32_t divisor);
uint64_t __hexagon_udivdi3(uint64_t dividend, uint64_t divisor);

}  // extern "C"
