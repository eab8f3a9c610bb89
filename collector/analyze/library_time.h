// collector/analyze/library_time.h: host time spent inside a library call (cuBLAS, cuFFT, ...) between the
// CUDA calls it makes. gpuspy sees a library only through the CUDA calls made inside it, so an invocation
// is told from the stacks: two calls of one thread in a row whose outermost library frame is the same
// library, returning to the same place in its caller, lie in one invocation, unless the second call's
// stack is one that began an invocation before (a loop calling the library again) or is the first call's
// own (ambiguous: left as the caller's time). The time between them is the library's own host work (its
// handle creation, plan building, heuristic queries), not the user's: the GPU idle while the host is in
// there is not "the CPU doing data loading".
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace gpuspy::collect {
struct Process;
}

namespace gpuspy::collect::detail {

// A call as the invocations see it: the library call it was made inside (LibraryInvocations::keyOf, 0:
// none) and its stack.
struct LibraryStep {
    uint64_t key = 0;
    uint32_t stack = 0;
    bool any = false;  // false: no call of the thread yet
};

class LibraryInvocations {
public:
    void bind(const Process* p) { m_proc = p; }
    // The library call a stack's CUDA call was made inside: its outermost frame in one of NVIDIA's
    // libraries, by module and the return address into its caller; 0 when no frame is in one.
    uint64_t keyOf(uint32_t stackId) const;  // cached per stack
    LibraryStep step(uint32_t stackId) const { return {keyOf(stackId), stackId, true}; }
    // Whether the host time between a thread's calls prev and cur lies inside one invocation. `extra`: the
    // starts a look-ahead has learned beyond those kept.
    bool inside(const LibraryStep& prev, const LibraryStep& cur, const std::unordered_set<uint64_t>* extra = nullptr) const;
    // Notes cur as the start of an invocation when the thread was not inside the same library call before.
    void learn(const LibraryStep& prev, const LibraryStep& cur, std::unordered_set<uint64_t>& into) const;
    std::unordered_set<uint64_t>& starts() { return m_starts; }
    // The library file a key's frame is in ("libcublas.so.13").
    std::string libraryOf(uint64_t key) const;

private:
    static uint64_t startId(const LibraryStep& s) { return s.key * 0x9E3779B97F4A7C15ull ^ s.stack; }
    const Process* m_proc = nullptr;
    mutable std::unordered_map<uint32_t, uint64_t> m_keys;      // stack id -> key
    mutable std::unordered_map<uint64_t, std::string> m_names;  // key -> library file
    std::unordered_set<uint64_t> m_starts;
};

// How often each library call was invoked, and for how long (its first CUDA call's begin to its last's end,
// the library's own host work between them included): fed each call of a process in time order. On a
// thread, an invocation is a run of calls with one key, none of another between; it ends early where the
// stack that began it comes back after another (a loop calling the library again: A B A B is two). A
// library's setup made again and again (a cuBLAS handle, a cuFFT plan made and destroyed in every step of
// a loop) is what library-setup-in-loop finds from it: steps count the invocations that device work made
// outside them came before (the loop's work between them), so that N handles made or destroyed one after
// the other at start or at exit are one step, not N.
struct LibraryInvocationTally {
    uint64_t count = 0;    // invocations
    uint64_t steps = 0;    // of which came after device work made outside them (the first counts)
    uint64_t ns = 0;       // their summed spans
    uint64_t firstNs = 0;  // the first one's span (the one a fixed program keeps)
    std::set<uint32_t> stacks;  // the stacks of the CUDA calls made inside them (at most kMaxStacks)
    static constexpr size_t kMaxStacks = 256;
};

class LibraryInvocationCounter {
public:
    // deviceWork: the call queued device work (a launch, a copy, a memset).
    void onCall(uint64_t key, uint32_t stack, uint32_t tid, uint64_t beginNs, uint64_t endNs, bool deviceWork);
    void finish();  // closes the invocations still open (the process ended)
    const std::unordered_map<uint64_t, LibraryInvocationTally>& byKey() const { return m_byKey; }

    // Whether a call goes on with the thread's open invocation (the rule above; the replay's
    // keep-library-setup fix groups calls by the same one).
    static bool goesOn(uint64_t openKey, uint32_t firstStack, bool sawOther, uint64_t key, uint32_t stack)
    {
        return key && key == openKey && !(stack == firstStack && sawOther);
    }

private:
    struct Thread {
        uint64_t key = 0, beginNs = 0, endNs = 0;  // the open invocation
        uint32_t firstStack = 0;
        bool sawOther = false;
        uint64_t work = 0;                                  // device work queued so far
        std::unordered_map<uint64_t, uint64_t> workAtKey;   // `work` at each key's last call
    };
    void close(Thread& t);
    std::unordered_map<uint32_t, Thread> m_threads;
    std::unordered_map<uint64_t, LibraryInvocationTally> m_byKey;
};

}  // namespace gpuspy::collect::detail
