// consts.h: constants for check_trace's self-test, read with --consts as an app's source would be.
constexpr int kLaunches = 3;
constexpr size_t kBytes = 1 << 10;
constexpr float kIgnored = 0.5f;  // not an integer: skipped
enum { kPids = 2 };
