// Small string helpers shared by the core and the tools.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace hexnpu {

// ASCII case-insensitive equality (type names, op names, option values).
inline bool equal_ignore_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
            return false;
        }
    }
    return true;
}

// A byte count as people read it: "512 B", "1.50 MiB".
inline std::string human_bytes(uint64_t bytes) {
    static const char * units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    char                buf[32];
    if (bytes < 1024) {
        std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long) bytes);
        return buf;
    }
    double v = double(bytes);
    int    u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
    return buf;
}

} // namespace hexnpu
