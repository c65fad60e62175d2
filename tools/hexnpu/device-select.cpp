#include "device-select.h"

#include "core/strings.h"
#include "cpu/cpu-backend.h"

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
    return nullptr;
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
