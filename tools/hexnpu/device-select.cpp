#include "device-select.h"

#include "core/strings.h"
#include "cpu/cpu-backend.h"
#include "hexnpu/hexagon.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace hexnpu::cli {

backend_device & cpu_device() {
    backend_registry & registry = backend_registry::get();
    if (!registry.find("CPU")) {
        registry.add(make_cpu_device());
    }
    return *registry.find("CPU");
}

backend_device * find_device(std::string_view name) {
    for (backend_device * dev : backend_registry::get().devices()) {
        if (equal_ignore_case(name, dev->name())) {
            return dev;
        }
    }
    if (name.find('+') == std::string_view::npos) {
        return nullptr;
    }
    // "HTP0:0+HTP0:1": a device group of those HTP devices (row split), made once per process.
    static std::vector<std::unique_ptr<backend_device>> groups;
    std::vector<backend_device *>                       members;
    for (size_t pos = 0; pos <= name.size();) {
        const size_t     plus = std::min(name.find('+', pos), name.size());
        backend_device * m    = find_device(name.substr(pos, plus - pos));
        if (m == nullptr) {
            return nullptr;
        }
        members.push_back(m);
        pos = plus + 1;
    }
    groups.push_back(make_htp_group_device(members));
    return groups.back().get();
}

std::string device_names() {
    std::string names;
    for (const backend_device * dev : backend_registry::get().devices()) {
        names += names.empty() ? "" : ", ";
        names += dev->name();
    }
    return names;
}

} // namespace hexnpu::cli
