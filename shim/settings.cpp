// shim/settings.cpp: the GPUSPY_* settings and the capture's default directory, fixed when the library
// loads: a daemon chdirs to / and a sanitised server calls clearenv() before its first CUDA call, and
// its capture must still go where, and be made how, the user asked when the process started.
#include "shim/shim.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuspy::shim {
namespace {

// The names read at load; the values are copied (the environment may be cleared or rewritten).
const char* const kNames[] = {"GPUSPY_DISABLE",    "GPUSPY_OUTPUT",     "GPUSPY_SOCKET",   "GPUSPY_GPU_TIME",
                              "GPUSPY_GPU_BUDGET", "GPUSPY_QUEUE_ITEMS", "GPUSPY_STACK_DEPTH", "GPUSPY_STACK_FP",
                              "GPUSPY_MAX_BYTES", "GPUSPY_PYTHON", "GPUSPY_PYTHON_HINT", "GPUSPY_CAPTURE_RANGE", "GPUSPY_CAPTURE_END",
                              "GPUSPY_DELAY", "GPUSPY_DURATION", "GPUSPY_PAUSED", "GPUSPY_TEST_CLOCK_OFFSET_NS",
                              "GPUSPY_STACK_CACHE", "GPUSPY_STACK_DEEPEN"};
constexpr size_t kCount = sizeof kNames / sizeof kNames[0];
constexpr size_t kMaxValue = 4096;
char g_values[kCount][kMaxValue];
bool g_present[kCount];
bool g_loaded = false;
char g_cwd[kMaxValue];  // the working directory at load ("" when unknown or too long)
uint64_t g_loadNs = 0;  // when the library loaded
uid_t g_euid = 0;       // the effective user at load: a server that drops privileges changes it

// A relative path made absolute against the directory at load (GPUSPY_OUTPUT, GPUSPY_SOCKET).
void absolutize(char* value)
{
    if (value[0] == '/' || !g_cwd[0]) return;
    char tmp[kMaxValue];
    const size_t c = strlen(g_cwd), v = strlen(value);
    if (c + 1 + v + 1 > sizeof tmp) return;
    memcpy(tmp, g_cwd, c);
    tmp[c] = '/';
    memcpy(tmp + c + 1, value, v + 1);
    memcpy(value, tmp, c + 1 + v + 1);
}

// An app's NVTX looks for its tool in NVTX_INJECTION64_PATH when it makes its first NVTX call
// (nvtx3/nvtxDetail/nvtxInit.h; a preloaded library is deliberately not searched): point it at this
// library, by an absolute path (the app may chdir first), so that NVTX ranges reach gpuspy with nothing
// to set. Never over an injection the user chose for another tool; not when gpuspy is disabled.
// This library's absolute path (the app may chdir before it loads a tool by that path); false if unknown.
bool ownPath(char (&path)[PATH_MAX])
{
    Dl_info info{};
    return dladdr(reinterpret_cast<void*>(&ownPath), &info) && info.dli_fname && realpath(info.dli_fname, path);
}

void pointNvtxHere()
{
    if (disabledSetting() || getenv("NVTX_INJECTION64_PATH")) return;
    char path[PATH_MAX];
    if (ownPath(path)) setenv("NVTX_INJECTION64_PATH", path, 0);
}

// NCCL looks for a profiler plugin when a communicator is made: NCCL_PROFILER_PLUGIN, else
// libnccl-profiler.so on the library path (plugin_open.cc in NCCL's sources). Point it at this library
// (ncclProfiler_v5: hooks/nccl_profiler.cpp) by an absolute path, so that collectives reach gpuspy with
// nothing to set. Never over a plugin the user chose: not when NCCL_PROFILER_PLUGIN is set, nor when a
// libnccl-profiler.so lies in a directory of LD_LIBRARY_PATH or the system's library directories
// (NCCL would load it); not when gpuspy is disabled.
bool defaultNcclProfilerFound()
{
    char dirs[kMaxValue * 2];
    const char* llp = getenv("LD_LIBRARY_PATH");
    snprintf(dirs, sizeof dirs, "%s:/lib:/usr/lib:/lib64:/usr/lib64:/usr/local/lib:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu",
             llp ? llp : "");
    for (char* save = nullptr; char* dir = strtok_r(save ? nullptr : dirs, ":", &save);) {
        char path[PATH_MAX];
        if (*dir && snprintf(path, sizeof path, "%s/libnccl-profiler.so", dir) < int(sizeof path) && access(path, F_OK) == 0)
            return true;
    }
    return false;
}

void pointNcclHere()
{
    if (disabledSetting() || getenv("NCCL_PROFILER_PLUGIN") || defaultNcclProfilerFound()) return;
    char path[PATH_MAX];
    if (ownPath(path)) setenv("NCCL_PROFILER_PLUGIN", path, 0);
}

// Preloaded (not dlopened by gpuspy attach into a process long started): the descriptors the shim will
// need are made now, before the app can lower its RLIMIT_NOFILE (fds.cpp): the collector's socket when
// there is one to reach, libunwind's pipe when stacks are on. Not when gpuspy is disabled.
void reserveDescriptors()
{
    const char* preload = getenv("LD_PRELOAD");
    Dl_info info{};
    if (disabledSetting() || !preload || !dladdr(reinterpret_cast<void*>(&reserveDescriptors), &info) ||
        !info.dli_fname)
        return;
    const char* base = strrchr(info.dli_fname, '/');
    if (!strstr(preload, base ? base + 1 : info.dli_fname)) return;
    const char* sock = setting("GPUSPY_SOCKET");
    bool stacks = false;
#ifdef GPUSPY_HAVE_STACK
    stacks = stackDepthSetting() != 0;
#endif
    // The capture file's directory, when the shim writes the capture itself: GPUSPY_OUTPUT's (not when
    // it names a device, a FIFO or a pattern in its directory part), else where the process started.
    char dir[kMaxValue] = {0};
    if (!(sock && *sock)) {
        const char* out = setting("GPUSPY_OUTPUT");
        struct stat st{};
        if (out && *out) {
            if (stat(out, &st) != 0 || S_ISREG(st.st_mode)) {
                strcpy(dir, out);
                char* slash = strrchr(dir, '/');
                if (slash && slash != dir && !memchr(dir, '%', size_t(slash - dir))) *slash = 0;
                else dir[0] = 0;
            }
        } else if (g_cwd[0]) {
            strcpy(dir, g_cwd);
        }
    }
    fdsReserveAtLoad(sock && *sock, stacks, dir);
}

// Before the app's own constructors (which may chdir or clear the environment).
__attribute__((constructor(101))) void loadSettings()
{
    if (!getcwd(g_cwd, sizeof g_cwd)) g_cwd[0] = 0;
    g_euid = geteuid();
    g_loadNs = nowNs();
    identityLoad();
    for (size_t i = 0; i < kCount; ++i) {
        const char* v = getenv(kNames[i]);
        if (!v || strlen(v) >= kMaxValue) continue;
        strcpy(g_values[i], v);
        g_present[i] = true;
        if (strcmp(kNames[i], "GPUSPY_OUTPUT") == 0) expandOutputName(g_values[i], kMaxValue);
        if (strcmp(kNames[i], "GPUSPY_OUTPUT") == 0 || strcmp(kNames[i], "GPUSPY_SOCKET") == 0) absolutize(g_values[i]);
    }
    g_loaded = true;
    windowConfigure();
    pointNvtxHere();
    pointNcclHere();
    reserveDescriptors();
}

}  // namespace

