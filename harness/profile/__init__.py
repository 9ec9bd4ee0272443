"""Everything a vendor hands in about a dispatcher, in one place.

- `profile.schema.json`: the contract of a profile (editors complete and check it), and
  `plan.schema.json` for `mkdc run --plan` files; `schema` checks a document against them
  and says an error in one line;
- `load`: a profile read, checked against the schema and for what a schema cannot say
  (files, fields that depend on each other, templates), into `model`'s frozen values;
- `model`: the Profile a run reads, and how its command and environment render;
- `deploy` (a deploy folder), `objects` (objects made before start); names by rule
  such as `{cluster|trimSuffix:-cluster}-kc` render with `harness.templates`.

The plan a run would follow for a profile is said by `harness.orchestrate.explain`,
which reads the suite's catalogue too.
"""

from harness.profile.load import MAX_PROFILE_BYTES, load_profile
from harness.profile.model import (
    API_VERSION,
    BUILTIN_DISPATCHERS,
    CLUSTER_SCOPES,
    DEFAULT_NAMESPACE,
    DISPATCHER_ALL_AT_ONCE,
    DISPATCHER_INCREMENTAL,
    FEATURES,
    HOST_PLACEHOLDERS,
    IMAGE_BINARY,
    NOMINATION_WRITE_MODES,
    ORDERINGS,
    PER_SCENARIO,
    PLACEHOLDERS,
    PROFILES_DIR,
    SHARED,
    Claims,
    EnvironmentSpec,
    Knobs,
    Profile,
    Rbac,
    RunSpec,
    available_profiles,
    fill,
    resolve_profile,
)

__all__ = [
    "API_VERSION",
    "BUILTIN_DISPATCHERS",
    "CLUSTER_SCOPES",
    "DEFAULT_NAMESPACE",
    "DISPATCHER_ALL_AT_ONCE",
    "DISPATCHER_INCREMENTAL",
    "FEATURES",
    "HOST_PLACEHOLDERS",
    "IMAGE_BINARY",
    "MAX_PROFILE_BYTES",
    "NOMINATION_WRITE_MODES",
    "ORDERINGS",
    "PER_SCENARIO",
    "PLACEHOLDERS",
    "PROFILES_DIR",
    "SHARED",
    "Claims",
    "EnvironmentSpec",
    "Knobs",
    "Profile",
    "Rbac",
    "RunSpec",
    "available_profiles",
    "fill",
    "load_profile",
    "resolve_profile",
]
