"""The bundle (databricks.yml + resources/*.yml) resolved for one target the way the Databricks CLI
resolves it at deploy time, as far as the tests need it: the target's variables and workspace paths, the
mode's presets (development: resources prefixed with the user's short name, schedules paused), then
every `${...}` reference — variables (a complex variable's value, a list or a map, where a field is
that one reference; variables referring to variables), `bundle.*`, `workspace.*` and the resources' own
fields (a volume's `volume_path` is `/Volumes/<catalog>/<schema>/<name>`). `{{...}}` dynamic value
references are left for the job run, as Databricks does. A dashboard's `file_path` (relative to the
resources' folder) is read as its `serialized_dashboard`, as the CLI reads it at deploy.

Each resource is also loaded into the typed classes of `databricks-bundles` (an unknown field fails),
and written back from them: a key the types would drop fails too (`ResolutionError`). The target's
variable values go through its `Bundle`.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from databricks.bundles.alerts import Alert
from databricks.bundles.core import Bundle
from databricks.bundles.dashboards import Dashboard
from databricks.bundles.jobs import Job
from databricks.bundles.schemas import Schema
from databricks.bundles.volumes import Volume

from harness.core.config import PROJECT_DIR

TYPES = {"jobs": Job, "schemas": Schema, "volumes": Volume, "dashboards": Dashboard, "alerts": Alert}
_REFERENCE = re.compile(r"\$\{([A-Za-z0-9_.\-]+)\}")
RESOURCES_DIR = "resources"  # where the resource files are, and what a dashboard's file_path is relative to


@dataclass(frozen=True)
class ResolvedBundle:
    target: str
    mode: str
    workspace: dict[str, str]
    variables: dict[str, str]
    resources: dict[str, dict[str, dict[str, Any]]]  # kind -> key -> body, every ${...} resolved
    artifacts: dict[str, dict[str, Any]]
    bundle: Bundle

    def job(self, key: str) -> dict[str, Any]:
        return self.resources["jobs"][key]

    def task(self, job: str, task_key: str) -> dict[str, Any]:
        (task,) = [t for t in self.job(job)["tasks"] if t["task_key"] == task_key]
        return task

    def dashboard(self, key: str) -> dict[str, Any]:
        """The dashboard as deployed: its resource, and its `.lvdash.json` read as `serialized_dashboard`."""
        return self.resources["dashboards"][key]

    def alert(self, key: str) -> dict[str, Any]:
        return self.resources["alerts"][key]


class ResolutionError(ValueError):
    """The bundle does not resolve for a target as the CLI would deploy it."""


def load(root: Path = PROJECT_DIR) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, Any]]]]:
    """databricks.yml and the resources of the files it includes."""
    bundle = yaml.safe_load((root / "databricks.yml").read_text())
    resources: dict[str, dict[str, dict[str, Any]]] = {}
    for pattern in bundle.get("include", []):
        for path in sorted(root.glob(pattern)):
            for kind, items in (yaml.safe_load(path.read_text()).get("resources") or {}).items():
                resources.setdefault(kind, {}).update(items)
    return bundle, resources


def short_name(user: str) -> str:
    """The CLI's `workspace.current_user.short_name`: the user name before the `@`, lower case, with any
    other character than a letter or digit replaced by `_`."""
    return re.sub(r"[^a-z0-9]", "_", user.split("@")[0].lower())


def resolve(
    target: str, variables: dict[str, str], user: str = "dev.eloper@example.com", root: Path = PROJECT_DIR
) -> ResolvedBundle:
    bundle, resources = load(root)
    resources = copy.deepcopy(resources)
    settings = bundle["targets"][target]
    mode = settings.get("mode", "")
    values = {name: spec.get("default") for name, spec in bundle.get("variables", {}).items()}
    values.update(settings.get("variables", {}))
    values.update(variables)
    missing = sorted(name for name, value in values.items() if value is None)
    if missing:
        raise ResolutionError(f"target {target}: no value for the variables {missing}")
    for _ in range(5):  # variables referring to variables (prod's alert_subscriptions names its destination)
        values = _interpolate(values, {"var": values})
    name = bundle["bundle"]["name"]
    workspace = {**bundle.get("workspace", {}), **settings.get("workspace", {})}
    workspace.setdefault("root_path", f"~/.bundle/{name}/{target}")
    context = {
        "var": values,
        "bundle": {"name": name, "target": target},
        "workspace": {"current_user": {"userName": user, "short_name": short_name(user)}},
    }
    home = f"/Workspace/Users/{user}"
    root_path = _interpolate(workspace["root_path"], context).replace("~", home, 1)
    context["workspace"].update(
        {
            "root_path": root_path,
            "file_path": f"{root_path}/files",
            "artifact_path": f"{root_path}/artifacts",
            "state_path": f"{root_path}/state",
        }
    )
    resources = _interpolate(resources, context)  # variables first: the presets see plain names
    if mode == "development":
        prefix = short_name(user)
        for job in resources.get("jobs", {}).values():
            job["name"] = f"[dev {prefix}] {job['name']}"
            if "schedule" in job:
                job["schedule"]["pause_status"] = "PAUSED"
        for schema in resources.get("schemas", {}).values():
            schema["name"] = f"dev_{prefix}_{schema['name']}"
        for kind in ("dashboards", "alerts"):
            for resource in resources.get(kind, {}).values():
                resource["display_name"] = f"[dev {prefix}] {resource['display_name']}"
    # The resources' own fields, as referenced by others (`${resources.volumes.state.volume_path}`)
    for _ in range(5):  # references to references (the volume's schema is the schema's name)
        context["resources"] = _fields(resources)
        resources = _interpolate(resources, context)
    context["resources"] = _fields(resources)
    leftover = _REFERENCE.findall(yaml.safe_dump(resources))
    if leftover:
        raise ResolutionError(f"target {target}: unresolved references {sorted(set(leftover))}")
    for dashboard in resources.get("dashboards", {}).values():
        dashboard["serialized_dashboard"] = (root / RESOURCES_DIR / dashboard.pop("file_path")).read_text()
    typed = Bundle(target=target, variables=values)
    for kind, items in resources.items():
        for key, body in items.items():
            lost = _changed(body, TYPES[kind].from_dict(body).as_dict())  # ValueError on an unknown field
            if lost:
                raise ResolutionError(f"target {target}: {kind}.{key} loses or changes {lost}")
    artifacts = _interpolate(bundle.get("artifacts", {}), context)
    return ResolvedBundle(
        target,
        mode,
        {k: str(v) for k, v in context["workspace"].items() if isinstance(v, str)},
        {k: str(v) for k, v in values.items()},
        resources,
        artifacts,
        typed,
    )


def _changed(given: Any, loaded: Any, where: str = "") -> list[str]:
    """The keys of `given` that `loaded` (the typed classes' reading of it) lacks or holds otherwise; an empty
    list the types leave out (dev's alert subscriptions) is no key lost."""
    if loaded is _MISSING and given in ([], {}, None):
        return []
    if isinstance(given, dict) and isinstance(loaded, dict):
        return [p for k, v in given.items() for p in _changed(v, loaded.get(k, _MISSING), f"{where}.{k}".strip("."))]
    if isinstance(given, list) and isinstance(loaded, list) and len(given) == len(loaded):
        return [p for i, (g, v) in enumerate(zip(given, loaded)) for p in _changed(g, v, f"{where}[{i}]")]
    return [] if given == loaded else [where or "the resource"]


_MISSING = object()


def _fields(resources: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    fields = copy.deepcopy(resources)
    for volume in fields.get("volumes", {}).values():
        volume["volume_path"] = f"/Volumes/{volume['catalog_name']}/{volume['schema_name']}/{volume['name']}"
        volume["full_name"] = f"{volume['catalog_name']}.{volume['schema_name']}.{volume['name']}"
    for schema in fields.get("schemas", {}).values():
        schema["full_name"] = f"{schema['catalog_name']}.{schema['name']}"
    return fields


def _lookup(context: dict[str, Any], path: str) -> Any:
    value: Any = context
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _interpolate(value: Any, context: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        return {k: _interpolate(v, context) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, context) for v in value]
    if isinstance(value, str):
        whole = _REFERENCE.fullmatch(value)
        found = _lookup(context, whole.group(1)) if whole else None
        if isinstance(found, (dict, list)):  # a complex variable's value, where the field is that reference
            return copy.deepcopy(found)

        def replace(match: re.Match[str]) -> str:
            found = _lookup(context, match.group(1))
            return match.group(0) if found is None or isinstance(found, (dict, list)) else str(found)

        return _REFERENCE.sub(replace, value)
    return value
