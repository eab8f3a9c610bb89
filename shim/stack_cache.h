// shim/stack_cache.h: a per-thread cache of the last unwinds' frames, reused where the stack still
// holds the words those unwinds read (stack_cache.cpp has the argument for when a reuse is exactly
// what unw_backtrace would give). stack.cpp asks it before unw_backtrace and teaches it after.
#pragma once

#include <cstdint>

namespace gpuspy::shim {

// on = use the cache (GPUSPY_STACK_CACHE, read by stack.cpp's first stackConfigure; 0 = off).
void scConfigure(bool on);
bool scEnabled();

// App thread, in stackCapture: frame is stackCapture's own frame record (__builtin_frame_address(0)),
// params the capture's depth/skip/margin, limit the frames asked of unw_backtrace after its caller's
// (stackCapture's) own. True when one of this thread's cached unwinds is proven to be what
// unw_backtrace(limit + 1) would give now: *pcs (the frames after stackCapture's, n of them) and
// *id / *nativeId as they were interned under when learnt.
bool scLookup(uintptr_t frame, uint32_t params, uint32_t limit, const uint64_t** pcs, uint32_t* n, uint32_t* id,
              uint32_t* nativeId);

// After unw_backtrace(buf, limit + 1) returned count at the same call (buf[0] the return address in
// stackCapture): learns it when every frame's unwind rule is one the argument covers (otherwise it
// only counts a bypass).
void scLearn(uintptr_t frame, uint32_t params, uint32_t limit, const uint64_t* buf, uint32_t count, uint32_t id,
             uint32_t nativeId);

// Forgets this thread's cached unwinds (tests).
void scForgetThread();

struct StackCacheStats {
    uint64_t hits;      // captures answered by a cached unwind
    uint64_t misses;    // captures that took unw_backtrace with the cache on
    uint64_t learnt;    // unwinds stored
    uint64_t bypassed;  // unwinds not stored: a frame's rule is not covered (signal frame, CFA from an
                        // expression or a register other than rsp/rbp, no FDE, off this thread's stack,
                        // an end other than the limit or an undefined return address), or too deep
    uint32_t rules;     // unwind rules cached (all threads)
};
StackCacheStats scThreadStats();  // this thread's counts

// The rule this module derives from .eh_frame for the return address ra (tests): kind 0 bypass,
// 1 standard (cfaReg 6 = rbp / 7 = rsp, cfaOff, rbpOff 0 = rbp not saved), 2 end (ra undefined).
struct ScRule {
    int kind;
    int cfaReg;
    int cfaOff;
    int rbpOff;
};
ScRule scRuleFor(uint64_t ra);

}  // namespace gpuspy::shim
