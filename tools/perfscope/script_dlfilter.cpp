#include "script_dlfilter.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <stdexcept>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/annotate/disassembler.hpp"

namespace perfscope::cli {

namespace dl = abi::dlfilter;
namespace sf = abi::sample_format;

namespace {

// perf's dlfilters directory: $PERF_EXEC_PATH/dlfilters, else Debian's perf-core's.
std::string dlfilters_directory() {
  const char* exec_path = std::getenv("PERF_EXEC_PATH");
  return std::string(exec_path != nullptr && *exec_path != '\0' ? exec_path
                                                                : "/usr/lib/perf-core") +
         "/dlfilters";
}

std::string find_filter(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  if (::access(name.c_str(), R_OK) == 0) return "./" + name;
  std::string installed = dlfilters_directory() + "/" + name;
  if (::access(installed.c_str(), R_OK) == 0) return installed;
  throw std::runtime_error(fmt::format("--dlfilter {}: no such file here or in {} (give its path)",
                                       name, dlfilters_directory()));
}

}  // namespace

// What the callbacks answer for the sample being filtered; the strings the filter gets point
// into it and stay valid until the next sample, as perf's do.
struct DlFilter::Context {
  struct Location {
    dl::AddressLocation al;
    std::string sym, dso;
    std::vector<std::uint8_t> build_id;
    std::string source_file;  // empty: no line table names it
    std::uint32_t source_line = 0;
  };
  const SampleFilterInput* input = nullptr;
  std::vector<std::string> arguments;
  std::vector<char*> argv;
  Location ip, addr, any;
  bool ip_done = false, addr_done = false, insn_done = false;
  std::string comm;
  std::array<std::uint8_t, 16> insn{};  // x86's longest instruction
  std::uint32_t insn_length = 0;
  std::unique_ptr<Disassembler> disassembler;

  void begin(const SampleFilterInput& sample) {
    input = &sample;
    ip_done = addr_done = insn_done = false;
  }

  // The bytes of the file mapped at `address`, read at its offset in the file: at most `length`
  // of them; -1 for the kernel's and anonymous memory (perf reads those from no file either).
  std::int32_t read_code(std::uint64_t address, void* buffer, std::uint32_t length) {
    if (input == nullptr || buffer == nullptr) return -1;
    const ResolvedAddress& where =
        input->resolver.resolve(input->sample.pid, {address, input->cpumode, false});
    if (where.kernel || !where.mapping || where.dso.empty() || where.dso.front() != '/') return -1;
    std::ifstream file{std::string(where.dso), std::ios::binary};
    if (!file.seekg(static_cast<std::streamoff>(where.dso_address))) return -1;
    file.read(static_cast<char*>(buffer), length);
    return static_cast<std::int32_t>(file.gcount());
  }

  // perf's insn: the whole instruction at the sample's ip, its length decoded (x86-64 as perf
  // decodes it; AArch64's fixed four bytes too, where perf gives none).
  void fetch_instruction() {
    insn_done = true;
    insn_length = 0;
    if (input == nullptr || input->sample.ip == 0) return;
    std::int32_t read = read_code(input->sample.ip, insn.data(), insn.size());
    if (read <= 0) return;
#if defined(__aarch64__)
    constexpr Architecture host = Architecture::aarch64;
#else
    constexpr Architecture host = Architecture::x86_64;
#endif
    if (!disassembler) disassembler = make_disassembler(host);
    auto decoded = disassembler->disassemble(
        std::span<const std::uint8_t>(insn.data(), static_cast<std::size_t>(read)),
        input->sample.ip);
    if (decoded.empty() || decoded.front().mnemonic == ".byte") return;
    insn_length = decoded.front().size;
  }

