#include "cli-util.h"

#include "core/gguf-layout.h"
#include "core/parallel.h"
#include "util/parse-setting.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <unistd.h>

namespace hexnpu::cli {

int fail(const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fputs("error: ", stderr);
    std::vfprintf(stderr, fmt, ap);
    std::fputc('\n', stderr);
    va_end(ap);
    return 1;
}

std::string format(const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    const int n = std::vsnprintf(nullptr, 0, fmt, ap);
    va_end(ap);
    std::string s(size_t(std::max(n, 0)), '\0');
    std::vsnprintf(s.data(), s.size() + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

std::string printable(std::string_view s) {
    std::string out;
    gguf::layout::append_escaped(out, s, '\\');  // no quote character of its own: only \\ and controls
    return out;
}

std::string shape_string(const int64_t * ne, uint32_t n_dims, const char * sep) {
    std::string s;
    for (uint32_t d = 0; d < n_dims; ++d) {
        if (d) {
            s.append(sep);
        }
        s.append(std::to_string(ne[d]));
    }
    return s;
}

table::table(std::vector<std::string> header, std::vector<bool> right_align)
    : header_(std::move(header)), right_(std::move(right_align)) {
    right_.resize(header_.size(), false);
}

void table::add(std::vector<std::string> row) {
    row.resize(header_.size());
    rows_.push_back(std::move(row));
}

void table::print(FILE * out) const {
    std::vector<size_t> width(header_.size());
    for (size_t c = 0; c < header_.size(); ++c) {
        width[c] = header_[c].size();
        for (const auto & r : rows_) {
            width[c] = std::max(width[c], r[c].size());
        }
    }
    auto line = [&](const std::vector<std::string> & r) {
        std::string s;
        for (size_t c = 0; c < r.size(); ++c) {
            const std::string pad(width[c] - r[c].size(), ' ');
            s += right_[c] ? pad + r[c] : r[c] + (c + 1 < r.size() ? pad : "");
            if (c + 1 < r.size()) {
                s += "  ";
            }
        }
        std::fprintf(out, "%s\n", s.c_str());
    };
    line(header_);
    std::vector<std::string> rule(header_.size());
    for (size_t c = 0; c < header_.size(); ++c) {
        rule[c] = std::string(width[c], '-');
    }
    line(rule);
    for (const auto & r : rows_) {
        line(r);
    }
}

progress::progress(size_t total) : total_(total), enabled_(isatty(STDERR_FILENO) != 0) {}

progress::~progress() {
    if (enabled_) {
        std::fprintf(stderr, "\r\033[K");
        std::fflush(stderr);
    }
}

void progress::update(size_t done, std::string_view label) {
    if (!enabled_) {
        return;
    }
    const int pct = total_ ? int(done * 100 / total_) : 100;
    std::fprintf(stderr, "\r\033[K[%3d%%] %zu/%zu %.*s", pct, done, total_, int(label.size()), label.data());
    std::fflush(stderr);
}

bool parse_int(std::string_view s, long long & out) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

long long int_option(std::span<const std::string_view> a, size_t & i, long long min, long long max) {
    const util::setting_range range{uint64_t(min), uint64_t(max)};
    if (i + 1 >= a.size()) {
        throw std::runtime_error(std::string(a[i]) + " needs an integer in " + range.describe());
    }
    std::string_view text = a[i + 1];
    uint64_t         v    = 0;
    std::string      why  = util::number_problem(text, range, v);
    if (text.size() > 1 && text[0] == '-' && util::is_number_text(text.substr(1))) {
        why = "out of range; must be in " + range.describe();  // every option's range starts at 0 or above
    }
    if (!why.empty()) {
        throw std::runtime_error(std::string(a[i]) + " '" + printable(text) + "': " + why);
    }
    ++i;
    return (long long) v;
}

double float_option(std::span<const std::string_view> a, size_t & i, double min, double max, bool min_open) {
    const std::string range = format("%s%g, ", min_open ? "(" : "[", min) +
                              (std::isinf(max) ? std::string("inf)") : format("%g]", max));
    if (i + 1 >= a.size()) {
        throw std::runtime_error(std::string(a[i]) + " needs a number in " + range);
    }
    const std::string_view text = a[i + 1];
    double                 v    = 0;
    const auto             r    = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec == std::errc::invalid_argument || r.ptr != text.data() + text.size()) {
        throw std::runtime_error(std::string(a[i]) + " '" + printable(text) + "': not a number; expected one in " + range);
    }
    if (r.ec != std::errc() || !std::isfinite(v) || v < min || (min_open && v == min) || v > max) {
        throw std::runtime_error(std::string(a[i]) + " '" + printable(text) + "': out of range; must be in " + range);
    }
    ++i;
    return v;
}

static_assert(MAX_THREADS == 1024, "kThreadsUsage states the cap");
const char * const kThreadsUsage = "  -t/--threads N: CPU threads, 1 to 1024 (default: one per core).\n";

int thread_option(std::span<const std::string_view> a, size_t & i) { return int(int_option(a, i, 1, MAX_THREADS)); }

} // namespace hexnpu::cli
