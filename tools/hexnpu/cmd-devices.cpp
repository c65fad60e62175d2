// hexnpu devices: the backend devices in priority order. HTP devices start their sessions to report
// what the NPU says about itself (arch, library, VTCM, threads, HMX) and the window they map into.
#include "cli-util.h"
#include "commands.h"

#include "cpu/cpu-backend.h"
#include "hexnpu/hexagon.h"

#include <algorithm>
#include <cstdio>
#include <exception>

namespace hexnpu::cli {
namespace {

const char * kUsage =
    "usage: hexnpu devices\n"
    "  Lists the backend devices in priority order. HTP devices come from GGML_HEXAGON_DEVICES (a count,\n"
    "  HTP0:0,HTP0:1,..., or row-split groups HTP0[0-1]: one device over sessions HTP0:0 and HTP1:0) or\n"
    "  GGML_HEXAGON_NDEV; each starts its NPU session to report the arch, the NPU library, VTCM, HVX\n"
    "  threads, HMX, the window budget and its buffer types (a group: its first member's).\n";

std::string buffer_types(backend_device & dev) {
    std::string names = dev.buffer_type()->name();
    for (backend_buffer_type * b : dev.extra_buffer_types()) {
        names += std::string(", ") + b->name();
    }
    return names;
}

} // namespace

int cmd_devices(args a) {
    if (!a.empty()) {
        if (a[0] == "--help" || a[0] == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        return fail("unexpected argument '%.*s'\n%s", int(a[0].size()), a[0].data(), kUsage);
    }
    register_htp_devices();
    backend_registry & registry = backend_registry::get();
    if (!registry.find("CPU")) {
        registry.add(make_cpu_device());
    }
    // The device properties shown (HTP devices give these), between the name and the buffer types.
    const std::vector<std::string> columns = {"arch", "NPU library", "VTCM", "HVX threads", "HMX", "window budget"};
    std::vector<std::string>       header  = {"device"};
    header.insert(header.end(), columns.begin(), columns.end());
    header.push_back("buffer types");
    table t(header, {false, false, false, true, true, true, true, false});
    int status = 0;
    for (backend_device * dev : registry.devices()) {
        std::vector<std::string> row(columns.size() + 2);
        row.front() = dev->name();
        row.back()  = buffer_types(*dev);
        try {
            const std::vector<device_property> props = dev->properties();
            if (props.empty()) {
                row[2] = dev->description();
            }
            for (const device_property & p : props) {
                const auto col = std::find(columns.begin(), columns.end(), p.name);
                if (col != columns.end()) {
                    row[1 + size_t(col - columns.begin())] = p.value;
                }
            }
        } catch (const std::exception & e) {
            row[2] = std::string("unavailable: ") + e.what();
            status = 1;
        }
        t.add(row);
    }
    t.print(stdout);
    return status;
}

} // namespace hexnpu::cli
