#include "python_tracepoint_fields.hpp"

#include <traceevent/event-parse.h>

#include <climits>
#include <cstdlib>
#include <cstring>

namespace perfscope::python {

namespace {

// perf's is_printable_array in the C locale: NUL-terminated within `length`, and every byte
// before the NUL printable ASCII or white space.
bool printable_string(const unsigned char* bytes, std::size_t length) {
  if (length == 0 || bytes[length - 1] != 0) return false;
  for (std::size_t i = 0; i + 1 < length && bytes[i] != 0; ++i) {
    unsigned char c = bytes[i];
    bool print = c >= 0x20 && c <= 0x7e;
    bool space = c == ' ' || (c >= '\t' && c <= '\r');
    if (!print && !space) return false;
  }
  return true;
}

// A number as perf's engine makes it: zero-extended from the field's size (no sign extension
// below 8 bytes), signed 8-byte values negative.
PyObject* field_number(std::uint64_t value, bool is_signed) {
  if (is_signed) return PyLong_FromLongLong(static_cast<long long>(value));
  if (value <= static_cast<std::uint64_t>(LONG_MAX))
    return PyLong_FromLong(static_cast<long>(value));
  return PyLong_FromUnsignedLongLong(value);
}

std::uint64_t read_number(tep_event* event, const std::byte* at, std::size_t size) {
  switch (size) {
    case 1:
    case 2:
    case 4:
    case 8: return tep_read_number(event->tep, at, static_cast<int>(size));
    default: return 0;
  }
}

// eval_flag: a print fmt's flag value: a number, or one of the names the kernel leaves unexpanded.
std::uint64_t flag_value(const char* text) {
  if (text == nullptr) return 0;
  if (*text >= '0' && *text <= '9') return std::strtoull(text, nullptr, 0);
  static constexpr std::pair<const char*, std::uint64_t> names[] = {
      {"HI_SOFTIRQ", 0},      {"TIMER_SOFTIRQ", 1},     {"NET_TX_SOFTIRQ", 2},
      {"NET_RX_SOFTIRQ", 3},  {"BLOCK_SOFTIRQ", 4},     {"IRQ_POLL_SOFTIRQ", 5},
      {"TASKLET_SOFTIRQ", 6}, {"SCHED_SOFTIRQ", 7},     {"HRTIMER_SOFTIRQ", 8},
      {"RCU_SOFTIRQ", 9},     {"HRTIMER_NORESTART", 0}, {"HRTIMER_RESTART", 1}};
  for (const auto& [name, value] : names) {
    if (std::strcmp(name, text) == 0) return value;
  }
  return 0;
}

PyObject* c_text(const char* text) {
  return PyUnicode_DecodeUTF8(text != nullptr ? text : "",
                              static_cast<Py_ssize_t>(text != nullptr ? std::strlen(text) : 0),
                              "replace");
}

// Calls main_dict[name](*arguments) when the script defines it; false when it raised.
bool call_if_defined(PyObject* main_dict, const char* name, PyObject* arguments) {
  PyObject* function = PyDict_GetItemString(main_dict, name);
  if (function == nullptr || !PyCallable_Check(function)) return true;
  Ref result(PyObject_CallObject(function, arguments));
  return static_cast<bool>(result);
}

}  // namespace

TracepointFields::TracepointFields(const TracepointFormat& format) : format_(format) {
  tep_event* event = format.parsed_event();
  handler_name_ = format.system() + "__" + format.name();
  handler_name_object_ = Ref(c_text(handler_name_.c_str()));
  if (event == nullptr) return;
  for (tep_format_field* field = event->format.fields; field != nullptr; field = field->next) {
    fields_.push_back(field);
    names_.emplace_back(PyUnicode_InternFromString(field->name));
    not_string_.push_back(false);
  }
}

PyObject* TracepointFields::value(std::span<const std::byte> raw, std::size_t index) {
  tep_format_field* field = fields_[index];
  tep_event* event = format_.parsed_event();
  const auto size = raw.size();
  if ((field->flags & TEP_FIELD_IS_ARRAY) != 0) {
    std::size_t offset = static_cast<std::size_t>(field->offset);
    std::size_t length = static_cast<std::size_t>(field->size);
    if ((field->flags & TEP_FIELD_IS_DYNAMIC) != 0) {
      std::uint64_t location =
          offset + length <= size ? read_number(event, raw.data() + offset, length) : 0;
      offset = location & 0xffff;
      length = (location >> 16) & 0xffff;
      if ((field->flags & TEP_FIELD_IS_RELATIVE) != 0) {
        offset += static_cast<std::size_t>(field->offset + field->size);
      }
    }
    if (offset > size) offset = size;
    if (length > size - offset) length = size - offset;
    const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data() + offset);
    if ((field->flags & TEP_FIELD_IS_STRING) != 0 && !not_string_[index] &&
        printable_string(bytes, length)) {
      return c_text(reinterpret_cast<const char*>(bytes));
    }
    not_string_[index] = true;
    return PyByteArray_FromStringAndSize(reinterpret_cast<const char*>(bytes),
                                         static_cast<Py_ssize_t>(length));
  }
  const auto offset = static_cast<std::size_t>(field->offset);
  const auto length = static_cast<std::size_t>(field->size);
  std::uint64_t number =
      offset + length <= size ? read_number(event, raw.data() + offset, length) : 0;
  return field_number(number, (field->flags & TEP_FIELD_IS_SIGNED) != 0);
}

