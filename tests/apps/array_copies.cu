// array_copies: CUDA arrays through cudart: cudaMallocArray and cudaMalloc3DArray, 2D copies into, out of
// and between arrays from pageable, pinned and device memory (cudaMemcpy2DToArray, cudaMemcpy2DFromArray,
// cudaMemcpy2DArrayToArray and their Async forms), a 3D copy into and out of a 3D array, cudaFreeArray, a
// mipmapped array; then discards of managed memory (cudaMemDiscardBatchAsync,
// cudaMemDiscardAndPrefetchBatchAsync), and a green context (driver API through
// cudaGetDriverEntryPointByVersion, as cuDNN finds it): an SM partition, a stream in it, an event recorded
// on its work and waited for. The bytes really move on the simulated driver, so the round trips are checked.
#include "app_common.h"

#include <cuda.h>

#include <cstring>
#include <vector>

// 2 MiB arrays: copies long enough that the blocking ones (the report times them as upper bounds: the call's
// host time) weigh little beside the real copy time in the device's busy share.
constexpr size_t kWidth = 1024;                      // floats per row of the 2D arrays
constexpr size_t kHeight = 512;                      // rows
constexpr size_t kRowBytes = kWidth * sizeof(float);
constexpr size_t kBytes2D = kRowBytes * kHeight;
constexpr int kIters = 3;                            // round trips through the 2D arrays
constexpr size_t kWidth3 = 32;                       // the 3D array, in floats
constexpr size_t kHeight3 = 16;
constexpr size_t kDepth3 = 8;
constexpr size_t kBytes3D = kWidth3 * sizeof(float) * kHeight3 * kDepth3;
constexpr size_t kManagedBytes = 1 << 16;            // discarded in two halves
constexpr unsigned kGreenSms = 16;                   // the green context's SM partition
constexpr unsigned kMipLevels = 3;

// A driver entry point as cudart finds it for a given CUDA version.
template <class Fn>
Fn driverEntry(const char* name, int version)
{
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    CK(cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &found));
    if (!fn || found != cudaDriverEntryPointSuccess) {
        std::fprintf(stderr, "driver entry point %s not found\n", name);
        std::exit(1);
    }
    return reinterpret_cast<Fn>(fn);
}

#define CU(call)                                                                        \
    do {                                                                                \
        const CUresult cu_rc_ = (call);                                                 \
        if (cu_rc_ != CUDA_SUCCESS) {                                                   \
            std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)cu_rc_); \
            std::exit(1);                                                               \
        }                                                                               \
    } while (0)

// A green context of kGreenSms SMs, a stream in it, an event recorded on its work and waited for.
void greenContext()
{
    auto getResource = driverEntry<decltype(&cuDeviceGetDevResource)>("cuDeviceGetDevResource", 12040);
    auto split = driverEntry<decltype(&cuDevSmResourceSplitByCount)>("cuDevSmResourceSplitByCount", 12040);
    auto makeDesc = driverEntry<decltype(&cuDevResourceGenerateDesc)>("cuDevResourceGenerateDesc", 12040);
    auto create = driverEntry<decltype(&cuGreenCtxCreate)>("cuGreenCtxCreate", 12040);
    auto toContext = driverEntry<decltype(&cuCtxFromGreenCtx)>("cuCtxFromGreenCtx", 12040);
    auto streamCreate = driverEntry<decltype(&cuGreenCtxStreamCreate)>("cuGreenCtxStreamCreate", 12050);
    auto record = driverEntry<decltype(&cuGreenCtxRecordEvent)>("cuGreenCtxRecordEvent", 12040);
    auto wait = driverEntry<decltype(&cuGreenCtxWaitEvent)>("cuGreenCtxWaitEvent", 12040);
    auto streamDestroy = driverEntry<decltype(&cuStreamDestroy_v2)>("cuStreamDestroy", 12040);
    auto destroy = driverEntry<decltype(&cuGreenCtxDestroy)>("cuGreenCtxDestroy", 12040);

    CUdevResource all, part;
    CU(getResource(0, &all, CU_DEV_RESOURCE_TYPE_SM));
    unsigned groups = 1;
    CU(split(&part, &groups, &all, nullptr, 0, kGreenSms));
    CUdevResourceDesc desc;
    CU(makeDesc(&desc, &part, 1));
    CUgreenCtx green;
    CU(create(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM));
    CUcontext ctx;
    CU(toContext(&ctx, green));
    CUstream stream;
    CU(streamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0));
    cudaEvent_t done;
    CK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CU(record(green, done));
    CU(wait(green, done));
    CK(cudaEventSynchronize(done));
    CK(cudaEventDestroy(done));
    CU(streamDestroy(stream));
    CU(destroy(green));
    std::printf("green context: %u of %u SMs\n", part.sm.smCount, all.sm.smCount);
}

