// Tests of runtime/src/memory/large_block_cache and the host allocator's use of it: blocks
// too large for glibc to keep serve the next request of their size.
#include "memory/aligned_host_memory.h"
#include "memory/large_block_cache.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace pipeprof {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

/// A block as allocateAlignedHost takes one from malloc for a request of `bytes`.
void* mallocBlock(std::size_t bytes) { return std::malloc(LargeBlockCache::blockBytes(bytes)); }

TEST(LargeBlockCache, TakesOnlyWhatGlibcWouldUnmap) {
  EXPECT_FALSE(LargeBlockCache::caches(32 * kMiB - 1));
  EXPECT_TRUE(LargeBlockCache::caches(32 * kMiB));
  EXPECT_EQ(LargeBlockCache::blockBytes(32 * kMiB + 1), 34 * kMiB);
  EXPECT_EQ(LargeBlockCache::blockBytes(34 * kMiB), 34 * kMiB);
}

TEST(LargeBlockCache, AFreedBlockServesTheNextRequestOfItsRoundedSize) {
  LargeBlockCache cache(256 * kMiB);
  EXPECT_EQ(cache.take(40 * kMiB), nullptr);
  void* block = mallocBlock(40 * kMiB);
  cache.give(block, 40 * kMiB);
  EXPECT_EQ(cache.cachedBytes(), 40 * kMiB);
  EXPECT_EQ(cache.take(64 * kMiB), nullptr) << "another size";
  EXPECT_EQ(cache.take(39 * kMiB), block) << "the same 2 MiB granule";
  EXPECT_EQ(cache.cachedBytes(), 0U);
  EXPECT_EQ(cache.take(40 * kMiB), nullptr) << "handed out twice";
  std::free(block);
}

TEST(LargeBlockCache, HoldsNoMoreThanItsCapacityAndLetsTheOldestGoFirst) {
  LargeBlockCache cache(100 * kMiB);
  void* oldest = mallocBlock(40 * kMiB);
  void* middle = mallocBlock(40 * kMiB);
  void* newest = mallocBlock(40 * kMiB);
  cache.give(oldest, 40 * kMiB);
  cache.give(middle, 40 * kMiB);
  cache.give(newest, 40 * kMiB);  // 120 MiB: the oldest goes back to the system
  EXPECT_EQ(cache.cachedBytes(), 80 * kMiB);
  EXPECT_EQ(cache.take(40 * kMiB), newest);
  EXPECT_EQ(cache.take(40 * kMiB), middle);
  EXPECT_EQ(cache.take(40 * kMiB), nullptr);
  std::free(middle);
  std::free(newest);

  void* huge = mallocBlock(200 * kMiB);
  cache.give(huge, 200 * kMiB);  // past the capacity alone: freed at once
  EXPECT_EQ(cache.cachedBytes(), 0U);
}

TEST(LargeBlockCache, ReleaseFreesEveryBlock) {
  LargeBlockCache cache(256 * kMiB);
  cache.give(mallocBlock(40 * kMiB), 40 * kMiB);
  cache.give(mallocBlock(50 * kMiB), 50 * kMiB);
  cache.release();
  EXPECT_EQ(cache.cachedBytes(), 0U);
  EXPECT_EQ(cache.take(40 * kMiB), nullptr);
}

long minorFaultsOfThisThread() {
  struct rusage usage {};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

TEST(AlignedHostMemory, ALargeTensorsPagesServeTheNextStepWithoutFaultingAgain) {
  constexpr std::size_t kBytes = 48 * kMiB;  // past glibc's largest mmap threshold
  void* first = allocateAlignedHost(kBytes);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % kHostAlignment, 0U);
  std::memset(first, 1, kBytes);
  freeAlignedHost(first);

  const long before = minorFaultsOfThisThread();
  void* second = allocateAlignedHost(kBytes);
  std::memset(second, 2, kBytes);
  const long faults = minorFaultsOfThisThread() - before;
  EXPECT_EQ(second, first);
  EXPECT_LT(faults, static_cast<long>(kBytes / 4096 / 100)) << "its pages faulted in again";
  freeAlignedHost(second);

  void* small = allocateAlignedHost(kMiB);  // glibc's, as before
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small) % kHostAlignment, 0U);
  std::memset(small, 3, kMiB);
  freeAlignedHost(small);
}

TEST(AlignedHostMemory, AnAllocationMallocRefusesGivesTheCachedBlocksBackAndNamesItsSize) {
  freeAlignedHost(allocateAlignedHost(40 * kMiB));
  ASSERT_GT(largeBlockCache().cachedBytes(), 0U);
  const std::size_t impossible = std::size_t{1} << 62;
  try {
    allocateAlignedHost(impossible);
    FAIL() << "allocated 4 EiB";
  } catch (const c10::Error& error) {
    EXPECT_NE(std::string(error.what()).find(std::to_string(impossible)), std::string::npos) << error.what();
  }
  EXPECT_EQ(largeBlockCache().cachedBytes(), 0U);
}

}  // namespace
}  // namespace pipeprof
