// shim/stack_fp.h: the frame-pointer path of stack capture: a bounded, checked walk of the rbp chain,
// and a lock-free cache of verdicts, one per distinct walk, on whether that walk gives exactly the
// frames unw_backtrace gives. stack.cpp decides when to use it; its header comment has the argument
// for when a verified walk can be trusted.
#pragma once

#include "shim/stack.h"

#include <cstdint>

namespace gpuspy::shim {

// What one walk read: return addresses from the walker's caller outwards, and its cache key (a hash
// of the addresses, of how the walk ended and of the capture's parameters).
struct FpWalk {
    uint64_t key;
    uint32_t params;  // the capture's depth, skip and self margin (the same frames trim differently
                      // under others), and kFpEndsAtZero
    uint32_t limit;   // most frames to read
    uint32_t count;   // frames read
    uint64_t* frames;
};

// In FpWalk::params: the walk ended before its limit on a zero link, the mark the x86-64 ABI asks the
// outermost frame to leave (_start and clone clear rbp).
inline constexpr uint32_t kFpEndsAtZero = 1u << 31;

// What the cache says about a walk.
enum class FpVerdict : uint32_t {
    Unknown,   // never seen (or no room to look further): verify it
    Verified,  // matched unw_backtrace frame for frame, through frame-pointer functions only, and
               // ended at its limit or at the outermost frame's zero link
    Mismatch,  // did not: take unw_backtrace
    Busy,      // another thread is verifying it right now: take unw_backtrace, record nothing
};

// libunwind (already loaded privately by stack.cpp) gives the function bounds the prologue check
// needs; on = use the path; maxWalks bounds the cache (at most kFpMaxWalks). False when the path
// cannot run (libunwind lacks unw_get_proc_info_by_ip, or the tables cannot be mapped): it stays off.
inline constexpr uint32_t kFpMaxWalks = 4096;
// Turning it on also lets the calling thread walk again if it had given up (fpEnabled).
bool fpConfigure(void* libunwind, bool on, uint32_t maxWalks);
// On, and this thread has not given it up (its walks kept being found wrong: stack_fp.cpp).
bool fpEnabled();

// Walks the saved-rbp chain from frame (the caller's own frame record, __builtin_frame_address(0)),
// reading at most walk.limit return addresses into walk.frames; sets walk.count to how many it read,
// walk.key, and kFpEndsAtZero in walk.params. Each step stays inside this thread's stack (bounds read once per thread), strictly
// outwards, 8-aligned. count 0: this thread's stack is unknown or frame is not on it (a signal's
// alternate stack, a fiber): use unw_backtrace.
void fpWalk(uintptr_t frame, FpWalk& walk);

// The verdict on walk; with Verified, *stackId is the id its frames were interned under.
FpVerdict fpLookup(const FpWalk& walk, uint32_t* stackId);

// After unw_backtrace at the same call: unwound[0..n) are its frames from the walker's caller
// outwards, stackId what they were interned under (not 0). Decides and stores the verdict, when the
// cache has room; returns it (Unknown when it could not be stored).
FpVerdict fpRecord(const FpWalk& walk, const uint64_t* unwound, uint32_t n, uint32_t stackId);

// Forked child: entries whose writer was another thread (gone now) are dropped.
void fpAfterForkChild();

// This thread's counts (StackFpStats without its walks), and the cache's size.
StackFpStats fpThreadCounts();
uint32_t fpCachedWalks();

}  // namespace gpuspy::shim
