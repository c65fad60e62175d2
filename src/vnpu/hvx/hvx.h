// The one header NPU-side code includes for HVX: on Hexagon it is the toolchain's intrinsics,
// on x86 the emulation in this folder (same names and signatures, 128-byte mode), plus the
// memory helpers both builds share.
#pragma once

#if defined(__hexagon__)
#include <hexagon_protos.h>
#include <hexagon_types.h>
#else
#include "vnpu/hvx/hvx-arith.h"
#include "vnpu/hvx/hvx-float.h"
#include "vnpu/hvx/hvx-multiply.h"
#include "vnpu/hvx/hvx-permute.h"
#include "vnpu/hvx/hvx-predicate.h"
#include "vnpu/hvx/hvx-shift.h"
#include "vnpu/hvx/hvx-types.h"
#include "vnpu/hvx/hvx-vrmpy.h"

// The toolchain's intrinsics are global names; so are the emulated ones.
using namespace hexnpu::hvx::intrinsics;
#endif

#include "vnpu/hvx/hvx-memory.h"
