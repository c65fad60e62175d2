// Small string helpers shared by the core and the tools.
#pragma once

#include <cctype>
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

} // namespace hexnpu
