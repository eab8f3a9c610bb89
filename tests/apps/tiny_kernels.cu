// tiny_kernels: thousands of tiny kernel launches on the default stream and one synchronization at the end:
// launch overhead dominates. `tiny_kernels N` launches N instead (exec_child runs it that way).
#include "app_common.h"

#include <cstdlib>

constexpr int kLaunches = 2000;
constexpr int kThreads = 32;

__global__ void tiny_add(int* counter)
{
    if (threadIdx.x == 0) *counter += 1;
}

int main(int argc, char** argv)
{
    const int launches = argc > 1 ? std::atoi(argv[1]) : kLaunches;
    if (launches <= 0) {
        std::fprintf(stderr, "usage: %s [launches > 0]\n", argv[0]);
        return 2;
    }
    int* counter = nullptr;
    CK(cudaMalloc(&counter, sizeof(int)));
    for (int i = 0; i < launches; ++i) {
        tiny_add<<<1, kThreads>>>(counter);
        CK_LAUNCH();
    }
    CK(cudaDeviceSynchronize());
    CK(cudaFree(counter));
    return 0;
}
