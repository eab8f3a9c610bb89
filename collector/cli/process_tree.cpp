// collector/cli/process_tree.cpp: what `record` learns of the processes it started from /proc and from
// the command's file: which descendants carry the shim, and why none could have.
#include "collector/cli/process_tree.h"

#include <fmt/format.h>

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace gpuspy::collect::cli {

namespace {

// The file `command` runs, found the way execvp finds it; empty if not found.
std::string commandPath(const std::string& command)
{
    if (command.find('/') != std::string::npos) return command;
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
        const std::string candidate = (dir.empty() ? "." : dir) + "/" + command;
        struct stat st{};
        if (access(candidate.c_str(), X_OK) == 0 && stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode))
            return candidate;
    }
    return {};
}

}  // namespace

std::string readFileNoInherit(const std::string& path)
{
    std::string text;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return text;
    char buf[16384];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buf, size_t(n));
    }
    ::close(fd);
    return text;
}

bool hasShimMapped(pid_t pid, const std::string& shim)
{
    std::istringstream maps(readFileNoInherit("/proc/" + std::to_string(pid) + "/maps"));
    std::string line;
    while (std::getline(maps, line))
        if (line.size() >= shim.size() && line.compare(line.size() - shim.size(), shim.size(), shim) == 0) return true;
    return false;
}

bool hasSettingsFor(pid_t pid, const std::string& socket)
{
    std::istringstream env(readFileNoInherit("/proc/" + std::to_string(pid) + "/environ"));
    const std::string want = "GPUSPY_SOCKET=" + socket;
    std::string entry;
    while (std::getline(env, entry, '\0'))
        if (entry == want) return true;
    return false;
}

// Our live descendants (orphaned ones are handed to us by the kernel, as to a subreaper: they stay
// ours), by pid; a zombie is not one. `loaded` unset.
std::vector<Descendant> descendantsOf()
{
    struct Entry {
        pid_t ppid;
        char state;
        std::string comm;
    };
    std::unordered_map<pid_t, Entry> all;
    DIR* d = opendir("/proc");
    if (!d) return {};
    while (dirent* e = readdir(d)) {
        char* end = nullptr;
        const long pid = std::strtol(e->d_name, &end, 10);
        if (pid <= 0 || *end) continue;
        std::istringstream stat(readFileNoInherit("/proc/" + std::string(e->d_name) + "/stat"));
        std::string text;
        std::getline(stat, text);
        const size_t open = text.find('('), close = text.rfind(')');
        if (open == std::string::npos || close == std::string::npos || close < open) continue;
        std::istringstream rest(text.substr(close + 1));
        Entry en{0, 0, text.substr(open + 1, close - open - 1)};
        long ppid = 0;
        if (rest >> en.state >> ppid) {
            en.ppid = pid_t(ppid);
            all.emplace(pid_t(pid), std::move(en));
        }
    }
    closedir(d);
    const pid_t self = getpid();
    std::vector<Descendant> out;
    for (const auto& [pid, en] : all) {
        if (en.state == 'Z' || pid == self) continue;
        pid_t up = en.ppid;
        for (int depth = 0; up > 1 && up != self && depth < 4096; ++depth) {
            auto it = all.find(up);
            up = it == all.end() ? 0 : it->second.ppid;
        }
        if (up == self) out.push_back({pid, en.comm, false});
    }
    std::sort(out.begin(), out.end(), [](const Descendant& a, const Descendant& b) { return a.pid < b.pid; });
    return out;
}

// Those of our descendants that carry the shim or its settings. The settings count too: a statically
// linked supervisor cannot load the shim but starts workers that do, and a process caught between two
// execs of a chain has the next image's loader still to run.
std::vector<Descendant> descendantsCarryingShim(const std::string& shim, const std::string& socket)
{
    std::vector<Descendant> out;
    for (Descendant& d : descendantsOf()) {
        if (hasShimMapped(d.pid, shim)) out.push_back({d.pid, d.comm, true});
        else if (!socket.empty() && hasSettingsFor(d.pid, socket)) out.push_back({d.pid, d.comm, false});
    }
    return out;
}

std::string describe(const std::vector<Descendant>& ds)
{
    std::string s;
    for (size_t i = 0; i < ds.size() && i < 8; ++i)
        s += fmt::format("{}pid {} ({}{})", i ? ", " : "", ds[i].pid, ds[i].comm, ds[i].loaded ? "" : ", gpuspy's settings only");
    if (ds.size() > 8) s += fmt::format(" and {} more", ds.size() - 8);
    return s;
}

// Why no process connected, where the command's file tells: the loader preloads nothing into a
// static program, nor, for a user other than root, into a setuid or setgid one. Empty otherwise.
std::string unpreloadable(const std::string& command)
{
    const std::string path = commandPath(command);
    struct stat st{};
    if (path.empty() || stat(path.c_str(), &st) != 0) return {};
    if ((st.st_mode & (S_ISUID | S_ISGID)) && getuid() != 0)
        return fmt::format("{} is setuid or setgid, and the loader preloads nothing into such programs", command);
    std::ifstream f(path, std::ios::binary);
    Elf64_Ehdr eh{};
    if (!f.read(reinterpret_cast<char*>(&eh), sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
        return {};
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph{};
        f.seekg(std::streamoff(eh.e_phoff + uint64_t(i) * sizeof ph));
        if (!f.read(reinterpret_cast<char*>(&ph), sizeof ph)) return {};
        if (ph.p_type == PT_INTERP) return {};
    }
    return fmt::format("{} is statically linked, and the loader preloads nothing into a static program", command);
}

}  // namespace gpuspy::collect::cli
