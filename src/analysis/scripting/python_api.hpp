// The CPython C API as perfscope's scripting uses it: Python.h (included first, as CPython
// requires) and an owning reference.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <utility>

namespace perfscope::python {

// A strong reference, released when it goes (Py_XDECREF).
class Ref {
 public:
  Ref() = default;
  explicit Ref(PyObject* owned) noexcept : object_(owned) {}
  static Ref borrowed(PyObject* object) noexcept {
    Py_XINCREF(object);
    return Ref(object);
  }
  Ref(const Ref& other) noexcept : object_(other.object_) { Py_XINCREF(object_); }
  Ref(Ref&& other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
  Ref& operator=(Ref other) noexcept {
    std::swap(object_, other.object_);
    return *this;
  }
  ~Ref() { Py_XDECREF(object_); }

  PyObject* get() const noexcept { return object_; }
  // Hands the reference over (to a call that steals it).
  PyObject* release() noexcept { return std::exchange(object_, nullptr); }
  explicit operator bool() const noexcept { return object_ != nullptr; }

 private:
  PyObject* object_ = nullptr;
};

// Sets `key` (an interned string) in `dict` to a new reference, which it takes over.
inline void set_item(PyObject* dict, PyObject* key, PyObject* value) noexcept {
  PyDict_SetItem(dict, key, value);
  Py_XDECREF(value);
}

}  // namespace perfscope::python
