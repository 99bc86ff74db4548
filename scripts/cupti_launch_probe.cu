// Which API records CUPTI writes for a kernel launch on this machine, under each way of asking
// for them that the profiler's exact mode could use. A diagnostic for the lent GPU machine
// (scripts/gpu-lease.sh builds and runs it): on the H200s of 2026-11-30 and 2026-12-04 exact
// mode, which then enabled the launch calls' ids one at a time, recorded no launch call while
// cheap mode attributed every kernel. This probe's first run (2026-12-04) found why: enabled one
// id at a time, CUPTI 13.0 records nothing; the whole RUNTIME and DRIVER kinds record every
// launch (<<<...>>> as cudaLaunchKernel). Exact mode now enables the whole kinds.
//   nvcc -o cupti_launch_probe scripts/cupti_launch_probe.cu -lcupti
//   ./cupti_launch_probe     one block per way: the API records seen (domain, id, name) and
//                            how many of the kernels' correlation ids an API record carried
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>

namespace {

std::map<std::tuple<int, unsigned, std::string>, int> gApiCalls;  // (driver?, cbid, name) -> count
std::set<unsigned> gApiCorrelations;
std::set<unsigned> gKernelCorrelations;
int gExternal = 0;

void check(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  std::printf("  %s: %s\n", call, text != nullptr ? text : "?");
}

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, 1 << 20));
  *size = 1 << 20;
  *maxRecords = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      gKernelCorrelations.insert(reinterpret_cast<CUpti_ActivityKernel9*>(record)->correlationId);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME || record->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
      const auto* api = reinterpret_cast<CUpti_ActivityAPI*>(record);
      const bool driver = record->kind == CUPTI_ACTIVITY_KIND_DRIVER;
      const char* name = nullptr;
      cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, api->cbid, &name);
      ++gApiCalls[{driver, api->cbid, name != nullptr ? name : "?"}];
      gApiCorrelations.insert(api->correlationId);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      ++gExternal;
    }
  }
  std::free(buffer);
}

__global__ void scale(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2.0f;
}

// One capture: enable(), then a <<<>>> launch, a cudaLaunchKernel, a cuLaunchKernel and a memset
// inside a pushed external id, then what came back.
template <typename Enable, typename Disable>
void capture(const char* way, Enable enable, Disable disable, float* data, int n) {
  gApiCalls.clear();
  gApiCorrelations.clear();
  gKernelCorrelations.clear();
  gExternal = 0;
  std::printf("== %s\n", way);
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable CONCURRENT_KERNEL");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), "enable EXTERNAL_CORRELATION");
  enable();
  check(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 7), "push");
  scale<<<(n + 255) / 256, 256>>>(data, n);
  void* args[] = {&data, &n};
  cudaLaunchKernel(reinterpret_cast<const void*>(&scale), dim3((n + 255) / 256), dim3(256), args, 0, nullptr);
  CUfunction function = nullptr;
  if (cudaGetFuncBySymbol(&function, reinterpret_cast<const void*>(&scale)) == cudaSuccess) {
    cuLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr);
  }
  cudaMemsetAsync(data, 0, sizeof(float) * n);
  uint64_t last = 0;
  check(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last), "pop");
  cudaDeviceSynchronize();
  check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flush");
  disable();
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  int matched = 0;
  for (unsigned id : gKernelCorrelations) matched += gApiCorrelations.count(id) != 0 ? 1 : 0;
  std::printf("  kernels %zu, of them with an API record %d, external correlation records %d\n",
              gKernelCorrelations.size(), matched, gExternal);
  for (const auto& [key, count] : gApiCalls) {
    std::printf("  %s %u %s x%d\n", std::get<0>(key) ? "driver " : "runtime", std::get<1>(key),
                std::get<2>(key).c_str(), count);
  }
}

}  // namespace

int main() {
  uint32_t version = 0;
  cuptiGetVersion(&version);
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::printf("CUPTI API %u, runtime %d, driver %d\n", version, runtime, driver);
  const int n = 1 << 20;
  float* data = nullptr;
  if (cudaMalloc(&data, sizeof(float) * n) != cudaSuccess) return 1;
  check(cuptiActivityRegisterCallbacks(requested, completed), "register");

  const unsigned runtimeIds[] = {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
#if CUDA_VERSION >= 13000
                                 CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                                 CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020};
  const unsigned driverIds[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx};
  auto perCall = [&](uint8_t on) {
    for (unsigned id : runtimeIds) check(cuptiActivityEnableRuntimeApi(id, on), "cuptiActivityEnableRuntimeApi");
    for (unsigned id : driverIds) check(cuptiActivityEnableDriverApi(id, on), "cuptiActivityEnableDriverApi");
  };
  capture("per call (exact mode today): cuptiActivityEnableRuntimeApi/DriverApi for the launch ids",
          [&] { perCall(1); }, [&] { perCall(0); }, data, n);
  capture("whole kinds: RUNTIME and DRIVER",
          [] {
            check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "enable RUNTIME");
            check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), "enable DRIVER");
          },
          [] {
            cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
            cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
          },
          data, n);
  capture("per call again, after the whole kinds were on once", [&] { perCall(1); }, [&] { perCall(0); }, data, n);
  // What exact mode would use to record the launch calls alone, if CUPTI honours it: the whole
  // kinds, then every other id left out one at a time (not yet run on a GPU).
  auto isLaunch = [&](bool driver, unsigned id) {
    if (driver) return std::find(std::begin(driverIds), std::end(driverIds), id) != std::end(driverIds);
    return std::find(std::begin(runtimeIds), std::end(runtimeIds), id) != std::end(runtimeIds);
  };
  capture("whole kinds, then all but the launch ids left out per call",
          [&] {
            check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "enable RUNTIME");
            check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), "enable DRIVER");
            int refused = 0;
            for (unsigned id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++id) {
              if (!isLaunch(false, id)) refused += cuptiActivityEnableRuntimeApi(id, 0) != CUPTI_SUCCESS;
            }
            for (unsigned id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; ++id) {
              if (!isLaunch(true, id)) refused += cuptiActivityEnableDriverApi(id, 0) != CUPTI_SUCCESS;
            }
            std::printf("  ids CUPTI would not leave out: %d\n", refused);
          },
          [] {
            cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
            cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
          },
          data, n);
  cudaFree(data);
  return 0;
}
