#include "perfscope/analysis/sched/timehist.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <iterator>

#include "perfscope/core/safe_text.hpp"

namespace perfscope {

namespace {

// perf 6.1's TASK_STATE_TO_CHAR_STR, indexed by the lowest set bit of prev_state.
constexpr std::string_view task_state_letters = "RSDTtZXxKWP";

// The raw states perf 6.1 tests for (TASK_RUNNING, TASK_UNINTERRUPTIBLE).
constexpr std::int64_t task_running = 0;
constexpr std::int64_t task_uninterruptible = 2;

// perf's task names are formatted into a char[32].
constexpr std::size_t perf_name_limit = 31;

// Ids as perf prints them (pid_t, %d): the kernel reports -1 for a task it cannot name (one that
// is exiting), and perf shows that as -1.
void append_decimal(std::string& out, std::uint32_t id) {
  auto value = static_cast<std::int32_t>(id);
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, static_cast<std::size_t>(end - digits));
}

// Short pieces copied a byte at a time: a memcpy call per piece of every row costs more.
char* put(char* at, std::string_view text) {
  for (char c : text) *at++ = c;
  return at;
}

char* pad_left(char* at, std::string_view text, std::size_t width) {
  for (std::size_t i = text.size(); i < width; ++i) *at++ = ' ';
  return put(at, text);
}

// perf's print_sched_time(ns, 6): "%6lu.%03lu " of milliseconds and microseconds.
char* put_msec(char* at, std::uint64_t ns) {
  std::uint64_t msec = ns / 1000000;
  auto usec = static_cast<unsigned>((ns - msec * 1000000) / 1000);
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, msec).ptr;
  at = pad_left(at, std::string_view(digits, static_cast<std::size_t>(end - digits)), 6);
  *at++ = '.';
  *at++ = static_cast<char>('0' + usec / 100);
  *at++ = static_cast<char>('0' + usec / 10 % 10);
  *at++ = static_cast<char>('0' + usec % 10);
  *at++ = ' ';
  return at;
}

}  // namespace

char perf_task_state_letter(std::int64_t prev_state, bool idle) noexcept {
  if (idle) return 'I';
  auto state = static_cast<int>(prev_state);
  unsigned bit = state != 0 ? static_cast<unsigned>(__builtin_ffs(state)) : 0;
  return bit < task_state_letters.size() ? task_state_letters[bit] : '?';
}

std::string_view perf_time(char (&buffer)[32], std::uint64_t ns) {
  char* end = std::to_chars(buffer, buffer + 24, ns / 1000000000).ptr;
  auto usec = static_cast<unsigned>(ns % 1000000000 / 1000);
  *end++ = '.';
  end += 6;
  for (int i = 1; i <= 6; ++i) {
    end[-i] = static_cast<char>('0' + usec % 10);
    usec /= 10;
  }
  return {buffer, static_cast<std::size_t>(end - buffer)};
}

TimehistAnalyzer::TimehistAnalyzer(const TaskMaps& tasks, std::uint32_t cpus, RowSink rows,
                                   LostSink lost)
    : tasks_(tasks), rows_(std::move(rows)), lost_(std::move(lost)) {
  idle_.resize(cpus);
  last_switch_.resize(cpus);
}

void TimehistAnalyzer::on_switch(const SchedSwitchEvent& event) {
  if (event.cpu >= last_switch_.size()) {
    idle_.resize(event.cpu + 1);
    last_switch_.resize(event.cpu + 1);
  }
  bool idle = event.prev_pid == 0;
  // As perf: the task is the sample's (the one running when the tracepoint fired), and the
  // idle task is one per CPU.
  std::uint32_t tid = event.tid != 0 ? event.tid : event.pid;
  Runtime& runtime = idle ? idle_[event.cpu] : thread(tid, event.pid);
  std::uint64_t t = event.time;
  std::uint64_t tprev = last_switch_[event.cpu];

  TimehistRow& row = row_;
  row = TimehistRow{};
  row.time = t;
  row.cpu = event.cpu;
  row.idle = idle;
  row.prev_state = event.prev_state;
  if (idle) {
    row.comm = "<idle>";
  } else {
    row.pid = runtime.pid;
    row.tid = tid;
    row.comm = tasks_.comm_of(tid);
  }
  if (tprev != 0) {
    row.run = t - tprev;
    if (runtime.ready_to_run != 0 && runtime.ready_to_run <= tprev) {
      row.delay = tprev - runtime.ready_to_run;
    }
    if (runtime.last_time != 0 && runtime.last_time <= tprev) {
      std::uint64_t wait = tprev - runtime.last_time;
      if (runtime.last_state == task_running) {
        row.preempt = wait;
      } else if (runtime.last_state == task_uninterruptible) {
        row.iowait = wait;
      } else {
        row.sleep = wait;
      }
    }
  }
  rows_(row);
  runtime.last_time = t;
  runtime.last_state = event.prev_state;
  runtime.ready_to_run = 0;
  last_switch_[event.cpu] = t;
}