  // `address` named as perf script names it, into `out`; false when no mapping holds it.
  bool locate(std::uint64_t address, Location& out) {
    if (input == nullptr) return false;
    const SampleRecord& sample = input->sample;
    auto cpumode = input->cpumode;
    // An address in the kernel half is the kernel's whatever mode the sample was taken in.
    if (address >= 0xffff800000000000ULL) cpumode = abi::record_misc::kernel;
    const ResolvedAddress& where = input->resolver.resolve(sample.pid, {address, cpumode, false});
    std::uint32_t size = out.al.size;
    out.al = dl::AddressLocation{};
    out.al.size = size != 0 ? size : sizeof(dl::AddressLocation);
    out.sym.assign(where.symbol.symbol);
    out.dso.assign(where.dso);
    out.source_file.assign(where.kernel ? std::string_view() : where.symbol.source.file);
    out.source_line = where.symbol.source.line;
    out.al.addr = where.dso_address;
    out.al.is_kernel_ip = where.kernel ? 1 : 0;
    out.al.is_64_bit = 1;
    if (!out.sym.empty()) {
      out.al.sym = out.sym.c_str();
      out.al.symoff = static_cast<std::uint32_t>(where.function_offset());
      out.al.sym_start = where.dso_address - where.symbol.offset;
      out.al.sym_end = out.al.sym_start + where.symbol.size;
      out.al.sym_binding = where.symbol.binding;
    }
    if (!out.dso.empty()) out.al.dso = out.dso.c_str();
    out.build_id.clear();
    if (where.mapping) {
      auto id = input->resolver.build_id_of(*where.mapping);
      out.build_id.assign(id.begin(), id.end());
    }
    if (!out.build_id.empty()) {
      out.al.buildid = out.build_id.data();
      out.al.buildid_size = static_cast<std::uint32_t>(out.build_id.size());
    }
    return where.mapping.has_value() || where.kernel;
  }
};

namespace {

DlFilter::Context& context_of(void* ctx) { return *static_cast<DlFilter::Context*>(ctx); }

const dl::AddressLocation* resolve_ip(void* ctx) {
  auto& context = context_of(ctx);
  if (context.input == nullptr) return nullptr;
  if (!context.ip_done) {
    context.ip.al.size = sizeof(dl::AddressLocation);
    context.locate(context.input->sample.ip, context.ip);
    context.comm.assign(context.input->resolver.maps().comm_of(context.input->sample.tid));
    context.ip.al.comm = context.comm.c_str();
    context.ip_done = true;
  }
  return &context.ip.al;
}

const dl::AddressLocation* resolve_addr(void* ctx) {
  auto& context = context_of(ctx);
  if (context.input == nullptr || !context.input->sample.has(sf::addr)) return nullptr;
  if (!context.addr_done) {
    context.addr.al.size = sizeof(dl::AddressLocation);
    context.locate(context.input->sample.addr, context.addr);
    context.addr_done = true;
  }
  return &context.addr.al;
}

char** arguments(void* ctx, int* count) {
  auto& context = context_of(ctx);
  if (count != nullptr) *count = static_cast<int>(context.arguments.size());
  return context.argv.data();
}

std::int32_t resolve_address(void* ctx, std::uint64_t address, dl::AddressLocation* al) {
  auto& context = context_of(ctx);
  if (al == nullptr || al->size == 0) return -1;
  context.any.al.size = sizeof(dl::AddressLocation);
  if (!context.locate(address, context.any)) return -1;
  // The caller's structure may be an older, shorter one: only what it has room for.
  std::memcpy(al, &context.any.al, std::min<std::size_t>(al->size, sizeof(dl::AddressLocation)));
  al->size = std::min<std::uint32_t>(al->size, sizeof(dl::AddressLocation));
  return 0;
}

const std::uint8_t* instruction(void* ctx, std::uint32_t* length) {
  auto& context = context_of(ctx);
  if (length == nullptr) return nullptr;
  *length = 0;
  if (context.input == nullptr) return nullptr;
  if (!context.insn_done) context.fetch_instruction();
  *length = context.insn_length;
  return context.insn_length != 0 ? context.insn.data() : nullptr;
}

// perf's srcline: the ip's source file (its path as the DWARF gives it) and line; nullptr for
// the kernel's and for files without line tables. The symbolizer reads line tables when a
// dlfilter is loaded, since the filter may ask.
const char* source_line(void* ctx, std::uint32_t* line) {
  auto& context = context_of(ctx);
  if (line != nullptr) *line = 0;
  if (context.input == nullptr) return nullptr;
  resolve_ip(ctx);
  if (context.ip.source_file.empty()) return nullptr;
  if (line != nullptr) *line = context.ip.source_line;
  return context.ip.source_file.c_str();
}

void* event_attr(void* ctx) {
  auto& context = context_of(ctx);
  if (context.input == nullptr) return nullptr;
  return const_cast<abi::PerfEventAttr*>(&context.input->event.attr);
}

std::int32_t object_code(void* ctx, std::uint64_t ip, void* buffer, std::uint32_t length) {
  return context_of(ctx).read_code(ip, buffer, length);
}

}  // namespace

DlFilter::DlFilter(const std::string& path, std::vector<std::string> arguments)
    : path_(find_filter(path)), context_(std::make_unique<Context>()) {
  context_->arguments = std::move(arguments);
  for (std::string& argument : context_->arguments) context_->argv.push_back(argument.data());
  context_->argv.push_back(nullptr);
  handle_ = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    throw std::runtime_error(fmt::format("--dlfilter {}: {}", path_, ::dlerror()));
  }
  filter_event_ = reinterpret_cast<dl::FilterFunction>(::dlsym(handle_, "filter_event"));
  filter_event_early_ =
      reinterpret_cast<dl::FilterFunction>(::dlsym(handle_, "filter_event_early"));
  stop_ = reinterpret_cast<dl::StopFunction>(::dlsym(handle_, "stop"));
  if (filter_event_ == nullptr && filter_event_early_ == nullptr) {
    ::dlclose(handle_);
    throw std::runtime_error(
        fmt::format("--dlfilter {}: exports neither filter_event nor filter_event_early", path_));
  }
  // The filter calls back through its global perf_dlfilter_fns, which perf fills in.
  if (auto* functions = static_cast<dl::Functions*>(::dlsym(handle_, "perf_dlfilter_fns"))) {
    dl::Functions ours;
    ours.resolve_ip = resolve_ip;
    ours.resolve_addr = resolve_addr;
    ours.args = cli::arguments;
    ours.resolve_address = resolve_address;
    ours.insn = instruction;
    ours.srcline = source_line;
    ours.attr = event_attr;
    ours.object_code = object_code;
    std::memcpy(functions, &ours, sizeof ours);
  }
  filter_stdout_ = static_cast<std::FILE**>(::dlsym(handle_, "stdout"));
  filter_fpending_ = reinterpret_cast<std::size_t (*)(std::FILE*)>(::dlsym(handle_, "__fpending"));
  filter_fflush_ = reinterpret_cast<int (*)(std::FILE*)>(::dlsym(handle_, "fflush"));
  if (auto start = reinterpret_cast<dl::StartFunction>(::dlsym(handle_, "start"))) {
    int status = start(&data_, context_.get());
    if (status < 0) {
      ::dlclose(handle_);
      throw std::runtime_error(
          fmt::format("--dlfilter {}: its start() failed ({})", path_, status));
    }
  }
}

