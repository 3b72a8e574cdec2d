"""One run of a command, timed for the benchmark scripts (imported by their inline Python)."""
import os, subprocess, tempfile, time
from typing import NamedTuple


class Run(NamedTuple):
    user: float        # seconds
    system: float      # seconds
    wall: float        # seconds
    peak_rss_mb: float
    exit_code: int
    stderr: str


def measure(command):
    """Runs `command` (stdout discarded) and reads its CPU time from wait4's rusage, in
    microseconds: /usr/bin/time prints hundredths, 3% of a 0.3 s run."""
    began = time.monotonic()
    with tempfile.TemporaryFile() as log:
        child = subprocess.Popen(list(command), stdout=subprocess.DEVNULL, stderr=log)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)  # (reaped here: Popen must not wait again)
        wall = time.monotonic() - began
        log.seek(0)
        stderr = log.read().decode(errors="replace")
    return Run(usage.ru_utime, usage.ru_stime, wall, usage.ru_maxrss / 1024, child.returncode, stderr)
