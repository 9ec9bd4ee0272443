#!/usr/bin/env bash

# Copyright 2026 The Kubernetes Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Judges this tree's MultiKueue dispatchers (Incremental, AllAtOnce) with mkdc's
# conformance suite: Kueue's manager built from this tree as `make build` builds it (its
# vendor/), on clusters of real kube-apiservers run as processes (no kind, no images).
# Writes a junit file per dispatcher and mkdc's reports to $ARTIFACTS; exits 1 when a
# check failed or a selected check was not decided, 2 when the run could not start.
#
# MKDC               an installed mkdc command (default: installed into bin/ from MKDC_PIP)
# MKDC_PIP           what pip installs mkdc from (a release, or a git URL pinned to a tag)
# MKDC_PROFILES      the dispatchers judged (default: incremental all-at-once)
# MKDC_CHECKS        check ids, comma-separated (default: every check their claims select)
# MKDC_FULL          "true": also the scenarios whose claimed timing is long (periodic)
# MKDC_CACHE_DIR     mkdc's binary cache (default: ~/.cache/mkdc)

set -o errexit
set -o nounset
set -o pipefail

SOURCE_DIR="$(cd "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT_DIR="$(cd "$SOURCE_DIR/../.." && pwd -P)"
ARTIFACTS="${ARTIFACTS:-$ROOT_DIR/bin/run-multikueue-dispatcher-conformance}"
MKDC_PIP="${MKDC_PIP:-git+https://github.com/OWNER/mkdc@v0.1.0}"
MKDC_PROFILES="${MKDC_PROFILES:-incremental all-at-once}"
MKDC_CHECKS="${MKDC_CHECKS:-}"
MKDC_FULL="${MKDC_FULL:-false}"

mkdir -p "$ARTIFACTS"
if [ -z "${MKDC:-}" ]; then
    python3 -m venv "$ROOT_DIR/bin/mkdc-venv"
    "$ROOT_DIR/bin/mkdc-venv/bin/pip" install --quiet "$MKDC_PIP"
    MKDC="$ROOT_DIR/bin/mkdc-venv/bin/mkdc"
fi

# a non-root job on a node that refuses user namespaces stops here, in one line
"$MKDC" prepare
"$MKDC" bins --kueue-source "$ROOT_DIR"

args=(--kueue-source "$ROOT_DIR" --report-dir "$ARTIFACTS/mkdc")
for profile in $MKDC_PROFILES; do args+=(--profile "$profile"); done
if [ -n "$MKDC_CHECKS" ]; then args+=(--checks "$MKDC_CHECKS"); fi
if [ "$MKDC_FULL" = true ]; then args+=(--full); fi
code=0
"$MKDC" run "${args[@]}" || code=$?

# Prow's junit lens reads $ARTIFACTS/junit*.xml
for report in "$ARTIFACTS"/mkdc/*/junit.xml "$ARTIFACTS"/mkdc/junit.xml; do
    [ -f "$report" ] || continue
    name=$(basename "$(dirname "$report")")
    cp "$report" "$ARTIFACTS/junit_multikueue-dispatcher-conformance-${name}.xml"
done
if [ -d "$ARTIFACTS/mkdc" ]; then
    "$MKDC" report summary "$ARTIFACTS/mkdc" > "$ARTIFACTS/mkdc/summary.md"
    for report in "$ARTIFACTS"/mkdc/*/report.yaml "$ARTIFACTS"/mkdc/report.yaml; do
        if [ -f "$report" ]; then "$MKDC" report verify "$report"; fi
    done
fi
exit "$code"
