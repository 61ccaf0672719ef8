#include "command_line.hpp"

#include <fmt/format.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <regex>
#include <stdexcept>

#include "perf_config.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/archive/symbol_archive.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/core/event_names.hpp"

namespace perfscope::cli {

namespace {

bool is_option_word(const std::string& word) {
  return word.size() > 1 && word[0] == '-' && word != "--";
}

const CLI::App* selected_subcommand(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->parsed()) return sub;
  }
  return nullptr;
}

// Every spelling of the subcommand's options, "--freq" and "-F", for suggestions.
std::vector<std::string> option_spellings(const CLI::App& sub) {
  std::vector<std::string> names;
  for (const CLI::Option* option : sub.get_options()) {
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
    for (const auto& name : option->get_snames()) names.push_back("-" + name);
    for (const auto& name : option->get_fnames()) {
      if (name.starts_with("no-")) names.push_back("--" + name);
    }
  }
  return names;
}

std::string suggestion(const CLI::App& sub, const std::string& word) {
  std::string name = word.substr(0, word.find('='));
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  // One letter from another is no likely typo: only long options get a suggestion.
  if (!name.starts_with("--")) return {};
  for (const auto& candidate : option_spellings(sub)) {
    if (!candidate.starts_with("--")) continue;
    std::size_t distance = edit_distance(name, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (best.empty() || best_distance > std::max<std::size_t>(2, name.size() / 3)) return {};
  return best;
}

std::string help_hint(const std::string& sub) {
  return fmt::format("run 'perfscope {} --help' for the options", sub);
}

// The names CLI11 puts before ':' in its messages ("-e,--event: ..."), as the user would type
// the first long one.
std::string option_in_message(const std::string& message) {
  std::string names = message.substr(0, message.find(':'));
  std::string first = names.substr(0, names.find(','));
  auto long_at = names.find("--");
  return long_at != std::string::npos ? names.substr(long_at, names.find(',', long_at) - long_at)
                                      : first;
}

// A number as the user would write it: "3600000.000000" is 3600000.
std::string plain_number(std::string text) {
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

// CLI11's range checks say "--freq: Value abc not in range 0.000000 to 1797…(309 digits)": as a
// sentence, the value first, and no bound nobody typed.
std::string plain_range_message(const std::string& message) {
  static const std::regex range(R"(^(\S+): Value (.*) not in range (\S+) to (\S+)$)");
  std::smatch match;
  if (!std::regex_match(message, match, range)) return message;
  std::string option = match[1], value = match[2];
  std::string low = plain_number(match[3]), high = plain_number(match[4]);
  bool unbounded = high.size() > 15;  // CLI11's PositiveNumber: up to the largest double
  char* end = nullptr;
  std::strtod(value.c_str(), &end);
  bool number = !value.empty() && end == value.c_str() + value.size();
  if (unbounded) {
    return number
               ? fmt::format("{} {}: must be more than {}", option, value, low)
               : fmt::format("{} {}: not a number (it must be more than {})", option, value, low);
  }
  return number ? fmt::format("{} {}: not in the range {} to {}", option, value, low, high)
                : fmt::format("{} {}: not a number (from {} to {})", option, value, low, high);
}

}  // namespace

void add_refused_option(CLI::App& app, const std::string& names, const std::string& description,
                        bool takes_value, std::string why) {
  auto refusal = [name = names.substr(0, names.find(',')), why](const auto&) {
    throw CLI::ValidationError(name, why);
  };
  if (takes_value) {
    app.add_option_function<std::string>(names, refusal, description)->type_name("VALUE");
  } else {
    app.add_flag_function(names, refusal, description);
  }
}

CLI::Validator readable_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        struct stat info {};
        if (::stat(path.c_str(), &info) != 0) {
          return fmt::format("cannot read {}: {}", path, std::strerror(errno));
        }
        if (S_ISDIR(info.st_mode)) return fmt::format("cannot read {}: it is a directory", path);
        return {};
      },
      "FILE");
}

