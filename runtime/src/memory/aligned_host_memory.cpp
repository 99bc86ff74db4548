// Host memory for CPU tensors (aligned_host_memory.h).
//
// A block is malloc(bytes + kHostAlignment) with the data pointer rounded up to the next
// multiple of kHostAlignment, at least one byte past the start; the byte just before the data
// holds how far that is (1..kHostAlignment), so freeing finds malloc's pointer again.
#include "memory/aligned_host_memory.h"

#include <c10/util/Exception.h>

#include <cstdint>
#include <cstdlib>

namespace pipeprof {

static_assert(kHostAlignment <= 255, "the offset to malloc's pointer is kept in one byte");

void* allocateAlignedHost(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  TORCH_CHECK(bytes <= SIZE_MAX - kHostAlignment, "pipeprof's CPU allocator: cannot allocate ", bytes, " bytes");
  auto* raw = static_cast<unsigned char*>(std::malloc(bytes + kHostAlignment));
  TORCH_CHECK(raw != nullptr, "pipeprof's CPU allocator: not enough memory: you tried to allocate ", bytes, " bytes.");
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(raw);
  const std::size_t offset = kHostAlignment - address % kHostAlignment;  // 1..kHostAlignment
  unsigned char* data = raw + offset;
  data[-1] = static_cast<unsigned char>(offset);
  return data;
}

void freeAlignedHost(void* data) {
  if (data == nullptr) return;
  auto* bytes = static_cast<unsigned char*>(data);
  std::free(bytes - bytes[-1]);
}

}  // namespace pipeprof
