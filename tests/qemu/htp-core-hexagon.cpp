// The Hexagon side of the htp integer-core differential test: runs the shared harness and streams
// every result to stdout as raw bytes.
#include "htp-core-harness.h"
#include "runtime/hexagon-crt.h"

namespace {

class StdoutSink {
public:
    void begin(uint32_t marker) { put_word(marker); }
    void put_word(uint32_t w) {
        if (used_ + 4 > sizeof(buffer_)) flush();
        for (int i = 0; i < 4; ++i) buffer_[used_++] = uint8_t(w >> (8 * i));
    }
    bool flush() {
        ok_ = ok_ && (used_ == 0 || hexnpu_write(1, buffer_, used_) == long(used_));
        used_ = 0;
        return ok_;
    }

private:
    unsigned char buffer_[1 << 16];
    unsigned long used_ = 0;
    bool ok_ = true;
};

StdoutSink sink;

} // namespace

extern "C" int test_main() {
    htp_core_diff::run_all(sink);
    return sink.flush() ? 0 : 1;
}