std::vector<std::string> split_comma_list(const std::string& text) {
  std::vector<std::string> items;
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    if (!item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return items;
}

std::string command_rule_help(const std::string& verb) {
  return fmt::format(
      "COMMAND: perfscope {0} [options] [--] COMMAND [ARGS...]\n"
      "  The command starts at the first word that is neither an option nor an option's value,\n"
      "  or after '--'. Every word before it that starts with '-' must be one of the options\n"
      "  above; a '--' after the command's first word belongs to the command.",
      verb);
}

std::vector<std::string> split_off_command(const CLI::App& app, std::vector<std::string>& words) {
  std::size_t at = 0;
  // Global options, then the subcommand.
  while (at < words.size() && is_option_word(words[at])) ++at;
  if (at >= words.size()) return {};
  const CLI::App* sub = nullptr;
  for (const CLI::App* candidate : app.get_subcommands({})) {
    if (candidate->get_name() == words[at]) sub = candidate;
  }
  if (sub == nullptr) return {};
  // The subcommand that runs a command may be one of a subcommand's own ("sched record").
  if (!sub->get_prefix_command() && at + 1 < words.size()) {
    for (const CLI::App* candidate : sub->get_subcommands({})) {
      if (candidate->get_name() == words[at + 1]) {
        sub = candidate;
        ++at;
        break;
      }
    }
  }
  if (!sub->get_prefix_command()) return {};
  for (++at; at < words.size(); ++at) {
    const std::string& word = words[at];
    if (word == "--") {
      std::vector<std::string> command(words.begin() + static_cast<std::ptrdiff_t>(at) + 1,
                                       words.end());
      words.resize(at);
      return command;
    }
    if (!is_option_word(word)) return {};  // the command's first word: the rest is its own
    // Does this option take the next word as its value?
    const CLI::Option* option = nullptr;
    bool value_attached = false;
    if (word.starts_with("--")) {
      auto equals = word.find('=');
      value_attached = equals != std::string::npos;
      option = sub->get_option_no_throw(word.substr(0, equals));
    } else {
      // A cluster of short options ("-ag"): the first that takes a value takes the rest.
      for (std::size_t i = 1; i < word.size(); ++i) {
        option = sub->get_option_no_throw(std::string{'-', word[i]});
        if (option == nullptr) break;
        if (option->get_items_expected_max() > 0) {
          value_attached = i + 1 < word.size();
          break;
        }
      }
    }
    if (option != nullptr && option->get_items_expected_max() > 0 && !value_attached) ++at;
  }
  return {};
}

namespace {

bool is_help_word(const std::string& word) { return word == "-h" || word == "--help"; }

const CLI::App* subcommand_named(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == name) return sub;
  }
  return nullptr;
}

// Does `option` (the word at `word`, without an attached value) take the next word as its value?
bool takes_next_word(const CLI::App& sub, const std::string& word) {
  if (word.starts_with("--")) {
    if (word.find('=') != std::string::npos) return false;
    const CLI::Option* option = sub.get_option_no_throw(word);
    return option != nullptr && option->get_items_expected_max() > 0;
  }
  for (std::size_t i = 1; i < word.size(); ++i) {
    const CLI::Option* option = sub.get_option_no_throw(std::string{'-', word[i]});
    if (option == nullptr) return false;
    if (option->get_items_expected_max() > 0) return i + 1 == word.size();
  }
  return false;
}

}  // namespace

std::optional<std::string> help_text_requested(const CLI::App& app,
                                               const std::vector<std::string>& words) {
  std::size_t at = 0;
  while (at < words.size() && is_option_word(words[at]) && !is_help_word(words[at])) ++at;
  if (at >= words.size()) return std::nullopt;
  if (is_help_word(words[at])) return app.help();
  const CLI::App* sub = subcommand_named(app, words[at]);
  if (sub == nullptr) return std::nullopt;
  std::string path = app.get_name();
  for (++at; at < words.size(); ++at) {
    const std::string& word = words[at];
    if (word == "--") break;
    if (is_help_word(word)) return sub->help(path);
    if (is_option_word(word)) {
      if (takes_next_word(*sub, word)) ++at;
      continue;
    }
    const CLI::App* nested = subcommand_named(*sub, word);
    if (nested != nullptr) {
      path += " " + sub->get_name();
      sub = nested;
      continue;
    }
    if (sub->get_prefix_command()) break;  // the measured command's first word: the rest is its
  }
  return std::nullopt;
}

