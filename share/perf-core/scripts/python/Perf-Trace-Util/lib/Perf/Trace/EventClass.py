# perfscope's EventClass module for perf's Python scripts: perf's sample classes by the size of
# the raw buffer (a generic event, an Intel PEBS record, a Nehalem PEBS record with load
# latency), written for perfscope with the same behaviour.

import struct

EVTYPE_GENERIC = 0
EVTYPE_PEBS = 1     # Basic PEBS event
EVTYPE_PEBS_LL = 2  # PEBS event with load latency info
EVTYPE_IBS = 3


def create_event(name, comm, dso, symbol, raw_buf):
    if len(raw_buf) == 144:
        event = PebsEvent(name, comm, dso, symbol, raw_buf)
    elif len(raw_buf) == 176:
        event = PebsNHM(name, comm, dso, symbol, raw_buf)
    else:
        event = PerfEvent(name, comm, dso, symbol, raw_buf)
    return event


class PerfEvent(object):
    event_num = 0

    def __init__(self, name, comm, dso, symbol, raw_buf, ev_type=EVTYPE_GENERIC):
        self.name = name
        self.comm = comm
        self.dso = dso
        self.symbol = symbol
        self.raw_buf = raw_buf
        self.ev_type = ev_type
        PerfEvent.event_num += 1

    def show(self):
        print("PMU event: name=%12s, symbol=%24s, comm=%8s, dso=%12s" %
              (self.name, self.symbol, self.comm, self.dso))


class PebsEvent(PerfEvent):
    """An Intel PEBS record: the flags and the general registers at the sample."""
    pebs_num = 0

    def __init__(self, name, comm, dso, symbol, raw_buf, ev_type=EVTYPE_PEBS):
        registers = struct.unpack('QQQQQQQQQQ', raw_buf[0:80])
        (self.flags, self.ip, self.ax, self.bx, self.cx,
         self.dx, self.si, self.di, self.bp, self.sp) = registers
        PerfEvent.__init__(self, name, comm, dso, symbol, raw_buf, ev_type)
        PebsEvent.pebs_num += 1
        del registers


class PebsNHM(PebsEvent):
    """A Nehalem PEBS record: PebsEvent's registers, then status, address, source, latency."""
    pebs_nhm_num = 0

    def __init__(self, name, comm, dso, symbol, raw_buf, ev_type=EVTYPE_PEBS_LL):
        extra = struct.unpack('QQQQ', raw_buf[144:176])
        self.status, self.dla, self.dse, self.lat = extra
        PebsEvent.__init__(self, name, comm, dso, symbol, raw_buf, ev_type)
        PebsNHM.pebs_nhm_num += 1
        del extra
