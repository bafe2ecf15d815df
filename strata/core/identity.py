"""This process's identity: the one name every lease, claim and runner row of it carries.

An identity is `host:pid:random` (a pid is reused after a restart; the random part tells two
lives of one pid apart) with a display name for people (`cognition.runner_name`, else
host:pid). `this_process()` makes it once per process and every holder uses it: the channel
and polling leases (`strata.bot.claims`) and the cognition runner's row with the job and
reminder claims that name it (`strata.memory.coordination.claims`). So one test,
`holder_gone`, tells for all of them whether a holder is a process of this host that no
longer runs, and whose claims are free at once instead of after their lease. A leaf module.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    host: str
    pid: int
    nonce: str
    name: str  # for people: logs, `strata jobs status`; several lives may share it

    @property
    def id(self) -> str:
        """The holder string written into lease and claim rows."""
        return f"{self.host}:{self.pid}:{self.nonce}"

    @classmethod
    def mint(cls, name: str | None = None) -> ProcessIdentity:
        """A new identity for this process's host and pid (tests mint one per simulated
        process; everything else uses `this_process()`)."""
        host, pid = socket.gethostname(), os.getpid()
        return cls(host, pid, uuid.uuid4().hex[:8], name or f"{host}:{pid}")


_current: ProcessIdentity | None = None


def this_process() -> ProcessIdentity:
    """This process's identity, made on first use and kept (a forked child, with another
    pid, makes its own)."""
    global _current
    if _current is None or _current.pid != os.getpid():
        _current = ProcessIdentity.mint()
    return _current


def holder_gone(holder: str) -> bool:
    """Whether `holder` (a `ProcessIdentity.id`) is a process of this host that no longer
    runs: its leases and claims need not be waited out (a restart after a crash answers at
    once). A holder on another host, one whose pid runs (perhaps reused), this process's own,
    or a string of another shape counts as alive."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists but is not ours to signal
        return False
    return False
