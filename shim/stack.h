// shim/stack.h: host call stacks for the shim: capture (libunwind, or frame pointers checked against
// it), intern into ids, and the StackDef/ModuleDef records the collector needs to symbolize them later.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuspy::shim {

// From GPUSPY_STACK_DEPTH (default 24, 0 = off; clamped to wire::kMaxStackDepth); called once at
// start, before any capture. Resolves libunwind (libunwind.so.8 next to libgpuspy.so first, as the
// release tarball ships it, then the system's; none: stacks stay off, said once on stderr) and takes
// the first module map. Calling it again only changes the depth (tests do); interned stacks stay.
// The first call also reads GPUSPY_STACK_FP (0: unw_backtrace only; 1, the default: frame pointers
// where verified) and GPUSPY_STACK_CACHE (0: off; 1, the default: the per-thread cache of the last
// unwinds, stack_cache.cpp).
void stackConfigure(unsigned depth);

// App thread, in a hook: captures the caller's stack, skipping skipFrames innermost frames
// (gpuspy's own: 0 = the innermost frame is the return address into the function that called
// stackCapture), interns it, returns its id (0 = none/off/table full). In libgpuspy.so, further
// innermost frames inside gpuspy's own library are dropped too. No allocation after the
// thread's first capture, no lock unless the stack is new and references an unknown module.
// Do not tail-call it: the caller's frame must still be on the stack. In a CPython process the
// stack also carries the calling thread's Python frames where the eval loop is (shim/python.h).
uint32_t stackCapture(unsigned skipFrames);

// Drain thread (one at a time): encodes pending ModuleDef and StackDef records into out (modules
// before the stacks that need them); returns bytes written; the caller calls again until it
// returns 0. cap must hold one def of the largest kind (4 KiB path, 128 frames): 8 KiB is enough.
size_t stackDrainDefs(uint8_t* out, size_t cap);

// Forked child (the forking thread, before the drain thread restarts): everything is pending again
// (new stream).
void stackAfterForkChild();

// Keeps the entry and frame regions resident ahead of their cursors (the drain thread calls it on
// every pass), so that a new stack on an app thread does not pay for page faults. Cheap when there
// is nothing to do.
void stackPrefault();

// Captures that returned 0 because the intern table or its frame arena was full.
uint64_t stackDroppedCount();

// The frame-pointer path (GPUSPY_STACK_FP, read by the first stackConfigure; stack.cpp says when a
// walk is trusted). on: captures walk the rbp chain and take unw_backtrace only for walks not yet
// verified or found wrong; maxWalks bounds its verdict cache (at most 4,096 walks; when full, new
// walks go through unw_backtrace). Turning it on lets the calling thread walk again if it had given
// the path up (StackFpStats::gaveUp). False when the path cannot run here (it stays off). Tests and
// benchmarks switch it; the results are the same either way.
bool stackUseFramePointers(bool on, uint32_t maxWalks = 4096);

// The calling thread's counts on the frame-pointer path, and the cache's size.
struct StackFpStats {
    uint64_t reused;              // captures answered by a verified walk, without unw_backtrace
    uint64_t fellBack;            // captures whose walk was found wrong before: unw_backtrace
    uint64_t verified;            // walks this thread compared with unw_backtrace and found right
    uint64_t mismatchedFrames;    // ... found wrong: other frames than unw_backtrace's
    uint64_t unproven;            // ... not trusted: the same frames, but a step went through a
                                  // function that does not set up a frame pointer, or the walk
                                  // ended early other than at the outermost frame's zero link
    uint64_t uncached;            // walks with no verdict that could not store one (the cache is
                                  // full, or another thread is storing it): unw_backtrace
    uint32_t walks;               // the cache's entries (all threads)
    bool gaveUp;                  // this thread stopped walking: after 4,096 fallbacks it had reused
                                  // a verified walk less than once per 8 (unw_backtrace only from then)
};
StackFpStats stackFpStats();

}  // namespace gpuspy::shim