void check_no_unknown_option(const CLI::App& subcommand) {
  auto left = subcommand.remaining();
  if (!left.empty() && is_option_word(left.front())) {
    throw CLI::ExtrasError(subcommand.get_name(), {left.front()});
  }
}

void print_subcommand_list(const CLI::App& app, std::FILE* out) {
  fmt::print(out, "\n usage: perfscope [--version] [-v] COMMAND [ARGS]\n\n");
  fmt::print(out, " The perfscope commands are:\n");
  for (const CLI::App* sub : app.get_subcommands({})) {
    fmt::print(out, "   {:<10} {}\n", sub->get_name(), sub->get_description());
  }
  fmt::print(out, "\n See 'perfscope COMMAND --help' for more information on a command.\n\n");
}

int report_parse_error(CLI::App& app, const CLI::ParseError& error) {
  if (dynamic_cast<const CLI::CallForHelp*>(&error) != nullptr ||
      dynamic_cast<const CLI::CallForAllHelp*>(&error) != nullptr ||
      dynamic_cast<const CLI::CallForVersion*>(&error) != nullptr) {
    return app.exit(error);
  }
  const CLI::App* sub = selected_subcommand(app);
  if (sub == nullptr) {
    std::vector<std::string> left = app.remaining();
    std::string word = left.empty() ? std::string() : left.front();
    if (!word.empty() && !is_option_word(word)) {
      std::string best;
      std::size_t best_distance = 3;
      for (const CLI::App* candidate : app.get_subcommands({})) {
        std::size_t distance = edit_distance(word, candidate->get_name());
        if (distance < best_distance) {
          best_distance = distance;
          best = candidate->get_name();
        }
      }
      fmt::print(stderr,
                 "perfscope: '{}' is not a perfscope command{}; run 'perfscope' for the list\n",
                 word, best.empty() ? std::string() : fmt::format("; did you mean '{}'?", best));
      return 1;  // as perf for a word that names no command
    } else if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
      print_subcommand_list(app, stderr);
      return 1;
    } else {
      fmt::print(stderr, "perfscope: {}; run 'perfscope --help' for the options\n", error.what());
    }
    return usage_error_status;
  }
  const std::string name = sub->get_name();
  // A subcommand of subcommands (sched) given a word that names none of them.
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr &&
      !sub->get_subcommands({}).empty()) {
    std::vector<std::string> left = sub->remaining();
    std::string names;
    for (const CLI::App* nested : sub->get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + nested->get_name();
    }
    if (!left.empty() && !is_option_word(left.front())) {
      fmt::print(stderr, "perfscope {}: '{}' is not a {} subcommand (they are {}); {}\n", name,
                 left.front(), name, names, help_hint(name));
    } else {
      fmt::print(stderr, "perfscope {}: give a subcommand: {}; {}\n", name, names, help_hint(name));
    }
    return usage_error_status;
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    std::vector<std::string> left = sub->remaining();
    std::string word = left.empty() ? std::string() : left.front();
    if (is_option_word(word)) {
      std::string best = suggestion(*sub, word);
      fmt::print(
          stderr, "perfscope {}: unknown option {}{}; {}\n", name, word.substr(0, word.find('=')),
          best.empty() ? std::string() : fmt::format("; did you mean {}?", best), help_hint(name));
    } else {
      fmt::print(stderr, "perfscope {}: unexpected argument '{}': {} takes no such word; {}\n",
                 name, word, name, help_hint(name));
    }
    return usage_error_status;
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    std::string option = option_in_message(error.what());
    fmt::print(stderr, "perfscope {}: option {} needs a value; give one ({} VALUE) or {}\n", name,
               option, option, help_hint(name));
    return usage_error_status;
  }
  std::string message = error.what();
  constexpr std::string_view not_converted = "Could not convert: ";
  if (message.starts_with(not_converted)) {
    // "Could not convert: --pid = abc": the option and the value the user wrote.
    std::string rest = message.substr(not_converted.size());
    auto equals = rest.find(" = ");
    if (equals != std::string::npos) {
      message = fmt::format("{} {}: not a value {} takes", rest.substr(0, equals),
                            rest.substr(equals + 3), rest.substr(0, equals));
    }
  }
  while (!message.empty() && (message.back() == '.' || message.back() == '\n')) message.pop_back();
  message = plain_range_message(message);
  fmt::print(stderr, "perfscope {}: {}; {}\n", name, message, help_hint(name));
  return usage_error_status;
}

