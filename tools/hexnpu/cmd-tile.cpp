// hexnpu tile IN.gguf --tensor NAME -o OUT.bin: one tensor's tiled bytes, all slices in order, exactly
// as an NPU weight buffer holds them.
// hexnpu tile IN.gguf --check: repacks every tileable tensor and compares it with the flat data.
#include "cli-util.h"
#include "commands.h"

#include "core/parallel.h"
#include "hexagon/repack.h"
#include "hexnpu/gguf.h"
#include "hexnpu/output-file.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace hexnpu::cli {
namespace {

const char * kUsage =
    "usage: hexnpu tile IN.gguf --tensor NAME -o OUT.bin [--threads N]\n"
    "       hexnpu tile IN.gguf --check [--threads N]\n"
    "  --tensor writes NAME's tiled bytes (all 2-D slices in order, as the NPU weight buffer holds them).\n"
    "  --check repacks every tensor of a tiled type (q4_0 q4_1 q8_0 iq4_nl mxfp4 q1_0 q2_0 q2_K..q6_K) and\n"
    "  prints flat and tiled sizes, whether the tiling is lossless, and the largest difference between the\n"
    "  flat and the tiled dequantization; lossless tensors must also unpack to their exact flat bytes.\n";

// Repacks a tensor into `tiled`; empty on success, else why it stays flat.
std::string repack(const gguf::reader & r, const gguf::tensor_info & t, std::vector<uint8_t> & tiled, int n_threads) {
    if (!hexagon::is_tileable_type(t.type)) {
        return format("%s has no tiled format", ggml_type_name(t.type));
    }
    tiled.resize(hexagon::tiled_nbytes(t.type, t.ne.data()));
    return hexagon::repack_tensor(t.type, t.ne.data(), r.tensor_data(t).data(), tiled.data(), n_threads).error;
}

// Largest |flat - tiled| over all values. Values with identical bits count as equal, and so do two
// NaNs whatever their sign and payload: a tiled form may store a scale negated (q2_K keeps -dmin),
// which flips the sign of a NaN that the flat block's NaN scale produces.
double max_dequant_difference(const gguf::reader & r, const gguf::tensor_info & t, const std::vector<uint8_t> & tiled,
                              int n_threads) {
    const int64_t   n_rows    = t.ne[1] * t.ne[2] * t.ne[3];
    const size_t    row_bytes = ggml_row_size(t.type, t.ne[0]);
    const uint8_t * flat      = r.tensor_data(t).data();
    const auto      to_float  = ggml_get_type_traits(t.type)->to_float;
    std::mutex      max_mutex;
    double          max_diff = 0.0;
    parallel_for(n_rows, n_threads, 16, [&](int64_t begin, int64_t end) {
        constexpr int64_t  kRowsPerChunk = 64;
        std::vector<float> a(size_t(kRowsPerChunk * t.ne[0])), b(a.size());
        double             local_max = 0.0;
        for (int64_t row = begin; row < end; row += kRowsPerChunk) {
            const int64_t rows = std::min(kRowsPerChunk, end - row);
            to_float(flat + size_t(row) * row_bytes, a.data(), rows * t.ne[0]);
            hexagon::dequantize_tiled_rows(t.type, t.ne.data(), tiled.data(), row, row + rows, b.data());
            for (size_t i = 0; i < size_t(rows * t.ne[0]); ++i) {
                if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]) &&
                    !(std::isnan(a[i]) && std::isnan(b[i]))) {
                    const double diff = std::abs(double(a[i]) - double(b[i]));
                    local_max         = std::isnan(diff) || std::isnan(local_max) ? NAN : std::max(local_max, diff);
                }
            }
        }
        const std::lock_guard lock(max_mutex);
        max_diff = std::isnan(local_max) || std::isnan(max_diff) ? NAN : std::max(max_diff, local_max);
    });
    return max_diff;
}

int write_tensor(const std::string & in_path, std::string_view name, const std::string & out_path, int n_threads) {
    const gguf::reader          r = gguf::reader::open(in_path);
    const gguf::tensor_info *   t = r.find_tensor(name);
    if (!t) {
        return fail("%s: no tensor named '%s'", in_path.c_str(), printable(name).c_str());
    }
    // OUT must not be IN (by identity) and must be a regular file or new; written atomically, so an
    // existing OUT survives a failed write.
    output_file          out = output_file::create(out_path, {in_path});
    std::vector<uint8_t> tiled;
    if (const std::string error = repack(r, *t, tiled, n_threads); !error.empty()) {
        return fail("%s: %s", printable(t->name).c_str(), error.c_str());
    }
    out.write(tiled.data(), tiled.size());
    out.commit();
    std::printf("%s: %s %s, %llu flat -> %llu tiled bytes, written to %s\n", printable(t->name).c_str(),
                ggml_type_name(t->type),
                shape_string(t->ne.data(), t->n_dims, "x").c_str(), (unsigned long long) t->nbytes,
                (unsigned long long) tiled.size(), out_path.c_str());
    return 0;
}

