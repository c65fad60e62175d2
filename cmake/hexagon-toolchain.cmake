# Cross toolchain for the NPU libraries: Debian's clang-22 and lld-22 (apt-get install clang-22
# lld-22) targeting Hexagon with 128-byte HVX. The arch is HEXNPU_HEXAGON_ARCH (73, 75, 79 or 81),
# which the hexagon-vNN presets in CMakePresets.json set.
set(CMAKE_SYSTEM_NAME Generic)  # QuRT: an OS CMake has no platform file for
set(CMAKE_SYSTEM_PROCESSOR hexagon)

if(NOT HEXNPU_HEXAGON_ARCH MATCHES "^[0-9]+$")
  message(FATAL_ERROR "hexagon-toolchain.cmake: set HEXNPU_HEXAGON_ARCH to the Hexagon version "
                      "(73, 75, 79 or 81), e.g. through a preset: cmake --preset hexagon-v73")
endif()
# The compiler checks run in separate projects that re-read this file.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES HEXNPU_HEXAGON_ARCH)

set(CMAKE_C_COMPILER clang-22)
set(CMAKE_CXX_COMPILER clang++-22)
set(CMAKE_C_COMPILER_TARGET hexagon)
set(CMAKE_CXX_COMPILER_TARGET hexagon)

# Freestanding: Debian ships no Hexagon C library, C++ runtime or compiler runtime, so nothing that
# needs them (exceptions, RTTI) is compiled and nothing is linked implicitly. What the libraries
# still import is resolved by the device's loader. -O2 sits here, not in a build type, because
# CMake appends its own -O3 to any CMAKE_<LANG>_FLAGS_RELEASE_INIT: the presets set no build type.
set(hexagon_flags "-mv${HEXNPU_HEXAGON_ARCH} -mhvx -mhvx-length=128b -O2 -ffreestanding")
# v79+ kernels use native IEEE sf/hf HVX arithmetic (v73/v75 go through qf32); clang enables it
# only with -mhvx-ieee-fp.
if(HEXNPU_HEXAGON_ARCH GREATER_EQUAL 79)
  string(APPEND hexagon_flags " -mhvx-ieee-fp")
endif()
set(CMAKE_C_FLAGS_INIT "${hexagon_flags}")
set(CMAKE_CXX_FLAGS_INIT "${hexagon_flags} -fno-exceptions -fno-rtti")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-fuse-ld=lld -nostdlib")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fuse-ld=lld -nostdlib")
# Without a C library there is no program to link: the compiler checks build a static library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# Programs come from the host; headers and libraries never do.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
