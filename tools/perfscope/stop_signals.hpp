// The stop signals of the subcommands that run until stopped (stat, record, top, trace): each
// sets one flag instead of ending perfscope, so that the subcommand finishes its output first.
#pragma once

#include <signal.h>

#include <atomic>
#include <initializer_list>

namespace perfscope::cli {

// The last stop signal received, 0 before any.
extern std::atomic<int> stop_signal;

// Installs the flag-setting handler for `signals`, without SA_RESTART: a waiting epoll_wait or
// poll returns EINTR and the caller sees the flag at once.
void install_stop_handlers(std::initializer_list<int> signals = {SIGINT, SIGTERM, SIGHUP});

}  // namespace perfscope::cli
