#include "htp-device.h"
#include "htp-op-prep.h"

#include "htp-backend.h"
#include "htp-supports-op.h"

#include "proto/htp-msg.h"
#include "proto/hw-model.h"

#include "core/strings.h"

#include <algorithm>
#include <cstdio>

namespace hexnpu::hexagon {

htp_device::htp_device(htp_device_spec spec, std::shared_ptr<const htp_options> options,
                       vnpu::rpc::session_options session_options)
    : spec_(std::move(spec)), options_(std::move(options)), session_options_(std::move(session_options)),
      compute_buft_(this, htp_buffer_kind::compute, options_->max_buffer, false, options_->host_buffers.value_or(true)),
      repack_buft_(this, htp_buffer_kind::repack, options_->max_buffer, options_->mm_select >= 2) {
    if (options_->arch) {
        session_options_.arch = *options_->arch;
    }
    proto::hw_model model{};
    proto::hw_model_for_arch(session_options_.arch, model);
    uint32_t threads = session_options_.n_hvx != 0 ? session_options_.n_hvx : model.n_hvx;
    if (options_->n_hvx != 0) {
        threads = std::min(threads, options_->n_hvx);
    }
    static_target_.n_threads = std::min(threads, proto::HTP_MAX_NTHREADS);
    static_target_.vtcm_size = session_options_.vtcm_size != 0 ? session_options_.vtcm_size : model.vtcm_size;
    static_target_.hmx       = hmx_matmul(model.n_hmx);
    static_target_.fa_hmx    = hmx_flash_attn(model.n_hmx);
    static_target_.gdn_hmx   = hmx_delta_net(model.n_hmx);
}

htp_device::~htp_device() = default;

htp_hmx_matmul htp_device::hmx_matmul(uint32_t n_hmx) const {
    if (n_hmx == 0 || options_->n_hmx == 0 || options_->mm_select < 3) {
        return htp_hmx_matmul::off;
    }
    return options_->mm_select == 4 ? htp_hmx_matmul::always : htp_hmx_matmul::prompts;
}

htp_hmx_matmul htp_device::hmx_flash_attn(uint32_t n_hmx) const {
    if (n_hmx == 0 || options_->n_hmx == 0 || options_->fa_select < 2) {
        return htp_hmx_matmul::off;
    }
    return options_->fa_select == 3 ? htp_hmx_matmul::always : htp_hmx_matmul::prompts;
}

htp_hmx_matmul htp_device::hmx_delta_net(uint32_t n_hmx) const {
    if (n_hmx == 0 || options_->n_hmx == 0 || options_->gdn_select < 2) {
        return htp_hmx_matmul::off;
    }
    return htp_hmx_matmul::prompts;
}

htp_op_target htp_device::target_of(const vnpu::rpc::hw_info & hw) const {
    return {hw.n_threads, hw.vtcm_size, hmx_matmul(hw.n_hmx), hmx_flash_attn(hw.n_hmx), hmx_delta_net(hw.n_hmx),
            /*stored*/ true};
}

std::string htp_device::description() const {
    return "Hexagon NPU session " + spec_.name + " (virtual NPU, libhexnpu-htp-v" +
           std::to_string(session_options_.arch) + ".so)";
}

htp_window_budget htp_device::window_budget() const {
    return htp_window_budget_of(*options_, session_options_.window_size, session_options_.arch);
}

bool htp_device::has_extended_region() const {
    return htp_uses_extended_region(*options_, session_options_.arch, session_options_.extended_size);
}

void htp_device::memory(size_t & free, size_t & total) const {
    total = size_t(window_budget().bytes);
    free  = total;
}

std::unique_ptr<backend> htp_device::init_backend() { return std::make_unique<htp_backend>(*this); }

std::string htp_device::refusal_reason(const ggml_tensor * op) const {
    if (htp_supports_op(*options_, static_target_, op)) {
        return "";
    }
    std::string why = htp_option_refusal(*options_, op);
    if (why.empty()) {
        prepare_htp_op(op, static_target_, &why);
    }
    return why;
}

bool htp_device::supports_op(const ggml_tensor * op) const {
    const bool yes = htp_supports_op(*options_, static_target_, op);
    if (options_->verbose > 0 && !is_layout_op(op->op)) {
        const std::string why = yes ? "" : refusal_reason(op);
        std::fprintf(stderr, "%s: supports_op %s '%s': %s%s%s\n", name(), ggml_op_desc(op), op->name,
                     yes ? "yes" : "no", why.empty() ? "" : ": ", why.c_str());
        // GGML_HEXAGON_VERBOSE=2: the result's and sources' types, shapes and strides too.
        for (int i = -1; options_->verbose > 1 && i < GGML_MAX_SRC; ++i) {
            const ggml_tensor * t = i < 0 ? op : op->src[i];
            if (t != nullptr) {
                std::fprintf(stderr, "  %s %s ne [%lld %lld %lld %lld] nb [%zu %zu %zu %zu]\n",
                             i < 0 ? "dst " : ("src" + std::to_string(i)).c_str(), ggml_type_name(t->type),
                             (long long) t->ne[0], (long long) t->ne[1], (long long) t->ne[2], (long long) t->ne[3],
                             t->nb[0], t->nb[1], t->nb[2], t->nb[3]);
            }
        }
    }
    return yes;
}

bool htp_device::supports_buft(const backend_buffer_type * buft) const {
    if (buft == &compute_buft_ || buft == &repack_buft_) {
        return true;
    }
    // Another session's compute buffers are shared DDR too: mapped here by fd, read and written in
    // place (a layer split's activations cross sessions without copies).
    const auto * htp = dynamic_cast<const htp_buffer_type *>(buft);
    return htp != nullptr && htp->kind() == htp_buffer_kind::compute;
}

htp_session & htp_device::session() {
    std::lock_guard lock(mutex_);
    if (session_ && session_->dead()) {
        // Its buffers' registrations died with it; the new session registers them again on use.
        session_.reset();
    }
    if (!session_) {
        session_ = std::make_unique<htp_session>(spec_.name, *options_, session_options_);
    }
    return *session_;
}

void htp_device::forget_buffer(int fd) {
    std::lock_guard lock(mutex_);
    if (session_) {
        session_->forget(fd);
    }
}

htp_window_stats htp_device::window_stats() const {
    std::lock_guard lock(window_mutex_);
    return window_stats_;
}

std::vector<device_property> htp_device::properties() {
    const htp_session & s = session();
    return {{"arch", "v" + std::to_string(s.hw().arch)},
            {"NPU library", s.library()},
            {"VTCM", human_bytes(s.hw().vtcm_size)},
            {"HVX threads", std::to_string(s.hw().n_threads)},
            {"HMX", std::to_string(s.hw().n_hmx)},
            {"window budget", human_bytes(s.limits().vmem)}};
}

std::vector<std::string> htp_device::run_report() const {
    const htp_window_stats w = window_stats();
    char                   line[256];
    std::snprintf(line, sizeof line, "%s window: %llu batches, %llu maps (%s), %llu unmaps (%s), %llu extended maps (%s)",
                  name(), (unsigned long long) w.batches, (unsigned long long) w.maps, human_bytes(w.map_bytes).c_str(),
                  (unsigned long long) w.unmaps, human_bytes(w.unmap_bytes).c_str(), (unsigned long long) w.ext_maps,
                  human_bytes(w.ext_map_bytes).c_str());
    return {line};
}

void htp_device::count_window(const proto::htp_opbatch_rsp & rsp) {
    std::lock_guard lock(window_mutex_);
    window_stats_.batches += 1;
    window_stats_.maps += rsp.n_maps;
    window_stats_.unmaps += rsp.n_unmaps;
    window_stats_.map_bytes += rsp.map_bytes;
    window_stats_.unmap_bytes += rsp.unmap_bytes;
    window_stats_.ext_maps += rsp.n_ext_maps;
    window_stats_.ext_map_bytes += rsp.ext_map_bytes;
}

std::vector<std::unique_ptr<htp_device>> make_htp_devices(const htp_options & options,
                                                          const vnpu::rpc::session_options & session_options) {
    auto                                     shared = std::make_shared<const htp_options>(options);
    std::vector<std::unique_ptr<htp_device>> out;
    for (const htp_device_spec & spec : options.devices) {
        out.push_back(std::make_unique<htp_device>(spec, shared, session_options));
    }
    return out;
}

} // namespace hexnpu::hexagon
