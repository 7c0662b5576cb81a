"""Configuration: `heartbeat.yml` parsed into typed settings, plus a few environment overrides.

The one definition of every key. Lookup order for the file: `--config`, then `HEARTBEAT_CONFIG`, then
`./heartbeat.yml`. Paths in the file are relative to the file's folder. An unknown key is refused with
the closest valid one, so a typo never passes silently. Secrets never go in the file: a section names
the environment variable that holds one (`password_env: SALES_DB_PASSWORD`).

The harness, dbt (through `harness.platform.dbt_runner.dbt_args`) and the `heartbeat` dbt adapter (which loads
this same file when dbt runs from the command line) all read their settings from `Config`.
"""

from __future__ import annotations

import glob
import math
import os
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError

from harness.core.config_source import (
    CONTROLS_FILE,
    DEFAULT_SCHEMA,
    DEFAULT_STATE_DIR,
    SCHEMA_PATTERN,
    InStateFolder,
    Source,
    read_source,
    source_of,
)
from harness.core.errors import ConfigError
from harness.core.redact import register_secret
from harness.core.suggest import typos_of

PROJECT_DIR = Path(__file__).resolve().parents[2]
DEFAULT_CONTROLS_CSV = PROJECT_DIR / "seeds" / CONTROLS_FILE

DELTA_JARS_ENV = "HEARTBEAT_DELTA_JARS"  # comma-separated Delta jars for local Spark (else $SPARK_HOME/jars)


class Settings(BaseModel):
    """A section of heartbeat.yml: typed, immutable, unknown keys refused."""

    # Numbers are accepted where text is expected: YAML reads `123:` (a job id) as a number.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, coerce_numbers_to_str=True)


# --- the heartbeat's own behaviour -----------------------------------------------------------------
class SensingSettings(Settings):
    check_timeout_seconds: PositiveFloat = 60.0  # a check slower than this becomes an error event for its rows
    max_parallel_checks: PositiveInt = 8


class RunsSettings(Settings):
    stuck_after_seconds: float = Field(6 * 3600.0, ge=0)  # a run still going after this is flagged RUN_STUCK
    # A refused start is retried after a wait that doubles from this, up to the maximum.
    refused_start_retry_seconds: PositiveFloat = 60.0
    refused_start_retry_max_seconds: PositiveFloat = 3600.0
    max_parallel_starts: PositiveInt = 8  # start requests sent side by side in one tick

    @property
    def track_days(self) -> float:
        """How far back open runs are looked for: well beyond the time a run may take."""
        return max(30.0, self.stuck_after_seconds * 4 / 86400)


class EventsSettings(Settings):
    # Days of events kept whole; older days keep only what a rebuild of the control table needs, the
    # rest moves to the archive table (harness.tick.retention). None: every event is kept.
    keep_days: PositiveInt | None = None


class TriggerFileSettings(Settings):
    root: Path | None = None  # trigger files land in <root>/<sensor_id>/


class LocalJob(Settings):
    """A job of the local runner: a shell command run as a subprocess."""

    name: str | None = None
    command: str = Field(min_length=1)
    timeout_seconds: PositiveFloat | None = None


class LocalRunnerSettings(Settings):
    jobs: dict[str, LocalJob] = {}


class FreshnessSettings(Settings):
    """Who is told when an upstream misses its expected_within (once per lapse, one attempt each)."""

    notify_command: str | None = Field(None, min_length=1)  # run by bash, the details as JSON on stdin
    webhook_url: str | None = Field(None, pattern=r"^https?://")  # POSTed the details as JSON
    timeout_seconds: PositiveFloat = 10.0  # each notification


def _table_list(value: Any) -> Any:
    """`job: table` or `job: [table, ...]`."""
    return [value] if isinstance(value, str) else value


class PublishSettings(Settings):
    """Changes the harness publishes for producers (source kind `published`)."""

    # job id -> the tables its successful runs write: each success publishes a change of each of them.
    on_success: dict[str, Annotated[list[Annotated[str, Field(min_length=1)]], BeforeValidator(_table_list)]] = {}


