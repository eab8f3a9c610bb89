// savings_pairs: bad/fixed program pairs, one per finding whose advice is a code change, so that a
// test can hold each finding's estimated saving against what the fix really saves on the simulated
// GPU. `savings_pairs MODE`, MODE one of:
//   pageable   sync cudaMemcpy both ways from malloc'd memory      (pageable-memcpy)
//   pinned     the same copies from cudaMallocHost memory           (its fix)
//   sync-loop  a kernel, cudaDeviceSynchronize, then host work, per step   (sync-in-loop)
//   sync-once  the kernel, then host work, one sync at the end      (its fix: the host work overlaps)
//   tiny       many tiny kernels launched one by one                (launch-bound-kernels)
//   graph      the same kernels captured once into a graph and replayed     (its fix)
//   free-loop  cudaMalloc, a kernel, cudaFree, then host work, per step (implicit-sync: the free waits)
//   free-once  the buffer allocated once outside the loop           (its fix)
//   sync-copy  a kernel, a cudaMemcpy of its result to pinned memory, then host work, per step (sync-memcpy)
//   async-copy the kernel and a cudaMemcpyAsync on a stream, host work overlapping, one sync at the end
//   small-copies  many tiny cudaMemcpy calls, one per slice of a buffer   (small-transfers)
//   batched    one cudaMemcpy of the whole packed buffer             (its fix)
//   graph-decode   per step a graph of 200 tiny kernels, a token copied back and waited for (graph-launch-bound)
//   graph-fused    the same work as 20 fused kernels per graph      (its fix)
//   async-loop cudaMallocAsync, a tiny kernel, cudaFreeAsync, per step of a host-bound loop (alloc-in-loop)
//   async-once the buffer allocated once before the loop            (its fix)
//   legacy     kernels on two cudaStreamCreate streams and the default stream, per step (legacy-stream-serialisation)
//   nonblocking    the streams made with cudaStreamNonBlocking      (its fix)
//   offpath-tiny   thread 1: 20 ms steps on device 0; thread 2: the tiny launches on device 1, done long
//                  before (launch-bound-kernels, off the critical path; needs SIMCUDA_DEVICES=2)
//   offpath-graph  thread 2's launches as a graph (its fix: it saves nothing)
#include "../apps/app_common.h"

#include <chrono>
#include <cstring>
#include <thread>
#include <string>
#include <vector>

constexpr size_t kCopyBytes = 4u << 20;  // per copy: 4 MiB, so a copy's device time dwarfs its call
constexpr int kCopies = 40;              // per direction
// sync-loop, free-loop, sync-copy: per step a 20 ms kernel (SIMCUDA_KERNEL_NS) and 0.3 ms of host work.
// The GPU's work dominates so that a loaded host (descheduled for a few ms at a time) cannot make the
// fixed programs' GPU wait: their GPU stays busy from the first kernel to the last, and the saving is the
// bad program's GPU idle time, whatever the host's load (tests/savings).
constexpr int kSteps = 20;
constexpr int kHostWorkUs = 300;         // per step: the host's own work, which could overlap the GPU's
constexpr int kTinyPerGraph = 100;
constexpr int kTinyGraphs = 100;         // tiny: kTinyPerGraph * kTinyGraphs launches
constexpr size_t kResultBytes = 256u << 10;  // sync-copy: a step's result, not a small copy
constexpr size_t kSliceBytes = 2u << 10;     // small-copies: one slice
constexpr int kSlices = 2000;

// Duration set by the simulated driver: SIMCUDA_KERNEL_NS=step=20000000,tiny=2000 (tests/savings).
__global__ void step(float* x)
{
    if (threadIdx.x == 0) x[blockIdx.x] += 1.0f;
}

// SIMCUDA_KERNEL_NS: fused10=20000, ten tiny kernels' work fused into one.
__global__ void fused10(int* counter)
{
    if (threadIdx.x == 0) *counter += 10;
}

__global__ void tiny(int* counter)
{
    if (threadIdx.x == 0) *counter += 1;
}

// The host's own work: wall time, as a CPU-bound step of a real program would take.
void hostWork()
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kHostWorkUs);
    while (std::chrono::steady_clock::now() < until) {
    }
}