DlFilter::~DlFilter() {
  write_pending_output();
  if (handle_ != nullptr) ::dlclose(handle_);
}

bool DlFilter::call(dl::FilterFunction function, const SampleFilterInput& input, const char* name) {
  if (function == nullptr) return true;
  const SampleRecord& sample = input.sample;
  dl::Sample view;
  view.ip = sample.ip;
  view.pid = static_cast<std::int32_t>(sample.pid);
  view.tid = static_cast<std::int32_t>(sample.tid);
  view.time = sample.time;
  view.addr = sample.addr;
  view.id = sample.id;
  view.stream_id = sample.stream_id;
  view.period = sample.period;
  if (sample.has(sf::weight_struct)) {
    view.weight = sample.weight.var1_dw();
    view.ins_lat = sample.weight.var2_w();
    view.p_stage_cyc = sample.weight.var3_w();
  } else {
    view.weight = sample.weight.full;
  }
  view.transaction = sample.transaction;
  view.cpu = sample.has(sf::cpu) ? static_cast<std::int32_t>(sample.cpu) : -1;
  view.data_src = sample.data_src;
  view.phys_addr = sample.phys_addr;
  view.data_page_size = sample.data_page_size;
  view.code_page_size = sample.code_page_size;
  view.cgroup = sample.cgroup;
  view.cpumode = static_cast<std::uint8_t>(input.cpumode);
  view.addr_correlates_sym = sample.has(sf::addr) ? 1 : 0;
  view.misc = input.record.view.header.misc;
  view.raw_size = static_cast<std::uint32_t>(sample.raw.size());
  view.raw_data = sample.raw.empty() ? nullptr : sample.raw.data();
  view.brstack_nr = sample.branch_stack.entries.size();
  view.brstack = reinterpret_cast<const dl::BranchEntry*>(sample.branch_stack.entries.data());
  view.raw_callchain_nr = sample.callchain.size();
  view.raw_callchain = sample.callchain.empty() ? nullptr : sample.callchain.data();
  view.event = input.event.name.c_str();
  context_->begin(input);
  int status = function(data_, &view, context_.get());
  if (status < 0) {
    throw std::runtime_error(fmt::format("--dlfilter {}: {} failed ({}) on the sample at {}", path_,
                                         name, status, sample.time));
  }
  return status == 0;
}

bool DlFilter::keep_early(const SampleFilterInput& input) {
  return call(filter_event_early_, input, "filter_event_early");
}

bool DlFilter::keep(const SampleFilterInput& input) {
  return call(filter_event_, input, "filter_event");
}

bool DlFilter::has_pending_output() const {
  return filter_stdout_ != nullptr && filter_fpending_ != nullptr && filter_fflush_ != nullptr &&
         *filter_stdout_ != nullptr && filter_fpending_(*filter_stdout_) != 0;
}

void DlFilter::write_pending_output() {
  if (filter_stdout_ != nullptr && filter_fflush_ != nullptr && *filter_stdout_ != nullptr) {
    filter_fflush_(*filter_stdout_);
  }
}

bool DlFilter::finish(std::string& error) {
  context_->input = nullptr;
  if (stop_ == nullptr) return true;
  int status = stop_(data_, context_.get());
  stop_ = nullptr;
  write_pending_output();  // before dlclose, after everything perfscope printed
  if (status < 0) {
    error = fmt::format("--dlfilter {}: its stop() failed ({})", path_, status);
    return false;
  }
  return true;
}

std::string list_dlfilters() {
  std::string out = "List of available dlfilters:\n";
  std::error_code error;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dlfilters_directory(), error)) {
    if (entry.path().extension() == ".so") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) continue;
    const char* description = nullptr;
    if (auto describe =
            reinterpret_cast<dl::DescriptionFunction>(::dlsym(handle, "filter_description"))) {
      const char* long_description = nullptr;
      description = describe(&long_description);
    }
    out += fmt::format("  {:<36} {}\n", file.filename().string(),
                       description != nullptr ? description : "");
    ::dlclose(handle);
  }
  return out;
}

}  // namespace perfscope::cli
