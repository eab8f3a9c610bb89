// shim/gpu_budget.h: how much of a thread's time GPU timing may take, and what it took. A timing
// event record costs the app about as much host time as the launch it measures (2.5 us on real
// hardware), and the rest of timing's work (choosing, taking events, the stream's slot, the clocks
// that tell a held-up thread, the drain thread's reads of the events) adds to it: all of it is
// charged here, so operations that come faster than the budget allows are sampled out.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace gpuspy::shim {

// The parts of GPU timing's cost on a thread (wire::GpuBudgetBody names them).
enum class TimingPart : uint8_t { Record = 0, Bookkeeping = 1, Choosing = 2, Drain = 3, Count = 4 };

// A thread's credit of timing time, earned at `ppm` parts per million of the time that passes and
// spent on everything timing does on the thread. Constant-initialised: it lives in initial-exec TLS.
class TimingBudget {
public:
    // Credit a quiet thread may save up: a few operations in a row are timed after a pause, which
    // lets consecutive ones share events (one record per operation instead of two). Three launches
    // after a wait cost about 25 us with everything charged (7 us a timed call, the first 10: its begin
    // record; the drain's reads of the last ones): slow_kernel's groups of three stay timed.
    static constexpr int64_t kBurstNs = 32000;
    // The most one measured piece of work is charged: a record costs microseconds, and a thread
    // preempted during one (milliseconds, under load) must not go untimed for a hundred times that.
    static constexpr uint64_t kMaxChargeNs = uint64_t(kBurstNs / 2);

    // Whether an operation starting at nowNs may be timed. `preferred` ones (copies, memsets, graph
    // launches) may borrow up to one burst ahead, the others only spend what was saved: when both come
    // faster than the budget allows, the transfers keep their GPU times, and the debt is repaid before
    // another kernel is timed, so timing stays within the budget at any call rate.
    bool allows(uint64_t nowNs, bool preferred, uint64_t ppm)
    {
        if (ppm >= 1000000) return true;
        if (m_at == 0) {
            m_credit = kBurstNs;
            m_first = m_at = nowNs;
        } else if (nowNs > m_at) {
            const uint64_t elapsed = std::min<uint64_t>(nowNs - m_at, 1000000000ull);
            m_credit = std::min<int64_t>(kBurstNs, m_credit + int64_t(elapsed * ppm / 1000000));
            m_at = nowNs;
        }
        return m_credit > (preferred ? -kBurstNs : 0);
    }

    // Timing work as measured, up to kMaxChargeNs; returns what was charged.
    uint64_t charge(uint64_t ns)
    {
        ns = std::min(ns, kMaxChargeNs);
        m_credit -= int64_t(ns);
        return ns;
    }
    // Work measured elsewhere and capped there (the drain thread's, per span): charged as it is.
    void chargeMeasured(uint64_t ns) { m_credit -= int64_t(std::min<uint64_t>(ns, 1000000000ull)); }

    int64_t credit() const { return m_credit; }
    uint64_t firstNs() const { return m_first; }
    uint64_t lastNs() const { return m_at; }
    // After more was charged (the drain thread's debt): whether the answer allows() gave still holds.
    bool stillAllows(bool preferred) const { return m_credit > (preferred ? -kBurstNs : 0); }

private:
    int64_t m_credit = 0;  // ns of timing time; negative: in debt
    uint64_t m_at = 0;     // when the credit was last topped up (0: never)
    uint64_t m_first = 0;  // the first top-up: the budget is earned from then on
};

// The cost of the choice made on every call (whether to time it), too short to time on each without
// doubling it: timed on one call in kEvery, and what the samples say charged on every call. A sample
// the thread was preempted in, or a cold first one (20 us against 30 ns), is not the choice's cost: the
// least of the first samples is, then the median of the last three, which the charge follows 1/8 of the
// way each sample, or at once where it falls under half of it. Integer, in 1/16 ns.
class ChoiceCost {
public:
    static constexpr uint32_t kEvery = 32;
    // Whether this call's choice is to be timed.
    bool sampleNow()
    {
        if (m_countdown != 0) {
            --m_countdown;
            return false;
        }
        // The first samples come on consecutive calls: a thread's first choice is cold (94 us against 10 ns
        // in demo_infer), and charged on each call until the next sample, 32 calls of it cost 640 us.
        m_countdown = uint8_t(m_seen + 1 < 3 ? 0 : kEvery - 1);
        return true;
    }
    void note(uint64_t ns)
    {
        const uint16_t x = uint16_t(std::min<uint64_t>(ns, 20000));
        m_last[m_seen % 3] = x;
        if (m_seen < 3) {
            m_mean16 = m_seen == 0 ? uint64_t(x) * 16 : std::min<uint64_t>(m_mean16, uint64_t(x) * 16);
        } else {
            const uint64_t a = m_last[0], b = m_last[1], c = m_last[2];
            const uint64_t median16 = std::max(std::min(a, b), std::min(std::max(a, b), c)) * 16;
            // Under half of the charge, down at once: a cold start (the first calls' samples, microseconds
            // each while the process sets up) is gone once two of the last three say so. Followed an eighth
            // of the way a sample, demo_infer's first samples took ~1,500 calls to come down to its 11 ns,
            // charging 180 ns a call over its run: more than its whole budget, so that only its kernels' first
            // timings were timed. A preempted sample never moves it alone (the median).
            m_mean16 = median16 * 2 < m_mean16 ? median16 : m_mean16 - m_mean16 / 8 + median16 / 8;
        }
        m_seen = uint8_t(m_seen == 255 ? 3 : m_seen + 1);
    }
    // What one choice is charged, ns (rounded up: at least 1 once one was timed).
    uint64_t perCallNs() const { return m_seen ? std::max<uint64_t>(1, (m_mean16 + 15) / 16) : 0; }

private:
    uint64_t m_mean16 = 0;
    uint16_t m_last[3] = {};
    uint8_t m_countdown = 0;
    uint8_t m_seen = 0;  // samples so far, wrapping within 3..255
};

// What timing cost one thread, for its GpuBudget record: a table entry of its own (its thread-local
// state stays small: the shim's initial-exec TLS must fit what glibc keeps for a dlopen). The owner
// writes its part with plain stores; the drain thread adds what it spent on the thread's spans to
// `drainNs` on a line of its own, which the owner charges to its credit when it next may time.
struct alignas(64) BudgetAccount {
    std::atomic<uint32_t> tid{0};  // 0: free
    std::atomic<uint64_t> firstNs{0}, lastNs{0};
    std::atomic<uint64_t> spent[size_t(TimingPart::Count)] = {};  // Drain: what the owner has charged
    std::atomic<uint64_t> timed{0}, untimed{0};
    alignas(64) std::atomic<uint64_t> drainNs{0};  // written by the drain thread only
    std::atomic<uint64_t> lateEnds{0}, heldUp{0};   // spans it set aside (wire::GpuBudgetBody)
};

}  // namespace gpuspy::shim
