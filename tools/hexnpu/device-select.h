// Choosing a backend device by name for the commands that take -b/--device: the HTP devices are
// registered first (the scheduler's priority order), the CPU device last, on first use.
#pragma once

#include "hexnpu/backend.h"

#include <string>
#include <string_view>

namespace hexnpu::cli {

// The CPU device, registered on first use: every other backend's reference and fallback.
backend_device & cpu_device();

// The device whose name matches (case-insensitive), or nullptr. "HTP0:0+HTP0:1" names a device
// group of those HTP devices (row split), made on first use.
backend_device * find_device(std::string_view name);

// "HTP0, CPU": the registered devices, for error messages.
std::string device_names();

} // namespace hexnpu::cli
