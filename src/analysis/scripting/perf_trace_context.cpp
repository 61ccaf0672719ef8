#include "perf_trace_context.hpp"

#include <fstream>

namespace perfscope::python {

namespace {

// The context a capsule holds, or null with TypeError set.
SampleContext* context_of(PyObject* args, const char* function, PyObject** second = nullptr) {
  PyObject* capsule = nullptr;
  PyObject* extra = nullptr;
  if (!PyArg_UnpackTuple(args, function, 1, second != nullptr ? 2 : 1, &capsule, &extra)) {
    return nullptr;
  }
  if (second != nullptr) *second = extra;
  auto* context = static_cast<SampleContext*>(PyCapsule_GetPointer(capsule, nullptr));
  if (context == nullptr && !PyErr_Occurred()) {
    PyErr_SetString(PyExc_TypeError, "expected the script's context capsule");
  }
  return context;
}

PyObject* common_field(PyObject* args, const char* function, std::string_view field) {
  SampleContext* context = context_of(args, function);
  if (context == nullptr) return nullptr;
  return PyLong_FromLong(static_cast<long>(static_cast<int>(context->common_field(field))));
}

PyObject* common_pc(PyObject*, PyObject* args) {
  return common_field(args, "common_pc", "common_preempt_count");
}
PyObject* common_flags(PyObject*, PyObject* args) {
  return common_field(args, "common_flags", "common_flags");
}
PyObject* common_lock_depth(PyObject*, PyObject* args) {
  return common_field(args, "common_lock_depth", "common_lock_depth");
}

PyObject* sample_insn(PyObject*, PyObject* args) {
  SampleContext* context = context_of(args, "perf_sample_insn");
  if (context == nullptr) return nullptr;
  std::optional<std::string> bytes = context->instruction();
  if (!bytes || bytes->empty()) Py_RETURN_NONE;
  return PyBytes_FromStringAndSize(bytes->data(), static_cast<Py_ssize_t>(bytes->size()));
}

PyObject* source_file_or_none(const std::optional<SampleContext::SourceLine>& source) {
  if (!source || source->file.empty()) Py_RETURN_NONE;
  return PyUnicode_DecodeUTF8(source->file.data(), static_cast<Py_ssize_t>(source->file.size()),
                              "replace");
}

PyObject* sample_srcline(PyObject*, PyObject* args) {
  SampleContext* context = context_of(args, "perf_sample_srcline");
  if (context == nullptr) return nullptr;
  auto source = context->source_line();
  Ref file(source_file_or_none(source));
  return Py_BuildValue("(Oi)", file.get(), source ? source->line : 0);
}

// The text of line `line` of `file` (without its newline); nullopt when it cannot be read.
std::optional<std::string> line_of_file(const std::string& file, int line) {
  std::ifstream in(file);
  std::string text;
  for (int i = 1; in && i <= line; ++i) {
    if (!std::getline(in, text)) return std::nullopt;
  }
  return in ? std::optional<std::string>(text) : std::nullopt;
}

PyObject* sample_srccode(PyObject*, PyObject* args) {
  SampleContext* context = context_of(args, "perf_sample_srccode");
  if (context == nullptr) return nullptr;
  auto source = context->source_line();
  Ref file(source_file_or_none(source));
  std::optional<std::string> code;
  if (source && !source->file.empty() && source->line > 0) {
    code = line_of_file(source->file, source->line);
  }
  Ref text = code ? Ref(PyUnicode_DecodeUTF8(code->data(), static_cast<Py_ssize_t>(code->size()),
                                             "replace"))
                  : Ref::borrowed(Py_None);
  return Py_BuildValue("(OiO)", file.get(), source ? source->line : 0, text.get());
}

// perf returns -1 where its session has no instruction-trace decoder to configure; perfscope
// decodes no AUX trace (Intel PT, CoreSight), so that is its answer too.
PyObject* set_itrace_options(PyObject*, PyObject* args) {
  PyObject* options = nullptr;
  if (context_of(args, "perf_set_itrace_options", &options) == nullptr) return nullptr;
  if (options == nullptr || !PyUnicode_Check(options)) {
    PyErr_SetString(PyExc_TypeError, "perf_set_itrace_options(context, options): a str");
    return nullptr;
  }
  return PyLong_FromLong(-1);
}

PyMethodDef methods[] = {
    {"common_pc", common_pc, METH_VARARGS, "The common_preempt_count of the sample's record."},
    {"common_flags", common_flags, METH_VARARGS, "The common_flags of the sample's record."},
    {"common_lock_depth", common_lock_depth, METH_VARARGS,
     "The common_lock_depth of the sample's record (0: kernels no longer have it)."},
    {"perf_sample_insn", sample_insn, METH_VARARGS,
     "The bytes of the instruction at the sample's ip, or None."},
    {"perf_set_itrace_options", set_itrace_options, METH_VARARGS,
     "Instruction-trace decoding options (-1: perfscope decodes no AUX trace)."},
    {"perf_sample_srcline", sample_srcline, METH_VARARGS,
     "(source file, line) of the sample's ip; (None, 0) when unknown."},
    {"perf_sample_srccode", sample_srccode, METH_VARARGS,
     "(source file, line, source text) of the sample's ip."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_definition = {PyModuleDef_HEAD_INIT,
                                 "perf_trace_context",
                                 "perf's scripting context functions, as perfscope provides them",
                                 -1,
                                 methods,
                                 nullptr,
                                 nullptr,
                                 nullptr,
                                 nullptr};

PyObject* init_module() {
  PyObject* module = PyModule_Create(&module_definition);
  if (module != nullptr) {
    Py_INCREF(Py_None);
    PyModule_AddObject(module, "perf_script_context", Py_None);
  }
  return module;
}

}  // namespace

void register_perf_trace_context() { PyImport_AppendInittab("perf_trace_context", &init_module); }

PyObject* new_context_capsule(SampleContext* context) {
  return PyCapsule_New(context, nullptr, nullptr);
}

void publish_script_context(SampleContext* context, PyObject* main_dict) {
  Ref capsule(new_context_capsule(context));
  Ref module(PyImport_ImportModule("perf_trace_context"));
  if (module) PyObject_SetAttrString(module.get(), "perf_script_context", capsule.get());
  PyErr_Clear();
  PyDict_SetItemString(main_dict, "perf_script_context", capsule.get());
}

}  // namespace perfscope::python