const char* setting(const char* name)
{
    for (size_t i = 0; i < kCount; ++i) {
        if (strcmp(kNames[i], name) != 0) continue;
        if (g_present[i]) return g_values[i];
        break;
    }
    // Not set at load (or not a name read then): whatever the environment says now (a unit test that
    // sets one before the first call, a library not loaded by the dynamic loader).
    return getenv(name);
}

bool disabledSetting()
{
    const char* off = setting("GPUSPY_DISABLE");
    return off && off[0] == '1';
}

unsigned stackDepthSetting()
{
    const char* d = setting("GPUSPY_STACK_DEPTH");
    return d ? unsigned(strtoul(d, nullptr, 10)) : 24;
}

uint64_t loadMonoNs() { return g_loadNs ? g_loadNs : nowNs(); }

void settingOverride(const char* name, const char* value)
{
    for (size_t i = 0; i < kCount; ++i) {
        if (strcmp(kNames[i], name) != 0 || strlen(value) >= kMaxValue) continue;
        strcpy(g_values[i], value);
        if (strcmp(name, "GPUSPY_OUTPUT") == 0) expandOutputName(g_values[i], kMaxValue);
        g_present[i] = true;
    }
}

const char* loadDirectory() { return g_loaded && g_cwd[0] ? g_cwd : nullptr; }

bool userChangedSinceLoad(unsigned* atLoad)
{
    *atLoad = unsigned(g_euid);
    return g_loaded && geteuid() != g_euid;
}

}  // namespace gpuspy::shim
