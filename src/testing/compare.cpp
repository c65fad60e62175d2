#include "compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace hexnpu::optest {
namespace {

// Non-finite values match when they are the same kind: NaN, +inf or -inf.
bool same_non_finite(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) {
        return std::isnan(a) && std::isnan(b);
    }
    return a == b;
}

std::string at(const char * what, size_t i, double got, double want) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s at %zu: got %g, want %g", what, i, got, want);
    return buf;
}

// Keys of the indices in one row of an index result; empty with `error` set when an index is
// out of range or repeated.
std::vector<double> keys_of(std::span<const double> idx, std::span<const double> key_row, std::string & error) {
    std::vector<double> keys;
    std::vector<bool>   seen(key_row.size());
    for (const double v : idx) {
        const int64_t i = int64_t(v);
        if (double(i) != v || i < 0 || i >= int64_t(key_row.size()) || seen[size_t(i)]) {
            error = "index " + std::to_string(v) + " is out of range or repeated";
            return {};
        }
        seen[size_t(i)] = true;
        keys.push_back(key_row[size_t(i)]);
    }
    return keys;
}

comparison compare_indices(std::span<const double> got, std::span<const double> want, std::span<const double> keys,
                           int64_t k, int64_t n, bool as_sets) {
    if (got.size() != want.size() || k <= 0 || got.size() % size_t(k) != 0 || keys.size() != got.size() / size_t(k) * size_t(n)) {
        return {false, 0.0, "result sizes differ"};
    }
    for (size_t row = 0; row < got.size() / size_t(k); ++row) {
        const auto  key_row = keys.subspan(row * size_t(n), size_t(n));
        std::string error;
        auto        got_keys = keys_of(got.subspan(row * size_t(k), size_t(k)), key_row, error);
        auto        want_keys = keys_of(want.subspan(row * size_t(k), size_t(k)), key_row, error);
        if (!error.empty()) {
            return {false, 0.0, "row " + std::to_string(row) + ": " + error};
        }
        if (as_sets) {
            std::sort(got_keys.begin(), got_keys.end());
            std::sort(want_keys.begin(), want_keys.end());
        }
        if (got_keys != want_keys) {
            return {false, 0.0, "row " + std::to_string(row) + ": the indices select other keys"};
        }
    }
    return {true, 0.0, {}};
}

} // namespace

comparison compare_nmse(std::span<const double> got, std::span<const double> want, double max_nmse) {
    if (got.size() != want.size()) {
        return {false, 0.0, "result sizes differ"};
    }
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (!std::isfinite(got[i]) || !std::isfinite(want[i])) {
            if (!same_non_finite(got[i], want[i])) {
                return {false, NAN, at("non-finite mismatch", i, got[i], want[i])};
            }
            continue;
        }
        err += (got[i] - want[i]) * (got[i] - want[i]);
        norm += want[i] * want[i];
    }
    // An all-zero reference is matched only exactly.
    const double nmse = norm > 0.0 ? err / norm : (err > 0.0 ? INFINITY : 0.0);
    return {nmse <= max_nmse, nmse, {}};
}

comparison compare_argsort(std::span<const double> got, std::span<const double> want, std::span<const double> keys,
                           int64_t n) {
    return compare_indices(got, want, keys, n, n, false);
}

comparison compare_top_k(std::span<const double> got, std::span<const double> want, std::span<const double> keys,
                         int64_t k, int64_t n) {
    return compare_indices(got, want, keys, k, n, true);
}

} // namespace hexnpu::optest