void copies(bool pinned)
{
    void* host = nullptr;
    std::vector<char> pageable;
    if (pinned) {
        CK(cudaMallocHost(&host, kCopyBytes));
    } else {
        pageable.resize(kCopyBytes);
        host = pageable.data();
    }
    std::memset(host, 1, kCopyBytes);
    void* dev = nullptr;
    CK(cudaMalloc(&dev, kCopyBytes));
    for (int i = 0; i < kCopies; ++i) {
        CK(cudaMemcpy(dev, host, kCopyBytes, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(host, dev, kCopyBytes, cudaMemcpyDeviceToHost));
    }
    CK(cudaFree(dev));
    if (pinned) CK(cudaFreeHost(host));
}

void syncLoop(bool everyStep)
{
    float* x = nullptr;
    CK(cudaMalloc(&x, 64 * sizeof(float)));
    for (int i = 0; i < kSteps; ++i) {
        step<<<1, 32>>>(x);
        CK_LAUNCH();
        if (everyStep) CK(cudaDeviceSynchronize());
        hostWork();
    }
    CK(cudaDeviceSynchronize());
    CK(cudaFree(x));
}

void tinyKernels(bool graph)
{
    int* counter = nullptr;
    CK(cudaMalloc(&counter, sizeof(int)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (!graph) {
        for (int i = 0; i < kTinyPerGraph * kTinyGraphs; ++i) {
            tiny<<<1, 32, 0, s>>>(counter);
            CK_LAUNCH();
        }
    } else {
        cudaGraph_t g;
        cudaGraphExec_t exec;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < kTinyPerGraph; ++i) tiny<<<1, 32, 0, s>>>(counter);
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&exec, g, 0));
        for (int i = 0; i < kTinyGraphs; ++i) CK(cudaGraphLaunch(exec, s));
        CK(cudaGraphExecDestroy(exec));
        CK(cudaGraphDestroy(g));
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(counter));
}

void freeLoop(bool inLoop)
{
    float* x = nullptr;
    if (!inLoop) CK(cudaMalloc(&x, 64 * sizeof(float)));
    for (int i = 0; i < kSteps; ++i) {
        if (inLoop) CK(cudaMalloc(&x, 64 * sizeof(float)));
        step<<<1, 32>>>(x);
        CK_LAUNCH();
        if (inLoop) CK(cudaFree(x));
        hostWork();
    }
    CK(cudaDeviceSynchronize());
    if (!inLoop) CK(cudaFree(x));
}

void resultCopies(bool async)
{
    float* x = nullptr;
    void* host = nullptr;
    CK(cudaMalloc(&x, kResultBytes));
    CK(cudaMallocHost(&host, kResultBytes));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < kSteps; ++i) {
        if (async) {
            step<<<1, 32, 0, s>>>(x);
            CK_LAUNCH();
            CK(cudaMemcpyAsync(host, x, kResultBytes, cudaMemcpyDeviceToHost, s));
        } else {
            step<<<1, 32>>>(x);
            CK_LAUNCH();
            CK(cudaMemcpy(host, x, kResultBytes, cudaMemcpyDeviceToHost));
        }
        hostWork();
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(host));
    CK(cudaFree(x));
}

void sliceCopies(bool batched)
{
    char* host = nullptr;
    char* dev = nullptr;
    const size_t bytes = kSliceBytes * kSlices;
    CK(cudaMallocHost(reinterpret_cast<void**>(&host), bytes));
    CK(cudaMalloc(reinterpret_cast<void**>(&dev), bytes));
    std::memset(host, 1, bytes);
    if (batched)
        CK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
    else
        for (int i = 0; i < kSlices; ++i)
            CK(cudaMemcpy(dev + i * kSliceBytes, host + i * kSliceBytes, kSliceBytes, cudaMemcpyHostToDevice));
    CK(cudaFree(dev));
    CK(cudaFreeHost(host));
}

// A decode loop of graph replays: each step launches a graph of kDecodeNodes tiny kernels, copies a token
// back and waits for it (the host reads it: the sync stays). Its graph launch costs the host more than the
// graph's GPU work, which waits for it. Fixed: the same work as a tenth of the nodes (fused kernels).
constexpr int kDecodeSteps = 200;
constexpr int kDecodeNodes = 200;
void graphDecode(bool fused)
{
    int* counter = nullptr;
    int* token = nullptr;
    CK(cudaMalloc(&counter, sizeof(int)));
    CK(cudaMallocHost(&token, sizeof(int)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < (fused ? kDecodeNodes / 10 : kDecodeNodes); ++i) {
        if (fused) fused10<<<1, 32, 0, s>>>(counter);
        else tiny<<<1, 32, 0, s>>>(counter);
    }
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&exec, g, 0));
    long sum = 0;
    for (int i = 0; i < kDecodeSteps; ++i) {
        CK(cudaGraphLaunch(exec, s));
        CK(cudaMemcpyAsync(token, counter, sizeof(int), cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        sum += *token;  // the next step depends on it
    }
    std::printf("decode: %ld\n", sum > 0 ? 1L : 0L);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(token));
    CK(cudaFree(counter));
}

