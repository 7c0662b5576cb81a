"""Heartbeat's own exceptions. Each message says what went wrong and what to change."""


class HeartbeatError(Exception):
    """Base class: an error the user can act on."""


class ConfigError(HeartbeatError):
    """The configuration file or an environment variable is wrong."""


class ControlsError(HeartbeatError):
    """The controls CSV is refused; the message names every bad row."""


class SensorError(HeartbeatError):
    """An upstream could not be checked; the message names the upstream and the cause."""


class PreprocessQueryError(SensorError):
    """A preprocess_query is not a single SELECT."""


class BackendError(HeartbeatError):
    """A job backend could not start or poll a run."""


class DbtError(HeartbeatError):
    """dbt failed to build the heartbeat models."""


class StateBusyError(HeartbeatError):
    """Another heartbeat process holds the state folder."""
