// tests/report/realtime_skew.c: a test-only preload that models a node whose realtime clock is off (its NTP
// gone astray), for report.ranks_tp: clock_gettime(CLOCK_REALTIME) reads REALTIME_SKEW_NS nanoseconds later
// than it is; every other clock, CLOCK_MONOTONIC included, is untouched. Preloaded before libgpuspy.so, it
// makes the wall-clock pairs of that process's capture wrong by the skew (the shim reads both clocks through
// clock_gettime), so that only the ends of the collectives it shares with the other ranks can put it on
// their clock. It changes nothing in gpuspy: a host whose realtime clock is off looks exactly so.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

typedef int (*ClockGettime)(clockid_t, struct timespec*);

int clock_gettime(clockid_t id, struct timespec* ts)
{
    static ClockGettime real;
    static long long skew = -1;
    if (!real) real = (ClockGettime)dlsym(RTLD_NEXT, "clock_gettime");
    if (skew < 0) {
        const char* v = getenv("REALTIME_SKEW_NS");
        skew = v ? atoll(v) : 0;
        if (skew < 0) skew = 0;
    }
    const int rc = real(id, ts);
    if (rc == 0 && id == CLOCK_REALTIME && skew > 0) {
        long long ns = ts->tv_nsec + skew % 1000000000LL;
        ts->tv_sec += (time_t)(skew / 1000000000LL + ns / 1000000000LL);
        ts->tv_nsec = (long)(ns % 1000000000LL);
    }
    return rc;
}