# --- source connections ----------------------------------------------------------------------------
class KafkaClientSettings(Settings):
    """Broker settings; every key optional so a product can override only some of them."""

    bootstrap_servers: str | None = None
    security_protocol: Annotated[
        Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] | None,
        BeforeValidator(lambda v: v.upper() if isinstance(v, str) else v),
    ] = None
    sasl_mechanism: str | None = None
    username: str | None = None
    username_env: str | None = None
    password_env: str | None = None
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password_env: str | None = None
    ssl_endpoint_identification_algorithm: str | None = None
    properties: dict[str, str] = {}  # further librdkafka properties
    max_messages: PositiveInt | None = None  # bound of sensor_new_data for preprocess_query
    timeout_seconds: PositiveFloat | None = None


class KafkaSettings(KafkaClientSettings):
    products: dict[str, KafkaClientSettings] = {}  # a product on its own cluster or account

    def for_product(self, product: str | None) -> KafkaClientSettings:
        """The section with `products.<product>` laid over it."""
        base = KafkaClientSettings(**self.model_dump(exclude={"products"}, exclude_unset=True))
        if product is None or product not in self.products:
            return base
        override = self.products[product].model_dump(exclude_unset=True)
        return base.model_copy(update=override)


class JdbcConnectionSettings(Settings):
    url: str
    driver: str
    user: str | None = None
    user_env: str | None = None
    password_env: str | None = None
    identifier_quote: Literal['"', "`", "["] = '"'
    backslash_escapes: bool = False  # MySQL/MariaDB string literals
    properties: dict[str, str] = {}  # further JDBC reader options
    schema_: str | None = Field(None, alias="schema")  # SAP: the schema of the chain log table
    log_table: str | None = None  # SAP: the chain log table


_SECTION_KEYS = {"connections", "schema", "log_table"}  # keys of the section itself, beside the connections


def _single_connection(value: Any) -> Any:
    """A section may give one connection directly (`url:`, `driver:`, ...): it becomes `default`."""
    if isinstance(value, Mapping) and "url" in value and "connections" not in value:
        direct = {k: v for k, v in value.items() if k not in _SECTION_KEYS}
        rest = {k: v for k, v in value.items() if k in _SECTION_KEYS}
        return {**rest, "connections": {"default": direct}}
    return value


class JdbcSettings(Settings):
    connections: dict[str, JdbcConnectionSettings] = {}


class SapSettings(JdbcSettings):
    schema_: str | None = Field(None, alias="schema")
    log_table: str = "RSPCLOGCHAIN"


class DeltaSettings(Settings):
    storage_options: dict[str, str] = {}  # object store settings for delta-rs
    storage_options_env: dict[str, str] = {}  # option -> the environment variable holding its secret value


class IcebergCatalogSettings(Settings):
    """One pyiceberg catalog: its properties (`type: sql`, `uri`, `warehouse`, a REST `uri`...), and the
    properties whose values are secrets, read from environment variables."""

    properties: dict[str, str] = {}
    properties_env: dict[str, str] = {}  # property -> the environment variable holding its value


class IcebergSettings(Settings):
    catalogs: dict[str, IcebergCatalogSettings] = {}  # sensor_id "<catalog>: namespace.table"; "default" without


class UpstreamTableAlias(Settings):
    table: str
    match_column: str = "sensor_id"


class UpstreamSensorTableSettings(Settings):
    tables: dict[str, UpstreamTableAlias] = {}


class SourceSections(Settings):
    """The sections of heartbeat.yml that configure a source kind's sensor, each read as it is written (its
    sensor module resolves it when the sensor is built: `DECLARATION` in harness/sensors/<sensor>.py).
    `HeartbeatFile` holds them at the top level of the file; a Config as `config.sources`."""

    kafka: KafkaSettings = KafkaSettings()
    jdbc: Annotated[JdbcSettings, BeforeValidator(_single_connection)] = JdbcSettings()
    sap_bw: Annotated[SapSettings, BeforeValidator(_single_connection)] = SapSettings()
    sap_b4: Annotated[SapSettings, BeforeValidator(_single_connection)] = SapSettings()
    delta: DeltaSettings = DeltaSettings()
    upstream_sensor_table: UpstreamSensorTableSettings = UpstreamSensorTableSettings()
    iceberg: IcebergSettings = IcebergSettings()


# --- Databricks ------------------------------------------------------------------------------------
DEFAULT_RUN_CONTEXT_PARAMETER = "heartbeat_run_context_id"
DEFAULT_CHANGE_RANGE_PARAMETER = "heartbeat_change_range"


