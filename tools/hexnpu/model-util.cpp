#include "model-util.h"

#include "cli-util.h"

#include "cpu/cpu-backend.h"
#include "model/synth-model.h"

#include "hexnpu/hexagon.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

namespace hexnpu::cli {
namespace {

const char * kModelFile = "gemma-3-270m-q4_k_m.gguf";

std::filesystem::path exe_dir() {
    std::error_code ec;
    auto            p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::path() : p.parent_path();
}

} // namespace

std::string find_default_model() {
    if (const char * env = std::getenv("HEXNPU_MODEL"); env && *env) {
        return env;
    }
    for (const std::filesystem::path & p :
         {exe_dir() / ".." / "models" / kModelFile, std::filesystem::path("build") / "models" / kModelFile}) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(p, ec)) {
            return std::filesystem::weakly_canonical(p, ec).string();
        }
    }
    return {};
}

std::string synth_default_model() {
    static std::string path;
    if (path.empty()) {
        char tmpl[] = "/tmp/hexnpu-synth-XXXXXX";
        const int fd = mkstemp(tmpl);
        if (fd < 0) {
            throw std::runtime_error("cannot create a temporary file for the synthesized model");
        }
        close(fd);
        path = std::string(tmpl);
        synth_params p;
        synth_preset("tiny", p);
        synth_model(p).writer().write(path);
        std::atexit([] { std::remove(path.c_str()); });
    }
    return path;
}

const char * const kDeviceFlagsUsage =
    "  --device LIST (e.g. HTP0, HTP0:0,HTP0:1 with GGML_HEXAGON_DEVICES=2, CPU); with several NPU devices\n"
    "  -sm/--split-mode layer (default: consecutive layers per device, -ts/--tensor-split P0,P1,... the\n"
    "  shares, even without), row (the devices as one group computing every op together, each its\n"
    "  slice, with fences) or none (the first device only).\n";

bool parse_device_flag(std::span<const std::string_view> a, size_t & i, device_choice & c) {
    const std::string_view f = a[i];
    const bool             has_value = i + 1 < a.size();
    if ((f == "--device" || f == "-dev") && has_value) {
        c.list = std::string(a[++i]);
        return true;
    }
    if ((f == "--split-mode" || f == "-sm") && has_value) {
        const std::string_view v = a[++i];
        if (v == "none") {
            c.mode = split_mode::none;
        } else if (v == "layer") {
            c.mode = split_mode::layer;
        } else if (v == "row") {
            c.mode = split_mode::row;
        } else {
            throw std::runtime_error("--split-mode must be none, layer or row, not '" + std::string(v) + "'");
        }
        return true;
    }
    if ((f == "--tensor-split" || f == "-ts") && has_value) {
        const std::string list(a[++i]);
        c.tensor_split.clear();
        for (size_t pos = 0; pos <= list.size();) {
            const size_t end = std::min(list.find_first_of(",/", pos), list.size());
            const std::string item = list.substr(pos, end - pos);
            char *            stop = nullptr;
            const double      v    = std::strtod(item.c_str(), &stop);
            if (item.empty() || *stop != '\0' || !(v >= 0) || v > 1e9) {
                throw std::runtime_error("--tensor-split: '" + item + "' is not a non-negative number (in '" + list + "')");
            }
            c.tensor_split.push_back(v);
            pos = end + 1;
        }
        return true;
    }
    return false;
}

std::vector<size_t> assign_layers(int64_t n_layer, size_t n_devices, const std::vector<double> & proportions) {
    std::vector<double> share = proportions;
    share.resize(n_devices, proportions.empty() ? 1.0 : 0.0);
    double total = 0;
    for (double v : share) {
        total += v;
    }
    if (!(total > 0)) {
        throw std::runtime_error("--tensor-split: the shares add up to nothing");
    }
    std::vector<size_t> out(static_cast<size_t>(n_layer), 0);
    double              cum = 0;
    int64_t             il  = 0;
    for (size_t k = 0; k < n_devices; ++k) {
        cum += share[k];
        const int64_t end = k + 1 == n_devices ? n_layer : int64_t(double(n_layer) * cum / total + 0.5);
        for (; il < end; ++il) {
            out[size_t(il)] = k;
        }
    }
    return out;
}

