// The Perfetto trace: a trace-mode session's events written as Chrome trace JSON, parsed back here by
// a small strict JSON reader and checked for the structure Perfetto UI needs (a process per device,
// named tracks, complete events with timestamps) and for the events the kernel recorded.
#include "hexagon/htp-backend.h"
#include "hexagon/htp-device.h"
#include "hexagon/htp-trace-json.h"

#include "hexnpu/graph.h"
#include "proto/fastdiv.h"
#include "proto/htp-test-stream.h"
#include "proto/htp-opcodes.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <variant>

namespace {

using namespace hexnpu;
using namespace hexnpu::hexagon;
using namespace std::chrono_literals;

// ---- a strict JSON reader (RFC 8259 grammar; numbers as double)

struct json;
using json_object = std::map<std::string, json>;
using json_array  = std::vector<json>;
struct json {
    std::variant<std::nullptr_t, bool, double, std::string, json_array, json_object> v;

    const json_object & obj() const { return std::get<json_object>(v); }
    const json_array &  arr() const { return std::get<json_array>(v); }
    const std::string & str() const { return std::get<std::string>(v); }
    double              num() const { return std::get<double>(v); }
    const json &        at(const std::string & k) const { return obj().at(k); }
    bool                has(const std::string & k) const { return obj().count(k) != 0; }
};

class json_reader {
  public:
    explicit json_reader(const std::string & text) : s_(text) {}

    json document() {
        json j = value();
        space();
        if (p_ != s_.size()) {
            fail("text after the document");
        }
        return j;
    }

