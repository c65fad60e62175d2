// GGML_HEXAGON_* options: device lists (counts, lists, legacy NDEV, bad items), arch forcing, the
// numeric knobs and OPFILTER, read through a fake environment.
#include "hexagon/htp-options.h"
#include "hexagon/htp-supports-op.h"

#include "hexnpu/graph.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

namespace {

using namespace hexnpu;
using namespace hexnpu::hexagon;

htp_options parse(const std::map<std::string, std::string> & env) {
    return parse_htp_options([&](const char * var) -> const char * {
        const auto it = env.find(var);
        return it == env.end() ? nullptr : it->second.c_str();
    });
}

std::vector<std::string> names(const htp_options & o) {
    std::vector<std::string> out;
    for (const auto & d : o.devices) {
        out.push_back(d.name);
    }
    return out;
}

// The message of the std::invalid_argument that parsing env throws ("" when it does not throw).
std::string error_of(const std::map<std::string, std::string> & env) {
    try {
        parse(env);
    } catch (const std::invalid_argument & e) {
        return e.what();
    }
    return "";
}

TEST(HtpOptions, DefaultIsOneLegacyDevice) {
    const htp_options o = parse({});
    EXPECT_EQ(names(o), std::vector<std::string>{"HTP0"});
    EXPECT_FALSE(o.arch.has_value());
    EXPECT_EQ(o.op_batch, 1024u);
    EXPECT_EQ(o.op_queue, 16u);
    EXPECT_EQ(o.max_buffer, uint64_t(1024) << 20);
    EXPECT_EQ(o.n_hmx, 1u);
    EXPECT_EQ(o.profile, htp_profile_mode::off);
    EXPECT_EQ(o.vmem_for_arch(73), uint64_t(3000) << 20);
    EXPECT_EQ(o.vmem_for_arch(79), uint64_t(3200) << 20);
}

TEST(HtpOptions, MmSelectIsANumberFromZeroToFour) {
    EXPECT_EQ(parse({}).mm_select, 3u);
    EXPECT_EQ(parse({{"GGML_HEXAGON_MM_SELECT", "1"}}).mm_select, 1u);
    EXPECT_EQ(parse({{"GGML_HEXAGON_MM_SELECT", "4"}}).mm_select, 4u);
    EXPECT_NE(error_of({{"GGML_HEXAGON_MM_SELECT", "5"}}).find("GGML_HEXAGON_MM_SELECT='5'"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_MM_SELECT", "hvx"}}).find("GGML_HEXAGON_MM_SELECT"), std::string::npos);
}

TEST(HtpOptions, DeviceCountGivesSessionsOnNpuZero) {
    const htp_options o = parse({{"GGML_HEXAGON_DEVICES", "3"}});
    EXPECT_EQ(names(o), (std::vector<std::string>{"HTP0:0", "HTP0:1", "HTP0:2"}));
    EXPECT_EQ(o.devices[2].npu, 0u);
    EXPECT_EQ(o.devices[2].session, 2u);
}

TEST(HtpOptions, DeviceListKeepsItsOrder) {
    const htp_options o = parse({{"GGML_HEXAGON_DEVICES", "HTP0:1,HTP0:0,HTP1:3"}});
    EXPECT_EQ(names(o), (std::vector<std::string>{"HTP0:1", "HTP0:0", "HTP1:3"}));
    EXPECT_EQ(o.devices[2].npu, 1u);
    EXPECT_EQ(o.devices[2].session, 3u);
}

TEST(HtpOptions, BracketedGroupsAsUpstreamSpellsThem) {
    htp_options o = parse({{"GGML_HEXAGON_DEVICES", "HTP0[0-1]"}});
    EXPECT_EQ(names(o), (std::vector<std::string>{"HTP0:0", "HTP1:0"}));
    ASSERT_EQ(o.groups.size(), 1u);
    EXPECT_EQ(o.groups[0].name, "HTP0");
    EXPECT_EQ(o.groups[0].members, (std::vector<uint32_t>{0, 1}));
    o = parse({{"GGML_HEXAGON_DEVICES", "HTP0[0-1],HTP1[2-3]"}});
    EXPECT_EQ(names(o), (std::vector<std::string>{"HTP0:0", "HTP1:0", "HTP2:0", "HTP3:0"}));
    ASSERT_EQ(o.groups.size(), 2u);
    EXPECT_EQ(o.groups[1].name, "HTP1");
    EXPECT_EQ(o.groups[1].members, (std::vector<uint32_t>{2, 3}));
    o = parse({{"GGML_HEXAGON_DEVICES", "HTP0[0-1:0],HTP1[0,1:1],HTP2:5"}});
    EXPECT_EQ(names(o), (std::vector<std::string>{"HTP0:0", "HTP1:0", "HTP0:1", "HTP1:1", "HTP2:5"}));
    ASSERT_EQ(o.groups.size(), 2u);
    EXPECT_EQ(o.groups[1].members, (std::vector<uint32_t>{2, 3}));
    EXPECT_TRUE(parse({{"GGML_HEXAGON_DEVICES", "HTP0:0,HTP0:1"}}).groups.empty());
}

TEST(HtpOptions, BadGroupsNameTheItem) {
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0[0]"}}).find("bad item 'HTP0[0]' (a group needs two or more NPUs)"),
              std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0[1-x]"}}).find("bad item 'HTP0[1-x]'"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0[2-1]"}}).find("'2-1' is not an NPU index"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0[0-1:16]"}}).find("session after ':'"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTPx[0-1]"}}).find("a group is HTP<n>[<npus>]"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0[0-1"}}).find("bad item 'HTP0[0-1'"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0[0-1],HTP1:0"}}).find("item 'HTP1:0': 'HTP1:0' is listed twice"),
              std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0[0-1],HTP0[2-3]"}}).find("'HTP0' is listed twice"),
              std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0[0-16]"}}).find("more than 16 sessions"), std::string::npos);
}

