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
    for (auto & dev : hexagon::make_htp_devices(options, vnpu::rpc::session_options::from_environment())) {
        backend_registry::get().add(std::move(dev));
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
