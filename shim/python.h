// shim/python.h: the Python frames of a CUDA call: when the process runs CPython, the calling thread's
// own frame chain is read (no Python API, no lock of the interpreter's), interned as code object +
// instruction offset, and merged into the native stack where the interpreter's eval loop sits.
#pragma once

#include "shim/stack.h"

#include <cstddef>
#include <cstdint>

namespace gpuspy::shim {

// From GPUSPY_PYTHON (0: off; 1 or auto, the default: on when the process runs a CPython whose frame
// layout python.cpp knows; 1 says on stderr when it cannot be). Called by stackConfigure, once.
void pythonConfigure();

// A supported interpreter was found and capture is on.
bool pythonActive();

// The calling thread's Python capture state (its frame memo, last merged stack, depth hint and counts),
// kept in the thread's gpuspy state: fetched once per capture and handed to the calls below; null
// where the thread has no gpuspy state (they then work without it).
struct PythonMemo;
PythonMemo* pythonMemo();

// App thread, in a hook: pcs[0..n) are the native frames, innermost first, already trimmed. Writes
// them to out with each return address into the eval loop replaced by the Python frames it runs
// (kPyFrameTag | id), Python frames outer to the last native one appended; at most cap entries.
// The merged stack ends at the thread's outermost Python frame: the native frames outward of the eval
// loop that runs it (the interpreter's start-up, main, a thread's bootstrap, or native code that
// called into Python first) are left out. *placed: how many of pcs the merge took to place every
// Python frame (the outermost eval loop's frame is pcs[*placed - 1]), or 0 where Python frames were
// appended (the native frames ran out first). Returns how many entries, or 0 when the thread has no
// Python frames (the caller keeps the native stack).
uint32_t pythonMerge(PythonMemo* memo, const uint64_t* pcs, uint32_t n, uint64_t* out, uint32_t cap, uint32_t* placed);

// App thread: how many native frames (from stackCapture's caller outwards, gpuspy's own included) the
// calling thread's last capture took to reach its outermost eval loop, so that the next capture asks
// unw_backtrace for no more (0: ask for the full depth); and what a capture learnt: need 0 for a
// capture that did not place every Python frame, retaken when a capture asked for too few frames and
// was taken again in full. A thread whose captures are retaken too often (its stacks' depth changes
// from one call to the next) asks for the full depth from then on.
uint32_t pythonNativeHint(const PythonMemo* memo);
void pythonLearnHint(PythonMemo* memo, uint32_t need, bool retaken);

// App thread: the id the calling thread last interned for exactly this merged stack, else 0 (a loop's
// stack is the same from one call to the next: no hash of it, no probe of the stack table); and
// remembering one. Stack ids stay valid for the process's life.
uint32_t pythonLastStack(const PythonMemo* memo, const uint64_t* merged, uint32_t m);
void pythonRememberStack(PythonMemo* memo, const uint64_t* merged, uint32_t m, uint32_t id);

// Drain thread: pending PyCodeDef and PyFrameDef records into out; bytes written (0: none pending or
// no room for the next one).
size_t pythonDrainDefs(uint8_t* out, size_t cap);

// A new stream (forked child, or the collector went away): every definition is pending again.
void pythonAfterForkChild(bool forked);

struct PythonStats {
    uint64_t withFrames;     // captures that carried Python frames
    uint64_t withoutGil;     // ... of which the thread had released the GIL (a ctypes call does)
    uint64_t noThreadState;  // captures on a thread without a Python thread state: native only
    uint64_t badFrames;      // frame chains cut short at a frame that failed a check
    uint32_t codes, frames;  // interned code objects, interned (code, offset) frames
};
PythonStats pythonStats();

// Drain thread, at the end of the stream: a Notice with pythonStats' counts (how many captures had
// Python frames, how many fell back to native frames and why) into out; bytes written, 0 when
// capture is off.
size_t pythonNotice(uint8_t* out, size_t cap);

}  // namespace gpuspy::shim