TEST(HtpOptions, DevicesWinOverLegacyNdev) {
    EXPECT_EQ(names(parse({{"GGML_HEXAGON_NDEV", "2"}})), (std::vector<std::string>{"HTP0", "HTP1"}));
    EXPECT_EQ(names(parse({{"GGML_HEXAGON_NDEV", "2"}, {"GGML_HEXAGON_DEVICES", "HTP0:5"}})),
              std::vector<std::string>{"HTP0:5"});
}

TEST(HtpOptions, BadDeviceListsNameTheBadItem) {
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0:0,HTPX:1"}}).find("bad item 'HTPX:1'"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0:0,,HTP0:1"}}).find("bad item ''"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0"}}).find("bad item 'HTP0'"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0:16"}}).find("bad item 'HTP0:16'"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0:1 "}}).find("bad item 'HTP0:1 '"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "HTP0:1,HTP0:1"}}).find("'HTP0:1' is listed twice"),
              std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "0"}}).find("count must be in [1, 16]"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_DEVICES", "17"}}).find("count must be in [1, 16]"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_NDEV", "two"}}).find("GGML_HEXAGON_NDEV='two': not a number"),
              std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_NDEV", "0"}}).find("GGML_HEXAGON_NDEV='0'"), std::string::npos);
}

TEST(HtpOptions, ArchIsForcedWithOrWithoutTheV) {
    EXPECT_EQ(parse({{"GGML_HEXAGON_ARCH", "v79"}}).arch, 79u);
    EXPECT_EQ(parse({{"GGML_HEXAGON_ARCH", "73"}}).arch, 73u);
    EXPECT_EQ(parse({{"GGML_HEXAGON_ARCH", "V81"}}).arch, 81u);
    EXPECT_NE(error_of({{"GGML_HEXAGON_ARCH", "v70"}}).find("GGML_HEXAGON_ARCH='v70'"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_ARCH", "v"}}).find("expected one of v73"), std::string::npos);
}

TEST(HtpOptions, NumericKnobs) {
    const htp_options o = parse({{"GGML_HEXAGON_NHVX", "2"},
                                 {"GGML_HEXAGON_USE_HMX", "0"},
                                 {"GGML_HEXAGON_VMEM", "64"},
                                 {"GGML_HEXAGON_MBUF", "16"},
                                 {"GGML_HEXAGON_OPBATCH", "8"},
                                 {"GGML_HEXAGON_OPQUEUE", "2"},
                                 {"GGML_HEXAGON_VERBOSE", "2"},
                                 {"GGML_HEXAGON_PROFILE", "3"},
                                 {"GGML_HEXAGON_OPSTAGE", "1"},
                                 {"GGML_HEXAGON_OPPOLL", "1"},
                                 {"GGML_HEXAGON_OPFUSION", "0"},
                                 {"GGML_HEXAGON_HOSTBUF", "0"}});
    EXPECT_EQ(o.n_hvx, 2u);
    EXPECT_EQ(o.n_hmx, 0u) << "USE_HMX is NHMX's alias";
    EXPECT_EQ(o.vmem_for_arch(73), uint64_t(64) << 20);
    EXPECT_EQ(o.max_buffer, uint64_t(16) << 20);
    EXPECT_EQ(o.op_batch, 8u);
    EXPECT_EQ(o.op_queue, 2u);
    EXPECT_EQ(o.verbose, 2u);
    EXPECT_EQ(o.profile, htp_profile_mode::trace);
    EXPECT_EQ(o.op_stage, 1u) << "queue the ops, skip their compute";
    EXPECT_EQ(parse({}).op_stage, 3u);
    EXPECT_TRUE(o.op_poll);
    EXPECT_FALSE(o.op_fusion);
    EXPECT_EQ(o.host_buffers, std::optional<bool>(false));
    EXPECT_FALSE(parse({}).op_poll);
    EXPECT_TRUE(parse({}).op_fusion);
    EXPECT_FALSE(parse({}).host_buffers.has_value()) << "the registering program decides";
    EXPECT_NE(error_of({{"GGML_HEXAGON_OPPOLL", "2"}}).find("GGML_HEXAGON_OPPOLL='2'"), std::string::npos);
    EXPECT_EQ(parse({}).ar_select, 2u);
    EXPECT_FALSE(parse({}).dma64.has_value());
    EXPECT_EQ(parse({{"GGML_HEXAGON_DMA64", "0"}}).dma64, std::optional<bool>(false));
    EXPECT_NE(error_of({{"GGML_HEXAGON_DMA64", "2"}}).find("GGML_HEXAGON_DMA64='2'"), std::string::npos);
    EXPECT_EQ(parse({{"GGML_HEXAGON_AR_SELECT", "0"}}).ar_select, 0u);
    EXPECT_NE(error_of({{"GGML_HEXAGON_AR_SELECT", "3"}}).find("GGML_HEXAGON_AR_SELECT='3'"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_OPSTAGE", "4"}}).find("GGML_HEXAGON_OPSTAGE='4'"), std::string::npos);
    EXPECT_EQ(parse({{"GGML_HEXAGON_NHMX", "0"}, {"GGML_HEXAGON_USE_HMX", "1"}}).n_hmx, 0u) << "NHMX wins";
    EXPECT_EQ(parse({{"GGML_HEXAGON_VMEM", "0"}}).vmem_for_arch(79), 0u) << "0: the whole window";
    EXPECT_EQ(parse({{"GGML_HEXAGON_PROFILE", "3,273,256,261,576,598,125,140"}}).profile, htp_profile_mode::pmu);
    EXPECT_NE(error_of({{"GGML_HEXAGON_PROFILE", "1,2"}}).find("8 comma-separated ids"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_PROFILE", "4"}}).find("must be in [0, 3]"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_OPBATCH", "0"}}).find("GGML_HEXAGON_OPBATCH='0'"), std::string::npos);
    EXPECT_NE(error_of({{"GGML_HEXAGON_MBUF", "12k"}}).find("not a number"), std::string::npos);
}

TEST(HtpOptions, OpFilterIsACaseInsensitiveFullMatch) {
    const htp_options o = parse({{"GGML_HEXAGON_OPFILTER", "add|sil.*"}});
    EXPECT_TRUE(o.filtered_out("ADD"));
    EXPECT_TRUE(o.filtered_out("SILU"));
    EXPECT_FALSE(o.filtered_out("ADD_ID")) << "a full match, not a search";
    EXPECT_FALSE(o.filtered_out("MUL"));
    EXPECT_FALSE(parse({}).filtered_out("ADD"));
    EXPECT_NE(error_of({{"GGML_HEXAGON_OPFILTER", "(add"}}).find("not a regular expression"), std::string::npos);
}

TEST(HtpOptions, LayoutNodesAreClaimedEvenWhenFiltered) {
    const htp_options   o = parse({{"GGML_HEXAGON_OPFILTER", "view|reshape|add"}});
    const htp_op_target target{4, 8 << 20};
    ggml_context        ctx;
    ggml_tensor *       a = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 8, 4);
    EXPECT_TRUE(htp_supports_op(o, target, ggml_reshape_1d(&ctx, a, 32)));
    EXPECT_TRUE(htp_supports_op(o, target, ggml_view_1d(&ctx, a, 8, 0)));
    EXPECT_TRUE(htp_supports_op(o, target, ggml_transpose(&ctx, a)));
    EXPECT_FALSE(htp_supports_op(o, target, ggml_add(&ctx, a, a)));
    EXPECT_TRUE(htp_supports_op(o, target, ggml_mul(&ctx, a, a))) << "MUL is not filtered";
    EXPECT_TRUE(htp_supports_op(parse({}), target, ggml_add(&ctx, a, a)));
}

} // namespace