int main()
{
    const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
    cudaArray_t a = nullptr, b = nullptr, vol = nullptr;
    CK(cudaMallocArray(&a, &desc, kWidth, kHeight));
    CK(cudaMallocArray(&b, &desc, kWidth, kHeight));
    float* dev = nullptr;
    CK(cudaMalloc(&dev, kBytes2D));
    std::vector<float> src(kWidth * kHeight), back(kWidth * kHeight);
    for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);

    for (int it = 0; it < kIters; ++it) {
        src[0] = float(it);
        CK(cudaMemcpy2DToArray(a, 0, 0, src.data(), kRowBytes, kRowBytes, kHeight, cudaMemcpyHostToDevice));
        CK(cudaMemcpy2DArrayToArray(b, 0, 0, a, 0, 0, kRowBytes, kHeight));
        CK(cudaMemcpy2DFromArray(dev, kRowBytes, b, 0, 0, kRowBytes, kHeight, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy2DToArray(a, 0, 0, dev, kRowBytes, kRowBytes, kHeight, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy2DFromArray(back.data(), kRowBytes, a, 0, 0, kRowBytes, kHeight, cudaMemcpyDeviceToHost));
        if (std::memcmp(src.data(), back.data(), kBytes2D) != 0) {
            std::fprintf(stderr, "round trip %d through the arrays changed the data\n", it);
            return 1;
        }
    }

    float* pinned = nullptr;
    CK(cudaMallocHost(&pinned, kBytes2D));
    std::memcpy(pinned, src.data(), kBytes2D);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMemcpy2DToArrayAsync(b, 0, 0, pinned, kRowBytes, kRowBytes, kHeight, cudaMemcpyHostToDevice, s));
    CK(cudaMemcpy2DFromArrayAsync(pinned, kRowBytes, b, 0, 0, kRowBytes, kHeight, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));

    const cudaExtent ext = make_cudaExtent(kWidth3, kHeight3, kDepth3);
    CK(cudaMalloc3DArray(&vol, &desc, ext));
    cudaMemcpy3DParms in = {};
    in.srcPtr = make_cudaPitchedPtr(pinned, kWidth3 * sizeof(float), kWidth3, kHeight3);
    in.dstArray = vol;
    in.extent = ext;
    in.kind = cudaMemcpyHostToDevice;
    CK(cudaMemcpy3D(&in));
    cudaMemcpy3DParms out = {};
    out.srcArray = vol;
    out.dstPtr = make_cudaPitchedPtr(back.data(), kWidth3 * sizeof(float), kWidth3, kHeight3);
    out.extent = ext;
    out.kind = cudaMemcpyDeviceToHost;
    CK(cudaMemcpy3D(&out));
    if (std::memcmp(pinned, back.data(), kBytes3D) != 0) {
        std::fprintf(stderr, "round trip through the 3D array changed the data\n");
        return 1;
    }

    // A mipmapped array of kMipLevels levels (cuMipmappedArrayCreate / cuMipmappedArrayDestroy).
    cudaMipmappedArray_t mip = nullptr;
    CK(cudaMallocMipmappedArray(&mip, &desc, make_cudaExtent(kWidth3, kHeight3, 0), kMipLevels));
    CK(cudaFreeMipmappedArray(mip));

    char* managed = nullptr;
    CK(cudaMallocManaged(&managed, kManagedBytes));
    void* ranges[2] = {managed, managed + kManagedBytes / 2};
    size_t sizes[2] = {kManagedBytes / 2, kManagedBytes / 2};
    CK(cudaMemDiscardBatchAsync(ranges, sizes, 2, 0, s));
    cudaMemLocation to = {};
    to.type = cudaMemLocationTypeDevice;
    to.id = 0;
    size_t firstOp = 0;
    CK(cudaMemDiscardAndPrefetchBatchAsync(ranges, sizes, 2, &to, &firstOp, 1, 0, s));
    CK(cudaStreamSynchronize(s));

    greenContext();

    CK(cudaFree(managed));
    CK(cudaStreamDestroy(s));
    CK(cudaFreeArray(vol));
    CK(cudaFreeArray(b));
    CK(cudaFreeArray(a));
    CK(cudaFreeHost(pinned));
    CK(cudaFree(dev));
    std::printf("array round trips ok: %d 2D, 1 3D (%zu + %zu bytes)\n", kIters, kBytes2D, kBytes3D);
    return 0;
}
