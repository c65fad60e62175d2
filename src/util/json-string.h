// A JSON string literal for any byte string: quotes and backslashes escaped, control bytes as
// \u00XX, everything else (UTF-8 included) as it is.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace hexnpu::util {

inline std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
            out += esc;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

} // namespace hexnpu::util
