// An HTP device: one NPU session (architecture.md §4). The session starts on first use and is
// started anew after it died; the device offers the HTPn and HTPn-REPACK buffer types and backends
// that send graphs to its session.
#pragma once

#include "htp-buffer.h"
#include "htp-op-prep.h"
#include "htp-options.h"
#include "htp-profile.h"
#include "htp-session.h"

#include "hexnpu/backend.h"
#include "vnpu/client/remote-session.h"

#include <memory>
#include <mutex>

namespace hexnpu::hexagon {

class htp_device final : public backend_device {
  public:
    htp_device(htp_device_spec spec, std::shared_ptr<const htp_options> options,
               vnpu::rpc::session_options session_options);
    ~htp_device() override;

    const char *          name() const override { return spec_.name.c_str(); }
    std::string           description() const override;
    backend_device_type   type() const override { return backend_device_type::accel; }
    // Free and total: the bytes one batch may map at once (the window budget).
    void                  memory(size_t & free, size_t & total) const override;
    backend_buffer_type * buffer_type() override { return &compute_buft_; }
    // None with GGML_HEXAGON_MM_SELECT=0: no NPU matmul could read the weights placed there.
    std::vector<backend_buffer_type *> extra_buffer_types() override {
        return options_->mm_select == 0 ? std::vector<backend_buffer_type *>{} : std::vector<backend_buffer_type *>{&repack_buft_};
    }
    std::unique_ptr<backend>           init_backend() override;
    bool                               supports_op(const ggml_tensor * op) const override;
    std::string                        refusal_reason(const ggml_tensor * op) const override;
    // Its own buffer types, and the compute buffers of other HTP devices (shared DDR by fd).
    bool                               supports_buft(const backend_buffer_type * buft) const override;
    // Starts the session to report the arch, NPU library, VTCM, threads, HMX and window budget.
    std::vector<device_property>       properties() override;
    // The window's maps and unmaps so far (`hexnpu_perf: HTP0 window: ...`).
    std::vector<std::string>           run_report() const override;

    const htp_options &                options() const { return *options_; }
    const vnpu::rpc::session_options & session_options() const { return session_options_; }
    // What one batch may have mapped at once, known before any session starts.
    htp_window_budget                  window_budget() const;
    // v81 with HEXNPU_EXTENDED_SIZE: buffers only DMA reads map beside the window.
    bool                               has_extended_region() const;
    // The running session, started now if it is not (throws backend_error when it cannot start).
    htp_session &                      session();
    // The threads and VTCM supports_op plans for, known before the session starts: the most the
    // session can have (a session with fewer threads needs less VTCM).
    htp_op_target                      static_target() const { return static_target_; }
    // The HMX matmul selection for a session reporting n_hmx units (the options decide the rest).
    htp_hmx_matmul                     hmx_matmul(uint32_t n_hmx) const;
    // The same for FLASH_ATTN_EXT (GGML_HEXAGON_FA_SELECT).
    htp_hmx_matmul                     hmx_flash_attn(uint32_t n_hmx) const;
    // The same for GATED_DELTA_NET (GGML_HEXAGON_GDN_SELECT).
    htp_hmx_matmul                     hmx_delta_net(uint32_t n_hmx) const;
    // What prepare_htp_op plans for on this session (its threads, VTCM and HMX choices).
    htp_op_target                      target_of(const vnpu::rpc::hw_info & hw) const;
    // A buffer of this device is being freed.
    void                               forget_buffer(int fd);
    // The batches its backends ran while GGML_HEXAGON_PROFILE was on.
    htp_profile_log &                  profile_log() { return profile_log_; }
    // The window's maps and unmaps over every batch this device ran (sessions restarted included).
    htp_window_stats                   window_stats() const;
    void                               count_window(const proto::htp_opbatch_rsp & rsp);

  private:
    htp_device_spec                    spec_;
    std::shared_ptr<const htp_options> options_;
    vnpu::rpc::session_options         session_options_;
    htp_op_target                      static_target_{};
    htp_buffer_type                    compute_buft_;
    htp_buffer_type                    repack_buft_;
    std::mutex                         mutex_;
    std::unique_ptr<htp_session>       session_;
    htp_profile_log                    profile_log_;
    mutable std::mutex                 window_mutex_;
    htp_window_stats                   window_stats_;
};

// One device per configured session.
std::vector<std::unique_ptr<htp_device>> make_htp_devices(const htp_options & options,
                                                          const vnpu::rpc::session_options & session_options);

} // namespace hexnpu::hexagon
