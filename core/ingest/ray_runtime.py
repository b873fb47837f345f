"""Start and stop the local Ray runtime of ``grounded ingest --engine ray`` so that it stays on the
machine and leaves nothing behind.

* **No connection outside the machine.** Before Ray is imported the driver's environment gets
  (unless the user set them): ``RAY_USAGE_STATS_ENABLED=0`` (no usage report, and no probe of the
  cloud metadata server 169.254.169.254 that the report's cloud detection makes) and
  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (Ray's single-machine mode: the node address is the
  loopback address instead of the one found by "connecting" a UDP socket to 8.8.8.8:53). The
  runtime is started with ``include_dashboard=False``; every Ray process inherits the environment.
  Ray 2.60 still starts a head process with its usage-stats module, which reads
  ``~/ray_bootstrap_config.yaml`` and, when that file is missing, asks the cloud metadata server
  (169.254.169.254:80) which cloud it runs on - even with usage stats disabled. That one process
  is started with ``HOME`` set to the run's folder, which holds a bootstrap config naming the
  ``local`` provider, so the question is never asked (no other process sees the changed HOME).
* **Nothing left behind.** The runtime's folder is a fresh ``_temp_dir`` (``grounded-ray-<pid>-*``
  in the system temp folder), removed at shutdown; one a killed run left is removed by the next
  run. A watchdog process (its own session, so a signal to the driver's group does not reach it)
  waits for the driver to exit; when it exits in any way - ``kill -9`` included - the watchdog
  kills every process that carries this run's marker in its environment (:data:`MARKER_ENV`: the
  GCS, raylet, dashboard head, workers; all inherit it from the driver) or uses the run's folder
  (the DashboardAgent and RuntimeEnvAgent, whose process title overwrites their environment: they
  hold their log files there) and removes the folder. Linux only (it reads ``/proc``); elsewhere the shutdown path alone cleans.
* **Its own token.** Ray >= 2.5x turns token authentication on for a new local cluster and keeps
  the token in ``~/.ray/auth_token`` (written into the user's home, and a warning on stderr).
  Unless the user set ``RAY_AUTH_MODE``/``RAY_AUTH_TOKEN``/``RAY_AUTH_TOKEN_PATH``, the run sets
  ``RAY_AUTH_MODE=token`` and a fresh random ``RAY_AUTH_TOKEN`` (:data:`AUTH_ENV`) that every
  process of the runtime inherits (the dashboard head too, which runs with another ``HOME`` and
  crashed reading the token from there: "Failed to start the dashboard" and 20 log lines).
* **Quiet.** ``log_to_driver=False`` and Ray's own logging at WARNING unless the driver logs INFO.
  One line is left: Ray's C++ core in the driver logs an error for every Ray Data actor pool with
  restarts ("has constructor arguments in the object store and max_restarts > 0",
  ray-project/ray#53727); ``RAY_BACKEND_LOG_LEVEL`` would hide it but prints its own line.

A cluster given by address (``ray_address`` / ``$RAY_ADDRESS``) is joined as it is: none of this
applies to it.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..io.atomic import clean_stale_temp_dirs, make_temp_dir

__all__ = ["LOCAL_ENV", "AUTH_ENV", "MARKER_ENV", "TEMP_PREFIX", "local_ray", "kill_marked", "main"]

log = logging.getLogger(__name__)

#: environment for a local runtime that makes no connection outside the machine (set before import)
LOCAL_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
#: Ray's token-authentication settings: a local runtime gets its own token unless one is set
AUTH_ENV = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
#: environment variable naming the run: every process of its Ray runtime inherits it
MARKER_ENV = "GROUNDED_RAY_RUN"
TEMP_PREFIX = "grounded-ray-"
_POLL = 0.5


def _uses_folder(pid: str, folder: str) -> bool:
    """Whether process ``pid`` works in ``folder`` (its cwd) or holds a file below it open."""
    inside = folder.rstrip("/") + "/"
    try:
        links = [os.readlink(f"/proc/{pid}/cwd")]
        links += [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return False
    return any(link == folder or link.startswith(inside) for link in links)


def _marked(token: str, folder: str | None = None) -> list[int]:
    """Pids of the processes whose environment holds ``MARKER_ENV=token`` or, with ``folder``
    (the run's Ray folder), that work in it or hold one of its files open (Linux /proc). Ray's
    DashboardAgent and RuntimeEnvAgent overwrite their environment with their process title, so
    the marker alone misses them; their log files in the run's folder give them away."""
    needle = f"{MARKER_ENV}={token}".encode()
    found = []
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if needle in env.split(b"\0") or (folder is not None and _uses_folder(entry.name, folder)):
            found.append(int(entry.name))
    return found


def kill_marked(token: str, folder: str | None = None) -> int:
    """SIGKILL every process of the run ``token`` (and, with ``folder``, every process using the
    run's Ray folder; see :func:`_marked`); returns how many."""
    if not os.path.isdir("/proc"):
        return 0
    killed = 0
    for _ in range(3):  # a worker may be starting while we sweep
        pids = _marked(token, folder)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(0.2)
    return killed


def _start_watchdog(token: str, folder: str) -> subprocess.Popen[bytes] | None:
    if not os.path.isdir("/proc"):
        return None
    env = {k: v for k, v in os.environ.items() if k != MARKER_ENV}
    return subprocess.Popen(
        [sys.executable, "-m", "grounded.ingest.ray_runtime", str(os.getpid()), token, folder],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )


@contextmanager
def local_ray(ray: Any, workers: int) -> Iterator[None]:
    """A local Ray runtime for the duration of the block (see the module docstring); ``ray`` is
    the imported module (import it after :func:`prepare_environment`)."""
    prepare_environment()  # the Ray processes started below read it
    constants = _single_machine(ray)
    token = secrets.token_hex(8)
    scratch = make_temp_dir(TEMP_PREFIX)
    folder = scratch.name
    os.environ[MARKER_ENV] = token
    watchdog = _start_watchdog(token, folder)
    Path(folder, "ray_bootstrap_config.yaml").write_text("provider:\n  type: local\n", encoding="utf-8")
    restore_dashboard = _dashboard_home(folder)
    restore_auth = _run_token()
    quiet = not logging.getLogger().isEnabledFor(logging.INFO)
    try:
        ray.init(
            num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False,
            logging_level=logging.WARNING if quiet else logging.INFO, _temp_dir=folder,
        )
        yield
    finally:
        try:
            ray.shutdown()
        finally:
            constants()
            restore_dashboard()
            restore_auth()

            os.environ.pop(MARKER_ENV, None)
            kill_marked(token, folder)
            if watchdog is not None:
                watchdog.kill()
                watchdog.wait()
            scratch.cleanup()
            shutil.rmtree(folder, ignore_errors=True)


def _run_token() -> Any:
    """Token authentication with a token of this run, in the environment every Ray process of the
    runtime inherits (see the module docstring); returns the function that undoes it."""
    if any(key in os.environ for key in AUTH_ENV):  # the user's own settings
        return lambda: None
    os.environ.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)})
    _refresh_auth()

    def restore() -> None:
        for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
            os.environ.pop(key, None)
        _refresh_auth()

    return restore


