// The machine's memory read bandwidth, measured in the same run as a benchmark so that its figures
// compare with something (machines differ from day to day).
#pragma once

namespace hexnpu::cli {

// Bytes/s: the best of a few passes summing a 256 MiB buffer (well beyond the caches of the
// machines here) on n_threads threads.
double read_bandwidth(int n_threads);

} // namespace hexnpu::cli
