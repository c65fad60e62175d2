// hexnpu quantize IN.gguf OUT.gguf TYPE [--threads N] [--allow-requantize] [--pure]
//   [--output-tensor-type T] [--token-embedding-type T] [--tensor-type PATTERN=T]...
#include "cli-util.h"
#include "commands.h"

#include "core/parallel.h"
#include "core/quantize-model.h"
#include "hexnpu/gguf.h"
#include "hexnpu/output-file.h"

#include <chrono>
#include <memory>
#include <cstdio>
#include <string>

namespace hexnpu::cli {
namespace {

const char * kUsage =
    "usage: hexnpu quantize IN.gguf OUT.gguf TYPE [--threads N] [--allow-requantize] [--pure]\n"
    "                       [--output-tensor-type T] [--token-embedding-type T] [--tensor-type PATTERN=T]...\n"
    "  Every weight matrix whose row length is a multiple of its type's block size becomes that type; other\n"
    "  tensors are copied unchanged. TYPE f32, f16 or bf16 also converts quantized tensors back. Metadata is kept.\n"
    "  A matrix's type: the first --tensor-type whose PATTERN (a regex searched in the tensor name, e.g.\n"
    "  attn_v=q8_0) matches; --output-tensor-type for output.weight (and for token_embd.weight when the\n"
    "  model ties its output to it); --token-embedding-type for token_embd.weight; else TYPE. hexnpu makes\n"
    "  no per-layer mixes, so --pure (llama-quantize's flag for that) changes nothing.\n"
    "  Types (case-insensitive): f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl mxfp4 q1_0 q2_0 q2_K q3_K q4_K q5_K q6_K\n";

} // namespace

int cmd_quantize(args a) {
    std::vector<std::string_view> pos;
    quantize_options              opt;
    opt.n_threads = default_thread_count();
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] == "--help" || a[i] == "-h") {
            std::fputs(kUsage, stdout);
            std::fputs(kThreadsUsage, stdout);
            return 0;
        } else if (a[i] == "--allow-requantize") {
            opt.allow_requantize = true;
        } else if (a[i] == "--pure") {
            // hexnpu's only mode.
        } else if (a[i] == "--output-tensor-type" || a[i] == "--token-embedding-type" || a[i] == "--tensor-type") {
            const std::string_view flag = a[i];
            if (i + 1 >= a.size()) {
                return fail("%.*s needs a value\n%s", int(flag.size()), flag.data(), kUsage);
            }
            std::string_view value = a[++i], pattern;
            if (flag == "--tensor-type") {
                const size_t eq = value.rfind('=');
                if (eq == std::string_view::npos || eq == 0) {
                    return fail("--tensor-type '%.*s': expected PATTERN=TYPE", int(value.size()), value.data());
                }
                pattern = value.substr(0, eq);
                value   = value.substr(eq + 1);
            }
            const auto type = ggml_type_from_name(value);
            if (!type) {
                return fail("%.*s: unknown type '%.*s'\n%s", int(flag.size()), flag.data(), int(value.size()), value.data(),
                            kUsage);
            }
            if (flag == "--output-tensor-type") {
                opt.output_type = *type;
            } else if (flag == "--token-embedding-type") {
                opt.token_embd_type = *type;
            } else {
                try {
                    opt.overrides.push_back({std::string(pattern), std::regex(std::string(pattern)), *type});
                } catch (const std::regex_error & e) {
                    return fail("--tensor-type '%.*s': bad pattern: %s", int(pattern.size()), pattern.data(), e.what());
                }
            }
        } else if (a[i] == "--threads" || a[i] == "-t") {
            opt.n_threads = thread_option(a, i);
        } else if (a[i].starts_with("-")) {
            return fail("unknown option '%.*s'\n%s", int(a[i].size()), a[i].data(), kUsage);
        } else {
            pos.push_back(a[i]);
        }
    }
    if (pos.size() != 3) {
        std::fputs(kUsage, stderr);
        return 1;
    }
    const std::string in_path(pos[0]), out_path(pos[1]);
    const auto        target = ggml_type_from_name(pos[2]);
    if (!target) {
        return fail("unknown type '%.*s'\n%s", int(pos[2].size()), pos[2].data(), kUsage);
    }
    opt.target = *target;

    const auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<gguf::reader> in;
    try {
        in = std::make_unique<gguf::reader>(gguf::reader::open(in_path));
    } catch (const gguf::error & e) {
        return fail("%s: %s", in_path.c_str(), e.what());
    }
    // Before any work: OUT must not be IN (by identity) and must be a regular file or new.
    output_file                    out    = output_file::create(out_path, {in_path});
    const std::vector<tensor_plan> plan   = plan_quantize(*in, opt);
    const gguf::writer             writer = make_quantized_writer(*in, plan, opt);

    progress bar(plan.size());
    writer.write(out, [&](size_t i, size_t n, const gguf::tensor_info & t) { bar.update(i + 1, printable(t.name)); });
    out.commit();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    table    tab({"#", "name", "shape", "type", "", "new type", "bytes", "new bytes", "action"},
                 {true, false, false, false, false, false, true, true, false});
    uint64_t in_bytes = 0, out_bytes = 0;
    size_t   changed  = 0;
    for (const auto & p : plan) {
        const auto & t = in->tensors()[p.index];
        std::string  action = tensor_action_name(p.action);
        if (p.action == tensor_action::copy) {
            action.append(" (").append(p.why_copied).append(")");
        } else {
            ++changed;
        }
        tab.add({std::to_string(p.index), printable(t.name), shape_string(t.ne.data(), t.n_dims, "x"),
                 ggml_type_name(t.type),
                 "->", ggml_type_name(p.out_type), std::to_string(t.nbytes), std::to_string(p.out_nbytes), action});
        in_bytes += t.nbytes;
        out_bytes += p.out_nbytes;
    }
    tab.print(stdout);
    std::printf("\n%s -> %s: %zu of %zu tensors converted to %s; tensor data %s -> %s (%.1f%%); %.2f s, %d threads\n",
                in_path.c_str(), out_path.c_str(), changed, plan.size(), ggml_type_name(opt.target),
                human_bytes(in_bytes).c_str(), human_bytes(out_bytes).c_str(),
                in_bytes ? 100.0 * double(out_bytes) / double(in_bytes) : 100.0, secs, opt.n_threads);
    return 0;
}

} // namespace hexnpu::cli