int report_option_value_error(const CLI::App& app, std::string_view message) {
  const CLI::App* sub = selected_subcommand(app);
  std::string name = sub ? sub->get_name() : std::string();
  std::string text(message);
  while (!text.empty() && (text.back() == '.' || text.back() == '\n')) text.pop_back();
  if (name.empty()) {
    fmt::print(stderr, "perfscope: {}; run 'perfscope --help' for the options\n", text);
  } else {
    fmt::print(stderr, "perfscope {}: {}; {}\n", name, text, help_hint(name));
  }
  return usage_error_status;
}

void add_sample_filter_options(CLI::App& app, const SampleFilterOptions& targets) {
  auto names = [](const std::string& short_name, const char* long_names) {
    return short_name.empty() ? std::string(long_names) : short_name + "," + long_names;
  };
  app.add_option(names(targets.comm_short, "--comms,--comm"), *targets.comms,
                 "Only these commands (comma-separated)");
  app.add_option("--pid", *targets.pids, "Only these processes (comma-separated)")->delimiter(',');
  app.add_option("--tid", *targets.tids, "Only these threads (comma-separated)")->delimiter(',');
  app.add_option(names(targets.dso_short, "--dsos,--dso"), *targets.dsos,
                 "Only samples in these files (path or file name, comma-separated)");
  if (targets.symbols) {
    app.add_option(names(targets.symbol_short, "--symbols,--symbol"), *targets.symbols,
                   "Only samples in these functions (comma-separated)");
  }
}

void add_event_switch_options(CLI::App& app, EventSwitchOptions& targets) {
  app.add_option("--switch-on", targets.on,
                 "Consider the samples after a sample of this event only (until --switch-off)")
      ->type_name("EVENT");
  app.add_option("--switch-off", targets.off,
                 "Consider no sample after a sample of this event (until the next --switch-on)")
      ->type_name("EVENT");
  app.add_flag("--show-on-off-events", targets.show,
               "Keep the samples of the --switch-on/--switch-off events themselves");
}

void add_symbol_source_options(CLI::App& app, SymbolSourceOptions& targets) {
  app.add_option("--archive", targets.archives,
                 "Read the recorded files from this archive (perfscope archive's .tar.zst, perf "
                 "archive's .tar.bz2) or unpacked build-id directory; repeatable")
      ->allow_extra_args(false);
  app.add_option("--symfs", targets.symfs,
                 "Look for the recorded files under this directory (DIR/usr/lib/libc.so.6), as "
                 "perf's --symfs");
  app.add_option("--kallsyms", targets.kallsyms,
                 "Kernel symbols from this file (a copy of /proc/kallsyms), as perf's --kallsyms")
      ->check(readable_file());
  add_kernel_symbol_options(app, targets.kernel, "-k,--vmlinux", "-m,--modules");
  app.add_flag("--demangle{1},--no-demangle{-1}", targets.demangle,
               "C++ and Rust names demangled (the default) or as the symbol table holds them");
  app.add_flag("-f,--force", targets.force,
               "Accepted for perf's scripts: perf refuses a recording another user owns unless "
               "forced; perfscope reads any recording it can open");
}

void add_kernel_symbol_options(CLI::App& app, KernelSymbolOptions& targets,
                               const std::string& vmlinux_names, const std::string& modules_names) {
  app.add_option(vmlinux_names, targets.vmlinux,
                 "Kernel symbols from this vmlinux image (its symbol table, moved to where the "
                 "recording's kernel was) instead of kallsyms")
      ->check(readable_file());
  app.add_flag("--ignore-vmlinux", targets.ignore_vmlinux,
               "Do not look for a vmlinux of the recording's kernel (/boot/vmlinux-RELEASE, "
               "/usr/lib/debug/boot/vmlinux-RELEASE, ...): kernel symbols from kallsyms");
  app.add_flag("--demangle-kernel", targets.demangle_kernel,
               "Demangle kernel symbols too (Rust and C++ names in the kernel)");
  if (modules_names.empty()) return;
  app.add_flag(modules_names, targets.modules,
               "Module symbols of the live kernel: perfscope names module addresses from kallsyms "
               "(with their [module]) whether or not this is given");
}