class JobParameterNames(Settings):
    """The job parameters a run receives; None for one the job does not get."""

    run_context_id: str | None = DEFAULT_RUN_CONTEXT_PARAMETER
    change_range: str | None = DEFAULT_CHANGE_RANGE_PARAMETER


def _parameter_names(value: Any) -> Any:
    """`true` (the defaults), `false` (none), or a mapping of names."""
    if value is None or value is True:
        return JobParameterNames()
    if value is False:
        return JobParameterNames(run_context_id=None, change_range=None)
    return value


ParameterNames = Annotated[JobParameterNames, BeforeValidator(_parameter_names)]


class DatabricksJob(Settings):
    job_parameters: ParameterNames = JobParameterNames()


class DatabricksSettings(Settings):
    host: str | None = None  # else DATABRICKS_HOST / the profile / the job's own identity
    profile: str | None = None
    token_env: str | None = None  # the NAME of the variable holding a token, never the token
    http_timeout_seconds: PositiveFloat = 15.0  # one HTTP attempt
    retry_timeout_seconds: PositiveInt = 30  # one API call with all its retries
    max_retry_wait_seconds: PositiveFloat = 10.0  # cap on a single Retry-After wait
    unreachable_cooldown_seconds: float = Field(60.0, ge=0)  # after a call ran out of budget
    job_parameters: ParameterNames = JobParameterNames()
    jobs: dict[str, DatabricksJob] = {}
    # dbt's databricks target where no environment variables can be set (serverless jobs): the SQL
    # warehouse's HTTP path, and the secret (`scope/key`) holding the token dbt connects with, read with
    # the heartbeat's own identity. DATABRICKS_HTTP_PATH / DATABRICKS_TOKEN in the environment win.
    dbt_http_path: str | None = None
    dbt_token_secret: str | None = Field(None, pattern=r"^[^/\s]+/[^/\s]+$")

    def parameters_for(self, job_id: str) -> JobParameterNames:
        job = self.jobs.get(job_id)
        return job.job_parameters if job is not None else self.job_parameters


class ControlsSettings(Settings):
    """`controls:`: defaults for the controls CSV's rows."""

    # where a row whose start_from is empty starts watching: `beginning` (what its upstream already holds is
    # new data) or `now` (its first check records where the upstream is); a row's own value wins
    start_from: Literal["beginning", "now"] = "beginning"


# --- the file ----------------------------------------------------------------------------------------
class HeartbeatSettings(Settings):
    """The sections of heartbeat.yml that set the heartbeat's own behaviour, each held as it was read:
    at the top level of the file (`HeartbeatFile`), as `config.settings` in a Config."""

    sensing: SensingSettings = SensingSettings()
    runs: RunsSettings = RunsSettings()
    events: EventsSettings = EventsSettings()
    databricks: DatabricksSettings = DatabricksSettings()
    freshness: FreshnessSettings = FreshnessSettings()
    publish: PublishSettings = PublishSettings()
    controls: ControlsSettings = ControlsSettings()


class HeartbeatFile(SourceSections, HeartbeatSettings):
    """Every key heartbeat.yml may hold: the sources' sections (`SourceSections`), the heartbeat's own
    (`HeartbeatSettings`), and these, which a Config holds resolved."""

    state_dir: Path = DEFAULT_STATE_DIR
    backend: Literal["local", "databricks"] = "local"
    dbt_target: Literal["local", "databricks"] | None = None  # default: databricks with that backend
    catalog: str | None = None  # Unity Catalog catalog (databricks target); spark_catalog locally
    schema_: str = Field(DEFAULT_SCHEMA, alias="schema", pattern=SCHEMA_PATTERN)
    # Spark Connect instead of classic Spark: `local` (a Connect server inside this process, on the
    # embedded metastore and warehouse) or a server's `sc://host:port`. Unset: classic local Spark.
    # Inside a Databricks job the runtime's own session is used whatever this says.
    spark_remote: str | None = Field(None, pattern=r"^(local(\[[0-9*, ]+\])?|sc://.+)$")
    project_dir: Path = PROJECT_DIR
    controls_csv: Path = DEFAULT_CONTROLS_CSV
    dbt_target_dir: Path | None = None  # dbt's target/ (manifest, compiled SQL); default <state>/dbt_target
    trigger_file: TriggerFileSettings = TriggerFileSettings()
    local_runner: LocalRunnerSettings = LocalRunnerSettings()