devices open_devices(const device_choice & choice, int n_threads, bool collect_trace) {
    const std::string & spec = choice.list;
    devices d;
    d.mode         = choice.mode;
    d.tensor_split = choice.tensor_split;
    backend_registry & reg = backend_registry::get();
    // An empty list or item, or a device named twice, has no meaning: refused, not read as "CPU".
    std::vector<std::string> names;
    for (size_t pos = 0; pos <= spec.size();) {
        const size_t comma = spec.find(',', pos);
        const size_t end   = comma == std::string::npos ? spec.size() : comma;
        const std::string name = spec.substr(pos, end - pos);
        if (name.empty()) {
            throw std::runtime_error("--device '" + printable(spec) + "': an empty device name (e.g. HTP0, HTP0:0,HTP0:1 or CPU)");
        }
        if (std::find(names.begin(), names.end(), name) != names.end()) {
            throw std::runtime_error("--device '" + printable(spec) + "': '" + printable(name) + "' is listed twice");
        }
        names.push_back(name);
        pos = end + 1;
    }
    bool want_npu = false;
    for (const std::string & n : names) {
        if (n != "CPU") {
            want_npu = true;
        }
    }
    if (want_npu) {
        register_htp_devices(collect_trace);
    }
    if (!reg.find("CPU")) {
        reg.add(make_cpu_device());
    }
    d.cpu = reg.find("CPU");
    std::vector<backend_device *> npu_devices;
    for (const std::string & n : names) {
        if (n == "CPU") {
            continue;
        }
        backend_device * dev = reg.find(n);
        if (!dev) {
            throw std::runtime_error("unknown device '" + printable(n) + "' (see 'hexnpu devices')");
        }
        if (std::find(npu_devices.begin(), npu_devices.end(), dev) != npu_devices.end()) {  // HTP0 and HTP0:0
            throw std::runtime_error("--device '" + printable(spec) + "' names " + dev->name() + " twice");
        }
        npu_devices.push_back(dev);
    }
    if (choice.mode == split_mode::row && npu_devices.size() < 2) {
        throw std::runtime_error("-sm row splits each op over two or more NPU devices; --device '" + printable(spec) +
                                 "' has " + std::to_string(npu_devices.size()) +
                                 " (e.g. --device HTP0:0,HTP0:1 with GGML_HEXAGON_DEVICES=2)");
    }
    if (choice.mode == split_mode::row && npu_devices.size() > 1) {
        try {
            d.group = make_htp_group_device(npu_devices);
        } catch (const std::invalid_argument & e) {
            throw std::runtime_error(std::string("--split-mode row: ") + e.what());
        }
        npu_devices = {d.group.get()};
    }
    for (backend_device * dev : npu_devices) {
        d.owned.push_back(dev->init_backend());
        d.npu = true;
    }
    // The KV cache in the NPU's compute buffers (its writers and readers run there); a CPU node
    // reading it does so in place, or through the scheduler's copies when GGML_HEXAGON_HOSTBUF=0.
    d.kv_buft = d.npu ? d.owned.front()->device()->buffer_type() : d.cpu->buffer_type();
    if (choice.tensor_split.size() > d.owned.size() && d.npu) {
        throw std::runtime_error("--tensor-split has " + std::to_string(choice.tensor_split.size()) +
                                 " shares for " + std::to_string(d.owned.size()) + " NPU devices");
    }
    for (auto & b : d.owned) {
        d.npus.push_back(b.get());
    }
    d.owned.push_back(std::make_unique<cpu_backend>(d.cpu, n_threads));
    for (auto & b : d.owned) {
        d.backends.push_back(b.get());
        if (!d.names.empty()) {
            d.names += ',';
        }
        d.names += b->name();
    }
    return d;
}

