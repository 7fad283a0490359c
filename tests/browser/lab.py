"""A real JupyterLab server and a real headless Chromium for browser tests.

Chromium is Debian's ``chromium`` package (``apt-get install chromium``), driven by
Playwright's Python API through ``executable_path``: Playwright's own browser download
is never used. The server listens on 127.0.0.1 with a random token, keeps its settings,
workspaces and runtime files in a temporary folder, and is stopped by its process id.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import nbformat

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def require_chromium() -> None:
    """Fail (not skip) with the fix when the browser or its driver is missing."""
    if not CHROMIUM.exists():
        raise RuntimeError(
            f"{CHROMIUM} not found: this test needs Debian's Chromium; install it with "
            "'apt-get install -y chromium' (.ci/run does)"
        )
    try:
        import playwright  # noqa: F401
    except ImportError:
        raise RuntimeError(
            "the 'playwright' package is missing: pip install -e '.[dev]' (never run "
            "'playwright install': the test uses /usr/bin/chromium)"
        ) from None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Lab:
    url: str
    token: str
    root: Path

    def api(self, path: str) -> Any:
        response = httpx.get(f"{self.url}/api/{path}", params={"token": self.token}, timeout=10)
        response.raise_for_status()
        return response.json()

    def page_url(self, notebook: str) -> str:
        return f"{self.url}/lab/tree/{notebook}?token={self.token}"

    def wait_notebook_idle(self, notebook: str, timeout: float = 90) -> None:
        """Until ``notebook`` has a session whose kernel is idle (other notebooks' kernels
        being idle says nothing about this one's, which may not have started yet)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                sessions = self.api("sessions")
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code < 500:
                    raise
                sessions = []
            for session in sessions:
                kernel = session.get("kernel") or {}
                if session.get("path") == notebook and kernel.get("execution_state") == "idle":
                    return
            time.sleep(0.25)
        raise TimeoutError(
            f"{notebook}: no idle kernel after {timeout} s: {self.api('sessions')!r}"
        )

    def wait_kernels_idle(self, timeout: float = 60) -> None:
        """Until at least one kernel runs and every kernel is idle."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                kernels = self.api("kernels")
            except httpx.HTTPStatusError as exc:
                # jupyter_server answers 500 when listed while a kernel is still starting
                # (its last_activity is not set yet); the next poll sees it.
                if exc.response.status_code < 500:
                    raise
                kernels = []
            if kernels and all(k.get("execution_state") == "idle" for k in kernels):
                return
            time.sleep(0.25)
        raise TimeoutError(f"kernels not idle after {timeout} s: {self.api('kernels')!r}")


@contextlib.contextmanager
def jupyter_lab(root: Path, timeout: float = 90) -> Iterator[Lab]:
    """Start ``jupyter lab`` serving ``root``; stop it (by its pid) on exit."""
    home = root / ".lab-home"
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # No news or update checks: nothing on the page should wait for the network.
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
    }
    port = free_port()
    token = secrets.token_hex(16)
    log = (home / "server.log").open("wb")
    jupyter = Path(sys.executable).with_name("jupyter")
    process = subprocess.Popen(
        [
            str(jupyter),
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            # The extension manager would look extensions up online.
            "--LabApp.extension_manager=readonly",
            # CI runs as root; the server is private to this test on 127.0.0.1.
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    lab = Lab(f"http://127.0.0.1:{port}", token, root)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"jupyter lab exited with {process.returncode}:\n"
                    + (home / "server.log").read_text(errors="replace")[-3000:]
                )
            try:
                lab.api("status")
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"jupyter lab did not answer within {timeout} s") from None
                time.sleep(0.25)
        yield lab
    finally:
        # The server and the kernels it started share its session: end them together.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
        log.close()


def write_notebook(path: Path, *sources: str) -> Path:
    """A notebook of code cells with a Python 3 kernel spec (no kernel dialog)."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(notebook, path)
    return path
