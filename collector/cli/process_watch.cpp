// collector/cli/process_watch.cpp: record's tree followed while it runs (process events and /proc), and
// what it says of the processes that are not in the capture.
#include "collector/cli/process_watch.h"
#include "collector/cli/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpuspy::collect::cli {

namespace {

constexpr int kMapsEveryMs = 10;
constexpr auto kYoung = std::chrono::milliseconds(200);  // read every millisecond for this long
constexpr int kScanEveryMs = 50;

std::string readFile(const std::string& path) { return readFileNoInherit(path); }

pid_t parentOf(pid_t pid)
{
    const std::string text = readFile("/proc/" + std::to_string(pid) + "/stat");
    const size_t close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream rest(text.substr(close + 1));
    char state = 0;
    long ppid = 0;
    return rest >> state >> ppid ? pid_t(ppid) : 0;
}

// The proc connector: exec and exit events of every process (root only: CAP_NET_ADMIN). -1: none.
int openProcessEvents()
{
    const int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
    if (fd < 0) return -1;
    sockaddr_nl addr{};
    addr.nl_family = AF_NETLINK;
    addr.nl_groups = CN_IDX_PROC;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    // nlmsghdr, cn_msg (ending in a flexible array), then the operation.
    alignas(nlmsghdr) char msg[NLMSG_LENGTH(sizeof(cn_msg) + sizeof(proc_cn_mcast_op))] = {};
    auto* nl = reinterpret_cast<nlmsghdr*>(msg);
    nl->nlmsg_len = sizeof msg;
    nl->nlmsg_type = NLMSG_DONE;
    auto* cn = static_cast<cn_msg*>(NLMSG_DATA(nl));
    cn->id.idx = CN_IDX_PROC;
    cn->id.val = CN_VAL_PROC;
    cn->len = sizeof(proc_cn_mcast_op);
    const proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;
    std::memcpy(cn->data, &op, sizeof op);
    if (send(fd, msg, sizeof msg, 0) != ssize_t(sizeof msg)) {
        close(fd);
        return -1;
    }
    // A busy machine sends many events: room for a burst while a scan runs.
    const int size = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
    return fd;
}

}  // namespace

ProcessWatch::ProcessWatch(std::string shim, std::string socket) : m_shim(std::move(shim)), m_socket(std::move(socket))
{
    m_netlink = openProcessEvents();
    if (pipe2(m_wake, O_CLOEXEC | O_NONBLOCK) != 0) m_wake[0] = m_wake[1] = -1;
    // The watch takes no signal: record's handlers run on its main thread. A signal the main thread holds
    // back while it starts the command (so that the command's pid is known when a hang-up is passed on)
    // went to this thread instead, whose handler had no pid yet, and was lost (collector_cli_hangup: the
    // command never got the terminal's hang-up, 3 of 8 runs under a CPU hog per core).
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &before);
    m_thread = std::thread([this] { run(); });
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

ProcessWatch::~ProcessWatch()
{
    m_stop = true;
    if (m_wake[1] >= 0) [[maybe_unused]] ssize_t w = write(m_wake[1], "x", 1);
    if (m_thread.joinable()) m_thread.join();
    for (int fd : {m_netlink, m_wake[0], m_wake[1]})
        if (fd >= 0) close(fd);
}

std::vector<WatchedProcess> ProcessWatch::seen() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    std::vector<WatchedProcess> out;
    for (const auto& [pid, p] : m_seen) out.push_back(p);
    for (pid_t pid : m_unseen) {
        if (m_seen.count(pid)) continue;
        WatchedProcess w;
        w.pid = pid;
        w.alive = false;
        w.unseen = true;
        out.push_back(w);
    }
    return out;
}

bool ProcessWatch::isDescendant(pid_t pid) const
{
    const pid_t self = getpid();
    pid_t up = pid;
    for (int depth = 0; up > 1 && depth < 4096; ++depth) {
        up = parentOf(up);
        if (up == self) return true;
    }
    return false;
}

