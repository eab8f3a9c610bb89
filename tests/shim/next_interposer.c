/* tests/shim/next_interposer.c: a second preloaded interposer, loaded after libgpuspy.so, that wraps
 * getpid() and finds the real one with dlsym(RTLD_NEXT): the lookup passes through gpuspy's dlsym and
 * must still mean "after this library" (else it finds itself and recurses forever). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/types.h>
#include <unistd.h>

pid_t getpid(void)
{
    pid_t (*real)(void) = (pid_t(*)(void))dlsym(RTLD_NEXT, "getpid");
    return real ? real() : -1;
}
