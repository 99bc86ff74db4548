// The autocast switch of LibTorch 2.4 and later: one call taking the device type.
#include "stage/autocast_state.h"

#include <ATen/autocast_mode.h>

namespace pipeprof::autocast_state {

bool enabled(c10::DeviceType type) { return at::autocast::is_autocast_enabled(type); }

void setEnabled(c10::DeviceType type, bool on) { at::autocast::set_autocast_enabled(type, on); }

c10::ScalarType dtype(c10::DeviceType type) { return at::autocast::get_autocast_dtype(type); }

void setDtype(c10::DeviceType type, c10::ScalarType dtype) { at::autocast::set_autocast_dtype(type, dtype); }

}  // namespace pipeprof::autocast_state
