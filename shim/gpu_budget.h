// shim/gpu_budget.h: how much of a thread's time GPU timing may spend in event records. A timing
// event record costs the app about as much host time as the launch it measures (2.5 us on real
// hardware), so operations that come faster than the budget allows are sampled out.
#pragma once

#include <algorithm>
#include <cstdint>

namespace gpuspy::shim {

// A thread's credit of event-record time, earned at `ppm` parts per million of the time that passes
// and spent on the records actually made. Constant-initialised: it lives in initial-exec TLS.
class TimingBudget {
public:
    // Credit a quiet thread may save up: a few operations in a row are timed after a pause, which
    // lets consecutive ones share events (one record per operation instead of two).
    static constexpr int64_t kBurstNs = 16000;

    // Whether an operation starting at nowNs may be timed. `preferred` ones (copies, memsets, graph
    // launches) may borrow up to one burst ahead, the others only spend what was saved: when both come
    // faster than the budget allows, the transfers keep their GPU times, and the debt is repaid before
    // another kernel is timed, so the records stay within the budget at any call rate.
    bool allows(uint64_t nowNs, bool preferred, uint64_t ppm)
    {
        if (ppm >= 1000000) return true;
        if (m_at == 0) {
            m_credit = kBurstNs;
        } else if (nowNs > m_at) {
            const uint64_t elapsed = std::min<uint64_t>(nowNs - m_at, 1000000000ull);
            m_credit = std::min<int64_t>(kBurstNs, m_credit + int64_t(elapsed * ppm / 1000000));
        }
        m_at = nowNs;
        return m_credit > (preferred ? -kBurstNs : 0);
    }

    // One record's cost as measured, up to half a burst: a record costs microseconds, and a thread
    // preempted during one (milliseconds, under load) must not go untimed for a hundred times that.
    void spend(uint64_t ns) { m_credit -= std::min<int64_t>(int64_t(std::min<uint64_t>(ns, kBurstNs)), kBurstNs / 2); }

    int64_t credit() const { return m_credit; }

private:
    int64_t m_credit = 0;  // ns of record time; negative: in debt
    uint64_t m_at = 0;     // when the credit was last topped up (0: never)
};

}  // namespace gpuspy::shim