LOCAL_CATALOG = "spark_catalog"


@dataclass(frozen=True)
class Config(InStateFolder):
    """The resolved configuration of one heartbeat: paths absolute, environment overrides applied."""

    config_path: Path | None
    project_dir: Path
    state_dir: Path
    backend: str = "local"
    dbt_target: str = "local"
    catalog: str = LOCAL_CATALOG
    schema: str = DEFAULT_SCHEMA
    spark_remote: str | None = None  # Spark Connect: `local` or `sc://...`; None for classic Spark
    controls_csv: Path = DEFAULT_CONTROLS_CSV
    trigger_root: Path | None = None
    local_jobs: Mapping[str, LocalJob] = field(default_factory=dict)
    dbt_target_dir: Path | None = None
    settings: HeartbeatSettings = HeartbeatSettings()  # sensing, runs, events, databricks, freshness, publish
    sources: SourceSections = SourceSections()  # each source kind's section, read by its sensor module
    delta_jars: tuple[str, ...] = ()  # Delta's jars for local Spark, when the machine has them

    @property
    def base_dir(self) -> Path:
        """The config file's folder (commands run there), else the working folder."""
        return self.config_path.parent if self.config_path else Path.cwd()

    @property
    def metastore_dir(self) -> Path:
        return self.layout.metastore

    @property
    def dbt_target_path(self) -> Path:
        """dbt rewrites its target files in place: on local disk when the state folder is a volume."""
        return self.dbt_target_dir or self.layout.dbt_target

    @property
    def dbt_log_path(self) -> Path:
        """dbt appends its log: on local disk when the state folder is a volume."""
        return self.layout.dbt_logs

    @property
    def table_format(self) -> str:
        """Delta on Databricks and wherever Delta's jars are on local Spark's classpath, else parquet.
        Decided from the configuration alone: no Spark session (nor its JVM) is asked."""
        return "delta" if self.dbt_target == "databricks" or self.delta_jars else "parquet"

    def table(self, name: str) -> str:
        """A table of the heartbeat's schema as a three-part name: `catalog.schema.name`."""
        return f"{self.catalog}.{self.schema}.{name}"


def env_secret(variable: str | None, where: str) -> str | None:
    """The value of the environment variable a config key names (`password_env: VAR`), registered so it
    is masked wherever the harness writes text."""
    if not variable:
        return None
    value = os.environ.get(variable)
    if value is None:
        raise ConfigError(f"{where}: environment variable {variable} is not set")
    register_secret(value)
    return value


def load_config(path: str | os.PathLike[str] | None = None, overrides: Mapping[str, str] | None = None) -> Config:
    """Load the configuration; a missing default file means all defaults (the embedded demo). `overrides`
    (`--set key=value` on the command line; dotted keys for sections) win over the file and the
    environment: a Databricks job on serverless compute passes its deployment's values this way."""
    return _validated(read_source(path, overrides))


def config_from_mapping(
    raw: Mapping[str, Any], base: Path, config_path: Path | None = None, overrides: Mapping[str, str] | None = None
) -> Config:
    """Parse a heartbeat.yml's content (with the environment overrides, then `overrides`) into a Config."""
    return _validated(source_of(raw, base, config_path, overrides))


def _validated(source: Source) -> Config:
    try:
        parsed = HeartbeatFile.model_validate(source.raw)
    except ValidationError as exc:
        raise ConfigError(f"{source.where}: refused:\n  " + "\n  ".join(_problems(exc))) from None
    return _resolve(parsed, source)


# What a local state folder's path may not hold: the state's tables are created at their folders by SQL
# statements that quote the path (a quote ends it, a backslash escapes), and the metastore's Derby URL
# names the folder among settings that `;` separates.
NOT_IN_LOCAL_STATE_PATH = "'\\;"


