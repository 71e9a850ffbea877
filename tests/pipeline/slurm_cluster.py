"""A one-node SLURM cluster on localhost for the tests: Debian's slurm-wlm and munge, installed with
apt-get when missing, their daemons started in the foreground from files in a temporary directory
(key, sockets, state, logs), so nothing of the machine's own configuration is read or changed, and
stopped by the process ids started here.

`local_cluster(root)` yields the environment that points SLURM's commands (sbatch, squeue, ...) at it;
`Unavailable` says why a cluster cannot be had here (not root, no apt-get, a daemon that does not start).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

PACKAGES = ("slurm-wlm", "munge")
COMMANDS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "sinfo")
PARTITION = "fedrepro"
# Every job that ends is written here by slurmctld (jobcomp/filetxt): the record that a job ran under SLURM.
JOBCOMP = "jobcomp.txt"
# Declared to slurmd whatever the machine has (config_overrides): memory is not a consumable resource here
# (CR_Core), and the rules ask up to 4 GB, which must not exceed the node's RealMemory.
REAL_MEMORY_MB = 16000


class Unavailable(Exception):
    """No SLURM cluster can be run here; the message says why."""


def ensure_installed() -> None:
    if os.geteuid() != 0:
        raise Unavailable("needs root to install slurm-wlm/munge and start their daemons")
    if all(shutil.which(c) for c in COMMANDS):
        return
    if not shutil.which("apt-get"):
        raise Unavailable(f"{', '.join(PACKAGES)} not installed and no apt-get to install them")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
    done = subprocess.run(install, env=env, capture_output=True, text=True)
    if done.returncode != 0:  # a stale package list: update once, then try again
        subprocess.run(["apt-get", "update"], env=env, capture_output=True)
        done = subprocess.run(install, env=env, capture_output=True, text=True)
    missing = [c for c in COMMANDS if not shutil.which(c)]
    if done.returncode != 0 or missing:
        raise Unavailable(f"apt-get install {' '.join(PACKAGES)} failed (missing: {', '.join(missing) or '-'}): "
                          f"{done.stderr.strip()[-300:]}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slurm_conf(root: Path, munge_socket: Path) -> str:
    host = socket.gethostname()
    for sub in ("state", "spool"):
        (root / sub).mkdir(exist_ok=True)
    return f"""\
ClusterName=fedrepro-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root / "state"}
SlurmdSpoolDir={root / "spool"}
SlurmctldPidFile={root / "slurmctld.pid"}
SlurmdPidFile={root / "slurmd.pid"}
SlurmctldLogFile={root / "slurmctld.log"}
SlurmdLogFile={root / "slurmd.log"}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root / JOBCOMP}
NodeName=localhost NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={REAL_MEMORY_MB} State=UNKNOWN
PartitionName={PARTITION} Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def _srun_shim(root: Path, conf: Path) -> Path:
    """A folder with an `srun` that finds this cluster's slurm.conf. The plugin's job step (jobstep 0.6.1)
    drops SLURM_* variables, SLURM_CONF among them, before it calls srun inside a job; a real cluster has
    its configuration where srun looks without it (/etc/slurm), which this one must not touch."""
    folder = root / "bin"
    folder.mkdir(exist_ok=True)
    shim = folder / "srun"
    shim.write_text(f'#!/bin/sh\nSLURM_CONF={conf} exec {shutil.which("srun")} "$@"\n')
    shim.chmod(0o755)
    return folder


def _start(stack: ExitStack, root: Path, name: str, *args: str) -> subprocess.Popen:
    """Start a daemon in the foreground; on leaving `stack` it is stopped (SIGTERM, then SIGKILL)."""
    out = open(root / f"{name}.out", "w")
    stack.callback(out.close)
    proc = subprocess.Popen([name, *args], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    stack.callback(stop)
    return proc


def _wait(what: str, ready, procs: list[subprocess.Popen], root: Path, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            raise Unavailable(f"{dead[0].args[0]} exited with {dead[0].returncode} while waiting for {what}: "
                              f"{_tail(root / f'{dead[0].args[0]}.out')}")
        if ready():
            return
        time.sleep(0.3)
    raise Unavailable(f"{what} not ready after {timeout:.0f} s: {_tail(root / 'slurmctld.log')}")


def _tail(path: Path) -> str:
    return path.read_text(errors="replace").strip()[-400:] if path.exists() else f"(no {path.name})"


def _succeeds(cmd: list[str], env: dict[str, str], expect: str = "") -> bool:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return done.returncode == 0 and expect in done.stdout


@contextmanager
def local_cluster(root: Path) -> Iterator[dict[str, str]]:
    """munged, slurmctld and slurmd on localhost, configured under `root`; yields the environment for
    SLURM's client commands (SLURM_CONF). The daemons are stopped on exit, also after a failure."""
    ensure_installed()
    root.mkdir(parents=True, exist_ok=True)
    key, munge_socket = root / "munge.key", root / "munge.socket"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(slurm_conf(root, munge_socket))
    env = {**os.environ, "SLURM_CONF": str(conf), "PATH": f"{_srun_shim(root, conf)}:{os.environ['PATH']}"}
    with ExitStack() as stack:
        munged = _start(stack, root, "munged", "--foreground", "--force", f"--key-file={key}",
                        f"--socket={munge_socket}", f"--pid-file={root / 'munged.pid'}",
                        f"--log-file={root / 'munged.log'}", f"--seed-file={root / 'munged.seed'}")
        _wait("munged", munge_socket.exists, [munged], root)
        ctld = _start(stack, root, "slurmctld", "-D", "-i", "-f", str(conf))
        slurmd = _start(stack, root, "slurmd", "-D", "-f", str(conf), "-N", "localhost")
        # jobs still queued or running when we leave (a failed test) are cancelled before the daemons stop
        stack.callback(subprocess.run, ["scancel", f"--partition={PARTITION}"], env=env, capture_output=True)
        procs = [munged, ctld, slurmd]
        _wait("node localhost idle", lambda: _succeeds(["sinfo", "-h", "-N", "-o", "%T"], env, "idle"), procs, root)
        yield env
