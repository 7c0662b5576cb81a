"""A real PostgreSQL 15 server for the JDBC and SAP sensor tests, started in a temp folder on
127.0.0.1 and a free port, with password authentication (so password_env is exercised)."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import psycopg

BIN = Path("/usr/lib/postgresql/15/bin")
USER = "heartbeat"
PASSWORD = "pg-test-secret-9731"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(args: list[str]) -> list[str]:
    """initdb refuses root: run the server's tools as the postgres user when we are root."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@dataclass
class PostgresServer:
    folder: Path
    port: int
    database: str = "lake"

    @property
    def url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}?connectTimeout=5"

    @classmethod
    def start(cls) -> "PostgresServer":
        if not (BIN / "initdb").exists():
            raise RuntimeError("PostgreSQL 15 is not installed: run scripts/setup.sh")
        folder = Path(tempfile.mkdtemp(prefix="heartbeat-pg-"))
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            os.chown(folder, entry.pw_uid, entry.pw_gid)
        data, pwfile = folder / "data", folder / "pwfile"
        pwfile.write_text(PASSWORD + "\n")
        os.chmod(pwfile, 0o644)
        subprocess.run(
            _as_postgres(
                [
                    str(BIN / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    USER,
                    "--pwfile",
                    str(pwfile),
                    "--auth-local=trust",
                    "--auth-host=scram-sha-256",
                    "-E",
                    "UTF8",
                ]
            ),
            check=True,
            capture_output=True,
        )
        server = cls(folder, free_port())
        options = f"-c listen_addresses=127.0.0.1 -p {server.port} -k {folder} -c fsync=off"
        subprocess.run(
            _as_postgres(
                [str(BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "server.log"), "-w", "start"]
            ),
            check=True,
            capture_output=True,
        )
        with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {server.database}")
        return server

    def dsn(self, database: str | None = None) -> str:
        return f"host=127.0.0.1 port={self.port} dbname={database or self.database} user={USER} password={PASSWORD}"

    def execute(self, statements: str | Iterable[str], params: Any = None) -> None:
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            for statement in [statements] if isinstance(statements, str) else statements:
                conn.execute(statement, params)

    def stop(self) -> None:
        subprocess.run(
            _as_postgres([str(BIN / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop"]),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(self.folder, ignore_errors=True)
