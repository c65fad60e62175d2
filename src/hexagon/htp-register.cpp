// The public entry points of include/hexnpu/hexagon.h.
#include "hexnpu/hexagon.h"

#include "htp-device.h"
#include "htp-group.h"
#include "htp-trace-json.h"

#include "hexnpu/backend.h"
#include "hexnpu/output-file.h"

#include <mutex>
#include <sstream>
#include <stdexcept>

namespace hexnpu {

namespace {

// The sessions of GGML_HEXAGON_DEVICES' groups: each is its group's member, no device of its own.
// Destroyed after the registry's groups that use them (constructed first).
std::vector<std::unique_ptr<hexagon::htp_device>> g_group_members;

} // namespace

void register_htp_devices(bool collect_trace, bool host_buffers) {
    static std::mutex mutex;
    static bool       done = false;
    std::lock_guard   lock(mutex);
    if (done) {
        return;
    }
    hexagon::htp_options options = hexagon::htp_options_from_environment();
    options.collect_trace        = collect_trace;
    options.host_buffers         = options.host_buffers.value_or(host_buffers);
    auto devices = hexagon::make_htp_devices(options, vnpu::rpc::session_options::from_environment());
    std::vector<const hexagon::htp_group_spec *> group_of(devices.size(), nullptr);
    for (const hexagon::htp_group_spec & g : options.groups) {
        for (uint32_t m : g.members) {
            group_of[m] = &g;
        }
    }
    // In list order: a group where its first member is listed.
    for (size_t i = 0; i < devices.size(); ++i) {
        const hexagon::htp_group_spec * g = group_of[i];
        if (g == nullptr) {
            backend_registry::get().add(std::move(devices[i]));
        } else if (g->members[0] == i) {
            std::vector<hexagon::htp_device *> members;
            for (uint32_t m : g->members) {
                members.push_back(devices[m].get());
                g_group_members.push_back(std::move(devices[m]));
            }
            backend_registry::get().add(std::make_unique<hexagon::htp_group_device>(std::move(members), g->name));
        }
    }
    done = true;
}

std::unique_ptr<backend_device> make_htp_group_device(const std::vector<backend_device *> & members) {
    std::vector<hexagon::htp_device *> htp;
    for (backend_device * dev : members) {
        auto * m = dynamic_cast<hexagon::htp_device *>(dev);
        if (m == nullptr) {
            throw std::invalid_argument(std::string("'") + (dev ? dev->name() : "(none)") + "' is not an HTP device");
        }
        htp.push_back(m);
    }
    return std::make_unique<hexagon::htp_group_device>(std::move(htp));
}

void write_htp_trace(output_file & out) {
    std::vector<hexagon::htp_trace_source> sources;
    for (backend_device * dev : backend_registry::get().devices()) {
        if (auto * htp = dynamic_cast<hexagon::htp_device *>(dev)) {
            sources.push_back({htp->name(), htp->profile_log().batches()});
        }
    }
    for (const auto & member : g_group_members) {
        sources.push_back({member->name(), member->profile_log().batches()});
    }
    std::ostringstream json;
    hexagon::write_trace_json(json, sources);
    const std::string text = std::move(json).str();
    out.write(text.data(), text.size());
}

void write_htp_trace(const std::string & path) {
    output_file out = output_file::create(path);
    write_htp_trace(out);
    out.commit();
}

} // namespace hexnpu
