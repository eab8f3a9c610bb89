// collector/analyze/library_time.cpp: see library_time.h.
#include "collector/analyze/library_time.h"

#include "collector/model/api_names.h"
#include "collector/model/model.h"

#include <algorithm>

namespace gpuspy::collect::detail {

uint64_t LibraryInvocations::keyOf(uint32_t stackId) const
{
    if (!stackId || !m_proc) return 0;
    if (auto it = m_keys.find(stackId); it != m_keys.end()) return it->second;
    uint64_t key = 0;
    if (auto st = m_proc->stacks.find(stackId); st != m_proc->stacks.end()) {
        const std::vector<uint64_t>& frames = st->second;
        for (size_t i = frames.size(); i-- > 0;) {
            const ModuleInfo* mod = nullptr;
            for (const ModuleInfo& m : m_proc->modules)
                if (frames[i] >= m.start && frames[i] < m.end) mod = &m;
            if (!mod || libraryCallOf(mod->path, "").empty()) continue;
            // Frames are return addresses, innermost first: i + 1 is where the library returns to.
            const uint64_t caller = i + 1 < frames.size() ? frames[i + 1] : frames[i];
            key = (caller ^ (mod->start << 1)) | 1;
            const size_t slash = mod->path.rfind('/');
            m_names.emplace(key, slash == std::string::npos ? mod->path : mod->path.substr(slash + 1));
            break;
        }
    }
    m_keys.emplace(stackId, key);
    return key;
}

bool LibraryInvocations::inside(const LibraryStep& prev, const LibraryStep& cur, const std::unordered_set<uint64_t>* extra) const
{
    if (!prev.any || !cur.key || prev.key != cur.key || prev.stack == cur.stack) return false;
    const uint64_t id = startId(cur);
    return !m_starts.count(id) && !(extra && extra->count(id));
}

void LibraryInvocations::learn(const LibraryStep& prev, const LibraryStep& cur, std::unordered_set<uint64_t>& into) const
{
    if (cur.key && (!prev.any || prev.key != cur.key) && !m_starts.count(startId(cur))) into.insert(startId(cur));
}

std::string LibraryInvocations::libraryOf(uint64_t key) const
{
    auto it = m_names.find(key);
    return it == m_names.end() ? std::string() : it->second;
}

void LibraryInvocationCounter::close(Thread& t)
{
    if (!t.key) return;
    LibraryInvocationTally& tally = m_byKey[t.key];
    const uint64_t span = t.endNs > t.beginNs ? t.endNs - t.beginNs : 0;
    if (!tally.count) tally.firstNs = span;
    ++tally.count;
    tally.ns += span;
    t.key = 0;
}

void LibraryInvocationCounter::onCall(uint64_t key, uint32_t stack, uint32_t tid, uint64_t beginNs, uint64_t endNs,
                                      bool deviceWork)
{
    Thread& t = m_threads[tid];
    if (!goesOn(t.key, t.firstStack, t.sawOther, key, stack)) {
        close(t);
        if (key) {
            t.key = key;
            t.beginNs = beginNs;
            t.endNs = endNs;
            t.firstStack = stack;
            t.sawOther = false;
            auto [at, fresh] = t.workAtKey.try_emplace(key, t.work);
            if (fresh || t.work > at->second) ++m_byKey[key].steps;
        }
    } else {
        t.sawOther |= stack != t.firstStack;
    }
    if (deviceWork) ++t.work;
    if (!key) return;
    t.endNs = std::max(t.endNs, endNs);
    t.workAtKey[key] = t.work;
    LibraryInvocationTally& tally = m_byKey[key];
    if (tally.stacks.size() < LibraryInvocationTally::kMaxStacks) tally.stacks.insert(stack);
}

void LibraryInvocationCounter::finish()
{
    for (auto& [tid, t] : m_threads) close(t);
}

}  // namespace gpuspy::collect::detail