// Reads what the process runs now: its command line, its environment's gpuspy settings, whether its
// program is static. Its mappings are read by refreshMaps.
void ProcessWatch::inspect(pid_t pid, bool execd)
{
    const std::string dir = "/proc/" + std::to_string(pid);
    std::string cmdline = readFile(dir + "/cmdline");
    if (cmdline.empty()) return;  // gone, or a zombie
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_seen.find(pid);
        if (it != m_seen.end() && it->second.command == cmdline && it->second.alive) return;  // the same image
    }
    WatchedProcess w;
    w.pid = pid;
    w.ppid = parentOf(pid);
    w.command = cmdline;
    w.execd = execd;
    w.since = std::chrono::steady_clock::now();
    std::istringstream env(readFile(dir + "/environ"));
    for (std::string e; std::getline(env, e, '\0');) {
        if (e.rfind("LD_PRELOAD=", 0) == 0) {
            std::string list = e.substr(11);
            std::replace(list.begin(), list.end(), ' ', ':');
            std::istringstream items(list);
            for (std::string item; std::getline(items, item, ':');) w.preload = w.preload || item == m_shim;
        } else if (e == "GPUSPY_SOCKET=" + m_socket) {
            w.socket = true;
        } else if (e.rfind("TMPDIR=", 0) == 0) {
            w.tmpDir = e.substr(7);
        } else if (e.rfind("GPUSPY_OUTPUT=", 0) == 0) {
            w.output = e.substr(14);
        }
    }
    w.staticExe = unpreloadable(dir + "/exe").find("statically linked") != std::string::npos;
    char cwd[4096];
    const ssize_t n = readlink((dir + "/cwd").c_str(), cwd, sizeof cwd - 1);
    if (n > 0) w.loadDir.assign(cwd, size_t(n));
    std::lock_guard<std::mutex> lock(m_mutex);
    auto it = m_seen.find(pid);
    if (it != m_seen.end() && it->second.command == w.command && it->second.alive) return;  // the same image
    if (it != m_seen.end()) w.execd = w.execd || it->second.command != w.command;
    m_seen[pid] = std::move(w);
}

// The mappings of the processes still running whose CUDA driver has not shown yet.
bool ProcessWatch::refreshMaps()
{
    const auto now = std::chrono::steady_clock::now();
    std::vector<pid_t> todo;
    bool young = false;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (const auto& [pid, p] : m_seen) {
            if (!p.alive || p.cudaMapped) continue;
            const bool isYoung = now - p.since < kYoung;
            young = young || isYoung;
            if (isYoung || now >= m_nextOldRead) todo.push_back(pid);
        }
    }
    if (now >= m_nextOldRead) m_nextOldRead = now + std::chrono::milliseconds(kMapsEveryMs);
    for (pid_t pid : todo) {
        std::istringstream maps(readFileNoInherit("/proc/" + std::to_string(pid) + "/maps"));
        bool read = false, shim = false, cuda = false, loaded = false;
        for (std::string line; std::getline(maps, line);) {
            read = true;
            shim = shim || (line.size() >= m_shim.size() && line.compare(line.size() - m_shim.size(), m_shim.size(), m_shim) == 0);
            const size_t slash = line.rfind('/');
            if (slash == std::string::npos) continue;
            cuda = cuda || line.compare(slash, 12, "/libcuda.so.") == 0;
            loaded = loaded || line.compare(slash, 8, "/libc.so") == 0;
        }
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_seen.find(pid);
        if (it == m_seen.end()) continue;
        if (!read) {
            it->second.alive = kill(pid, 0) == 0 && !readFile("/proc/" + std::to_string(pid) + "/cmdline").empty();
            continue;
        }
        it->second.mapsRead = it->second.mapsRead || loaded || it->second.staticExe;
        it->second.shimMapped = it->second.shimMapped || shim;
        it->second.cudaMapped = it->second.cudaMapped || cuda;
    }
    return young;
}

void ProcessWatch::scan()
{
    std::vector<Descendant> all = descendantsOf();
    // A known process is looked at again: it may have exec'd another image since.
    for (const Descendant& d : all) {
        m_tree.insert(d.pid);
        inspect(d.pid, false);
    }
}

