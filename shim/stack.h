// shim/stack.h: host call stacks for the shim: capture (libunwind), intern into ids, and the
// StackDef/ModuleDef records the collector needs to symbolize them later.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuspy::shim {

// From GPUSPY_STACK_DEPTH (default 24, 0 = off; clamped to wire::kMaxStackDepth); called once at
// start, before any capture. Resolves libunwind (libunwind.so.8 next to libgpuspy.so first, as the
// release tarball ships it, then the system's; none: stacks stay off, said once on stderr) and takes
// the first module map. Calling it again only changes the depth (tests do); interned stacks stay.
void stackConfigure(unsigned depth);

// App thread, in a hook: captures the caller's stack, skipping skipFrames innermost frames
// (gpuspy's own: 0 = the innermost frame is the return address into the function that called
// stackCapture), interns it, returns its id (0 = none/off/table full). In libgpuspy.so, further
// innermost frames inside gpuspy's own library are dropped too. No allocation after the
// thread's first capture, no lock unless the stack is new and references an unknown module.
// Do not tail-call it: the caller's frame must still be on the stack.
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

}  // namespace gpuspy::shim