def _resolve(parsed: HeartbeatFile, source: Source) -> Config:
    where, config_path = source.where, source.config_path
    project_dir = source.path(parsed.project_dir)
    controls_csv = source.path(parsed.controls_csv)
    if controls_csv.name != CONTROLS_FILE or project_dir not in controls_csv.parents:
        raise ConfigError(
            f"{where}: controls_csv must be a file named {CONTROLS_FILE} inside the dbt project "
            f"{project_dir} (it is dbt's seed), got {controls_csv}"
        )
    dbt_target = parsed.dbt_target or ("databricks" if parsed.backend == "databricks" else "local")
    if dbt_target == "databricks" and not parsed.catalog:
        raise ConfigError(
            f"{where}: catalog: is required with the databricks target: the Unity Catalog catalog that holds "
            f"the heartbeat's schema {parsed.schema_!r} (the harness and dbt both address its tables as "
            "catalog.schema.table); or set HEARTBEAT_CATALOG"
        )
    keep_days = parsed.events.keep_days
    if keep_days is not None and keep_days < parsed.runs.track_days:
        raise ConfigError(
            f"{where}: events.keep_days is {keep_days}, shorter than the {parsed.runs.track_days:g} days open "
            "runs are looked for (runs.stuck_after_seconds x 4, at least 30): set it to at least "
            f"{math.ceil(parsed.runs.track_days)}"
        )
    state_dir = source.path(parsed.state_dir)
    if dbt_target == "local" and set(str(state_dir)) & set(NOT_IN_LOCAL_STATE_PATH):
        raise ConfigError(
            f"{where}: state_dir: {state_dir} holds a quote ('), a backslash or a semicolon: the state's tables "
            "are created at their folders by SQL statements that quote the path, where a quote ends it and a "
            "backslash escapes, and the metastore's address separates its settings with semicolons; choose a "
            "folder whose path holds none of them (spaces are fine)"
        )
    root = parsed.trigger_file.root
    return Config(
        config_path=config_path,
        project_dir=project_dir,
        state_dir=state_dir,
        backend=parsed.backend,
        dbt_target=dbt_target,
        catalog=parsed.catalog or LOCAL_CATALOG,
        schema=parsed.schema_,
        spark_remote=parsed.spark_remote,
        controls_csv=controls_csv,
        trigger_root=source.path(root) if root else None,
        local_jobs=parsed.local_runner.jobs,
        dbt_target_dir=source.path(parsed.dbt_target_dir) if parsed.dbt_target_dir else None,
        delta_jars=delta_jars(),
        settings=HeartbeatSettings(**{name: getattr(parsed, name) for name in HeartbeatSettings.model_fields}),
        sources=SourceSections(**{name: getattr(parsed, name) for name in SourceSections.model_fields}),
    )


def delta_jars() -> tuple[str, ...]:
    """Delta's jars when the machine has them: named by HEARTBEAT_DELTA_JARS, or under $SPARK_HOME/jars."""
    named = [p for p in os.environ.get(DELTA_JARS_ENV, "").split(",") if p]
    spark_home = os.environ.get("SPARK_HOME")
    found = sorted(glob.glob(os.path.join(spark_home, "jars", "delta-spark*.jar"))) if spark_home else []
    return tuple(named + found)


# --- messages --------------------------------------------------------------------------------------
_SECRET_KEYS = {"password", "token", "secret", "client_secret", "ssl_key_password"}


def _problems(exc: ValidationError) -> list[str]:
    """One line per problem: the dotted key, what is wrong, and for an unknown key the closest valid one."""
    lines = []
    for error in exc.errors():
        loc = tuple(str(p) for p in error["loc"] if not str(p).startswith("function-"))
        dotted = ".".join(loc) or "(top level)"
        if error["type"] == "extra_forbidden":
            key = loc[-1]
            if key in _SECRET_KEYS:
                lines.append(
                    f"{dotted}: secrets never go in heartbeat.yml; name the environment variable that "
                    f"holds it instead ({key}_env: MY_VARIABLE)"
                )
                continue
            valid = _keys_at(HeartbeatFile, loc[:-1])
            close = typos_of(key, valid, limit=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid keys here: {', '.join(sorted(valid))}"
            lines.append(f"{dotted}: unknown key{hint}")
        else:
            lines.append(f"{dotted}: {error['msg']} (got {error.get('input')!r})")
    return lines


def _keys_at(model: type[BaseModel], loc: tuple[str, ...]) -> list[str]:
    """The keys valid at `loc` inside `model` (following sub-models and mappings of sub-models)."""
    current: Any = model
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            fields = {(f.alias or name): f for name, f in current.model_fields.items()}
            current = fields[part].annotation if part in fields else None
        elif get_origin(current) is dict:
            current = get_args(current)[1]
        current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or name for name, f in current.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    """The model inside Optional[...] / Annotated[...]."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        models = [a for a in get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
        return models[0] if models else annotation
    return annotation
