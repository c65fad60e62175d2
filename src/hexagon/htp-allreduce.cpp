#include "htp-allreduce.h"

#include "htp-op-prep.h"
#include "proto/htp-allreduce.h"
#include "proto/htp-opcodes.h"

#include <stdexcept>

namespace hexnpu::hexagon {

namespace {

std::vector<htp_device *> checked_members(std::vector<htp_device *> members) {
    if (members.size() < 2 || members.size() > proto::HTP_ALLREDUCE_MAX_RANKS) {
        throw std::invalid_argument("an all-reduce spans two to " + std::to_string(proto::HTP_ALLREDUCE_MAX_RANKS) +
                                    " HTP devices");
    }
    return members;
}

} // namespace

htp_allreduce::htp_allreduce(std::vector<htp_device *> members)
    : group_(checked_members(std::move(members))), backend_(group_) {}

std::string htp_allreduce::run(std::span<const ggml_tensor * const> results) {
    const auto & members = group_.members();
    if (results.size() != members.size()) {
        return "one partial result per device is needed";
    }
    htp_op op;
    op.desc.opcode = proto::HTP_OP_ALLREDUCE;
    for (size_t k = 0; k < results.size(); ++k) {
        if (results[k] == nullptr || results[k]->data == nullptr) {
            return "a partial result has no memory";
        }
        op.src[k] = results[k];
        op.dst[k] = results[k];
    }
    std::string why;
    if (!prepare_htp_op_kparams(op, members[0]->target_of(members[0]->session().hw()), &why)) {
        return why;
    }
    backend_.compute_ops({&op, 1});
    return {};
}

} // namespace hexnpu::hexagon
