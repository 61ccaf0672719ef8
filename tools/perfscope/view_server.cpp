#include "view_server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/random.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string_view>

#include "event_loop_http_server.hpp"
#include "perfscope/analysis/annotate/annotation_output.hpp"
#include "perfscope/analysis/annotate/annotator.hpp"
#include "perfscope/analysis/diff/profile_diff.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "viewer_assets.hpp"

namespace perfscope::cli {

namespace {

std::optional<std::uint64_t> number_parameter(const httplib::Request& request, const char* name) {
  if (!request.has_param(name)) return std::nullopt;
  std::string text = request.get_param_value(name);
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw std::invalid_argument(fmt::format("parameter {} is not a number", name));
  }
  return value;
}

ViewSelection selection_of(const httplib::Request& request, const Profile& profile) {
  ViewSelection selection;
  if (auto event = number_parameter(request, "event")) {
    if (*event >= profile.events.size()) throw std::invalid_argument("no such event");
    selection.event = static_cast<std::uint32_t>(*event);
  }
  if (auto from = number_parameter(request, "from")) selection.from = *from;
  if (auto to = number_parameter(request, "to")) selection.to = *to;
  if (auto pid = number_parameter(request, "pid")) selection.pid = static_cast<std::uint32_t>(*pid);
  if (auto tid = number_parameter(request, "tid")) selection.tid = static_cast<std::uint32_t>(*tid);
  if (request.has_param("comm")) selection.comm = request.get_param_value("comm");
  if (request.has_param("dso")) selection.dso = request.get_param_value("dso");
  return selection;
}

// cpp-httplib compresses "application/json" and "text/..." answers with brotli when the browser
// accepts it, at its slowest setting: 120 ms for an 83 KB call tree that takes 4 ms to make. On
// loopback nothing is gained, so the answers and the script go with types it leaves alone (it
// compares them whole).
constexpr const char* json_type = "application/json; charset=utf-8";
constexpr const char* javascript_type = "application/javascript; charset=utf-8";

void send(httplib::Response& response, std::string_view body, const char* type) {
  response.set_header("Cache-Control", "no-store");
  response.set_header("X-Content-Type-Options", "nosniff");
  // The application runs no script but its own and loads nothing from elsewhere.
  response.set_header("Content-Security-Policy",
                      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' "
                      "data:; connect-src 'self'; frame-ancestors 'none'");
  response.set_content(std::string(body), type);
}

}  // namespace

std::string random_token() {
  std::array<unsigned char, 16> bytes{};
  std::size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (n < 0) throw std::runtime_error("getrandom failed: no token for the viewer");
    got += static_cast<std::size_t>(n);
  }
  std::string token;
  for (unsigned char byte : bytes) token += fmt::format("{:02x}", byte);
  return token;
}

// The function pane's answer: annotate's JSON of one function, for the selection's event, time
// range and filters. Made once per question.
class FunctionAnnotations {
 public:
  explicit FunctionAnnotations(const PerfDataReader& reader) : reader_(reader) {}

  std::string json(const httplib::Request& request, const ProfileView& view) {
    std::string name = request.get_param_value("name");
    if (name.empty()) throw std::invalid_argument("name the function: ?name=FUNCTION");
    ViewSelection selection = selection_of(request, view.profile());
    // Wall time is no event of the recording: its code shares are of the on-CPU clock's
    // samples (the off-CPU ones sampled no instruction of it).
    if (selection.event == view.wall_event()) selection.event = *view.wall_clock_event();
    std::string key = fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}", name, selection.event,
                                  selection.comm, selection.dso, selection.pid.value_or(~0u),
                                  selection.tid.value_or(~0u), selection.from, selection.to);
    std::lock_guard lock(mutex_);
    if (auto found = answers_.find(key); found != answers_.end()) return found->second;
    AnnotateOptions options;
    options.symbols = {name};
    options.profile.filter.event = selection.event;
    if (!selection.comm.empty()) options.profile.filter.comms = {selection.comm};
    if (!selection.dso.empty()) options.profile.filter.dsos = {selection.dso};
    if (selection.pid) options.profile.filter.pids = {*selection.pid};
    if (selection.tid) options.profile.filter.tids = {*selection.tid};
    options.profile.filter.from = selection.from;
    options.profile.filter.to = selection.to;
    std::string answer;
    try {
      answer = annotation_json(annotate(reader_, options));
    } catch (const AnnotateError& error) {
      throw std::invalid_argument(error.what());
    }
    return answers_.emplace(key, std::move(answer)).first->second;
  }

 private:
  const PerfDataReader& reader_;
  std::mutex mutex_;  // requests are answered on several threads
  std::map<std::string, std::string> answers_;
};

