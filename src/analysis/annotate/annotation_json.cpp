// annotate --format json: docs/ANNOTATE_JSON.md. Addresses are hex strings: kernel addresses do
// not fit the doubles that JSON readers make of numbers.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "perfscope/analysis/annotate/annotation_output.hpp"

namespace perfscope {

namespace {

// Keys in the order the schema lists them, for readers who look at it.
using json = nlohmann::ordered_json;

std::string hex(std::uint64_t value) { return fmt::format("{:#x}", value); }

json source_json(const AnnotatedSource& source) {
  if (source.file.empty()) return nullptr;
  return json{{"file", source.file}, {"line", source.line}};
}

const char* branch_name(BranchKind kind) {
  switch (kind) {
    case BranchKind::jump: return "jump";
    case BranchKind::call: return "call";
    case BranchKind::ret: return "return";
    case BranchKind::none: break;
  }
  return nullptr;
}

json instruction_json(const AnnotatedInstruction& entry, bool callees) {
  const Instruction& instruction = entry.instruction;
  std::string bytes;
  for (std::uint8_t byte : instruction.bytes) bytes += fmt::format("{:02x}", byte);
  json inlined = json::array();
  for (const AnnotatedInline& call : entry.inlined) {
    inlined.push_back(json{{"function", call.function},
                           {"location", source_json(call.location)},
                           {"call_site", source_json(call.call_site)}});
  }
  json out{{"address", hex(instruction.address)},
           {"bytes", bytes},
           {"text", entry.text},
           {"mnemonic", instruction.mnemonic},
           {"operands", instruction.operands},
           {"samples", entry.samples},
           {"period", entry.period},
           {"percent", entry.percent},
           {"source", source_json(entry.source)},
           {"inline_chain", std::move(inlined)}};
  if (callees) {
    out["callee_samples"] = entry.callee_samples;
    out["callee_period"] = entry.callee_period;
    out["callee_percent"] = entry.callee_percent;
  }
  if (const char* kind = branch_name(instruction.branch)) {
    json branch{{"kind", kind}};
    if (instruction.target) branch["target"] = hex(*instruction.target);
    if (!entry.target_name.empty()) branch["target_name"] = entry.target_name;
    out["branch"] = std::move(branch);
  }
  return out;
}

json function_json(const AnnotatedFunction& function, bool callees) {
  json instructions = json::array();
  for (const AnnotatedInstruction& entry : function.instructions) {
    instructions.push_back(instruction_json(entry, callees));
  }
  json lines = json::array();
  for (const AnnotatedSourceLine& line : source_lines(function)) {
    json item{{"function", line.function}, {"file", line.file},     {"line", line.line},
              {"samples", line.samples},   {"period", line.period}, {"percent", line.percent}};
    if (callees) {
      item["callee_samples"] = line.callee_samples;
      item["callee_period"] = line.callee_period;
      item["callee_percent"] = line.callee_percent;
    }
    if (!line.caller.empty()) {
      item["inlined_into"] =
          json{{"function", line.caller}, {"call_site", source_json(line.call_site)}};
    }
    lines.push_back(std::move(item));
  }
  json out{{"name", function.name},
           {"dso", function.dso},
           {"build_id", function.build_id},
           {"kernel", function.kernel},
           {"architecture", function.architecture
                                ? json(std::string(architecture_name(*function.architecture)))
                                : json(nullptr)},
           {"start", hex(function.start)},
           {"size", function.size},
           {"samples", function.samples},
           {"period", function.period},
           {"percent_of_total", function.percent_of_total},
           {"unplaced_samples", function.unplaced_samples},
           {"no_code_reason",
            function.no_code_reason.empty() ? json(nullptr) : json(function.no_code_reason)},
           {"instructions", std::move(instructions)},
           {"source_lines", std::move(lines)}};
  if (callees) {
    out["callee_samples"] = function.callee_samples;
    out["callee_period"] = function.callee_period;
    out["unplaced_callee_samples"] = function.unplaced_callee_samples;
  }
  return out;
}

}  // namespace

std::string annotation_json(const Annotation& annotation) {
  json functions = json::array();
  for (const AnnotatedFunction& function : annotation.functions) {
    functions.push_back(function_json(function, annotation.callees));
  }
  json document{{"schema", "perfscope-annotate"},
                {"version", 1},
                {"event", annotation.event},
                {"total_samples", annotation.total_samples},
                {"total_period", annotation.total_period},
                {"callees", annotation.callees},
                {"functions", std::move(functions)},
                {"warnings", annotation.warnings},
                {"notes", annotation.notes}};
  // Replacement characters for bytes that are not UTF-8 (names and paths come from files).
  return document.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace perfscope
