// tests/unit/stack_fp_nofp.cpp: the hops of stack_fp_hops.h, in assembly so that they are exactly
// what they claim whatever the build (a sanitizer's instrumentation makes a compiled hop keep values
// in rbp): no frame pointer, rbp left alone or zeroed, a real call (no tail call), and unwind
// information (.cfi_*) for unw_backtrace.
#include "tests/unit/stack_fp_hops.h"

#include <cstddef>

static_assert(offsetof(gpuspy::test::Ladder, next) == 16 && offsetof(gpuspy::test::Ladder, arg) == 24,
              "noFpRung reads these offsets");

asm(R"(
    .text
    .p2align 4
    .globl gpuspy_test_noFpKeepsRbp
    .type gpuspy_test_noFpKeepsRbp, @function
gpuspy_test_noFpKeepsRbp:          # (next, arg): next(arg)
    .cfi_startproc
    sub $8, %rsp
    .cfi_adjust_cfa_offset 8
    mov %rdi, %rax
    mov %rsi, %rdi
    call *%rax
    add $8, %rsp
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size gpuspy_test_noFpKeepsRbp, .-gpuspy_test_noFpKeepsRbp

    .p2align 4
    .globl gpuspy_test_noFpClobbersRbp
    .type gpuspy_test_noFpClobbersRbp, @function
gpuspy_test_noFpClobbersRbp:       # (next, arg): next(arg) with rbp = 0
    .cfi_startproc
    push %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset %rbp, 0
    mov %rdi, %rax
    mov %rsi, %rdi
    xor %ebp, %ebp
    call *%rax
    pop %rbp
    .cfi_adjust_cfa_offset -8
    .cfi_restore %rbp
    ret
    .cfi_endproc
    .size gpuspy_test_noFpClobbersRbp, .-gpuspy_test_noFpClobbersRbp

    .p2align 4
    .globl gpuspy_test_noFpRung
    .type gpuspy_test_noFpRung, @function
gpuspy_test_noFpRung:              # (ladder, levels): ladder->next(ladder->arg)
    .cfi_startproc
    sub $8, %rsp
    .cfi_adjust_cfa_offset 8
    mov %rdi, %rax
    mov 24(%rax), %rdi
    call *16(%rax)
    add $8, %rsp
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size gpuspy_test_noFpRung, .-gpuspy_test_noFpRung
)");
