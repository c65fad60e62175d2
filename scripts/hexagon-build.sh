#!/usr/bin/env bash
# Cross-builds the NPU libraries for Hexagon through the hexagon-vNN presets (CMakePresets.json)
# and checks each build-hexagon-vNN/lib/libhexnpu-htp-vNN.so: a Hexagon ELF shared object for its
# arch, exporting exactly the HTP_IFACE_API entry points of src/htp/htp-iface.h and importing
# exactly the symbols src/htp/hexagon/device-imports.h declares.
#   scripts/hexagon-build.sh [v73 v75 v79 v81]    (default: all four)
# Needs clang-22, lld-22 and llvm-22 (scripts/setup.sh installs them). Exits 1 on a failed check.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
    echo "hexagon-build: $*" >&2
    exit 1
}

# The function names declared one per line in a header, sorted.
declared() {
    sed -nE "s/^$2[^(]*[ *]([A-Za-z_][A-Za-z0-9_]*)\(.*/\1/p" "$1" | sort
}
imports_header=src/htp/hexagon/device-imports.h
expected_imports=$(declared "$imports_header" '[^/# ]')
expected_exports=$(declared src/htp/htp-iface.h 'HTP_IFACE_API ')
if [ -z "$expected_imports" ] || [ -z "$expected_exports" ]; then
    fail "no declarations found in $imports_header or src/htp/htp-iface.h"
fi
echo '#include "hexagon/device-imports.h"' |
    clang++-22 --target=hexagon -ffreestanding -fsyntax-only -Wall -Wextra -Isrc/htp -x c++ - ||
    fail "$imports_header does not compile"

# Prints what differs between two sorted name lists (- expected only, + actual only).
difference() {
    diff <(echo "$1") <(echo "$2") | sed -nE 's/^< /  - /p; s/^> /  + /p'
}

arches=("$@")
[ ${#arches[@]} -gt 0 ] || arches=(v73 v75 v79 v81)
for arch in "${arches[@]}"; do
    [[ "$arch" =~ ^v(73|75|79|81)$ ]] || fail "unknown arch '$arch' (v73, v75, v79 or v81)"
    cmake --preset "hexagon-$arch" >/dev/null || fail "$arch: configuring failed"
    cmake --build --preset "hexagon-$arch" -j2 >/dev/null || fail "$arch: building failed"

    lib="build-hexagon-$arch/lib/libhexnpu-htp-$arch.so"
    header=$(llvm-readelf-22 -h "$lib")
    grep -qE '^\s*Machine:\s+Qualcomm Hexagon$' <<<"$header" || fail "$lib is not a Hexagon ELF file"
    grep -qE '^\s*Type:\s+DYN ' <<<"$header" || fail "$lib is not a shared object"
    # e_flags holds the Hexagon version the code was compiled for: 0x73 for v73.
    grep -qE "^\s*Flags:\s+0x${arch#v}$" <<<"$header" || fail "$lib is not built for $arch"

    imports=$(llvm-nm-22 --undefined-only --format=just-symbols "$lib" | sort)
    [ "$imports" = "$expected_imports" ] ||
        fail "$lib imports other symbols than $imports_header declares:"$'\n'"$(difference "$expected_imports" "$imports")"
    exports=$(llvm-nm-22 --dynamic --defined-only --format=just-symbols "$lib" | sort)
    [ "$exports" = "$expected_exports" ] ||
        fail "$lib exports other symbols than src/htp/htp-iface.h declares:"$'\n'"$(difference "$expected_exports" "$exports")"

    echo "hexagon-build: $lib: Hexagon $arch shared object, $(wc -l <<<"$exports") exports," \
         "$(wc -l <<<"$imports") imports, $(stat -c %s "$lib") bytes"
done
