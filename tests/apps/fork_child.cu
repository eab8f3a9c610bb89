// fork_child: the parent does not touch CUDA before fork (a context does not survive fork); the child uses
// CUDA and exits, the parent waits for it and then uses CUDA itself. The exit status reflects both.
#include "app_common.h"

#include <sys/wait.h>
#include <unistd.h>

constexpr int kChildLaunches = 30;
constexpr int kParentLaunches = 20;
constexpr int kThreads = 64;

__global__ void child_work(int* x)
{
    x[threadIdx.x] += 1;
}

__global__ void parent_work(int* x)
{
    x[threadIdx.x] += 2;
}

template <typename Kernel>
static void launchMany(Kernel kernel, int launches)
{
    int* x = nullptr;
    CK(cudaMalloc(&x, kThreads * sizeof(int)));
    CK(cudaMemset(x, 0, kThreads * sizeof(int)));
    for (int i = 0; i < launches; ++i) {
        kernel<<<1, kThreads>>>(x);
        CK_LAUNCH();
    }
    CK(cudaDeviceSynchronize());
    CK(cudaFree(x));
}

int main()
{
    const pid_t child = fork();
    if (child < 0) {
        std::perror("fork_child: fork");
        return 1;
    }
    if (child == 0) {
        launchMany(child_work, kChildLaunches);
        std::exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child) {
        std::perror("fork_child: waitpid");
        return 1;
    }
    launchMany(parent_work, kParentLaunches);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "fork_child: the child failed (status 0x%x)\n", status);
        return 1;
    }
    return 0;
}