void TimehistAnalyzer::on_wakeup(const SchedWakeupEvent& event) {
  if (event.target <= 0) return;
  Runtime& runtime = thread(static_cast<std::uint32_t>(event.target), 0);
  if (runtime.ready_to_run == 0) runtime.ready_to_run = event.time;
}

TimehistAnalyzer::Runtime& TimehistAnalyzer::thread(std::uint32_t tid, std::uint32_t pid) {
  Cached& cached = cache_[tid % cache_.size()];
  if (cached.runtime != nullptr && cached.tid == tid) return *cached.runtime;
  Runtime& runtime = threads_[tid];
  cached = Cached{tid, &runtime};
  if (!runtime.known) {
    runtime.known = true;
    runtime.pid = pid;
  }
  return runtime;
}

void TimehistAnalyzer::on_task(std::uint32_t pid, std::uint32_t tid, std::uint64_t, bool exit) {
  // perf drops what it knew of a thread id that forks anew (the id was reused).
  if (exit) return;
  threads_.erase(tid);
  cache_[tid % cache_.size()] = Cached{};
  thread(tid, pid);
}

void TimehistAnalyzer::on_comm(std::uint32_t pid, std::uint32_t tid) { thread(tid, pid); }

void TimehistAnalyzer::on_lost(std::uint64_t lost, std::uint32_t cpu, std::uint64_t time) {
  if (lost_) lost_(lost, cpu, time);
}

void TimehistText::header(std::string& out) const {
  auto put = [&](fmt::string_view format, const auto&... args) {
    fmt::vformat_to(std::back_inserter(out), format, fmt::make_format_args(args...));
  };
  put("{:>15} {:>6} ", "time", "cpu");
  put(" {:<{}}", "task name", comm_width_);
  put("  {:>9}  {:>9}  {:>9}", "wait time", "sch delay", "run time");
  if (show_state_) put("  state");
  put("\n{:>15} {:<6} ", "", "");
  put(" {:<{}}", "[tid/pid]", comm_width_);
  put("  {:>9}  {:>9}  {:>9}", "(msec)", "(msec)", "(msec)");
  if (show_state_) put("       ");
  put("\n{:-<15} {:-<6} ", "", "");
  put(" {:-<{}}", "", comm_width_);
  put("  {:-<9}  {:-<9}  {:-<9}", "", "", "");
  if (show_state_) put("  -----");
  put("\n");
}

void TimehistText::row(std::string& out, const TimehistRow& row) {
  // Hand-made rather than fmt: a recording has hundreds of thousands of rows, and perf's printf
  // pads names by bytes where fmt would count code points.
  Name& cached = names_[row.tid % names_.size()];
  if (!cached.valid || cached.tid != row.tid || cached.pid != row.pid || cached.idle != row.idle ||
      cached.comm != row.comm) {
    cached.valid = true;
    cached.tid = row.tid;
    cached.pid = row.pid;
    cached.idle = row.idle;
    cached.comm.assign(row.comm);
    std::string& name = cached.text;
    name.clear();
    if (row.comm.empty()) {
      name += ':';
      append_decimal(name, row.tid);
    } else if (is_terminal_safe(row.comm)) {
      name += row.comm;
    } else {
      append_terminal_safe(name, row.comm);
    }
    if (!row.idle && row.pid != 0) {
      name += '[';
      append_decimal(name, row.tid);
      if (row.tid != row.pid) {
        name += '/';
        append_decimal(name, row.pid);
      }
      name += ']';
    }
    if (name.size() > perf_name_limit) {
      name.resize(perf_name_limit);
      while (!name.empty() && !is_valid_utf8(name)) name.pop_back();  // a cut sequence
    }
  }
  const std::string& name_ = cached.text;
  comm_width_ = std::max(comm_width_, static_cast<int>(name_.size()));

  // The name is at most 31 bytes, the width at most that: a row fits the line easily.
  char line[256];
  char* at = line;
  char when[32];
  std::string_view time = perf_time(when, row.time);
  at = pad_left(at, time, 15);
  at = put(at, " [");
  char cpu[16];
  std::size_t cpu_digits =
      static_cast<std::size_t>(std::to_chars(cpu, cpu + 16, row.cpu).ptr - cpu);
  for (std::size_t i = cpu_digits; i < 4; ++i) *at++ = '0';
  at = put(at, std::string_view(cpu, cpu_digits));
  at = put(at, "]  ");
  at = put(at, name_);
  for (std::size_t i = name_.size(); i < static_cast<std::size_t>(comm_width_); ++i) *at++ = ' ';
  *at++ = ' ';
  at = put_msec(at, row.wait());
  at = put_msec(at, row.delay);
  at = put_msec(at, row.run);
  if (show_state_) {
    at = put(at, "     ");
    *at++ = perf_task_state_letter(row.prev_state, row.idle);
    *at++ = ' ';
  }
  *at++ = '\n';
  out.append(line, static_cast<std::size_t>(at - line));
}

void TimehistText::lost(std::string& out, std::uint64_t lost, std::uint32_t cpu,
                        std::uint64_t time) const {
  char when[32];
  fmt::format_to(std::back_inserter(out), "{:>15} lost {} events on cpu {}\n",
                 perf_time(when, time), lost, cpu);
}

}  // namespace perfscope