void apply_kernel_symbol_options(const KernelSymbolOptions& options, SymbolizerOptions& symbols) {
  if (!options.ignore_vmlinux) symbols.vmlinux_path = options.vmlinux;
  symbols.search_vmlinux = !options.ignore_vmlinux;
  symbols.demangle_kernel = options.demangle_kernel;
}

void add_inline_option(CLI::App& app, int& choice) {
  app.add_flag("--inline,!--no-inline", choice,
               "Inlined calls as frames (DWARF debug info); the default for recordings with DWARF "
               "call chains, as perf");
}

void add_threads_option(CLI::App& app, std::size_t& threads) {
  app.add_option("--threads", threads,
                 "Threads to analyse the recording on (default: the CPUs this process may use, "
                 "at most 16, from 16 MiB of data on; 1: one thread). The output is the same "
                 "whatever the number")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1024}));
}

bool inline_frames_wanted(int choice, const PerfDataReader& reader) {
  if (choice != 0) return choice > 0;
  for (const auto& event : reader.events()) {
    if ((event.attr.sample_type & abi::sample_format::stack_user) != 0) return true;
  }
  return false;
}

SymbolSources::SymbolSources(const SymbolSourceOptions& options) {
  for (const std::string& archive : options.archives) {
    std::error_code error;
    if (std::filesystem::is_directory(archive, error)) {
      roots_.build_id_dirs.push_back(archive);  // already unpacked, or a build-id cache
      continue;
    }
    try {
      extracted_.push_back(ExtractedSymbolArchive::extract(archive));
    } catch (const SymbolArchiveError& failure) {
      throw std::runtime_error(fmt::format("--archive: {}", failure.what()));
    }
    roots_.build_id_dirs.push_back(extracted_.back().directory());
  }
  if (!options.symfs.empty()) {
    std::error_code error;
    if (!std::filesystem::is_directory(options.symfs, error)) {
      throw std::runtime_error(
          fmt::format("--symfs {}: not a directory (give the directory the recording machine's "
                      "files are copied or mounted under)",
                      options.symfs));
    }
    roots_.symfs = options.symfs;
  }
  kallsyms_ = options.kallsyms;
  kernel_ = options.kernel;
  demangle_ = options.demangle;
}

SymbolSources::~SymbolSources() = default;

void SymbolSources::apply(SymbolizerOptions& symbols) const {
  symbols.lookup = roots_;
  if (!kallsyms_.empty()) {
    symbols.kallsyms_path = kallsyms_;
    symbols.kallsyms_path_chosen = true;
  }
  if (demangle_ != 0) symbols.demangle = demangle_ > 0;
  apply_kernel_symbol_options(kernel_, symbols);
  // perf's buildid.dir setting: where its build-id cache is (kallsyms copies, binaries).
  if (auto cache = perf_config().get("buildid.dir")) symbols.build_id_cache_dir = *cache;
}

std::string find_helper(std::string_view name, std::string_view what, std::string_view target) {
  char exe[PATH_MAX + 1] = {};
  ssize_t length = ::readlink("/proc/self/exe", exe, PATH_MAX);
  std::string self = length > 0 ? std::string(exe, static_cast<std::size_t>(length)) : "";
  std::string dir = self.substr(0, self.rfind('/'));
  for (const std::string& candidate :
       {fmt::format("{}/{}", dir, name), fmt::format("{}/../libexec/perfscope/{}", dir, name)}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw std::runtime_error(fmt::format(
      "cannot find {} ({}) beside {}: install it there (cmake --install), or build the {} target",
      name, what, self.empty() ? std::string("the perfscope binary") : self, target));
}

CLI::Option* add_event_list_option(CLI::App& app, std::string& events,
                                   const std::string& description) {
  return app
      .add_option_function<std::vector<std::string>>(
          "-e,--event",
          [&events](const std::vector<std::string>& lists) {
            events.clear();
            for (const std::string& list : lists) {
              if (!events.empty()) events += ',';
              events += list;
            }
          },
          description)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace perfscope::cli