void TracepointFields::put_values(std::span<const std::byte> raw, PyObject* tuple, Py_ssize_t at) {
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    PyTuple_SET_ITEM(tuple, at + static_cast<Py_ssize_t>(i), value(raw, i));
  }
}

void TracepointFields::put_values(std::span<const std::byte> raw, PyObject* dict) {
  for (std::size_t i = 0; i < fields_.size(); ++i) set_item(dict, names_[i].get(), value(raw, i));
}

std::int64_t TracepointFields::common(std::span<const std::byte> raw, const char* name) const {
  tep_event* event = format_.parsed_event();
  if (event == nullptr) return 0;
  tep_format_field* field = tep_find_common_field(event, name);
  if (field == nullptr) field = tep_find_field(event, name);
  if (field == nullptr) return 0;
  auto offset = static_cast<std::size_t>(field->offset);
  auto length = static_cast<std::size_t>(field->size);
  if (offset + length > raw.size()) return 0;
  return static_cast<std::int64_t>(read_number(event, raw.data() + offset, length));
}

bool TracepointFields::define_values(PyObject* main_dict, bool symbolic,
                                     const tep_print_flag_sym* values,
                                     const std::string& field) const {
  for (; values != nullptr; values = values->next) {
    Ref arguments(Py_BuildValue("(OsNN)", handler_name_object_.get(), field.c_str(),
                                PyLong_FromLong(static_cast<long>(flag_value(values->value))),
                                c_text(values->str)));
    if (!call_if_defined(main_dict, symbolic ? "define_symbolic_value" : "define_flag_value",
                         arguments.get())) {
      return false;
    }
  }
  return true;
}

// perf's define_event_symbols: a pre-order walk of the print fmt's arguments. Every atom
// defines value 0 of the last field met; the walk of an argument list ends at a string of
// bytes, a dynamic array, a function call or a bitmask, as perf's does.
bool TracepointFields::define_walk(PyObject* main_dict, const tep_print_arg* arg,
                                   std::string& current) const {
  for (; arg != nullptr; arg = arg->next) {
    switch (arg->type) {
      case TEP_PRINT_NULL:
      case TEP_PRINT_STRING: break;
      case TEP_PRINT_ATOM: {
        Ref arguments(Py_BuildValue("(OsiN)", handler_name_object_.get(), current.c_str(), 0,
                                    c_text(arg->atom.atom)));
        if (!call_if_defined(main_dict, "define_flag_value", arguments.get())) return false;
        break;
      }
      case TEP_PRINT_FIELD: current = arg->field.name != nullptr ? arg->field.name : ""; break;
      case TEP_PRINT_FLAGS: {
        if (!define_walk(main_dict, arg->flags.field, current)) return false;
        Ref arguments(Py_BuildValue("(OsN)", handler_name_object_.get(), current.c_str(),
                                    c_text(arg->flags.delim)));
        if (!call_if_defined(main_dict, "define_flag_field", arguments.get())) return false;
        if (!define_values(main_dict, false, arg->flags.flags, current)) return false;
        break;
      }
      case TEP_PRINT_SYMBOL: {
        if (!define_walk(main_dict, arg->symbol.field, current)) return false;
        Ref arguments(Py_BuildValue("(Os)", handler_name_object_.get(), current.c_str()));
        if (!call_if_defined(main_dict, "define_symbolic_field", arguments.get())) return false;
        if (!define_values(main_dict, true, arg->symbol.symbols, current)) return false;
        break;
      }
      case TEP_PRINT_HEX:
      case TEP_PRINT_HEX_STR:
        if (!define_walk(main_dict, arg->hex.field, current) ||
            !define_walk(main_dict, arg->hex.size, current)) {
          return false;
        }
        break;
      case TEP_PRINT_INT_ARRAY:
        if (!define_walk(main_dict, arg->int_array.field, current) ||
            !define_walk(main_dict, arg->int_array.count, current) ||
            !define_walk(main_dict, arg->int_array.el_size, current)) {
          return false;
        }
        break;
      case TEP_PRINT_TYPE:
        if (!define_walk(main_dict, arg->typecast.item, current)) return false;
        break;
      case TEP_PRINT_OP:
        if (!define_walk(main_dict, arg->op.left, current) ||
            !define_walk(main_dict, arg->op.right, current)) {
          return false;
        }
        break;
      default: return true;
    }
  }
  return true;
}

bool TracepointFields::define_symbols(PyObject* main_dict, std::string& current_field) const {
  tep_event* event = format_.parsed_event();
  if (event == nullptr) return true;
  return define_walk(main_dict, event->print_fmt.args, current_field);
}

}  // namespace perfscope::python
