/* shim/python_layouts.h: the offsets into CPython's structs that shim/python.cpp reads a thread's frame chain
   by, one row per minor version, taken from each version's own headers. Plain C as well as C++:
   tests/python/check_layout.c includes it and compares every row with offsetof against an interpreter's
   headers (report.python.layout.3.N), so a wrong number fails a test rather than a capture. */
#ifndef GPUSPY_SHIM_PYTHON_LAYOUTS_H
#define GPUSPY_SHIM_PYTHON_LAYOUTS_H

#include <stdint.h>

#define GPUSPY_PY_NONE 0xffffffffu /* the version has no such field */

/* How a code object's line table reads. */
enum GpuspyPyLines {
    GPUSPY_PY_LNOTAB = 1,    /* 3.9 co_lnotab: (byte delta, signed line delta) pairs over byte offsets */
    GPUSPY_PY_LINETABLE = 2, /* 3.10 co_linetable: (byte delta, signed line delta or -128: none) pairs */
    GPUSPY_PY_LOCATIONS = 3  /* 3.11+ co_linetable: the location table (Objects/locations.md) */
};

struct GpuspyPyLayout {
    uint32_t minor;
    /* PyThreadState -> the innermost frame: 3.9/3.10 tstate->frame (a PyFrameObject); 3.11/3.12
       tstate->cframe->current_frame; 3.13 tstate->current_frame (no cframe). */
    uint32_t tstateFrame, cframeCurrent;
    /* The frame: its code object (3.13: f_executable), the next outer frame (f_back, previous), the
       instruction (3.9/3.10: int f_lasti, in bytes on 3.9 and code units on 3.10; 3.11/3.12 prev_instr;
       3.13 instr_ptr: pointers into the code's co_code_adaptive). */
    uint32_t frameCode, framePrevious, frameInstr;
    uint32_t frameIsEntry; /* 3.11: char is_entry, set on the outermost frame an eval loop runs */
    uint32_t frameOwner;   /* 3.12/3.13: char owner; FRAME_OWNED_BY_CSTACK (3) marks an eval loop's entry */
    uint32_t lastiBytes;   /* 3.9/3.10: bytes per unit of f_lasti */
    /* PyCodeObject (3.9/3.10 co_name: no co_qualname yet; co_lnotab on 3.9). */
    uint32_t codeAdaptive, codeName, codeFilename, codeFirstLine, codeLinetable;
    uint32_t lines; /* enum GpuspyPyLines */
    /* PyASCIIObject: state, and where a compact ASCII and a compact non-ASCII string's data start
       (3.12 dropped wstr). */
    uint32_t strState, strAsciiData, strCompactData;
};

/* C++: constant expressions, so that python.cpp's frame walk is compiled once per row with its offsets
   as immediates. */
#ifdef __cplusplus
#define GPUSPY_PY_LAYOUTS_CONST constexpr
#else
#define GPUSPY_PY_LAYOUTS_CONST static const
#endif
GPUSPY_PY_LAYOUTS_CONST struct GpuspyPyLayout kGpuspyPyLayouts[] = {
    {9, 24, GPUSPY_PY_NONE, 32, 24, 104, GPUSPY_PY_NONE, GPUSPY_PY_NONE, 1, GPUSPY_PY_NONE, 112, 104, 40, 120, GPUSPY_PY_LNOTAB, 32, 48, 72},
    {10, 24, GPUSPY_PY_NONE, 32, 24, 96, GPUSPY_PY_NONE, GPUSPY_PY_NONE, 2, GPUSPY_PY_NONE, 112, 104, 40, 120, GPUSPY_PY_LINETABLE, 32, 48, 72},
    {11, 56, 8, 32, 48, 56, 68, GPUSPY_PY_NONE, 0, 184, 128, 112, 72, 136, GPUSPY_PY_LOCATIONS, 32, 48, 72},
    {12, 56, 0, 0, 8, 56, GPUSPY_PY_NONE, 70, 0, 192, 128, 112, 68, 136, GPUSPY_PY_LOCATIONS, 32, 40, 56},
    {13, 72, GPUSPY_PY_NONE, 0, 8, 56, GPUSPY_PY_NONE, 70, 0, 200, 128, 112, 68, 136, GPUSPY_PY_LOCATIONS, 32, 40, 56},
};

/* Common to all of them: ob_type; PyBytesObject's size and data; PyASCIIObject's length. */
#define GPUSPY_PY_OB_TYPE 8u
#define GPUSPY_PY_BYTES_SIZE 16u
#define GPUSPY_PY_BYTES_DATA 32u
#define GPUSPY_PY_STR_LENGTH 16u
#define GPUSPY_PY_FRAME_OWNED_BY_CSTACK 3

#endif
