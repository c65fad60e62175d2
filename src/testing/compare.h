// Comparing a backend's result with the reference: normalized error for values, exact rules for
// sort indices.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace hexnpu::optest {

struct comparison {
    bool        ok;
    double      nmse;    // of the finite positions; 0 for index comparisons
    std::string detail;  // why it failed, empty when ok
};

// NMSE = sum((got - want)^2) / sum(want^2) over positions where want is finite; every -inf, +inf
// and NaN of want must be in got at the same position, and got has no others.
comparison compare_nmse(std::span<const double> got, std::span<const double> want, double max_nmse);

// ARGSORT: each row of got must be a permutation of 0..n-1 that puts the keys in the same order as
// want does; indices of equal keys may come in any order.
comparison compare_argsort(std::span<const double> got, std::span<const double> want,
                           std::span<const double> keys, int64_t n);

// TOP_K: each row of got must hold k distinct indices into its key row (n keys) whose keys are the
// same multiset as want's; order within the row and the choice among equal keys are free.
comparison compare_top_k(std::span<const double> got, std::span<const double> want, std::span<const double> keys,
                         int64_t k, int64_t n);

} // namespace hexnpu::optest