void print_run_reports(const devices & d) {
    for (const backend * b : d.backends) {
        for (const std::string & line : b->device()->run_report()) {
            std::fprintf(stderr, "hexnpu_perf: %s\n", line.c_str());
        }
    }
}

model::context_params context_params_for(const devices & d) {
    model::context_params cp;
    cp.backends       = d.backends;
    cp.kv_buft        = d.kv_buft;
    for (backend * b : d.layer_npu) {
        cp.kv_layer_bufts.push_back(b->device()->buffer_type());
    }
    cp.refusal_reason = [](const backend_device * dev, const ggml_tensor * node) { return dev->refusal_reason(node); };
    return cp;
}

std::unique_ptr<model::model> load_model(const std::string & path, devices & d) {
    model::load_options opts;
    opts.host_buft = d.cpu->buffer_type();
    if (d.npu) {
        // A weight goes to the NPU's REPACK buffers only when the NPU computes its MUL_MAT (a tiled
        // weight cannot be read back for a CPU fallback). Probed with one F32 activation row: the
        // NPU's supports_op decides MUL_MAT by the weight's type and shape, not the batch size.
        // Norm weights and biases in its (host-visible) compute buffers, so that the element-wise
        // ops using them can run there; the rest stays in the file's mapping. With a layer split
        // a layer's weights go to its device, the rest (embeddings, output head) to the last one.
        opts.placement = [&d](const ggml_tensor * w, const model::weight_use & use) -> backend_buffer_type * {
            if (d.layer_npu.empty()) {
                const size_t n_split = d.mode == split_mode::layer ? d.npus.size() : 1;
                std::vector<size_t> plan = assign_layers(use.n_layer, n_split, d.tensor_split);
                for (size_t k : plan) {
                    d.layer_npu.push_back(d.npus[k]);
                }
            }
            backend_device * npu = (use.layer >= 0 ? d.layer_npu[size_t(use.layer)] : d.layer_npu.back())->device();
            if (!use.is_matmul) {  // norms and biases (the experts' too: 2-D), not the embedding table
                return use.is_table ? nullptr : npu->buffer_type();
            }
            backend_buffer_type * repack = nullptr;
            for (backend_buffer_type * b : npu->extra_buffer_types()) {
                if (std::string(b->name()).find("REPACK") != std::string::npos) {
                    repack = b;
                }
            }
            if (!repack) {
                return nullptr;
            }
            ggml_context  ctx;
            ggml_tensor * a = ggml_new_tensor(&ctx, w->type, 4, w->ne);
            if (w->ne[2] > 1) {  // the experts' stacked matrices: read by MUL_MAT_ID
                ggml_tensor * b   = ggml_new_tensor_3d(&ctx, GGML_TYPE_F32, w->ne[0], 1, 1);
                ggml_tensor * ids = ggml_new_tensor_2d(&ctx, GGML_TYPE_I32, 1, 1);
                return npu->supports_op(ggml_mul_mat_id(&ctx, a, b, ids)) ? repack : nullptr;
            }
            ggml_tensor * b = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, w->ne[0], 1);
            return npu->supports_op(ggml_mul_mat(&ctx, a, b)) ? repack : nullptr;
        };
    }
    // Copies (into NPU buffers) show a progress line on a terminal; mapped weights load instantly.
    std::unique_ptr<progress> bar;
    struct progress_state {
        std::unique_ptr<progress> * bar;
    } state{&bar};
    opts.progress_user = &state;
    opts.progress      = [](size_t done, size_t total, void * user) {
        auto & b = *static_cast<progress_state *>(user)->bar;
        if (!b) {
            b = std::make_unique<progress>(total);
        }
        b->update(done, "loading weights");
    };
    return model::model::load(path, opts);
}

} // namespace hexnpu::cli
