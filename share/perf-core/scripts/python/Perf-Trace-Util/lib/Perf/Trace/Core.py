# perfscope's Core module for perf's Python scripts: the names perf's Perf-Trace-Util Core
# provides (autodict, the flag and symbol tables perf fills through define_*, flag_str,
# symbol_str, trace_flag_str, taskState, EventHeaders), written for perfscope with the same
# behaviour, for machines where perf's own copy is not installed.

from collections import defaultdict


def autodict():
    """A dict whose missing entries are autodicts: d[a][b] = 1 without setting d[a] first.

    A missing leaf is an autodict, not 0: scripts write
    try: d[k] += 1 / except TypeError: d[k] = 1, as with perf's."""
    return defaultdict(autodict)


flag_fields = autodict()
symbolic_fields = autodict()


def define_flag_field(event_name, field_name, delim):
    flag_fields[event_name][field_name]['delim'] = delim


def define_flag_value(event_name, field_name, value, field_str):
    flag_fields[event_name][field_name]['values'][value] = field_str


def define_symbolic_field(event_name, field_name):
    # The symbols are all in define_symbolic_value.
    pass


def define_symbolic_value(event_name, field_name, value, field_str):
    symbolic_fields[event_name][field_name]['values'][value] = field_str


def flag_str(event_name, field_name, value):
    """The names of the flags set in value, lowest first, joined by the field's delimiter."""
    text = ""
    if flag_fields[event_name][field_name]:
        print_delim = False
        for idx in sorted(flag_fields[event_name][field_name]['values']):
            if not value and not idx:
                text += flag_fields[event_name][field_name]['values'][idx]
                break
            if idx and (value & idx) == idx:
                if print_delim and flag_fields[event_name][field_name]['delim']:
                    text += " " + flag_fields[event_name][field_name]['delim'] + " "
                text += flag_fields[event_name][field_name]['values'][idx]
                print_delim = True
                value &= ~idx
    return text


def symbol_str(event_name, field_name, value):
    """The name the print fmt gives value (__print_symbolic), or ""."""
    if symbolic_fields[event_name][field_name]:
        for idx in sorted(symbolic_fields[event_name][field_name]['values']):
            if (not value and not idx) or value == idx:
                return symbolic_fields[event_name][field_name]['values'][idx]
    return ""


trace_flags = {0x00: "NONE",
               0x01: "IRQS_OFF",
               0x02: "IRQS_NOSUPPORT",
               0x04: "NEED_RESCHED",
               0x08: "HARDIRQ",
               0x10: "SOFTIRQ"}


def trace_flag_str(value):
    """common_flags in words: "IRQS_OFF | NEED_RESCHED", "NONE" for 0."""
    text = ""
    print_delim = False
    for idx in trace_flags:
        if not value and not idx:
            text += "NONE"
            break
        if idx and (value & idx) == idx:
            if print_delim:
                text += " | "
            text += trace_flags[idx]
            print_delim = True
            value &= ~idx
    return text


def taskState(state):
    states = {0: "R", 1: "S", 2: "D", 64: "DEAD"}
    return states.get(state, "Unknown")


class EventHeaders:
    """A tracepoint handler's common_* arguments together."""

    def __init__(self, common_cpu, common_secs, common_nsecs,
                 common_pid, common_comm, common_callchain):
        self.cpu = common_cpu
        self.secs = common_secs
        self.nsecs = common_nsecs
        self.pid = common_pid
        self.comm = common_comm
        self.callchain = common_callchain

    def ts(self):
        return (self.secs * (10 ** 9)) + self.nsecs

    def ts_format(self):
        return "%d.%d" % (self.secs, int(self.nsecs / 1000))
