#include "stop_signals.hpp"

namespace perfscope::cli {

std::atomic<int> stop_signal{0};

namespace {
void on_stop_signal(int signal) { stop_signal.store(signal); }
}  // namespace

void install_stop_handlers(std::initializer_list<int> signals) {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART
  for (int signal : signals) sigaction(signal, &action, nullptr);
}

}  // namespace perfscope::cli