// Stream-ordered allocations in a host-bound loop: each step cudaMallocAsync, a tiny kernel on the buffer,
// cudaFreeAsync; fixed, the buffer allocated once before the loop.
constexpr int kAsyncSteps = 2000;
void asyncAllocs(bool once)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int* buf = nullptr;
    if (once) CK(cudaMallocAsync(reinterpret_cast<void**>(&buf), 1 << 20, s));
    for (int i = 0; i < kAsyncSteps; ++i) {
        if (!once) CK(cudaMallocAsync(reinterpret_cast<void**>(&buf), 1 << 20, s));
        tiny<<<1, 32, 0, s>>>(buf);
        CK_LAUNCH();
        if (!once) CK(cudaFreeAsync(buf, s));
    }
    if (once) CK(cudaFreeAsync(buf, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamDestroy(s));
}

// The legacy default stream beside two streams of the program's own: each step a 20 ms kernel on each
// stream and one on the default stream (its own buffer: no data shared). Made with cudaStreamCreate (blocking),
// the default stream's kernel waits for both and they wait for it: 40 ms a step. Made non-blocking, the three
// overlap: 20 ms a step.
constexpr int kLegacySteps = 8;
void legacyMix(bool nonBlocking)
{
    float *a = nullptr, *b = nullptr, *c = nullptr;
    CK(cudaMalloc(&a, 64 * sizeof(float)));
    CK(cudaMalloc(&b, 64 * sizeof(float)));
    CK(cudaMalloc(&c, 64 * sizeof(float)));
    cudaStream_t s1, s2;
    const unsigned flags = nonBlocking ? cudaStreamNonBlocking : cudaStreamDefault;
    CK(cudaStreamCreateWithFlags(&s1, flags));
    CK(cudaStreamCreateWithFlags(&s2, flags));
    for (int i = 0; i < kLegacySteps; ++i) {
        step<<<1, 32, 0, s1>>>(a);
        CK_LAUNCH();
        step<<<1, 32, 0, s2>>>(b);
        CK_LAUNCH();
        step<<<1, 32>>>(c);
        CK_LAUNCH();
    }
    CK(cudaDeviceSynchronize());
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
}

// Work off the critical path: thread 1 runs kOffPathSteps 20 ms steps on device 0, waiting for each;
// thread 2 runs the tiny launches (or their graph) on device 1 and is done long before. The graph saves
// thread 2's launch time, which nothing waits for: the run is no shorter.
constexpr int kOffPathSteps = 10;
void offPath(bool graph)
{
    std::thread gpuBound([] {
        CK(cudaSetDevice(0));
        float* x = nullptr;
        CK(cudaMalloc(&x, 64 * sizeof(float)));
        for (int i = 0; i < kOffPathSteps; ++i) {
            step<<<1, 32>>>(x);
            CK_LAUNCH();
            CK(cudaDeviceSynchronize());
        }
        CK(cudaFree(x));
    });
    std::thread launches([graph] {
        CK(cudaSetDevice(1));
        tinyKernels(graph);
    });
    gpuBound.join();
    launches.join();
}

int main(int argc, char** argv)
{
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "pageable" || mode == "pinned")
        copies(mode == "pinned");
    else if (mode == "sync-loop" || mode == "sync-once")
        syncLoop(mode == "sync-loop");
    else if (mode == "tiny" || mode == "graph")
        tinyKernels(mode == "graph");
    else if (mode == "free-loop" || mode == "free-once")
        freeLoop(mode == "free-loop");
    else if (mode == "sync-copy" || mode == "async-copy")
        resultCopies(mode == "async-copy");
    else if (mode == "small-copies" || mode == "batched")
        sliceCopies(mode == "batched");
    else if (mode == "graph-decode" || mode == "graph-fused")
        graphDecode(mode == "graph-fused");
    else if (mode == "async-loop" || mode == "async-once")
        asyncAllocs(mode == "async-once");
    else if (mode == "legacy" || mode == "nonblocking")
        legacyMix(mode == "nonblocking");
    else if (mode == "offpath-tiny" || mode == "offpath-graph")
        offPath(mode == "offpath-graph");
    else {
        std::fprintf(stderr, "usage: %s pageable|pinned|sync-loop|sync-once|tiny|graph|free-loop|free-once|sync-copy|async-copy|small-copies|batched|offpath-tiny|offpath-graph|legacy|nonblocking|async-loop|async-once|graph-decode|graph-fused\n", argv[0]);
        return 2;
    }
    return 0;
}
