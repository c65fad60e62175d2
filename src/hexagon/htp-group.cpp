#include "htp-group.h"

#include "htp-backend.h"
#include "proto/htp-msg.h"

#include <algorithm>
#include <stdexcept>

namespace hexnpu::hexagon {

htp_group_device::htp_group_device(std::vector<htp_device *> members) : members_(std::move(members)) {
    if (members_.size() < 2) {
        throw std::invalid_argument("a device group needs two or more HTP devices");
    }
    for (size_t i = 0; i < members_.size(); ++i) {
        if (members_[i] == nullptr) {
            throw std::invalid_argument("a device group member is not an HTP device");
        }
        if (std::find(members_.begin(), members_.begin() + std::ptrdiff_t(i), members_[i]) !=
            members_.begin() + std::ptrdiff_t(i)) {
            throw std::invalid_argument(std::string("device ") + members_[i]->name() + " is listed twice in a group");
        }
        name_ += (i ? "+" : "") + std::string(members_[i]->name());
    }
    // The fences: pinned shared DDR in the first member's compute buffer type, mapped by all.
    auto * buft = static_cast<htp_buffer_type *>(members_[0]->buffer_type());
    fence_      = std::make_unique<htp_buffer>(buft, proto::htp_fence_buffer_bytes(uint32_t(members_.size())));
    fence_->clear(0);
}

htp_group_device::~htp_group_device() {
    // The fence buffer's own device forgets it; the other members have to be told too.
    for (htp_device * m : members_) {
        fence_->add_user(m);
    }
}

std::string htp_group_device::description() const {
    return "row split over " + std::to_string(members_.size()) + " sessions (" + members_[0]->description() + ")";
}

std::unique_ptr<backend> htp_group_device::init_backend() { return std::make_unique<htp_backend>(*this); }

uint32_t htp_group_device::fence_timeout_us() const {
    const htp_options & o = members_[0]->options();
    if (o.fence_timeout_ms != 0) {
        return o.fence_timeout_ms * 1000u;
    }
    const auto session_ms = uint64_t(members_[0]->session_options().timeout.count());
    return uint32_t(std::min<uint64_t>(session_ms * 500u, UINT32_MAX));
}

} // namespace hexnpu::hexagon
