#include "in-process-session.h"

#include <stdexcept>
#include <string>

namespace hexnpu::vnpu {

in_process_session::in_process_session(const platform_config & config, uint32_t n_hvx, uint64_t max_vmem) {
    std::string error;
    platform_ = session_platform::create(config, &error);
    if (!platform_) {
        throw std::runtime_error(error);
    }
    if (int rc = htp_iface_open(&platform_->table(), &session_); rc != 0) {
        throw std::runtime_error("htp_iface_open failed: " + std::to_string(rc));
    }
    if (int rc = htp_iface_start(session_, n_hvx, 1, max_vmem); rc != 0) {
        htp_iface_close(session_);
        throw std::runtime_error("htp_iface_start failed: " + std::to_string(rc));
    }
    uint32_t n_hmx, vtcm_size, arch;
    htp_iface_hwinfo(session_, &n_threads_, &n_hmx, &vtcm_size, &arch);
}

in_process_session::~in_process_session() { htp_iface_close(session_); }

proto::htp_opbatch_rsp in_process_session::process(packed_batch & batch) {
    proto::htp_opbatch_rsp rsp{};
    htp_iface_process_batch(session_, &batch.req, batch.block(), batch.block_size(), &rsp, &current_op_);
    return rsp;
}

} // namespace hexnpu::vnpu
