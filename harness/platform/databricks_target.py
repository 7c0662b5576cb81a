"""What dbt's `databricks` target needs from the heartbeat where the job cannot set environment
variables (serverless compute): the workspace host and the token dbt connects with.

profiles.yml reads DATABRICKS_HOST, DATABRICKS_HTTP_PATH (or the var `heartbeat_databricks_http_path`,
from `databricks.dbt_http_path`) and the token from DBT_ENV_SECRET_DATABRICKS_TOKEN (dbt masks
`DBT_ENV_SECRET_` variables in its logs) or DATABRICKS_TOKEN. What the environment already has wins; what
is missing is asked of the workspace with the heartbeat's own identity (databricks-sdk: inside a job,
the job's run-as identity): the host the SDK resolved, and the secret `databricks.dbt_token_secret`,
read with `WorkspaceClient.dbutils.secrets.get` — inside the Databricks runtime that is the runtime's own
dbutils (the supported way there; the Secrets API's `get_secret` is documented as unsupported outside a
notebook), elsewhere the SDK's remote equivalent.
"""

from __future__ import annotations

import os

from harness.core.config import Config
from harness.core.errors import BackendError
from harness.core.redact import register_secret

HOST_ENV = "DATABRICKS_HOST"
TOKEN_ENVS = ("DBT_ENV_SECRET_DATABRICKS_TOKEN", "DATABRICKS_TOKEN")


def prepare(config: Config) -> None:
    """Put the host and dbt's token in this process's environment when they are not there yet."""
    secret = config.settings.databricks.dbt_token_secret
    need_token = bool(secret) and not any(os.environ.get(name) for name in TOKEN_ENVS)
    need_host = not os.environ.get(HOST_ENV)
    if not (need_token or need_host):
        return
    from harness.backends.databricks import DatabricksBackend

    client = DatabricksBackend(config).client()
    if need_host and client.config.host:
        os.environ[HOST_ENV] = client.config.host
    if need_token and secret:
        scope, _, key = secret.partition("/")
        try:
            token = client.dbutils.secrets.get(scope=scope, key=key)
        except Exception as exc:  # noqa: BLE001 - the SDK's errors, or the runtime's dbutils' own
            raise BackendError(
                f"databricks.dbt_token_secret {secret}: cannot read the secret ({type(exc).__name__}: {exc}); "
                f"grant the heartbeat's identity READ on the secret scope {scope!r}"
            ) from None
        register_secret(token)
        os.environ[TOKEN_ENVS[0]] = token
