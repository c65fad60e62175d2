// src/util/parse-setting.h: the strict parser behind every GGML_HEXAGON_* and HEXNPU_* number
// (issue 11, class 6). Expectations are written out by hand: the accepted forms, the rejected ones
// (the examples among them) and the exact message text.
#include "util/parse-setting.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

using hexnpu::util::parse_decimal;
using hexnpu::util::parse_flag;
using hexnpu::util::parse_number;
using hexnpu::util::parse_setting;
using hexnpu::util::setting_range;

std::string error_of(const char * var, const char * text, const setting_range & range) {
    try {
        parse_setting(var, text, range);
    } catch (const std::invalid_argument & e) {
        return e.what();
    }
    return "";
}

TEST(ParseSetting, AcceptsWholeDecimalAndHexNumbers) {
    EXPECT_EQ(parse_number("0"), 0u);
    EXPECT_EQ(parse_number("42"), 42u);
    EXPECT_EQ(parse_number("010"), 10u) << "leading zeros are decimal, not octal";
    EXPECT_EQ(parse_number("0x800000"), 0x800000u);
    EXPECT_EQ(parse_number("0XfF"), 255u);
    EXPECT_EQ(parse_number("18446744073709551615"), UINT64_MAX);
    EXPECT_EQ(parse_number("0xffffffffffffffff"), UINT64_MAX);
    EXPECT_EQ(parse_decimal("0x10"), std::nullopt) << "list items are decimal only";
}

TEST(ParseSetting, RejectsEverythingElse) {
    for (const char * bad : {"", "abc", "12k", "1.5", "-1", "+1", " 1", "1 ", "1\n", "0x", "0x1g", "1e3",
                             "18446744073709551616", "0x10000000000000000", "99999999999999999999999"}) {
        EXPECT_EQ(parse_number(bad), std::nullopt) << "'" << bad << "'";
    }
}

TEST(ParseSetting, MessagesNameTheVariableTheValueAndTheRange) {
    EXPECT_EQ(error_of("HEXNPU_VTCM_SIZE", "abc", {0, 1 << 30, 4096}),
              "HEXNPU_VTCM_SIZE='abc': not a number; expected an integer in [0, 1073741824], a multiple of 4096");
    EXPECT_EQ(error_of("HEXNPU_VTCM_SIZE", "1000", {0, 1 << 30, 4096}),
              "HEXNPU_VTCM_SIZE='1000': must be in [0, 1073741824], a multiple of 4096");
    // The examples: no wrap-around to 1, no "-1 ms".
    EXPECT_EQ(error_of("HEXNPU_HVX_COUNT", "4294967297", {0, 10}),
              "HEXNPU_HVX_COUNT='4294967297': out of range; must be in [0, 10]");
    EXPECT_EQ(error_of("HEXNPU_SESSION_TIMEOUT_MS", "18446744073709551615", {1, 86400000}),
              "HEXNPU_SESSION_TIMEOUT_MS='18446744073709551615': out of range; must be in [1, 86400000]");
    EXPECT_EQ(error_of("X", "0", {1, 2}), "X='0': out of range; must be in [1, 2]");
    // Issue 29: a number beyond 64 bits is a number, out of range.
    EXPECT_EQ(error_of("X", "99999999999999999999", {1, 2}), "X='99999999999999999999': out of range; must be in [1, 2]");
    EXPECT_EQ(error_of("X", "0x10000000000000000", {1, 2}), "X='0x10000000000000000': out of range; must be in [1, 2]");
    EXPECT_EQ(error_of("X", "0x", {1, 2}), "X='0x': not a number; expected an integer in [1, 2]");
    EXPECT_EQ(error_of("X", "-1", {1, 2}), "X='-1': not a number; expected an integer in [1, 2]");
    EXPECT_EQ(error_of("X", "2", {1, 2}), "");
    EXPECT_EQ(parse_setting("X", "0x1000", {0, 1 << 20, 4096}), 4096u);
}

TEST(ParseSetting, FlagsAreZeroOrOne) {
    EXPECT_FALSE(parse_flag("HEXNPU_STRICT", "0"));
    EXPECT_TRUE(parse_flag("HEXNPU_STRICT", "1"));
    for (const char * bad : {"2", "yes", "true", "01", " 1", ""}) {
        try {
            parse_flag("HEXNPU_STRICT", bad);
            ADD_FAILURE() << "'" << bad << "' accepted";
        } catch (const std::invalid_argument & e) {
            EXPECT_EQ(std::string(e.what()), "HEXNPU_STRICT='" + std::string(bad) + "': expected 0 or 1");
        }
    }
}

TEST(ParseSetting, AnUnsetOrEmptyVariableIsTheDefault) {
    unsetenv("HEXNPU_TEST_PARSE_SETTING");
    EXPECT_EQ(hexnpu::util::env_setting("HEXNPU_TEST_PARSE_SETTING", {0, 9}), std::nullopt);
    setenv("HEXNPU_TEST_PARSE_SETTING", "", 1);
    EXPECT_EQ(hexnpu::util::env_setting("HEXNPU_TEST_PARSE_SETTING", {0, 9}), std::nullopt);
    setenv("HEXNPU_TEST_PARSE_SETTING", "7", 1);
    EXPECT_EQ(hexnpu::util::env_setting("HEXNPU_TEST_PARSE_SETTING", {0, 9}), 7u);
    setenv("HEXNPU_TEST_PARSE_SETTING", "70", 1);
    EXPECT_THROW(hexnpu::util::env_setting("HEXNPU_TEST_PARSE_SETTING", {0, 9}), std::invalid_argument);
    unsetenv("HEXNPU_TEST_PARSE_SETTING");
}

} // namespace
