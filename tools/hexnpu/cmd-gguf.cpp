// hexnpu gguf info FILE: metadata table, tensor table, totals.
#include "cli-util.h"
#include "commands.h"

#include "hexnpu/gguf.h"

#include <cstdio>
#include <map>
#include <string>

namespace hexnpu::cli {
namespace {

std::string value_type_string(const gguf::value & v) {
    if (v.type() == gguf::value_type::ARRAY) {
        return format("array[%s,%llu]", gguf::value_type_name(v.elem_type()), (unsigned long long) v.array_size());
    }
    return gguf::value_type_name(v.type());
}

int gguf_info(const std::string & path) {
    const gguf::reader r = gguf::reader::open(path);

    std::printf("%s: GGUF v%u, %zu metadata entries, %zu tensors, alignment %u, data at byte %llu, %s\n\n",
                path.c_str(), r.version(), r.metadata().size(), r.tensors().size(), r.alignment(),
                (unsigned long long) r.data_offset(), human_bytes(r.file_size()).c_str());

    table meta({"key", "type", "value"});
    for (const auto & e : r.metadata()) {
        meta.add({printable(e.key), value_type_string(e.val), e.val.to_display(8)});
    }
    meta.print(stdout);
    std::printf("\n");

    table tensors({"#", "name", "type", "shape", "offset", "bytes"}, {true, false, false, false, true, true});
    uint64_t                       total_bytes = 0;
    uint64_t                       total_elems = 0;
    std::map<std::string, size_t>  per_type;
    for (size_t i = 0; i < r.tensors().size(); ++i) {
        const auto & t = r.tensors()[i];
        tensors.add({std::to_string(i), printable(t.name), ggml_type_name(t.type), shape_string(t.ne.data(), t.n_dims),
                     std::to_string(t.offset),
                     std::to_string(t.nbytes)});
        total_bytes += t.nbytes;
        total_elems += uint64_t(t.nelements());
        per_type[ggml_type_name(t.type)]++;
    }
    tensors.print(stdout);

    std::string types;
    for (const auto & [name, count] : per_type) {
        types += format("%s%s: %zu", types.empty() ? "" : ", ", name.c_str(), count);
    }
    std::printf("\ntotal: %zu tensors, %llu elements, %s of tensor data (%.3f bits per element); %s\n",
                r.tensors().size(), (unsigned long long) total_elems, human_bytes(total_bytes).c_str(),
                total_elems ? 8.0 * double(total_bytes) / double(total_elems) : 0.0, types.c_str());
    return 0;
}

const char * kUsage =
    "usage: hexnpu gguf info FILE\n"
    "  Prints the metadata, the tensor table (name, type, shape, offset in the data section, bytes) and totals.\n";

} // namespace

int cmd_gguf(args a) {
    for (const std::string_view arg : a) {  // "gguf --help" and "gguf info --help"
        if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        }
    }
    if (a.size() != 2 || a[0] != "info") {
        std::fputs(kUsage, stderr);
        return 1;
    }
    if (a[1].starts_with("-")) {
        return fail("unknown option '%.*s'\n%s", int(a[1].size()), a[1].data(), kUsage);
    }
    try {
        return gguf_info(std::string(a[1]));
    } catch (const gguf::error & e) {
        return fail("%.*s: %s", int(a[1].size()), a[1].data(), e.what());
    }
}

} // namespace hexnpu::cli
