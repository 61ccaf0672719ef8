# perfscope's SchedGui module for perf's sched-migration.py: perf's timeline window needs
# wxPython, which perfscope does not provide. Without it the import fails as perf's does, with
# the same advice.

try:
    import wx  # noqa: F401
except ImportError:
    raise ImportError("You need to install the wxpython lib for this script")

raise ImportError("perfscope's SchedGui has no timeline window: run sched-migration.py with "
                  "perf's Perf-Trace-Util (PERF_EXEC_PATH=/usr/lib/perf-core) for it")
