// exec_child: the parent uses CUDA, then forks a child that immediately execs tiny_kernels (the same build
// variant, next to this program) with a small launch count, waits for it, and uses CUDA again.
#include "app_common.h"

#include <climits>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

constexpr int kChildLaunches = 25;          // passed to tiny_kernels on its command line
constexpr int kParentLaunchesPerPhase = 10; // before the fork and after the child exits
constexpr int kThreads = 64;

__global__ void exec_parent_work(int* x)
{
    x[threadIdx.x] += 1;
}

// This program is bin/apps/exec_child.<variant>; the child is bin/apps/tiny_kernels.<variant>.
static std::string childPath()
{
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return "";
    std::string path(self, size_t(n));
    const std::string me = "exec_child";
    const size_t at = path.rfind(me);
    if (at == std::string::npos) return "";
    return path.replace(at, me.size(), "tiny_kernels");
}

static void parentPhase(int* x)
{
    for (int i = 0; i < kParentLaunchesPerPhase; ++i) {
        exec_parent_work<<<1, kThreads>>>(x);
        CK_LAUNCH();
    }
    CK(cudaDeviceSynchronize());
}

int main()
{
    const std::string child = childPath();
    if (child.empty() || access(child.c_str(), X_OK) != 0) {
        std::fprintf(stderr, "exec_child: cannot find the child program '%s'\n", child.c_str());
        return 1;
    }
    int* x = nullptr;
    CK(cudaMalloc(&x, kThreads * sizeof(int)));
    parentPhase(x);

    const std::string count = std::to_string(kChildLaunches);
    const pid_t pid = fork();
    if (pid < 0) {
        std::perror("exec_child: fork");
        return 1;
    }
    if (pid == 0) {
        // Only async-signal-safe calls between fork and exec: the parent's CUDA state is unusable here.
        char* const args[] = {const_cast<char*>(child.c_str()), const_cast<char*>(count.c_str()), nullptr};
        execv(child.c_str(), args);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
        std::perror("exec_child: waitpid");
        return 1;
    }
    parentPhase(x);
    CK(cudaFree(x));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "exec_child: the child %s failed (status 0x%x)\n", child.c_str(), status);
        return 1;
    }
    return 0;
}
