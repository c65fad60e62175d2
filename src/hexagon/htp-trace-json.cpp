#include "htp-trace-json.h"

#include "proto/htp-msg.h"
#include "proto/htp-trace.h"
#include "util/json-string.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <deque>
#include <map>
#include <tuple>
#include <vector>

namespace hexnpu::hexagon {
namespace {

// Track ids inside a device's process.
constexpr uint32_t TID_OPS      = 1000;
constexpr uint32_t TID_DMA_BASE = 100;  // + HVX thread

using util::json_string;

uint32_t hmx_slot() { return proto::HTP_TRACE_SLOTS - 1; }

uint32_t track_of(const htp_trace_event & e) {
    if (e.slot == hmx_slot()) {
        return e.slot;
    }
    return e.id == proto::HTP_TRACE_EVT_DMA ? TID_DMA_BASE + e.slot : e.slot;
}

std::string track_name(uint32_t tid) {
    if (tid == TID_OPS) {
        return "ops";
    }
    if (tid >= TID_DMA_BASE) {
        return "DMA " + std::to_string(tid - TID_DMA_BASE);
    }
    return tid == hmx_slot() ? "HMX" : "HVX " + std::to_string(tid);
}

// Cycles per microsecond over all batches (the NPU clock against its microsecond timer).
double cycles_per_us(const std::vector<htp_batch_profile> & batches) {
    double cycles = 0, usecs = 0;
    for (const htp_batch_profile & b : batches) {
        cycles += double(b.cycles_stop - b.cycles_start);
        usecs += double(b.usecs);
    }
    return usecs > 0 && cycles > 0 ? cycles / usecs : 1000.0;
}

class event_writer {
  public:
    explicit event_writer(std::ostream & out) : out_(out) {}

    void metadata(uint32_t pid, const char * what, int64_t tid, const std::string & name) {
        begin();
        out_ << "{\"ph\":\"M\",\"pid\":" << pid << ",";
        if (tid >= 0) {
            out_ << "\"tid\":" << tid << ",";
        }
        out_ << "\"name\":\"" << what << "\",\"args\":{\"name\":" << json_string(name) << "}}";
    }
    void complete(uint32_t pid, uint32_t tid, const std::string & name, double ts, double dur,
                  const std::string & args) {
        begin();
        char times[96];
        std::snprintf(times, sizeof times, "\"ts\":%.3f,\"dur\":%.3f", ts, std::max(dur, 0.0));
        out_ << "{\"ph\":\"X\",\"pid\":" << pid << ",\"tid\":" << tid << ",\"name\":" << json_string(name) << ","
             << times << ",\"args\":{" << args << "}}";
    }

  private:
    void begin() {
        out_ << (first_ ? "\n" : ",\n");
        first_ = false;
    }
    std::ostream & out_;
    bool           first_ = true;
};

} // namespace

void write_trace_json(std::ostream & out, const std::vector<htp_trace_source> & sources) {
    out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
    event_writer w(out);
    for (uint32_t pid = 0; pid < sources.size(); ++pid) {
        const htp_trace_source & src = sources[pid];
        if (src.batches.empty()) {
            continue;
        }
        const double   rate   = cycles_per_us(src.batches);
        const uint64_t origin = src.batches.front().cycles_start;
        auto           us     = [&](uint64_t cycles) { return double(int64_t(cycles - origin)) / rate; };

        w.metadata(pid, "process_name", -1, src.device);
        std::map<uint32_t, bool> tracks{{TID_OPS, true}};
        for (const htp_batch_profile & b : src.batches) {
            for (const htp_op_profile & op : b.ops) {
                w.complete(pid, TID_OPS, op.label, us(op.cycles_start), us(op.cycles_stop) - us(op.cycles_start),
                           "\"batch\":" + std::to_string(b.id) + ",\"cycles\":" +
                               std::to_string(op.cycles_stop - op.cycles_start) + ",\"usecs\":" +
                               std::to_string(op.usecs));
            }
            // A stop closes the oldest open start of its identity (track, event, info): DMA
            // transfers complete in FIFO order, so with several in flight the most recent start
            // is the wrong partner; compute sections do not nest within one identity.
            std::map<std::tuple<uint32_t, uint16_t, uint16_t>, std::deque<const htp_trace_event *>> open;
            for (const htp_trace_event & e : b.events) {
                const uint32_t tid     = track_of(e);
                auto &         pending = open[{tid, e.id, e.info}];
                if (!e.stop) {
                    pending.push_back(&e);
                    continue;
                }
                if (pending.empty()) {
                    continue;  // its start fell before the trace buffer's first record
                }
                const htp_trace_event * start = pending.front();
                pending.pop_front();
                tracks[tid] = true;
                w.complete(pid, tid, proto::htp_trace_event_name(e.id), us(start->cycles),
                           us(e.cycles) - us(start->cycles),
                           "\"info\":" + std::to_string(start->info) + ",\"batch\":" + std::to_string(b.id));
            }
        }
        for (const auto & [tid, used] : tracks) {
            w.metadata(pid, "thread_name", tid, track_name(tid));
        }
    }
    out << "\n]}\n";
}

} // namespace hexnpu::hexagon
