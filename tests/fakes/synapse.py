"""A real Synapse homeserver on 127.0.0.1 for the Matrix adapter tests.

Synapse is installed in its own virtualenv (``tests/fakes/install_synapse.sh``), found through
``$STRATA_SYNAPSE_VENV`` (default ``/work/.synapse-venv``), and run as a subprocess with that
venv's python, so its Twisted dependency tree never meets the project's environment.

:class:`Synapse` writes a throwaway ``hs.yaml`` (``server_name: localhost``, SQLite, a single
plain-HTTP client listener on a free loopback port, no federation, open registration off,
shared-secret registration on, rate limits raised high) into a temp dir, generates the signing
key, starts the server and waits for ``GET /_matrix/client/versions``. Users are made through
the shared-secret admin API.

The session-scoped pytest fixtures ``synapse`` and ``synapse_strict`` (the latter with a strict
``rc_message`` limit, for 429 tests) skip when the venv is missing, unless ``$CI`` is set, in
which case they fail: CI must never skip the Matrix tests silently.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import hmac
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any, NamedTuple

import pytest

DEFAULT_VENV = "/work/.synapse-venv"
SERVER_NAME = "localhost"

#: Every client-facing rate limiter Synapse 1.16x knows, raised so tests never hit them.
_RELAXED: dict[str, float] = {"per_second": 10_000, "burst_count": 100_000}
#: ``rc_message`` in strict mode: a burst of 2, then one message a second. (Synapse also holds
#: each 429 answer back ~0.5 s, so a rate-limited send costs ~0.5 s + retry_after_ms.)
STRICT_MESSAGE_LIMIT: dict[str, float] = {"per_second": 1.0, "burst_count": 2}


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """In the child, before Synapse runs: have Linux send it SIGTERM when the process that
    started it dies, however that process dies (a SIGKILL of pytest runs no teardown, and
    Synapse's own session keeps it from the signals sent to pytest's process group)."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class SynapseUnavailable(RuntimeError):
    """The Synapse venv is missing or broken."""


class SynapseError(RuntimeError):
    """Synapse failed to start, answer or register a user."""


class RegisteredUser(NamedTuple):
    """A user made through the shared-secret admin API."""

    user_id: str
    access_token: str
    device_id: str


def synapse_venv() -> Path:
    """The venv Synapse is installed in (``$STRATA_SYNAPSE_VENV`` or the default)."""
    return Path(os.environ.get("STRATA_SYNAPSE_VENV") or DEFAULT_VENV)


