// The op observer: which aten ops a candidate dispatched in a timed block, at a fraction of the cost of a
// Python dispatch mode (agentkern/harness/op_observer.py says how the runner uses it).
//
// One global RecordFunction callback (the mechanism torch's own profiler uses), registered once, before the
// candidate is imported. While armed it notes the name of every operator dispatched, on any thread; the
// names are read back after the block, outside the timed window, and judged there. Every callback, armed
// or not, counts an event: the runner dispatches a canary op after each block and checks that the count
// moved, so a candidate that turned RecordFunction off (thread-locally, or by clearing callbacks) is seen.
// Arming counts too, so a candidate that re-armed (clearing the names) or disarmed it is seen as well.
// This is trusted code built by agentkern; it runs inside the candidate's process, so native candidate
// code could still get around it, as around any in-process guard.
#include <ATen/record_function.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

std::atomic<bool> armed{false};
std::atomic<uint64_t> events{0};
std::atomic<uint64_t> arms{0};
std::mutex names_mutex;
// Names seen while armed, keyed by a hash of the name (the name's pointer is not stable for every kind of
// RecordFunction, its text is).
std::unordered_map<uint64_t, std::string> names;
std::vector<const std::string*> order;  // the names in the order first seen: the first refused op is named
bool installed = false;

uint64_t fnv1a(const char* s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
    return h;
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
    events.fetch_add(1, std::memory_order_relaxed);
    if (!armed.load(std::memory_order_relaxed)) return nullptr;
    const char* name = fn.name();
    if (name == nullptr) return nullptr;
    const uint64_t h = fnv1a(name);
    std::lock_guard<std::mutex> lock(names_mutex);
    if (names.find(h) == names.end()) order.push_back(&names.emplace(h, name).first->second);
    return nullptr;
}

}  // namespace

extern "C" {

// Register the callback (once). 0 on success.
int ak_observer_install() {
    if (installed) return 0;
    at::addGlobalCallback(
        at::RecordFunctionCallback(on_enter).needsInputs(false).needsOutputs(false).scopes({at::RecordScope::FUNCTION}));
    installed = true;
    return 0;
}

// Forget the names seen so far and start noting them.
void ak_observer_arm() {
    std::lock_guard<std::mutex> lock(names_mutex);
    names.clear();
    order.clear();
    arms.fetch_add(1);
    armed.store(true);
}

// Stop noting names. Writes the names seen, one per line in the order first seen, into buf (at most cap bytes, NUL-terminated) and
// returns the length they need (without the NUL); *was_armed: whether it was still armed; *arm_count: how
// many times it has been armed in all.
int64_t ak_observer_disarm(char* buf, int64_t cap, int* was_armed, uint64_t* arm_count) {
    *was_armed = armed.exchange(false) ? 1 : 0;
    *arm_count = arms.load();
    std::lock_guard<std::mutex> lock(names_mutex);
    std::string all;
    for (const std::string* name : order) {
        all += *name;
        all += '\n';
    }
    if (cap > 0) {
        const size_t n = all.size() < static_cast<size_t>(cap - 1) ? all.size() : static_cast<size_t>(cap - 1);
        std::memcpy(buf, all.data(), n);
        buf[n] = '\0';
    }
    return static_cast<int64_t>(all.size());
}

// Callbacks run so far (armed or not).
uint64_t ak_observer_events() { return events.load(); }

}  // extern "C"
