// Tests of runtime/torch_environment: intra-op threads and host memory reuse.
#include <pipeprof/runtime/torch_environment.h>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace pipeprof {
namespace {

/// Sets (or, with nullopt, unsets) an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// OpenBLAS's thread count, or nullopt where OpenBLAS is not the BLAS linked in.
std::optional<int> blasThreads() {
  using GetThreads = int (*)();
  void* symbol = dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
  if (symbol == nullptr) return std::nullopt;
  return reinterpret_cast<GetThreads>(symbol)();
}

TEST(IntraOpThreads, LibTorchTakesTheThreadsAndOpenBlasStaysOnOne) {
  const int before = torch::get_num_threads();
  setIntraOpThreads(2);
  EXPECT_EQ(torch::get_num_threads(), 2);
  if (const std::optional<int> blas = blasThreads()) {
    EXPECT_EQ(*blas, 1) << "OpenBLAS's pool beside LibTorch's";
  }
  setIntraOpThreads(before);
  EXPECT_EQ(torch::get_num_threads(), before);
  EXPECT_THROW(setIntraOpThreads(0), std::invalid_argument);
}

#ifdef __GLIBC__
TEST(KeepFreedHostMemory, AFreedActivationSizedBlockStaysInTheHeapForTheNextStep) {
  const ScopedEnv tunables("GLIBC_TUNABLES", std::nullopt);
  ASSERT_TRUE(keepFreedHostMemory());
  // 8 MiB: above glibc's default mmap threshold (128 KiB), below the 32 MiB set.
  constexpr std::size_t kBytes = 8U << 20;
  const struct mallinfo2 before = mallinfo2();
  void* volatile block = std::malloc(kBytes);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBytes);
  const struct mallinfo2 held = mallinfo2();
  EXPECT_EQ(held.hblks, before.hblks) << "served by mmap";
  std::free(block);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_EQ(after.arena, held.arena) << "returned to the system";
  EXPECT_GE(after.fordblks, kBytes);
}

TEST(KeepFreedHostMemory, AWorkerThreadsEmptiedHeapsStayMappedForTheNextStep) {
  const ScopedEnv tunables("GLIBC_TUNABLES", std::nullopt);
  ASSERT_TRUE(keepFreedHostMemory());
  // A pipeline's worker allocates from a thread arena, whose heaps hold 64 MiB each: 96 MiB in
  // 24 MiB blocks fills a second heap, which glibc unmaps once it is empty unless the top pad
  // keeps it.
  constexpr std::size_t kBytes = 24U << 20;
  constexpr int kBlocks = 4;
  std::size_t held = 0;
  std::size_t after = 0;
  std::thread worker([&] {
    std::vector<void*> blocks;
    for (int index = 0; index < kBlocks; ++index) {
      blocks.push_back(std::malloc(kBytes));
      ASSERT_NE(blocks.back(), nullptr);
      std::memset(blocks.back(), 1, kBytes);
    }
    held = mallinfo2().arena;
    for (void* block : blocks) std::free(block);
    after = mallinfo2().arena;
  });
  worker.join();
  EXPECT_GE(held, kBlocks * kBytes) << "served by mmap";
  EXPECT_EQ(after, held) << "a heap returned to the system";
}
#endif

TEST(KeepFreedHostMemory, TheUsersMallocTunablesWin) {
  const ScopedEnv tunables("GLIBC_TUNABLES", std::string("glibc.malloc.trim_threshold=131072"));
  EXPECT_FALSE(keepFreedHostMemory());
}

}  // namespace
}  // namespace pipeprof
