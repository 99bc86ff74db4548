// The autocast switch of LibTorch before 2.4: one call per device type (set_cpu_enabled, set_enabled).
#include "stage/autocast_state.h"

#include <ATen/autocast_mode.h>

namespace pipeprof::autocast_state {

bool enabled(c10::DeviceType type) {
  return type == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}

void setEnabled(c10::DeviceType type, bool on) {
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
}

c10::ScalarType dtype(c10::DeviceType type) {
  return type == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                       : at::autocast::get_autocast_cpu_dtype();
}

void setDtype(c10::DeviceType type, c10::ScalarType dtype) {
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
}

}  // namespace pipeprof::autocast_state
