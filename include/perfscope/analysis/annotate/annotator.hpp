// Annotator: where inside a function its samples went. The samples of a recording are read through
// the same pipeline as `report` (PerfDataReader -> ProfileBuilder: TaskMaps, Symbolizer, the
// filters), folded by sampled address per function, and each chosen function's code is read from
// its ELF file (or /proc/kcore for the kernel), disassembled in process and given its source
// lines and inlined calls from DWARF.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/analysis/annotate/disassembler.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"

namespace perfscope {

class PerfDataReader;

struct AnnotateOptions {
  // The samples to count (comm, pid, tid, dso filters) and how symbols are found (debug root,
  // perf-PID.map directory, kallsyms); source lines and inline frames are always on.
  ProfileOptions profile;
  // Functions to annotate by name (as `report` prints them, or with parameter lists). Empty:
  // every function with at least percent_limit % of the samples, hottest first.
  std::vector<std::string> symbols;
  double percent_limit = 5.0;
  std::string kcore_path = "/proc/kcore";  // where kernel code bytes are read
  // Also count the samples taken in the functions each function called (from the call chains):
  // each call instruction gets the samples of the calls it made, and the shares are of the
  // function's total (its own samples plus its callees').
  bool callees = false;
  // Named functions without callees or thread filters: leave out, before the walk orders them,
  // the samples that lie where no function of those names is, and only count them
  // (NamedFunctionSieve). The annotation is the same either way; off, every sample is resolved
  // (the tests compare the two).
  bool sieve_samples = true;
  // x86-64's assembly syntax: AT&T (objdump's and perf's default) or Intel (-M intel).
  AssemblySyntax syntax = AssemblySyntax::att;
};

// One place in the source: a file and line, with the function its code belongs to.
struct AnnotatedSource {
  std::string file;  // empty when the address has no line information
  std::uint32_t line = 0;
};

// A call inlined at an instruction: `function`'s code, from `location`, called at `call_site`.
struct AnnotatedInline {
  std::string function;
  AnnotatedSource location;   // inside `function`
  AnnotatedSource call_site;  // in the function it was inlined into
};

struct AnnotatedInstruction {
  Instruction
      instruction;   // address in the file's virtual addresses (the kernel's for kernel code)
  std::string text;  // mnemonic and operands, with branch targets named
  std::uint64_t samples = 0;
  std::uint64_t period = 0;
  double percent = 0;  // of the function's period (with callees: of its total period)
  // With callees: the samples taken below the calls this instruction made (a call's return
  // address is the next instruction's), and their share of the function's total period.
  std::uint64_t callee_samples = 0;
  std::uint64_t callee_period = 0;
  double callee_percent = 0;
  // The innermost source line of the instruction (inside the innermost inlined function).
  AnnotatedSource source;
  std::vector<AnnotatedInline> inlined;  // innermost first; empty when nothing was inlined here
  std::string target_name;               // "leaf_60+0x38", "settle"; empty when none
};

struct AnnotatedFunction {
  std::string name;
  std::string dso;
  std::string build_id;  // as recorded, hex; empty when unknown
  bool kernel = false;
  std::optional<Architecture> architecture;
  std::uint64_t start = 0;  // virtual address of its first byte
  std::uint64_t size = 0;
  std::uint64_t samples = 0, period = 0;
  // With callees: the samples whose call chain passes through this function to another (each
  // sample once, also when it recurses); the function's total is these plus its own.
  std::uint64_t callee_samples = 0, callee_period = 0;
  double percent_of_total = 0;  // of the event's period (after the filters): own (+ callees)
  // Why the instructions have no code (JIT code, a file no longer there, no permission for
  // /proc/kcore); then `instructions` lists the sampled addresses alone.
  std::string no_code_reason;
  std::vector<AnnotatedInstruction> instructions;
  // Samples at addresses the disassembly does not start an instruction at (a file that changed,
  // data in code): counted here, not lost.
  std::uint64_t unplaced_samples = 0;
  std::uint64_t unplaced_callee_samples = 0;  // return addresses no instruction ends at
};

struct Annotation {
  std::string event;
  std::uint64_t total_samples = 0, total_period = 0;
  bool callees = false;  // the functions' callee samples are counted (AnnotateOptions::callees)
  std::vector<AnnotatedFunction> functions;
  std::vector<std::string> warnings;  // the reader's and symbolizer's, each once
  std::vector<std::string> notes;     // information (ProfileSummary::notes)
  std::string partial_data;           // ProfileSummary::partial_data
  // How many of the samples were counted without being ordered and named one by one
  // (AnnotateOptions::sieve_samples): they are in the totals and the functions all the same.
  std::uint64_t sieved_samples = 0;
};

// A name the user asked for that matches no sampled function; its message says whether the name
// exists with no samples, or suggests close names.
class AnnotateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One source line's share of a function: its own instructions and, for a line of the annotated
// function itself, the calls inlined at it; for a line of an inlined function, the function it
// was inlined into and where.
struct AnnotatedSourceLine {
  std::string function;  // whose code the line is: the annotated function or an inlined one
  std::string file;
  std::uint32_t line = 0;
  std::string caller;         // empty for the annotated function's own lines
  AnnotatedSource call_site;  // in `caller`
  std::uint64_t samples = 0, period = 0;
  double percent = 0;  // of the function's period (with callees: of its total)
  // With callees: the samples below the calls made from this line.
  std::uint64_t callee_samples = 0, callee_period = 0;
  double callee_percent = 0;
};

// The source lines of `function`, its own first (by file and line), then each inlined function's
// (by function, call site, line). Instructions without line information are left out.
std::vector<AnnotatedSourceLine> source_lines(const AnnotatedFunction& function);

// Reads `reader` and annotates. Throws AnnotateError for a named symbol that has no samples or
// does not exist, or whose file changed since the recording (build-id mismatch).
Annotation annotate(const PerfDataReader& reader, const AnnotateOptions& options);

}  // namespace perfscope
