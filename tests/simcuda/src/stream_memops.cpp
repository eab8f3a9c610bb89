// Stream memory operations (cuStreamWriteValue*, cuStreamWaitValue*, cuStreamBatchMemOp) and TMA descriptors
// (cuTensorMapEncodeTiled), which cuBLAS, cuBLASLt and cuFFT look up. As cuda.h documents them:
// * a write is device work on its stream (traced as a `memop` op of kWriteNs); the value lands at its end
//   (its bytes move when it is placed, as a copy's do);
// * a wait holds its stream, without occupying the device, until the value satisfies its condition
//   (GEQ: (int)(*addr - value) >= 0 in the operand's width, EQ, AND: (*addr & value) != 0, NOR:
//   ~(*addr | value) != 0). Satisfied when submitted, the stream's next work starts no earlier than the
//   write that put the value there ended; not yet satisfied, the work submitted after it is deferred and
//   placed when a write-value op satisfies it (at that op's end), or when a host write is seen (at the
//   stream's next call, a query or a wait on it: at that instant);
// * on a capturing stream they return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (memop graph nodes are not modelled).
#include "sim.h"

#include <algorithm>
#include <cstring>

namespace simcuda {
namespace {

constexpr Ns kWriteNs = 1000;
constexpr Ns kHeldLimitNs = 10'000'000'000;

// When each address was last written by a write-value op (device time): a wait that finds its value
// already there starts the stream's next work after that write.
std::map<CUdeviceptr, Ns>& lastWrites()
{
    static auto* m = new std::map<CUdeviceptr, Ns>;  // leaked: the driver outlives static destructors
    return *m;
}
std::vector<Stream*>& heldStreams()
{
    static auto* v = new std::vector<Stream*>;
    return *v;
}

bool satisfied(const ValueWait& w)
{
    if (w.coupled) return false;  // released by collectives.cpp when the last rank arrives
    if (w.event) return !w.event->heldBy;
    cuuint64_t v = 0;
    if (w.bytes == 4) {
        cuuint32_t x;
        memcpy(&x, reinterpret_cast<const void*>(w.addr), 4);
        v = x;
    } else {
        memcpy(&v, reinterpret_cast<const void*>(w.addr), 8);
    }
    const cuuint64_t mask = w.bytes == 4 ? 0xffffffffull : ~0ull;
    const cuuint64_t want = w.value & mask;
    switch (w.flags & 0x3) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        return w.bytes == 4 ? static_cast<int32_t>(static_cast<uint32_t>(v - want)) >= 0
                            : static_cast<int64_t>(v - want) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ: return v == want;
    case CU_STREAM_WAIT_VALUE_AND: return (v & want) != 0;
    default: return (~(v | want) & mask) != 0;  // NOR
    }
}

Ns writtenAt(const ValueWait& w)
{
    if (w.event) return w.event->time;
    auto it = lastWrites().find(w.addr);
    return it == lastWrites().end() ? 0 : it->second;
}

void eventPlaced(Event* e);

}  // namespace

