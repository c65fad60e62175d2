// Strict parsing of numeric settings: the one parser behind the GGML_HEXAGON_* variables
// (src/hexagon/htp-options.cpp) and the HEXNPU_* variables of the virtual NPU
// (src/vnpu/client/remote-session.cpp).
//
// Why here: src/vnpu may include neither src/core nor src/hexagon (architecture.md §1), and src/proto
// is the host<->NPU contract, compiled into the NPU libraries too. So the parser is a header-only
// INTERFACE library (hexnpu-util) below every other folder, using nothing but the standard library.
//
// A number is the whole text: decimal digits, or 0x/0X followed by hex digits. No sign, no
// whitespace, no suffix; leading zeros are decimal ("010" is 10). A bad value throws
// std::invalid_argument naming the variable, the value and the accepted range:
//   HEXNPU_VTCM_SIZE='abc': not a number; expected an integer in [0, 1073741824], a multiple of 4096
//   HEXNPU_HVX_COUNT='4294967297': out of range; must be in [0, 10]
// (a number beyond 64 bits is out of range too, not "not a number").
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hexnpu::util {

// Whole decimal digits only (list items such as "HTP0:1" use this).
constexpr std::optional<uint64_t> parse_decimal(std::string_view s) {
    if (s.empty()) {
        return std::nullopt;
    }
    uint64_t v = 0;
    for (const char c : s) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        const auto d = uint64_t(c - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return std::nullopt;
        }
        v = v * 10 + d;
    }
    return v;
}

// Decimal, or 0x/0X followed by hex digits.
constexpr std::optional<uint64_t> parse_number(std::string_view s) {
    if (s.size() < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
        return parse_decimal(s);
    }
    s.remove_prefix(2);
    if (s.empty()) {
        return std::nullopt;
    }
    uint64_t v = 0;
    for (const char c : s) {
        uint64_t d = 0;
        if (c >= '0' && c <= '9') {
            d = uint64_t(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            d = uint64_t(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
            d = uint64_t(c - 'A' + 10);
        } else {
            return std::nullopt;
        }
        if (v > (UINT64_MAX >> 4)) {
            return std::nullopt;
        }
        v = (v << 4) | d;
    }
    return v;
}

// Whether s has the form of a number (decimal digits, or 0x/0X and hex digits), whatever its size:
// what tells "out of range" from "not a number" when parse_number fails.
constexpr bool is_number_text(std::string_view s) {
    const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex) {
        s.remove_prefix(2);
    }
    if (s.empty()) {
        return false;
    }
    for (const char c : s) {
        const bool digit = c >= '0' && c <= '9';
        if (!digit && !(hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))) {
            return false;
        }
    }
    return true;
}

// The accepted values of a setting: [min, max], and a multiple of `multiple_of`.
struct setting_range {
    uint64_t min         = 0;
    uint64_t max         = UINT64_MAX;
    uint64_t multiple_of = 1;

    std::string describe() const {
        // Appended piece by piece: "[" + std::to_string(...) trips a GCC 12 -Wrestrict false positive.
        std::string s("[");
        s.append(std::to_string(min)).append(", ").append(std::to_string(max)).append("]");
        if (multiple_of > 1) {
            s.append(", a multiple of ").append(std::to_string(multiple_of));
        }
        return s;
    }
};

inline std::invalid_argument bad_setting(const char * var, std::string_view text, const std::string & why) {
    return std::invalid_argument(std::string(var) + "='" + std::string(text) + "': " + why);
}

// Why `text` is not a value in `range` ("not a number; expected an integer in [0, 64]", "out of
// range; must be in [0, 64]"), or "" when it is one, stored in `out`. Shared with the CLI's flags.
inline std::string number_problem(std::string_view text, const setting_range & range, uint64_t & out) {
    const std::optional<uint64_t> v = parse_number(text);
    if (!v) {
        return is_number_text(text) ? "out of range; must be in " + range.describe()
                                    : "not a number; expected an integer in " + range.describe();
    }
    if (*v < range.min || *v > range.max) {
        return "out of range; must be in " + range.describe();
    }
    if (range.multiple_of > 1 && *v % range.multiple_of != 0) {
        return "must be in " + range.describe();
    }
    out = *v;
    return {};
}

// The value of `text` for variable `var`, or std::invalid_argument.
inline uint64_t parse_setting(const char * var, std::string_view text, const setting_range & range) {
    uint64_t v = 0;
    if (const std::string why = number_problem(text, range, v); !why.empty()) {
        throw bad_setting(var, text, why);
    }
    return v;
}

// An on/off setting: exactly "0" or "1".
inline bool parse_flag(const char * var, std::string_view text) {
    if (text == "0" || text == "1") {
        return text == "1";
    }
    throw bad_setting(var, text, "expected 0 or 1");
}

// The variable's text; nullopt when unset or empty (empty means "the default", as unset).
inline std::optional<std::string> env_text(const char * var) {
    const char * v = std::getenv(var);
    return v != nullptr && *v != '\0' ? std::optional<std::string>(v) : std::nullopt;
}

inline std::optional<uint64_t> env_setting(const char * var, const setting_range & range) {
    const std::optional<std::string> text = env_text(var);
    return text ? std::optional<uint64_t>(parse_setting(var, *text, range)) : std::nullopt;
}

} // namespace hexnpu::util
