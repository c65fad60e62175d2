// The symbols libhexnpu-htp-vNN.so leaves undefined. A device port supplies the platform through
// the htp::platform table passed to htp_iface_open (htp/platform.h), not through symbols; the
// device's loader resolves the names below from the C library and compiler runtime already loaded
// in the NPU process (on QuRT, the Hexagon SDK's). Clang emits the calls itself — block clears and
// copies — so the sources never name them. No integer division helper is imported: Hexagon has no
// divide instruction, so the runtime divides by fastdiv and the host precomputes the rest
// (scripts/test.sh also checks that no kernel calls __hexagon_udiv*/__hexagon_div*). scripts/hexagon-build.sh fails when `llvm-nm-22 -u` of a library and this list differ.
// One declaration per line: the script reads the names from them.
#pragma once

#include <stddef.h>
#include <stdint.h>

extern "C" {

// C library: zero-initialised structures and arrays; copies of kernel_params out of the op record.
void * memset(void * dst, int value, size_t size);
void * memcpy(void * dst, const void * src, size_t size);

// Compiler runtime: struct copies clang knows to be 8-byte aligned and at least 32 bytes long.
void * __hexagon_memcpy_likely_aligned_min32bytes_mult8bytes(void * dst, const void * src, size_t size);

}  // extern "C"
