// collector/live/control.h: the collector's control socket, where `gpuspy ctl` talks to a running
// `gpuspy collect`: PATH.ctl beside the collector's socket PATH, one request line per connection
// ("start", "stop", "status", and whatever else a subcommand registers with on()), one reply, then
// the connection closes. A reply starts "ok" or "error". Handled in the collector's own loop.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gpuspy::collect {

std::string controlPath(const std::string& socketPath);  // PATH.ctl

class ControlServer {
public:
    // Takes the request's words after the command; returns the reply ("ok ..." or "error ...").
    using Handler = std::function<std::string(const std::vector<std::string>& args)>;

    explicit ControlServer(const std::string& socketPath);  // listens on controlPath(socketPath); throws
    ~ControlServer();
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    void on(const std::string& command, Handler handler);  // the seam: one handler per ctl subcommand
    // For a request whose argument is free text (a file name, spaces and all): the handler gets the
    // rest of the line after the command and the one character that separates them, as sent.
    using LineHandler = std::function<std::string(const std::string& rest)>;
    void onLine(const std::string& command, LineHandler handler);
    // Answers every request waiting now (a client gets at most a second to send its line).
    void serve();
    int fd() const { return m_listen; }

private:
    std::string reply(const std::string& line);

    std::string m_path;
    int m_listen = -1;
    std::map<std::string, Handler> m_handlers;
    std::map<std::string, LineHandler> m_lineHandlers;
};

}  // namespace gpuspy::collect
