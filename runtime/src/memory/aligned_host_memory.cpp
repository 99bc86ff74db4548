// Host memory for CPU tensors (aligned_host_memory.h).
//
// A block is malloc(bytes + kHostAlignment) with the data pointer rounded up to the next
// multiple of kHostAlignment, at least one byte past the start; the byte just before the data
// holds how far that is (1..kHostAlignment), so freeing finds malloc's pointer again.
//
// A block of LargeBlockCache's sizes is taken from and given back to that cache, and is laid out
// so that freeing finds its size too: the byte before the data is 0 (no small block has it), the
// byte before that the offset from malloc's pointer (at least kLargeHeaderBytes), and the
// kLargeHeaderBytes before the data begin with the block's request.
#include "memory/aligned_host_memory.h"

#include "memory/large_block_cache.h"

#include <c10/util/Exception.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace pipeprof {
namespace {

static_assert(kHostAlignment <= 255, "the offset to malloc's pointer is kept in one byte");

/// Room before a large block's data for its request (8 bytes) and the two marker bytes.
constexpr std::size_t kLargeHeaderBytes = 16;
static_assert(kLargeHeaderBytes <= kHostAlignment, "a large block's header fits in its alignment padding");

/// The first multiple of kHostAlignment at least `least` bytes past raw.
unsigned char* alignedPast(unsigned char* raw, std::size_t least) {
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(raw) + least;
  const std::size_t pad = (kHostAlignment - address % kHostAlignment) % kHostAlignment;
  return raw + least + pad;
}

/// malloc(bytes), or, when that fails, malloc(bytes) again after the cache gave its blocks back.
void* mallocOrReleaseCache(std::size_t bytes) {
  if (void* raw = std::malloc(bytes)) return raw;
  largeBlockCache().release();
  return std::malloc(bytes);
}

void* allocateLarge(std::size_t bytes) {
  const std::size_t request = bytes + kHostAlignment + kLargeHeaderBytes;
  auto* raw = static_cast<unsigned char*>(largeBlockCache().take(request));
  if (raw == nullptr) raw = static_cast<unsigned char*>(mallocOrReleaseCache(LargeBlockCache::blockBytes(request)));
  TORCH_CHECK(raw != nullptr, "pipeprof's CPU allocator: not enough memory: you tried to allocate ", bytes, " bytes.");
  unsigned char* data = alignedPast(raw, kLargeHeaderBytes);
  std::memcpy(data - kLargeHeaderBytes, &request, sizeof(request));
  data[-2] = static_cast<unsigned char>(data - raw);
  data[-1] = 0;
  return data;
}

void freeLarge(unsigned char* data) {
  std::size_t request = 0;
  std::memcpy(&request, data - kLargeHeaderBytes, sizeof(request));
  largeBlockCache().give(data - data[-2], request);
}

}  // namespace

void* allocateAlignedHost(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  TORCH_CHECK(bytes <= SIZE_MAX - 2 * LargeBlockCache::kGranuleBytes, "pipeprof's CPU allocator: cannot allocate ",
              bytes, " bytes");
  if (LargeBlockCache::caches(bytes)) return allocateLarge(bytes);
  auto* raw = static_cast<unsigned char*>(mallocOrReleaseCache(bytes + kHostAlignment));
  TORCH_CHECK(raw != nullptr, "pipeprof's CPU allocator: not enough memory: you tried to allocate ", bytes, " bytes.");
  unsigned char* data = alignedPast(raw, 1);  // 1..kHostAlignment past raw
  data[-1] = static_cast<unsigned char>(data - raw);
  return data;
}

void freeAlignedHost(void* data) {
  if (data == nullptr) return;
  auto* bytes = static_cast<unsigned char*>(data);
  if (bytes[-1] == 0) {
    freeLarge(bytes);
    return;
  }
  std::free(bytes - bytes[-1]);
}

}  // namespace pipeprof
