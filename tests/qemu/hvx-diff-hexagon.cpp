// The Hexagon side of the HVX differential test: runs the shared harness on the real
// instructions and streams every result to stdout as raw bytes.
#include "hvx-diff-harness.h"
#include "runtime/hexagon-crt.h"

namespace {

class StdoutSink {
public:
    void begin(uint32_t marker) { append(&marker, 4); }
    void put_word(int32_t w) { append(&w, 4); }
    void put_vec(HVX_Vector v) {
        alignas(128) HVX_Vector tmp = v;
        append(&tmp, 128);
    }
    void put_pair(HVX_VectorPair w) {
        put_vec(Q6_V_lo_W(w));
        put_vec(Q6_V_hi_W(w));
    }
    bool flush() {
        const bool ok = used_ == 0 || hexnpu_write(1, buffer_, used_) == long(used_);
        used_ = 0;
        return ok && ok_;
    }

private:
    void append(const void *data, unsigned long n) {
        if (used_ + n > sizeof(buffer_)) ok_ = flush() && ok_;
        const auto *p = static_cast<const unsigned char *>(data);
        for (unsigned long i = 0; i < n; ++i) buffer_[used_ + i] = p[i];
        used_ += n;
    }

    unsigned char buffer_[1 << 16];
    unsigned long used_ = 0;
    bool ok_ = true;
};

StdoutSink sink;

} // namespace

extern "C" int test_main() {
    hvx_diff::run_all(sink);
    return sink.flush() ? 0 : 1;
}
