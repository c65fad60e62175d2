#include "cli-util.h"

#include "core/gguf-layout.h"

#include <algorithm>
#include <charconv>
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

std::string human_bytes(uint64_t bytes) {
    static const char * units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) {
        return format("%llu B", (unsigned long long) bytes);
    }
    double v = double(bytes);
    int    u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    return format("%.2f %s", v, units[u]);
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

long long int_option(std::span<const std::string_view> a, size_t & i, long long min) {
    long long v = 0;
    if (i + 1 >= a.size() || !parse_int(a[i + 1], v) || v < min) {
        throw std::runtime_error(std::string(a[i]) + " needs an integer >= " + std::to_string(min));
    }
    ++i;
    return v;
}

} // namespace hexnpu::cli