def _refresh_auth() -> None:
    """Make this (driver) process read the authentication settings again (Ray caches them)."""
    try:
        from ray import _raylet
    except ImportError:
        return
    loader, config = getattr(_raylet, "AuthenticationTokenLoader", None), getattr(_raylet, "Config", None)
    if loader is None or config is None:  # a Ray without token authentication
        return
    config.initialize("")
    loader.instance().reset_cache()


def _single_machine(ray: Any) -> Any:
    """Ray's single-machine switch in this (driver) process, where Ray may have been imported
    before :func:`prepare_environment` ran; returns the function that restores it."""
    try:
        from ray._private import ray_constants
    except ImportError:  # another Ray layout: the environment alone applies
        return lambda: None
    before = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    if before is None or os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") != "0":
        return lambda: None
    ray_constants.ENABLE_RAY_CLUSTER = False
    return lambda: setattr(ray_constants, "ENABLE_RAY_CLUSTER", before)


def _dashboard_home(folder: str) -> Any:
    """Start Ray's dashboard head process with ``HOME=folder`` (see the module docstring); returns
    the function that undoes the change. A Ray without the hook is left as it is (logged)."""
    try:
        from ray._private import ray_constants, services
    except ImportError:
        return lambda: None
    original = getattr(services, "start_ray_process", None)
    dashboard = getattr(ray_constants, "PROCESS_TYPE_DASHBOARD", None)
    if original is None or dashboard is None:
        log.info("this Ray has no start_ray_process hook: its usage-stats head may query the cloud metadata server")
        return lambda: None

    def start(command: Any, process_type: str, *args: Any, **kwargs: Any) -> Any:
        if process_type == dashboard:
            kwargs["env_updates"] = {**(kwargs.get("env_updates") or {}), "HOME": folder}
        return original(command, process_type, *args, **kwargs)

    services.start_ray_process = start
    return lambda: setattr(services, "start_ray_process", original)


def prepare_environment() -> None:
    """Set :data:`LOCAL_ENV` (where the user has not) before Ray is imported."""
    for key, value in LOCAL_ENV.items():
        os.environ.setdefault(key, value)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def main(argv: list[str] | None = None) -> int:
    """The watchdog: ``python -m grounded.ingest.ray_runtime DRIVER_PID TOKEN FOLDER``."""
    pid_text, token, folder = (argv if argv is not None else sys.argv[1:])[:3]
    driver = int(pid_text)
    while _alive(driver) and os.getppid() == driver:
        time.sleep(_POLL)
    kill_marked(token, folder)
    shutil.rmtree(folder, ignore_errors=True)
    clean_stale_temp_dirs(Path(folder).parent, TEMP_PREFIX)
    return 0


if __name__ == "__main__":  # pragma: no cover - the watchdog process
    sys.exit(main())