// The diff view's answer for a selection: both call trees of its event (by name in the second
// recording) and `perfscope diff`'s table of the two. Its time range is taken as times since
// each recording's first sample; its comm and DSO filters apply to both, its pid and tid to
// neither (they differ between runs).
std::string diff_json(const httplib::Request& request, const ProfileView& base,
                      const ProfileView& current, const ProfileDiffOptions& options,
                      const std::string& base_name, const std::string& current_name) {
  ViewSelection selection = selection_of(request, base.profile());
  selection.pid.reset();
  selection.tid.reset();
  const std::string& name = base.profile().events[selection.event].name;
  ViewSelection other = selection;
  const auto& events = current.profile().events;
  auto found = std::find_if(events.begin(), events.end(),
                            [&](const ProfileEvent& event) { return event.name == name; });
  if (found == events.end()) {
    throw std::invalid_argument(fmt::format("the second recording has no event {}", name));
  }
  other.event = static_cast<std::uint32_t>(found - events.begin());
  const std::uint64_t base_first = base.profile().summary.first_time;
  const std::uint64_t current_first = current.profile().summary.first_time;
  auto moved = [&](std::uint64_t time) {
    if (time == 0 || time == std::numeric_limits<std::uint64_t>::max()) return time;
    std::uint64_t since = time > base_first ? time - base_first : 0;
    return since > std::numeric_limits<std::uint64_t>::max() - current_first
               ? std::numeric_limits<std::uint64_t>::max()
               : current_first + since;
  };
  other.from = moved(selection.from);
  other.to = moved(selection.to);
  std::string table = profile_diff_json(
      diff_profiles(base.selected_profile(selection), current.selected_profile(other), options),
      base_name, current_name);
  return fmt::format("{{\"base\":{},\"current\":{},\"table\":{}}}", base.tree_json(selection, {}),
                     current.tree_json(other, {}), table);
}

struct ViewServer::State {
  State(const ProfileView& profile_view, const PerfDataReader& reader)
      : view(profile_view), functions(reader), token(random_token()) {}
  const ProfileView& view;
  ProfileDiffOptions diff_options;  // with two recordings
  FunctionAnnotations functions;
  std::string token;
  // One browser asks at most a few questions at once; each worker more would keep its own
  // stack and malloc arena.
  EventLoopHttpServer server{4};
  int port = 0;
};

