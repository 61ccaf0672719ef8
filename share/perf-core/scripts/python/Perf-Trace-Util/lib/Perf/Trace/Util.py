# perfscope's Util module for perf's Python scripts: the constants and helpers perf's
# Perf-Trace-Util Util provides, written for perfscope with the same behaviour. Syscall names
# come from the audit module (python3-audit) where it is installed, as with perf's; without it
# the same advice is printed once and the numbers stay numbers.

import errno
import os

FUTEX_WAIT = 0
FUTEX_WAKE = 1
FUTEX_PRIVATE_FLAG = 128
FUTEX_CLOCK_REALTIME = 256
FUTEX_CMD_MASK = ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME)

NSECS_PER_SEC = 1000000000


def avg(total, n):
    return total / n


def nsecs(secs, nsecs):
    return secs * NSECS_PER_SEC + nsecs


def nsecs_secs(nsecs):
    return nsecs / NSECS_PER_SEC


def nsecs_nsecs(nsecs):
    return nsecs % NSECS_PER_SEC


def nsecs_str(nsecs):
    # A 1-tuple, as perf's returns (its trailing comma).
    text = "%5u.%09u" % (nsecs_secs(nsecs), nsecs_nsecs(nsecs)),
    return text


def add_stats(dict, key, value):
    """(min, max, avg, count) of the values seen for key; avg is perf's running pairwise mean."""
    if key not in dict:
        dict[key] = (value, value, value, 1)
    else:
        low, high, mean, count = dict[key]
        if value < low:
            low = value
        if value > high:
            high = value
        mean = (mean + value) / 2
        dict[key] = (low, high, mean, count + 1)


def clear_term():
    print("\x1b[H\x1b[2J")


audit_package_warned = False

try:
    import audit
    machine_to_id = {
        'x86_64': audit.MACH_86_64,
        'alpha': audit.MACH_ALPHA,
        'ia64': audit.MACH_IA64,
        'ppc': audit.MACH_PPC,
        'ppc64': audit.MACH_PPC64,
        'ppc64le': audit.MACH_PPC64LE,
        's390': audit.MACH_S390,
        's390x': audit.MACH_S390X,
        'i386': audit.MACH_X86,
        'i586': audit.MACH_X86,
        'i686': audit.MACH_X86,
    }
    try:
        machine_to_id['armeb'] = audit.MACH_ARMEB
    except AttributeError:
        pass
    machine_id = machine_to_id[os.uname()[4]]
except Exception:
    if not audit_package_warned:
        audit_package_warned = True
        print("Install the audit-libs-python package to get syscall names.\n"
              "For example:\n  # apt-get install python-audit (Ubuntu)"
              "\n  # yum install audit-libs-python (Fedora)"
              "\n  etc.\n")


def syscall_name(id):
    try:
        return audit.audit_syscall_to_name(id, machine_id)
    except Exception:
        return str(id)


def strerror(nr):
    try:
        return errno.errorcode[abs(nr)]
    except Exception:
        return "Unknown %d errno" % nr
