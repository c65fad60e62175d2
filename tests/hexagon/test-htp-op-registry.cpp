// The NPU op registry (proto/htp-op-list.inc) against the op case catalog: every production opcode
// is what some catalog case becomes on a default HTP0, so no kernel goes untested by `hexnpu
// test-ops -b HTP0`; and the registry's derived tables agree with it.
#include "hexagon/htp-device.h"
#include "hexagon/htp-op-prep.h"
#include "hexagon/htp-supports-op.h"
#include "proto/htp-ops.h"
#include "testing/op-case.h"

#include "hexnpu/graph.h"

#include <gtest/gtest.h>

#include <set>

namespace {

using namespace hexnpu;
using namespace hexnpu::hexagon;

// The opcodes the catalog's graphs become on a device with these options, as its backend prepares
// them (RMS_NORM_MUL: the fusion of a norm and the MUL by its weight).
std::set<uint32_t> opcodes_reached(const htp_device & dev) {
    std::set<uint32_t> reached;
    for (const optest::op_case & c : optest::op_case_catalog()) {
        ggml_context       ctx;
        optest::case_graph inputs{ctx};
        ggml_tensor *      out = c.build(inputs);
        ggml_cgraph        graph;
        ggml_build_forward_expand(graph, out);
        for (const ggml_tensor * node : graph.nodes) {
            if (is_layout_op(node->op) || !dev.supports_op(node)) {
                continue;  // views are no NPU ops
            }
            const auto op = prepare_htp_op(node, dev.static_target());
            EXPECT_TRUE(op.has_value()) << c.params << ": supports_op took a node prepare_htp_op refuses";
            if (op) {
                reached.insert(op->desc.opcode);
            }
            if (node->op == GGML_OP_MUL && node->src[0]->op == GGML_OP_RMS_NORM) {
                if (const auto fused = prepare_htp_rms_norm_mul(node->src[0], node, dev.static_target())) {
                    reached.insert(fused->desc.opcode);
                }
            }
        }
    }
    return reached;
}

TEST(HtpOpRegistry, EveryOpcodeIsACatalogCaseTheNpuTakes) {
    htp_options o;
    o.devices = {{"HTP0", 0, 0}};
    vnpu::rpc::session_options s;
    s.arch       = 75;  // an HMX unit: the HMX kernels are reached too
    auto devices = make_htp_devices(o, s);
    ASSERT_EQ(devices[0]->static_target().hmx, htp_hmx_matmul::prompts);
    const std::set<uint32_t> reached = opcodes_reached(*devices[0]);
    for (uint32_t op = proto::HTP_OP_NONE + 1; op < proto::HTP_OP_COUNT; ++op) {
        if (op == proto::HTP_OP_ALLREDUCE) {
            continue;  // no graph node becomes it: the tensor split's comm call (test-htp-allreduce.cpp)
        }
        EXPECT_EQ(reached.count(op), 1u) << proto::htp_op_name(op) << ": no catalog case HTP0 takes becomes it";
    }
}

TEST(HtpOpRegistry, DerivedTablesAgree) {
    for (uint32_t op = proto::HTP_OP_NONE + 1; op < proto::HTP_OP_COUNT; ++op) {
        const proto::htp_op_info info = proto::htp_op_info_of(op);
        EXPECT_NE(info.prepare, nullptr) << proto::htp_op_name(op);
        EXPECT_GE(info.n_required, 1u) << proto::htp_op_name(op);
        EXPECT_NE(proto::htp_kernel_of(op), proto::htp_kernel::none) << proto::htp_op_name(op);
        EXPECT_STRNE(proto::htp_op_name(op), "UNKNOWN");
    }
    EXPECT_TRUE(proto::htp_reads_by_dma_only(proto::HTP_OP_MUL_MAT, 0));
    EXPECT_FALSE(proto::htp_reads_by_dma_only(proto::HTP_OP_MUL_MAT, 1));
    EXPECT_TRUE(proto::htp_reads_by_dma_only(proto::HTP_OP_TEST_DMA_ONLY_BREACH, 0));
    EXPECT_FALSE(proto::htp_reads_by_dma_only(proto::HTP_OP_ADD, 0));
    EXPECT_STREQ(proto::htp_op_name(proto::HTP_OP_TEST_STREAM), "TEST_STREAM");
    EXPECT_EQ(uint32_t(proto::HTP_OP_TEST_STREAM), 1000u);
    EXPECT_EQ(proto::htp_op_info_of(proto::HTP_OP_TEST_STREAM).prepare, nullptr) << "test ops have no host preparation";
}

} // namespace
