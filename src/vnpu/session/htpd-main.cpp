// hexnpu-htpd: one NPU session process, started by the client library (src/vnpu/client) with the
// control socket on fd 3 and the shared status page on fd 4.
//   hexnpu-htpd --arch N --lib-dir DIR [--window BYTES] [--vtcm BYTES] [--hvx N] [--host-threads N]
#include "control-protocol.h"
#include "session-server.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>

using namespace hexnpu::vnpu;

namespace {

bool parse_number(const char * text, uint64_t * out) {
    char *             end = nullptr;
    unsigned long long v   = std::strtoull(text, &end, 0);
    if (end == text || *end != '\0') {
        return false;
    }
    *out = v;
    return true;
}

bool parse_args(int argc, char ** argv, htpd::server_options * options) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        uint64_t          v   = 0;
        if (key == "--lib-dir") {
            options->lib_dir = argv[i + 1];
            continue;
        }
        if (!parse_number(argv[i + 1], &v)) {
            return false;
        }
        if (key == "--arch") {
            options->platform.arch = uint32_t(v);
        } else if (key == "--window") {
            options->platform.window_size = v;
        } else if (key == "--extended") {
            options->platform.extended_size = v;
        } else if (key == "--vtcm") {
            options->platform.vtcm_size = uint32_t(v);
        } else if (key == "--hvx") {
            options->platform.n_hvx = uint32_t(v);
        } else if (key == "--host-threads") {
            options->platform.host_threads = uint32_t(v);
        } else if (key == "--hmx-threads") {
            options->platform.hmx_threads = uint32_t(v);
        } else if (key == "--strict" && v <= 1) {
            options->platform.strict = v != 0;
        } else if (key == "--test-ops" && v <= 1) {
            options->test_ops = v != 0;
        } else {
            return false;
        }
    }
    return argc % 2 == 1 && !options->lib_dir.empty();
}

} // namespace

int main(int argc, char ** argv) {
    htpd::server_options options;
    if (!parse_args(argc, argv, &options)) {
        std::fprintf(stderr, "hexnpu-htpd: started by the hexnpu client library, not by hand\n");
        return 2;
    }
    void * page = mmap(nullptr, sizeof(wire::status_page), PROT_READ | PROT_WRITE, MAP_SHARED,
                       wire::SESSION_STATUS_FD, 0);
    if (page == MAP_FAILED) {
        std::fprintf(stderr, "hexnpu-htpd: no status page on fd %d: %s\n", wire::SESSION_STATUS_FD,
                     std::strerror(errno));
        return 2;
    }
    auto * status = static_cast<wire::status_page *>(page);
    if (status->magic != wire::STATUS_PAGE_MAGIC) {
        std::fprintf(stderr, "hexnpu-htpd: fd %d is not a session status page\n", wire::SESSION_STATUS_FD);
        return 2;
    }
    htpd::session_server server(wire::SESSION_CONTROL_FD, status);
    return server.run(options);
}