void ProcessWatch::readEvents()
{
    alignas(nlmsghdr) char buf[8192];
    while (true) {
        const ssize_t got = recv(m_netlink, buf, sizeof buf, 0);
        if (got <= 0) return;  // drained (or ENOBUFS: lost events; the scan covers them)
        size_t n = size_t(got);
        for (auto* nl = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(nl, n); nl = NLMSG_NEXT(nl, n)) {
            auto* cn = static_cast<cn_msg*>(NLMSG_DATA(nl));
            if (cn->id.idx != CN_IDX_PROC || cn->len < sizeof(proc_event)) continue;
            // The event follows a 20-byte cn_msg: 4-byte aligned, not the 8 proc_event needs; copied out.
            proc_event event;
            std::memcpy(&event, cn->data, sizeof event);
            const proc_event* ev = &event;
            if (ev->what == proc_event::PROC_EVENT_FORK) {
                // A new process (not a thread) of a process of ours is ours, whatever it becomes.
                const auto& f = ev->event_data.fork;
                if (f.child_pid == f.child_tgid && m_tree.count(f.parent_tgid)) m_tree.insert(f.child_tgid);
            } else if (ev->what == proc_event::PROC_EVENT_EXEC) {
                const pid_t pid = ev->event_data.exec.process_tgid;
                const bool ours = m_tree.count(pid) || isDescendant(pid);
                if (!ours) continue;
                m_tree.insert(pid);
                inspect(pid, true);
                std::lock_guard<std::mutex> lock(m_mutex);
                if (!m_seen.count(pid)) m_unseen.push_back(pid);  // it ended before its image could be read
            } else if (ev->what == proc_event::PROC_EVENT_EXIT) {
                const pid_t pid = ev->event_data.exit.process_tgid;
                if (ev->event_data.exit.process_pid != pid) continue;
                m_tree.erase(pid);
                std::lock_guard<std::mutex> lock(m_mutex);
                auto it = m_seen.find(pid);
                if (it != m_seen.end()) it->second.alive = false;
            }
        }
    }
}

void ProcessWatch::run()
{
    using Clock = std::chrono::steady_clock;
    auto nextScan = Clock::now();
    while (!m_stop) {
        if (Clock::now() >= nextScan) {
            scan();
            nextScan = Clock::now() + std::chrono::milliseconds(kScanEveryMs);
        }
        const bool young = refreshMaps();
        pollfd fds[2] = {{m_netlink, POLLIN, 0}, {m_wake[0], POLLIN, 0}};
        poll(fds, 2, young ? 1 : kMapsEveryMs);
        if (m_netlink >= 0 && (fds[0].revents & (POLLIN | POLLERR))) readEvents();
    }
    // A last look at what still runs.
    scan();
    refreshMaps();
}

std::vector<OutsideProcess> outsideProcesses(const std::vector<WatchedProcess>& seen, const std::vector<uint32_t>& connected)
{
    std::vector<OutsideProcess> out;
    for (const WatchedProcess& w : seen) {
        if (std::find(connected.begin(), connected.end(), uint32_t(w.pid)) != connected.end()) continue;
        OutsideProcess o;
        o.pid = uint32_t(w.pid);
        if (w.unseen) {
            o.why = OutsideWhy::Unseen;
            out.push_back(std::move(o));
            continue;
        }
        o.ppid = uint32_t(w.ppid);
        o.command = w.command;
        o.cuda = w.cudaMapped ? OutsideCuda::Loaded : w.mapsRead ? OutsideCuda::NotSeen : OutsideCuda::Unknown;
        if (w.staticExe) {
            o.why = OutsideWhy::Static;
        } else if (!w.preload) {
            o.why = OutsideWhy::NoPreload;
        } else if (!w.socket) {
            o.why = OutsideWhy::OwnCapture;
            // Where the shim writes alone (shim/drain.cpp openCaptureFile): GPUSPY_OUTPUT as named (made
            // absolute against the directory at load), else gpuspy-PID.gspy there, else in $TMPDIR or /tmp.
            const std::string name = "gpuspy-" + std::to_string(w.pid) + ".gspy";
            std::vector<std::string> candidates;
            if (!w.output.empty() && w.output.find('%') == std::string::npos) {
                const std::string path = w.output[0] == '/' ? w.output : w.loadDir + "/" + w.output;
                candidates = {path + "." + std::to_string(w.pid), path};
            } else if (w.output.empty()) {
                candidates = {w.loadDir + "/" + name, (w.tmpDir.size() && w.tmpDir[0] == '/' ? w.tmpDir : "/tmp") + "/" + name};
            }
            for (const std::string& c : candidates) {
                struct stat st{};
                if (stat(c.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
                    o.capturePath = c;
                    break;
                }
            }
        } else {
            continue;  // it carried gpuspy and made no CUDA call it recorded
        }
        // A fork of a process that is listed (the same image) says nothing more, unless it used the GPU.
        if (!w.execd && o.cuda != OutsideCuda::Loaded && o.why != OutsideWhy::OwnCapture) {
            const auto parent = std::find_if(seen.begin(), seen.end(), [&](const WatchedProcess& p) { return p.pid == w.ppid; });
            if (parent != seen.end() && parent->command == w.command) continue;
        }
        out.push_back(std::move(o));
    }
    return out;
}

}  // namespace gpuspy::collect::cli
