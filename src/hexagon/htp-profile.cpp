#include "htp-profile.h"

namespace hexnpu::hexagon {

void htp_profile_log::add(htp_batch_profile batch) {
    std::lock_guard lock(mutex_);
    batches_.push_back(std::move(batch));
}

std::vector<htp_batch_profile> htp_profile_log::batches() const {
    std::lock_guard lock(mutex_);
    return batches_;
}

void htp_profile_log::clear() {
    std::lock_guard lock(mutex_);
    batches_.clear();
}

} // namespace hexnpu::hexagon