void hold(Stream* s, const ValueWait& w)
{
    s->held = true;
    s->heldOn = w;
    if (!s->deferred) s->deferred = new std::vector<Deferred>;
    auto& v = heldStreams();
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// The stream's wait is satisfied at device time `at`: its deferred work is placed, in order, until
// another unsatisfied wait holds it again.
void release(Stream* s, Ns at)
{
    s->held = false;
    s->tail = std::max(s->tail, at);
    auto& hv = heldStreams();
    hv.erase(std::remove(hv.begin(), hv.end(), s), hv.end());
    std::vector<Deferred> pending;
    pending.swap(*s->deferred);
    for (size_t i = 0; i < pending.size(); ++i) {
        Deferred& d = pending[i];
        if (s->held) {
            s->deferred->push_back(std::move(d));
            continue;
        }
        switch (d.kind) {
        case Deferred::Wait:
            if (satisfied(d.wait)) s->tail = std::max(s->tail, writtenAt(d.wait));
            else hold(s, d.wait);
            break;
        case Deferred::Record: {
            const Ns t = std::max(s->tail, d.submit + config().launchLatency);
            s->tail = t;
            d.event->time = t;
            d.event->recorded = true;
            d.event->heldBy = nullptr;
            eventPlaced(d.event);
            break;
        }
        case Deferred::Work:
            if (d.op.effect) d.op.effect();
            placeOp(s, d.op, d.api, d.submit, d.fromGraph, nullptr, d.tid);
            if (d.op.hostFn) d.op.hostFn();
            break;
        }
    }
}

namespace {

// Queues the wait: satisfied now, the stream's next work follows the write that satisfied it.
CUresult waitOn(Stream* s, const ValueWait& w)
{
    if (s->held) {
        Deferred d;
        d.kind = Deferred::Wait;
        d.wait = w;
        s->deferred->push_back(std::move(d));
        return CUDA_SUCCESS;
    }
    if (satisfied(w)) s->tail = std::max(s->tail, writtenAt(w));
    else hold(s, w);
    return CUDA_SUCCESS;
}

CUresult check(CUstream h, bool pt, CUdeviceptr addr, size_t bytes, Stream** out)
{
    if (CUresult rc = lookupStream(h, pt, out)) return rc;
    if ((*out)->capture) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (addr % bytes || !rangeCovers(addr, bytes)) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

Op writeOp(CUdeviceptr addr, cuuint64_t v, size_t bytes)
{
    Op op;
    op.kind = OpKind::MemOp;
    op.duration = kWriteNs;
    op.bytes = bytes;
    op.memop = bytes == 4 ? "write_value_32" : "write_value_64";
    op.memopAddr = addr;
    op.effect = [addr, v, bytes] {
        if (bytes == 4) {
            const auto x = static_cast<cuuint32_t>(v);
            memcpy(reinterpret_cast<void*>(addr), &x, 4);
        } else {
            memcpy(reinterpret_cast<void*>(addr), &v, 8);
        }
    };
    return op;
}

CUresult write(CUstream h, bool pt, CUdeviceptr addr, cuuint64_t v, size_t bytes, const char* api)
{
    Stream* s = nullptr;
    if (CUresult rc = check(h, pt, addr, bytes, &s)) return rc;
    return submitOp(s, writeOp(addr, v, bytes), api);
}

CUresult wait(CUstream h, bool pt, CUdeviceptr addr, cuuint64_t v, size_t bytes, unsigned flags)
{
    Stream* s = nullptr;
    if (CUresult rc = check(h, pt, addr, bytes, &s)) return rc;
    Lock g(bigLock());
    if (s->held) stillHeld(s);
    return waitOn(s, ValueWait{addr, unsigned(bytes), v, flags});
}

CUresult batch(CUstream h, bool pt, unsigned count, const CUstreamBatchMemOpParams* ops, const char* api)
{
    if (count && !ops) return CUDA_ERROR_INVALID_VALUE;
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    for (unsigned i = 0; i < count; ++i) {
        const auto& op = ops[i];
        CUresult rc = CUDA_SUCCESS;
        switch (op.operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32: rc = wait(h, pt, op.waitValue.address, op.waitValue.value, 4, op.waitValue.flags); break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            rc = wait(h, pt, op.waitValue.address, op.waitValue.value64, 8, op.waitValue.flags);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32: rc = write(h, pt, op.writeValue.address, op.writeValue.value, 4, api); break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_64: rc = write(h, pt, op.writeValue.address, op.writeValue.value64, 8, api); break;
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        case CU_STREAM_MEM_OP_BARRIER: break;
        default: rc = CUDA_ERROR_INVALID_VALUE;
        }
        if (rc) return rc;
    }
    return CUDA_SUCCESS;
}

}  // namespace

namespace {
// A record into a held stream was placed: the streams that waited on it go on from its time.
void eventPlaced(Event* e)
{
    const std::vector<Stream*> held = heldStreams();
    for (Stream* s : held)
        if (s->held && s->heldOn.event == e) release(s, e->time);
}
}  // namespace

void waitForHeldEvent(Stream* s, Event* e)
{
    ValueWait w;
    w.event = e;
    waitOn(s, w);
}

bool stillHeld(Stream* s)
{
    if (!s->held) return false;
    if (s->heldOn.coupled) {
        pollCoupled();  // other processes' ranks may have arrived since
        return s->held;
    }
    if (satisfied(s->heldOn)) release(s, s->heldOn.event ? writtenAt(s->heldOn) : std::max(nowNs(), writtenAt(s->heldOn)));
    return s->held;
}

void deferWork(Stream* s, Op op, const char* apiName, Ns submit, bool fromGraph)
{
    Deferred d;
    d.op = std::move(op);
    d.api = apiName;
    d.submit = submit;
    d.tid = threadId();
    d.fromGraph = fromGraph;
    s->deferred->push_back(std::move(d));
}

void deferRecord(Stream* s, Event* e, Ns submit)
{
    Deferred d;
    d.kind = Deferred::Record;
    d.event = e;
    d.submit = submit;
    e->recorded = false;
    e->heldBy = s;
    s->deferred->push_back(std::move(d));
}

void valueWritten(CUdeviceptr addr, Ns at)
{
    lastWrites()[addr] = at;
    // Copied: releasing one stream may place writes that release (or hold) others.
    const std::vector<Stream*> held = heldStreams();
    for (Stream* s : held)
        if (s->held && !s->heldOn.event && s->heldOn.addr == addr && satisfied(s->heldOn)) release(s, at);
}

void settleHeld(Lock& g, Stream* s, Context* c)
{
    auto anyHeld = [&] {
        if (s) return stillHeld(s);
        bool any = false;
        for (Stream* x : heldStreams())
            if (x->ctx == c) any = true;
        if (!any) return false;
        const std::vector<Stream*> held = heldStreams();
        for (Stream* x : held)
            if (x->ctx == c && stillHeld(x)) return true;
        return false;
    };
    const Ns limit = nowNs() + kHeldLimitNs;
    while (anyHeld()) {
        if (nowNs() > limit) {
            logLine("a stream waited 10 s for a cuStreamWaitValue condition nothing satisfied, or a collective's rank "
                    "that never arrived: released");
            const std::vector<Stream*> held = heldStreams();
            for (Stream* x : held)
                if (x == s || (!s && x->ctx == c)) {
                    if (x->heldOn.coupled) giveUpCoupled(x, nowNs());  // a rank (process) that never arrived
                    release(x, nowNs());
                }
            return;
        }
        g.unlock();
        waitUntil(nowNs() + 50'000);
        g.lock();
    }
}

namespace {

// The checks the real cuTensorMapEncodeTiled documents; the 128-byte descriptor holds the arguments.
CUresult encodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* global, const cuuint64_t* dims,
                     const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* elementStrides,
                     CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle)
{
    if (!map || reinterpret_cast<uintptr_t>(map) % 64 || !dims || !box || !elementStrides || (rank > 1 && !strides))
        return CUDA_ERROR_INVALID_VALUE;
    if (static_cast<unsigned>(type) > CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B) return CUDA_ERROR_INVALID_VALUE;
    if (rank < (interleave == CU_TENSOR_MAP_INTERLEAVE_NONE ? 1u : 3u) || rank > 5) return CUDA_ERROR_INVALID_VALUE;
    const uintptr_t align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
    if (!global || reinterpret_cast<uintptr_t>(global) % align) return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < rank; ++i) {
        if (!dims[i] || dims[i] > (1ULL << 32)) return CUDA_ERROR_INVALID_VALUE;
        if (!box[i] || box[i] > 256 || !elementStrides[i] || elementStrides[i] > 8) return CUDA_ERROR_INVALID_VALUE;
        if (i + 1 < rank && (strides[i] % 16 || strides[i] >= (1ULL << 40))) return CUDA_ERROR_INVALID_VALUE;
    }
    if (static_cast<unsigned>(swizzle) > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B) return CUDA_ERROR_INVALID_VALUE;
    cuuint64_t words[16] = {};
    words[0] = reinterpret_cast<uintptr_t>(global);
    words[1] = (static_cast<cuuint64_t>(type) << 32) | rank;
    for (cuuint32_t i = 0; i < rank; ++i) {
        words[2 + i] = dims[i];
        words[7 + i] = (static_cast<cuuint64_t>(box[i]) << 32) | elementStrides[i];
    }
    static_assert(sizeof(CUtensorMap) == sizeof words, "CUtensorMap is 128 bytes");
    memcpy(map, words, sizeof words);
    return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simcuda

using namespace simcuda;

// v1 ABI (CUDA 8/9) and v2 (11.7): the same here. cuda.h declares no _v2_ptsz twins; the real driver's
// cuGetProcAddress hands them out for per-thread lookups of version 11070.
extern "C" {
CUresult cuStreamWriteValue32_v2_ptsz(CUstream, CUdeviceptr, cuuint32_t, unsigned);
CUresult cuStreamWaitValue32_v2_ptsz(CUstream, CUdeviceptr, cuuint32_t, unsigned);
CUresult cuStreamWriteValue64_v2_ptsz(CUstream, CUdeviceptr, cuuint64_t, unsigned);
CUresult cuStreamWaitValue64_v2_ptsz(CUstream, CUdeviceptr, cuuint64_t, unsigned);
CUresult cuStreamBatchMemOp_v2_ptsz(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned);
}
SIM_PAIR(cuStreamWriteValue32, cuStreamWriteValue32_ptsz, (CUstream h, CUdeviceptr a, cuuint32_t v, unsigned),
         write(h, pt, a, v, 4, scope.name()))
SIM_PAIR(cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz, (CUstream h, CUdeviceptr a, cuuint32_t v, unsigned),
         write(h, pt, a, v, 4, scope.name()))
SIM_PAIR(cuStreamWriteValue64, cuStreamWriteValue64_ptsz, (CUstream h, CUdeviceptr a, cuuint64_t v, unsigned),
         write(h, pt, a, v, 8, scope.name()))
SIM_PAIR(cuStreamWriteValue64_v2, cuStreamWriteValue64_v2_ptsz, (CUstream h, CUdeviceptr a, cuuint64_t v, unsigned),
         write(h, pt, a, v, 8, scope.name()))
SIM_PAIR(cuStreamWaitValue32, cuStreamWaitValue32_ptsz, (CUstream h, CUdeviceptr a, cuuint32_t v, unsigned f),
         wait(h, pt, a, v, 4, f))
SIM_PAIR(cuStreamWaitValue32_v2, cuStreamWaitValue32_v2_ptsz, (CUstream h, CUdeviceptr a, cuuint32_t v, unsigned f),
         wait(h, pt, a, v, 4, f))
SIM_PAIR(cuStreamWaitValue64, cuStreamWaitValue64_ptsz, (CUstream h, CUdeviceptr a, cuuint64_t v, unsigned f),
         wait(h, pt, a, v, 8, f))
SIM_PAIR(cuStreamWaitValue64_v2, cuStreamWaitValue64_v2_ptsz, (CUstream h, CUdeviceptr a, cuuint64_t v, unsigned f),
         wait(h, pt, a, v, 8, f))
SIM_PAIR(cuStreamBatchMemOp, cuStreamBatchMemOp_ptsz, (CUstream h, unsigned n, CUstreamBatchMemOpParams* ops, unsigned),
         batch(h, pt, n, ops, scope.name()))
SIM_PAIR(cuStreamBatchMemOp_v2, cuStreamBatchMemOp_v2_ptsz,
         (CUstream h, unsigned n, CUstreamBatchMemOpParams* ops, unsigned), batch(h, pt, n, ops, scope.name()))

SIM_EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* global,
                                           const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                           const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
                                           CUtensorMapSwizzle swizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill)
{
    SIM_API(cuTensorMapEncodeTiled);
    return scope.ret(encodeTiled(map, type, rank, global, dims, strides, box, elementStrides, interleave, swizzle));
}