def synapse_python(venv: Path | None = None) -> Path:
    """The python of the Synapse venv; raise :class:`SynapseUnavailable` if unusable."""
    venv = venv or synapse_venv()
    python = venv / "bin" / "python"
    if not python.exists():
        raise SynapseUnavailable(
            f"no Synapse venv at {venv} (run tests/fakes/install_synapse.sh {venv}"
            " or set STRATA_SYNAPSE_VENV)"
        )
    probe = subprocess.run(
        [str(python), "-c", "import importlib.util as u; assert u.find_spec('synapse.app')"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if probe.returncode != 0:
        raise SynapseUnavailable(
            f"{python} cannot import synapse (run tests/fakes/install_synapse.sh {venv}):"
            f" {probe.stderr.strip()[-500:]}"
        )
    return python


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _ratelimits(strict: bool) -> dict[str, Any]:
    relaxed = dict(_RELAXED)
    return {
        "rc_message": dict(STRICT_MESSAGE_LIMIT) if strict else relaxed,
        "rc_registration": relaxed,
        "rc_registration_token_validity": relaxed,
        "rc_login": {"address": relaxed, "account": relaxed, "failed_attempts": relaxed},
        "rc_admin_redaction": relaxed,
        "rc_joins": {"local": relaxed, "remote": relaxed},
        "rc_joins_per_room": relaxed,
        "rc_3pid_validation": relaxed,
        "rc_invites": {"per_room": relaxed, "per_user": relaxed, "per_issuer": relaxed},
        "rc_third_party_invite": relaxed,
        "rc_media_create": relaxed,
        "rc_presence": {"per_user": relaxed},
        "rc_delayed_event_mgmt": relaxed,
        "rc_room_creation": relaxed,
        "rc_reports": relaxed,
        "rc_user_directory": relaxed,
        "rc_profile": relaxed,
        "rc_key_requests": relaxed,
    }


class Synapse:
    """One Synapse process on 127.0.0.1 with a throwaway config, database and media store.

    Use as a context manager or call :meth:`start` / :meth:`stop`. After start,
    :attr:`base_url` is ``http://127.0.0.1:PORT`` and :meth:`register` makes users.
    """

    def __init__(
        self,
        *,
        strict_ratelimit: bool = False,
        venv: Path | str | None = None,
        startup_timeout: float = 90.0,
        keep_dir: bool = False,
    ) -> None:
        self.strict_ratelimit = strict_ratelimit
        self.venv = Path(venv) if venv is not None else synapse_venv()
        self.startup_timeout = startup_timeout
        self.keep_dir = keep_dir
        self.server_name = SERVER_NAME
        self.registration_shared_secret = secrets.token_hex(32)
        self.port = 0
        self.dir: Path | None = None
        self.startup_seconds = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._names = itertools.count(1)

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (the homeserver URL for a Matrix client)."""
        if not self.port:
            raise SynapseError("Synapse is not started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        """Synapse's combined stdout/stderr log."""
        if self.dir is None:
            raise SynapseError("Synapse is not started")
        return self.dir / "homeserver.log"

    @property
    def running(self) -> bool:
        """True while the Synapse process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> Synapse:
        """Write the config, generate keys, start Synapse and wait until it answers."""
        if self._proc is not None:
            raise SynapseError("Synapse already started")
        began = time.monotonic()
        python = synapse_python(self.venv)
        self.dir = Path(tempfile.mkdtemp(prefix="strata-synapse-"))
        self.port = _free_port()
        config_path = self.dir / "hs.yaml"
        # JSON is valid YAML, and this keeps the writer free of a YAML dependency.
        config_path.write_text(json.dumps(self._config(), indent=2))
        env = self._env()
        keys = subprocess.run(
            [
                str(python),
                "-m",
                "synapse.app.homeserver",
                "-c",
                str(config_path),
                "--generate-keys",
            ],
            cwd=self.dir,
            env=env,
            capture_output=True,
            text=True,
            timeout=self.startup_timeout,
            check=False,
        )
        if keys.returncode != 0:
            output = (keys.stdout + keys.stderr)[-4000:]
            self._cleanup_dir()
            raise SynapseError(f"synapse --generate-keys failed ({keys.returncode}):\n{output}")
        self._log_file = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(
            [str(python), "-m", "synapse.app.homeserver", "-c", str(config_path)],
            cwd=self.dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the terminal's Ctrl-C goes to pytest, which stops it
            preexec_fn=_die_with_parent,
        )
        try:
            self._wait_ready(began + self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def stop(self) -> None:
        """Terminate Synapse (SIGTERM, then SIGKILL after 15 s) and remove its temp dir."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self._cleanup_dir()

    def __enter__(self) -> Synapse:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of Synapse's log (empty if there is none)."""
        if self.dir is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    # -- users -----------------------------------------------------------------------------

    def register(
        self,
        localpart: str | None = None,
        *,
        password: str | None = None,
        admin: bool = False,
        displayname: str | None = None,
    ) -> RegisteredUser:
        """Register a user via ``/_synapse/admin/v1/register`` (nonce + HMAC-SHA1).

        ``localpart`` defaults to a fresh ``user<N>``; a name already taken raises
        :class:`SynapseError`. Returns ``(user_id, access_token, device_id)``.
        """
        localpart = localpart or f"user{next(self._names)}"
        password = password or secrets.token_urlsafe(12)
        nonce = self._request("GET", "/_synapse/admin/v1/register")["nonce"]
        mac = hmac.new(self.registration_shared_secret.encode(), digestmod=hashlib.sha1)
        for part in (nonce, localpart, password):
            mac.update(part.encode())
            mac.update(b"\x00")
        mac.update(b"admin" if admin else b"notadmin")
        body: dict[str, Any] = {
            "nonce": nonce,
            "username": localpart,
            "password": password,
            "admin": admin,
            "mac": mac.hexdigest(),
        }
        if displayname is not None:
            body["displayname"] = displayname
        reply = self._request("POST", "/_synapse/admin/v1/register", body)
        return RegisteredUser(reply["user_id"], reply["access_token"], reply["device_id"])

    # -- internals -------------------------------------------------------------------------

    def _config(self) -> dict[str, Any]:
        assert self.dir is not None
        return {
            "server_name": self.server_name,
            "public_baseurl": f"http://127.0.0.1:{self.port}/",
            "pid_file": str(self.dir / "homeserver.pid"),
            "signing_key_path": str(self.dir / "signing.key"),
            "media_store_path": str(self.dir / "media"),
            "listeners": [
                {
                    "port": self.port,
                    "bind_addresses": ["127.0.0.1"],
                    "type": "http",
                    "tls": False,
                    "x_forwarded": False,
                    "resources": [{"names": ["client"], "compress": False}],
                }
            ],
            "database": {
                "name": "sqlite3",
                "args": {"database": str(self.dir / "homeserver.db")},
            },
            "report_stats": False,
            "enable_registration": False,
            "registration_shared_secret": self.registration_shared_secret,
            "macaroon_secret_key": secrets.token_hex(32),
            "form_secret": secrets.token_hex(32),
            # Nothing leaves the machine: no key servers, no federation, no previews.
            "trusted_key_servers": [],
            "suppress_key_server_warning": True,
            "federation_domain_whitelist": [],
            "url_preview_enabled": False,
            "presence": {"enabled": False},
            # Registration hashes the password; the default 12 rounds cost ~0.25 s a user.
            "bcrypt_rounds": 4,
            **_ratelimits(self.strict_ratelimit),
        }

    def _env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
        }
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def _wait_ready(self, deadline: float) -> None:
        url = f"{self.base_url}/_matrix/client/versions"
        last_error = "no attempt"
        while time.monotonic() < deadline:
            assert self._proc is not None
            code = self._proc.poll()
            if code is not None:
                raise SynapseError(
                    f"Synapse exited with code {code} before answering {url}\n"
                    f"--- {self.log_path} (tail) ---\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as reply:
                    if reply.status == 200 and "versions" in json.load(reply):
                        return
            except (OSError, ValueError) as err:
                last_error = repr(err)
            time.sleep(0.1)
        raise SynapseError(
            f"Synapse did not answer {url} within {self.startup_timeout:.0f}s"
            f" (last error: {last_error})\n--- {self.log_path} (tail) ---\n{self.log_tail()}"
        )

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base_url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return json.load(reply)
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")
            raise SynapseError(f"{method} {path} -> {err.code}: {detail}") from err

    def _cleanup_dir(self) -> None:
        if self.dir is not None and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.port = 0


def synapse_available_or_skip() -> None:
    """Skip the test when Synapse is not installed, unless ``$CI`` is set (then fail)."""
    problem = ""
    try:
        synapse_python()
    except SynapseUnavailable as err:
        problem = str(err)
    if problem and os.environ.get("CI"):
        pytest.fail(f"CI is set but Synapse is unavailable: {problem}", pytrace=False)
    if problem:
        pytest.skip(f"Synapse not installed: {problem}")


def _start_or_skip(strict_ratelimit: bool) -> Synapse:
    """Start a Synapse (`synapse_available_or_skip` first)."""
    synapse_available_or_skip()
    return Synapse(strict_ratelimit=strict_ratelimit).start()


@pytest.fixture(scope="session")
def synapse() -> Iterator[Synapse]:
    """A running Synapse with relaxed rate limits, shared by the whole test session."""
    server = _start_or_skip(strict_ratelimit=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def synapse_strict() -> Iterator[Synapse]:
    """A running Synapse whose ``rc_message`` limit is strict (:data:`STRICT_MESSAGE_LIMIT`)."""
    server = _start_or_skip(strict_ratelimit=True)
    try:
        yield server
    finally:
        server.stop()


def _hold() -> None:
    """`python -m tests.fakes.synapse --hold`: start a Synapse, print its pid, wait to be
    killed (how the test of `_die_with_parent` drives it)."""
    server = Synapse().start()
    assert server._proc is not None
    print(server._proc.pid, flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__" and sys.argv[1:] == ["--hold"]:
    _hold()
