// tests/unit/stack_fp_hops.h: call hops without frame pointers (stack_fp_nofp.cpp, in assembly) for
// the frame-pointer stack tests (shim_stack_fp_test.cpp).
#pragma once

#include <cstdint>

namespace gpuspy::test {

using Next = uint32_t (*)(void*);

// Calls next(arg) and leaves rbp alone: a frame-pointer walk through it skips its caller's frame.
uint32_t noFpKeepsRbp(Next next, void* arg) asm("gpuspy_test_noFpKeepsRbp");

// Calls next(arg) with rbp used as a general register (zeroed), as code built without frame
// pointers may leave it: a frame-pointer walk through it stops there.
uint32_t noFpClobbersRbp(Next next, void* arg) asm("gpuspy_test_noFpClobbersRbp");

// A ladder: each rung calls the next one through the same indirect call instruction.
struct Ladder;
using Rung = uint32_t (*)(Ladder*, int levels);
struct Ladder {
    Rung rungs[2];  // [0] while levels remain, [1] at the bottom
    Next next;      // what the bottom rung calls
    void* arg;
};

// A bottom rung without a frame pointer: calls ladder->next(ladder->arg), rbp left alone.
uint32_t noFpRung(Ladder* ladder, int levels) asm("gpuspy_test_noFpRung");

}  // namespace gpuspy::test
