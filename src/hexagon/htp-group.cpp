#include "htp-group.h"

#include "htp-backend.h"
#include "proto/htp-msg.h"

#include <algorithm>
#include <climits>
#include <stdexcept>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace hexnpu::hexagon {

htp_group_device::htp_group_device(std::vector<htp_device *> members, std::string name)
    : members_(std::move(members)), name_(std::move(name)) {
    const bool named = !name_.empty();
    if (members_.size() < 2 || members_.size() > 64) {
        throw std::invalid_argument("a device group needs two to 64 HTP devices");
    }
    for (size_t i = 0; i < members_.size(); ++i) {
        if (members_[i] == nullptr) {
            throw std::invalid_argument("a device group member is not an HTP device");
        }
        if (std::find(members_.begin(), members_.begin() + std::ptrdiff_t(i), members_[i]) !=
            members_.begin() + std::ptrdiff_t(i)) {
            throw std::invalid_argument(std::string("device ") + members_[i]->name() + " is listed twice in a group");
        }
        if (!named) {
            name_ += (i ? "+" : "") + std::string(members_[i]->name());
        }
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

std::vector<std::string> htp_group_device::run_report() const {
    std::vector<std::string> lines;
    for (const htp_device * m : members_) {
        for (std::string & l : m->run_report()) {
            lines.push_back(std::move(l));
        }
    }
    return lines;
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

namespace {

proto::htp_fence_slot & fence_slot(htp_buffer & fence, uint32_t m) {
    return *reinterpret_cast<proto::htp_fence_slot *>(static_cast<uint8_t *>(fence.base()) +
                                                       size_t(proto::HTP_FENCE_SLOT_BYTES) * m);
}

}  // namespace

void htp_group_device::fail_member_fence(uint32_t m) {
    proto::htp_fence_slot & slot = fence_slot(*fence_, m);
    slot.status                  = proto::HTP_STATUS_PEER_FAILED;
    __atomic_thread_fence(__ATOMIC_RELEASE);  // the status is seen no later than the sequence number
    slot.seq = fence_seq_.load() + 0x40000000u;  // ahead of every barrier of the batches in flight
    failed_fences_.fetch_or(uint64_t(1) << m);
    // Shared (not private) futex: the peers wait on this word through their own mappings.
    syscall(SYS_futex, &slot.seq, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void htp_group_device::reset_failed_fences() {
    const uint64_t failed = failed_fences_.exchange(0);
    for (uint32_t m = 0; m < members_.size(); ++m) {
        if ((failed >> m) & 1u) {
            proto::htp_fence_slot & slot = fence_slot(*fence_, m);
            slot.status                  = proto::HTP_STATUS_OK;
            slot.seq                     = fence_seq_.load();  // before the next batch's first barrier
        }
    }
}

} // namespace hexnpu::hexagon