ViewServer::ViewServer(const ProfileView& view, const PerfDataReader& reader,
                       const ProfileView* current, std::string base_name, std::string current_name)
    : state_(std::make_unique<State>(view, reader)) {
  State& state = *state_;
  if (current) {
    ProfileDiffOptions& options = state.diff_options;
    options.children = true;
    for (const Profile* profile : {&view.profile(), &current->profile()}) {
      options.children &=
          std::any_of(profile->events.begin(), profile->events.end(),
                      [](const ProfileEvent& event) { return event.has_callchains; });
    }
    // The recordings must compare at all: an error now, not at the first question.
    diff_profiles(view.profile(), current->profile(), options);
  }
  httplib::Server& server = state.server;
  const std::string prefix = "/t/" + state.token;
  // Every request: the Host must be this server's loopback name, and the path must carry the
  // token; anything else is refused before routing.
  server.set_pre_routing_handler(
      [&state, prefix](const httplib::Request& request, httplib::Response& response) {
        std::string host = request.get_header_value("Host");
        std::string port = std::to_string(state.port);
        bool host_ok = host == "127.0.0.1:" + port || host == "localhost:" + port;
        bool token_ok = request.path == prefix || request.path.starts_with(prefix + "/");
        if (host_ok && token_ok) return httplib::Server::HandlerResponse::Unhandled;
        response.status = 403;
        send(response,
             host_ok ? "403: this address needs the token perfscope view printed\n"
                     : "403: perfscope view answers requests to 127.0.0.1 and localhost only\n",
             "text/plain; charset=utf-8");
        return httplib::Server::HandlerResponse::Handled;
      });
  server.Get(prefix, [prefix](const httplib::Request&, httplib::Response& response) {
    response.set_redirect(prefix + "/");
  });
  server.Get(prefix + "/", [](const httplib::Request&, httplib::Response& response) {
    send(response, viewer_assets::index_html, "text/html; charset=utf-8");
  });
  server.Get(prefix + "/app.js", [](const httplib::Request&, httplib::Response& response) {
    send(response, viewer_assets::app_js, javascript_type);
  });
  server.Get(prefix + "/page_table.js", [](const httplib::Request&, httplib::Response& response) {
    send(response, viewer_assets::page_table_js, javascript_type);
  });
  server.Get(prefix + "/app.css", [](const httplib::Request&, httplib::Response& response) {
    send(response, viewer_assets::app_css, "text/css; charset=utf-8");
  });
  auto api = [&server, prefix](const std::string& name, auto answer) {
    server.Get(prefix + "/api/" + name, [answer](const httplib::Request& request,
                                                 httplib::Response& response) {
      try {
        send(response, answer(request), json_type);
      } catch (const std::exception& error) {
        response.status = 400;
        send(response, fmt::format("400: {}\n", error.what()), "text/plain; charset=utf-8");
      }
    });
  };
  const ProfileView& profile_view = state.view;
  api("summary", [&profile_view](const httplib::Request&) { return profile_view.summary_json(); });
  api("tree", [&profile_view](const httplib::Request& request) {
    ViewTreeOptions options;
    options.inverted = request.get_param_value("invert") == "1";
    return profile_view.tree_json(selection_of(request, profile_view.profile()), options);
  });
  api("timeline", [&profile_view](const httplib::Request& request) {
    auto buckets = number_parameter(request, "buckets").value_or(400);
    return profile_view.timeline_json(
        selection_of(request, profile_view.profile()),
        static_cast<std::uint32_t>(std::min<std::uint64_t>(buckets, 4000)));
  });
  api("stackchart", [&profile_view](const httplib::Request& request) {
    return profile_view.stack_chart_json(selection_of(request, profile_view.profile()));
  });
  std::string files = fmt::format("{{\"base\":{},\"current\":{}}}", json_quoted(base_name),
                                  current ? json_quoted(current_name) : "null");
  api("files", [files](const httplib::Request&) { return files; });
  if (current) {
    const ProfileDiffOptions& options = state.diff_options;
    api("diff", [&profile_view, current, &options, base_name,
                 current_name](const httplib::Request& request) {
      return diff_json(request, profile_view, *current, options, base_name, current_name);
    });
  }
  FunctionAnnotations& functions = state.functions;
  api("function", [&functions, &profile_view](const httplib::Request& request) {
    return functions.json(request, profile_view);
  });
  server.set_error_handler([](const httplib::Request&, httplib::Response& response) {
    if (response.body.empty()) {
      send(response, fmt::format("{}: not part of the viewer\n", response.status),
           "text/plain; charset=utf-8");
    }
  });
}

ViewServer::~ViewServer() { stop(); }

void ViewServer::bind(std::uint16_t port) {
  State& state = *state_;
  if (port == 0) {
    state.port = state.server.bind_to_any_port("127.0.0.1");
  } else {
    state.port = state.server.bind_to_port("127.0.0.1", port) ? port : -1;
  }
  if (state.port <= 0) {
    throw std::runtime_error(
        port == 0 ? std::string("cannot listen on 127.0.0.1: no free port")
                  : fmt::format("cannot listen on 127.0.0.1:{}: the port is taken (choose another "
                                "with --port, or leave --port out for a free one)",
                                port));
  }
  state.server.widen_accept_queue();
}

std::uint16_t ViewServer::port() const noexcept { return static_cast<std::uint16_t>(state_->port); }

std::string ViewServer::url() const {
  return fmt::format("http://127.0.0.1:{}/t/{}/", state_->port, state_->token);
}

void ViewServer::run() { state_->server.listen_after_bind(); }

void ViewServer::stop() {
  if (state_->server.is_running()) state_->server.stop();
}

}  // namespace perfscope::cli
