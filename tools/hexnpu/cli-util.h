// Small helpers shared by the subcommands: error reporting, aligned tables, sizes, progress.
#pragma once

#include "core/strings.h"

#include <cstdarg>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hexnpu::cli {

// Prints "error: <message>" to stderr and returns the exit code 1.
[[gnu::format(printf, 1, 2)]] int fail(const char * fmt, ...);

std::string format(const char * fmt, ...) __attribute__((format(printf, 1, 2)));

// A key, tensor name or other text from a file, made safe for one table cell or message line:
// backslash, control bytes and NUL become escapes (\\, \n, \t, \r, \x00), as string values are
// shown. Bytes >= 0x80 pass through (UTF-8).
std::string printable(std::string_view s);

using hexnpu::human_bytes;  // "1.50 MiB", "512 B" ... (core/strings.h)

// The first n_dims of ne joined by sep: "4096 x 32000" (sep " x ") or "4096x32000".
std::string shape_string(const int64_t * ne, uint32_t n_dims, const char * sep = " x ");

// Columns are left-aligned unless marked right-aligned (numbers).
class table {
  public:
    explicit table(std::vector<std::string> header, std::vector<bool> right_align = {});
    void add(std::vector<std::string> row);
    void print(FILE * out) const;

  private:
    std::vector<std::string>              header_;
    std::vector<bool>                     right_;
    std::vector<std::vector<std::string>> rows_;
};

// A one-line progress indicator on stderr, shown only when stderr is a terminal.
class progress {
  public:
    explicit progress(size_t total);
    ~progress();
    void update(size_t done, std::string_view label);

  private:
    size_t total_;
    bool   enabled_;
};

// Parses a positive integer option value; returns false on junk.
bool parse_int(std::string_view s, long long & out);

// The integer value after option a[i], which moves i past it; throws std::runtime_error when it
// is missing ("OPT needs an integer in [MIN, MAX]"), junk ("OPT 'x': not a number; ...") or outside
// [min, max] ("OPT '99999999999': out of range; must be in [1, 1024]", never cut to fit an int).
// 0 <= min.
long long int_option(std::span<const std::string_view> a, size_t & i, long long min, long long max = INT32_MAX);

// The finite number after option a[i] in [min, max] ((min, max] when min_open; max may be
// infinity), which moves i past it; throws std::runtime_error "OPT 'x': not a number; ..." or
// "OPT 'nan': out of range; must be in [0, 1]" (NaN and infinities are never in range).
double float_option(std::span<const std::string_view> a, size_t & i, double min, double max, bool min_open = false);

// -t/--threads N of every command: [1, MAX_THREADS] (core/parallel.h); kThreadsUsage says so in --help.
int thread_option(std::span<const std::string_view> a, size_t & i);
extern const char * const kThreadsUsage;

} // namespace hexnpu::cli