int check(const std::string & in_path, int n_threads) {
    const gguf::reader r = gguf::reader::open(in_path);
    table              tiled_table({"name", "type", "shape", "flat bytes", "tiled bytes", "lossless", "max |flat - tiled|"},
                                   {false, false, false, true, true, false, true});
    table              flat_table({"name", "type", "shape", "stays flat because"});
    uint64_t           flat_total = 0, tiled_total = 0;
    size_t             n_tiled = 0, n_mismatch = 0;
    progress           bar(r.tensors().size());
    std::vector<uint8_t> tiled, unpacked;
    for (size_t i = 0; i < r.tensors().size(); ++i) {
        const gguf::tensor_info & t = r.tensors()[i];
        bar.update(i, printable(t.name));
        if (const std::string error = repack(r, t, tiled, n_threads); !error.empty()) {
            flat_table.add(
                {printable(t.name), ggml_type_name(t.type), shape_string(t.ne.data(), t.n_dims, "x"), error});
            continue;
        }
        const bool   lossless = hexagon::is_lossless_tiling(t.type);
        const double diff     = max_dequant_difference(r, t, tiled, n_threads);
        std::string  verdict  = lossless ? "yes" : "no";
        bool         exact    = !lossless || diff == 0.0;
        if (lossless) {
            unpacked.resize(t.nbytes);
            const hexagon::repack_result back = hexagon::unpack_tensor(t.type, t.ne.data(), tiled.data(), unpacked.data());
            exact = exact && back.ok() && std::memcmp(unpacked.data(), r.tensor_data(t).data(), t.nbytes) == 0;
        }
        if (!exact) {
            verdict += " (MISMATCH)";
            ++n_mismatch;
        }
        tiled_table.add({printable(t.name), ggml_type_name(t.type), shape_string(t.ne.data(), t.n_dims, "x"),
                         std::to_string(t.nbytes), std::to_string(tiled.size()), verdict, format("%.6g", diff)});
        flat_total += t.nbytes;
        tiled_total += tiled.size();
        ++n_tiled;
    }
    bar.update(r.tensors().size(), "");
    tiled_table.print(stdout);
    std::printf("\ntiled: %zu of %zu tensors, %s flat -> %s tiled (%+.2f %%)\n", n_tiled, r.tensors().size(),
                human_bytes(flat_total).c_str(), human_bytes(tiled_total).c_str(),
                flat_total ? 100.0 * (double(tiled_total) - double(flat_total)) / double(flat_total) : 0.0);
    if (n_tiled < r.tensors().size()) {
        std::printf("\nnot tiled (%zu):\n", r.tensors().size() - n_tiled);
        flat_table.print(stdout);
    }
    if (n_mismatch) {
        return fail("%zu lossless tensor(s) did not tile exactly", n_mismatch);
    }
    return 0;
}

} // namespace

int cmd_tile(args a) {
    std::string_view in_path, tensor, out_path;
    bool             check_all = false;
    int              n_threads = default_thread_count();
    for (size_t i = 0; i < a.size(); ++i) {
        const bool has_value = i + 1 < a.size();
        if (a[i] == "--help" || a[i] == "-h") {
            std::fputs(kUsage, stdout);
            std::fputs(kThreadsUsage, stdout);
            return 0;
        } else if (a[i] == "--check") {
            check_all = true;
        } else if (a[i] == "--tensor" || a[i] == "-o") {
            if (!has_value) {
                return fail("%.*s needs a value", int(a[i].size()), a[i].data());
            }
            std::string_view & value = a[i] == "-o" ? out_path : tensor;
            value                    = a[++i];
        } else if (a[i] == "--threads" || a[i] == "-t") {
            n_threads = thread_option(a, i);
        } else if (a[i].starts_with("-") || !in_path.empty()) {
            return fail("unexpected argument '%.*s'\n%s", int(a[i].size()), a[i].data(), kUsage);
        } else {
            in_path = a[i];
        }
    }
    const bool write_one = !tensor.empty() && !out_path.empty();
    const bool valid     = check_all ? tensor.empty() && out_path.empty() : write_one;
    if (in_path.empty() || !valid) {
        std::fputs(kUsage, stderr);
        return 1;
    }
    const std::string path(in_path);
    try {
        return check_all ? check(path, n_threads) : write_tensor(path, tensor, std::string(out_path), n_threads);
    } catch (const gguf::error & e) {
        return fail("%s: %s", path.c_str(), e.what());
    }
}

} // namespace hexnpu::cli
