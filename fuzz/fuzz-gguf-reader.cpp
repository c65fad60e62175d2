// libFuzzer target for the GGUF reader. Any input must either be rejected with gguf::error (with
// an offset inside the input) or be accepted; the sanitizers catch crashes, out-of-bounds reads
// and undefined behaviour on the way. An accepted file must also survive a round trip through
// hexnpu's writer: read -> write -> read gives the same metadata, tensors and tensor bytes.
#include "hexnpu/gguf.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>

namespace {

using namespace hexnpu::gguf;

void check(bool ok, const char * what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz-gguf-reader: %s\n", what);
        __builtin_trap();
    }
}

// Reads everything a consumer would, so that a bad span or a bad value is touched.
size_t walk(const reader & r) {
    size_t sum = r.version() + r.alignment() + r.data_offset();
    for (const metadata_entry & e : r.metadata()) {
        check(r.find(e.key) == &e.val, "find() does not return the entry");
        sum += e.val.to_display(64).size();
    }
    for (const tensor_info & t : r.tensors()) {
        check(r.find_tensor(t.name) == &t, "find_tensor() does not return the tensor");
        const std::span<const uint8_t> data = r.tensor_data(t);
        check(data.size() == t.nbytes && t.file_offset + t.nbytes <= r.file_size(), "tensor data outside the file");
        sum += data.front() + data.back();
    }
    return sum;
}

void check_round_trip(const reader & original) {
    writer w;
    for (const metadata_entry & e : original.metadata()) {
        w.set(e.key, e.val);
    }
    for (const tensor_info & t : original.tensors()) {
        w.add_tensor(t.name, t.type, std::span<const int64_t>(t.ne.data(), t.n_dims), original.tensor_data(t).data());
    }
    const std::vector<uint8_t> bytes  = w.write_to_memory();
    const reader               copy   = reader::from_memory(bytes.data(), bytes.size());
    check(copy.version() == GGUF_VERSION, "round trip: version");
    check(copy.alignment() == original.alignment(), "round trip: alignment");
    check(copy.metadata().size() == original.metadata().size(), "round trip: metadata count");
    for (size_t i = 0; i < copy.metadata().size(); ++i) {
        check(copy.metadata()[i].key == original.metadata()[i].key, "round trip: key");
        check(copy.metadata()[i].val == original.metadata()[i].val, "round trip: value");
    }
    check(copy.tensors().size() == original.tensors().size(), "round trip: tensor count");
    for (size_t i = 0; i < copy.tensors().size(); ++i) {
        const tensor_info & a = original.tensors()[i];
        const tensor_info & b = copy.tensors()[i];
        check(a.name == b.name && a.type == b.type && a.ne == b.ne && a.nbytes == b.nbytes, "round trip: tensor info");
        check(std::memcmp(original.tensor_data(a).data(), copy.tensor_data(b).data(), a.nbytes) == 0,
              "round trip: tensor data");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    std::optional<reader> r;
    try {
        r.emplace(reader::from_memory(data, size));
    } catch (const error & e) {
        check(e.offset() <= size, "error offset outside the input");
        return 0;
    }
    volatile size_t sink = walk(*r);
    (void) sink;
    check_round_trip(*r);
    return 0;
}
