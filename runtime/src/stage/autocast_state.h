// The calling thread's autocast switch and type per device type, behind one interface:
// LibTorch renamed these calls in 2.4 (set_cpu_enabled became set_autocast_enabled(device, ...)),
// and CMake compiles the implementation that matches the LibTorch it found.
#pragma once

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace pipeprof::autocast_state {

/// Only kCPU and kCUDA are asked for.
bool enabled(c10::DeviceType type);
void setEnabled(c10::DeviceType type, bool on);
c10::ScalarType dtype(c10::DeviceType type);
void setDtype(c10::DeviceType type, c10::ScalarType dtype);

}  // namespace pipeprof::autocast_state