  private:
    [[noreturn]] void fail(const char * what) {
        throw std::runtime_error(std::string(what) + " at " + std::to_string(p_));
    }
    void space() {
        while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\r' || s_[p_] == '\t')) {
            ++p_;
        }
    }
    bool take(char c) {
        space();
        if (p_ < s_.size() && s_[p_] == c) {
            ++p_;
            return true;
        }
        return false;
    }
    void expect(char c) {
        if (!take(c)) {
            fail("unexpected character");
        }
    }
    bool word(const char * w) {
        if (s_.compare(p_, std::strlen(w), w) == 0) {
            p_ += std::strlen(w);
            return true;
        }
        return false;
    }
    std::string string() {
        expect('"');
        std::string out;
        while (p_ < s_.size() && s_[p_] != '"') {
            const char c = s_[p_++];
            if (static_cast<unsigned char>(c) < 0x20) {
                fail("raw control character in a string");
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            const char e = p_ < s_.size() ? s_[p_++] : 0;
            if (e == 'u') {
                if (p_ + 4 > s_.size()) {
                    fail("short \\u escape");
                }
                out += char(std::stoi(s_.substr(p_, 4), nullptr, 16));
                p_ += 4;
            } else if (std::strchr("\"\\/bfnrt", e) != nullptr && e != 0) {
                out += e;
            } else {
                fail("bad escape");
            }
        }
        expect('"');
        return out;
    }
    json value() {
        space();
        if (p_ >= s_.size()) {
            fail("unexpected end");
        }
        const char c = s_[p_];
        if (c == '{') {
            ++p_;
            json_object o;
            if (!take('}')) {
                do {
                    std::string k = string();
                    expect(':');
                    o[k] = value();
                } while (take(','));
                expect('}');
            }
            return {o};
        }
        if (c == '[') {
            ++p_;
            json_array a;
            if (!take(']')) {
                do {
                    a.push_back(value());
                } while (take(','));
                expect(']');
            }
            return {a};
        }
        if (c == '"') {
            return {string()};
        }
        if (word("true")) {
            return {true};
        }
        if (word("false")) {
            return {false};
        }
        if (word("null")) {
            return {nullptr};
        }
        size_t used = 0;
        double d    = std::stod(s_.substr(p_, 40), &used);
        if (used == 0) {
            fail("not a value");
        }
        p_ += used;
        return {d};
    }

    const std::string & s_;
    size_t              p_ = 0;
};

TEST(HtpTraceJson, ReaderRejectsBrokenDocuments) {
    EXPECT_NO_THROW(json_reader("{\"a\":[1,2.5e3,\"x\\\"\"],\"b\":null}").document());
    EXPECT_THROW(json_reader("{\"a\":[1,2,]}").document(), std::exception);
    EXPECT_THROW(json_reader("{\"a\":1}}").document(), std::exception);
    EXPECT_THROW(json_reader("{\"a\":\"\x01\"}").document(), std::exception);
}

// ---- the trace of real batches

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Three TEST_STREAM ops (dst = src * 0.5 through the real ops' DMA pipeline, 2 threads, rows in
// blocks of block_rows, n_slots deep) on a trace-mode session, as Chrome trace JSON.
json stream_trace(uint32_t rows, uint32_t block_rows, uint32_t n_slots) {
    htp_options o;
    o.devices       = {{"HTP0", 0, 0}};
    o.op_batch      = 8;
    o.op_queue      = 2;
    o.n_hvx         = 2;
    o.collect_trace = true;
    vnpu::rpc::session_options so;
    so.window_size  = 64 << 20;
    so.host_threads = 2;
    so.timeout      = 10s;
    so.test_ops     = true;
    auto devices    = make_htp_devices(o, so);
    htp_device & dev = *devices[0];

    ggml_context  ctx;
    ggml_tensor * src = ggml_new_tensor_2d(&ctx, GGML_TYPE_F32, 96, rows);
    ggml_tensor * dst = ggml_scale(&ctx, src, 0.5f);
    ggml_set_name(dst, "half \"quoted\"");
    auto buf = alloc_ctx_tensors(ctx, dev.buffer_type());
    std::vector<float> ones(96 * size_t(rows), 1.0f);
    tensor_set(src, ones.data(), 0, ones.size() * 4);

    htp_op op;
    op.desc.opcode = proto::HTP_OP_TEST_STREAM;
    const uint32_t                       ne[4] = {96, rows, 1, 1};
    const proto::htp_test_stream_kparams kp =
        proto::make_test_stream_kparams(ne, bits(0.5f), 2, block_rows, n_slots, 0);
    std::memcpy(op.desc.kparams, &kp, sizeof kp);
    op.src[0] = src;
    op.dst[0] = dst;
    op.node   = dst;
    htp_backend  be(dev);
    const htp_op ops[] = {op, op, op};
    be.compute_ops(ops);

    std::ostringstream text;
    write_trace_json(text, {{dev.name(), dev.profile_log().batches()}});
    return json_reader(text.str()).document();
}

TEST(HtpTraceJson, TraceModeBatchesBecomeAPerfettoTrace) {
    const json doc = stream_trace(24, 3, 2);

    std::map<std::string, std::string> threads;  // tid -> track name
    std::string                        process;
    int                                ops_seen = 0, hvx = 0, dma = 0;
    double                             last_op_end = -1;
    for (const json & e : doc.at("traceEvents").arr()) {
        const std::string ph = e.at("ph").str();
        EXPECT_EQ(e.at("pid").num(), 0.0);
        if (ph == "M") {
            if (e.at("name").str() == "process_name") {
                process = e.at("args").at("name").str();
            } else {
                threads[std::to_string(int(e.at("tid").num()))] = e.at("args").at("name").str();
            }
            continue;
        }
        ASSERT_EQ(ph, "X");
        ASSERT_TRUE(e.has("ts") && e.has("dur") && e.has("tid"));
        EXPECT_GE(e.at("dur").num(), 0.0);
        const std::string name = e.at("name").str();
        if (name == "SCALE 'half \"quoted\"'") {
            ++ops_seen;
            EXPECT_GE(e.at("ts").num(), last_op_end) << "ops run one after another";
            last_op_end = e.at("ts").num() + e.at("dur").num();
            EXPECT_GT(e.at("args").at("cycles").num(), 0.0);
        }
        hvx += name == "HVX_COMP";
        dma += name == "DMA";
    }
    EXPECT_EQ(process, "HTP0");
    EXPECT_EQ(ops_seen, 3);
    // 24 rows, 12 per thread in blocks of 3: 4 compute blocks per thread and op.
    EXPECT_EQ(hvx, 3 * 2 * 4);
    EXPECT_GT(dma, 0);
    // Track names come after the events; every event's track is named.
    for (const json & e : doc.at("traceEvents").arr()) {
        if (e.at("ph").str() == "X") {
            EXPECT_EQ(threads.count(std::to_string(int(e.at("tid").num()))), 1u) << e.at("name").str();
        }
    }
    std::map<std::string, int> names;
    for (const auto & [tid, name] : threads) {
        names[name]++;
    }
    EXPECT_EQ(names.count("ops"), 1u);
    EXPECT_EQ(names.count("HVX 0"), 1u);
    EXPECT_EQ(names.count("HVX 1"), 1u);
    EXPECT_EQ(names.count("DMA 0"), 1u);
}

// Every DMA event pairs with its own transfer (FIFO within one track and info word), so the
// timeline shows the data flow: on each thread, block N's input transfers (and the prologue's
// token for its slot) end before block N's compute starts, and exactly one transfer of block N,
// its writeback, starts after that compute ends. Pairing a stop with the most recent start instead
// crosses the transfers in flight and breaks both.
TEST(HtpTraceJson, DmaEventsPairInFifoOrderAndFollowTheDataFlow) {
    const uint32_t rows = 60, block_rows = 2, n_slots = 3;  // 15 blocks per thread, 3 in flight
    const json     doc  = stream_trace(rows, block_rows, n_slots);

    struct span {
        double start, end;
    };
    constexpr double  eps = 0.0015;  // the JSON's microsecond timestamps have 3 decimals
    std::vector<span> ops;           // the ops track, in order
    for (const json & e : doc.at("traceEvents").arr()) {
        if (e.at("ph").str() == "X" && !e.at("args").has("info")) {
            ops.push_back({e.at("ts").num(), e.at("ts").num() + e.at("dur").num()});
        }
    }
    ASSERT_EQ(ops.size(), 3u);
    auto op_of = [&](double ts) {
        for (size_t i = 0; i < ops.size(); ++i) {
            if (ts >= ops[i].start - eps && ts <= ops[i].end + eps) {
                return int(i);
            }
        }
        return -1;
    };
    // (op, thread, block row) -> its compute span, its DMA spans
    std::map<std::tuple<int, int, int>, std::vector<span>> compute, dma;
    for (const json & e : doc.at("traceEvents").arr()) {
        if (e.at("ph").str() != "X" || !e.at("args").has("info")) {
            continue;
        }
        const auto name = e.at("name").str();
        if (name != "HVX_COMP" && name != "DMA") {
            continue;  // L2FLUSH at the end of the batch
        }
        const int  tid  = int(e.at("tid").num());
        const span sp   = {e.at("ts").num(), e.at("ts").num() + e.at("dur").num()};
        const auto key  = std::make_tuple(op_of(sp.start), tid % 100, int(e.at("args").at("info").num()));
        ASSERT_GE(std::get<0>(key), 0) << name << " outside every op";
        EXPECT_EQ(op_of(sp.end), std::get<0>(key)) << name << " crosses an op boundary";
        if (name == "HVX_COMP") {
            compute[key].push_back(sp);
        } else if (name == "DMA") {
            ASSERT_GE(tid, 100) << "DMA events live on the DMA tracks";
            dma[key].push_back(sp);
        }
    }
    ASSERT_EQ(compute.size(), 3u * rows / block_rows) << "3 ops x 2 threads x 15 blocks";
    int primed = 0;
    for (const auto & [key, spans] : compute) {
        ASSERT_EQ(spans.size(), 1u);
        const span & c      = spans[0];
        int          before = 0, after = 0;
        for (const span & t : dma[key]) {
            if (t.start <= c.start + eps) {
                ++before;
                EXPECT_LE(t.end, c.start + eps) << "an input of block " << std::get<2>(key) << " (op " << std::get<0>(key)
                                                << ", thread " << std::get<1>(key) << ") ended after its compute began";
            } else {
                ++after;
                EXPECT_GE(t.start, c.end - eps) << "a writeback started before its compute ended";
            }
        }
        EXPECT_GE(before, 1) << "block " << std::get<2>(key) << " has its input transfer";
        EXPECT_LE(before, 2) << "an input, and a token when the block was primed";
        primed += before == 2;
        EXPECT_EQ(after, 1) << "block " << std::get<2>(key) << " has exactly one writeback";
    }
    EXPECT_EQ(primed, 3 * 2 * int(n_slots)) << "a token for each slot of each thread's prologue";
}

} // namespace
