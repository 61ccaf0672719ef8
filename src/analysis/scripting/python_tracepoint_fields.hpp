// A tracepoint sample's fields as perf's Python engine hands them to a handler
// (`subsystem__event(event_name, context, common_cpu, ..., field, ...)` or trace_unhandled's
// dict), and the print fmt's flag and symbol tables it pushes into the script once per event
// (define_flag_field, define_flag_value, define_symbolic_field, define_symbolic_value).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/tracepoint_format.hpp"
#include "python_api.hpp"

struct tep_format_field;
struct tep_print_arg;
struct tep_print_flag_sym;

namespace perfscope::python {

class TracepointFields {
 public:
  explicit TracepointFields(const TracepointFormat& format);

  // "sched__sched_switch": the handler's name, and the event_name argument.
  const std::string& handler_name() const noexcept { return handler_name_; }
  PyObject* handler_name_object() const noexcept { return handler_name_object_.get(); }
  // The fields a handler receives (the format's, without the common_* ones).
  std::size_t count() const noexcept { return fields_.size(); }
  // Each field's value (new references) into `tuple` from position `at`, in format order.
  void put_values(std::span<const std::byte> raw, PyObject* tuple, Py_ssize_t at);
  // The same into `dict`, by field name.
  void put_values(std::span<const std::byte> raw, PyObject* dict);
  // A common_* field's value (common_pid), read as perf reads it; 0 when the format lacks it
  // or the record is too short.
  std::int64_t common(std::span<const std::byte> raw, const char* name) const;

  // Calls the script's define_* functions (those `main_dict` has) with the tables of the print
  // fmt, walked as perf walks it; `current_field` carries over from event to event as perf's
  // does. False when a call raised (the Python error is set).
  bool define_symbols(PyObject* main_dict, std::string& current_field) const;

 private:
  PyObject* value(std::span<const std::byte> raw, std::size_t index);
  bool define_walk(PyObject* main_dict, const tep_print_arg* arg, std::string& current) const;
  bool define_values(PyObject* main_dict, bool symbolic, const tep_print_flag_sym* values,
                     const std::string& field) const;

  std::string handler_name_;
  Ref handler_name_object_;
  const TracepointFormat& format_;
  std::vector<tep_format_field*> fields_;
  std::vector<Ref> names_;  // the fields' names, interned
  // perf stops passing a string field as str once one of its values was not printable.
  std::vector<bool> not_string_;
};

}  // namespace perfscope::python
