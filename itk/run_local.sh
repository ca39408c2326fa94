#!/usr/bin/env bash
# Run the A2A interop kit (a2aproject/a2a-itk) against a2a_min, without Docker.
#
#   itk/run_local.sh PATH_TO_A2A_ITK [SCENARIOS_JSON] [PORT]
#
# PATH_TO_A2A_ITK: a checkout of a2a-itk (this script edits two pyproject.toml
# files and the uv.lock files in it, see step 2; use a throwaway clone).
# SCENARIOS_JSON: the kit's scenario file ({"tests": [...]}), default
# itk/scenarios.json. PORT: where the kit's orchestration service listens
# (127.0.0.1, default 18000). Needs python3 (3.12 or later somewhere: the kit's
# Python 1.0 agent wants it), node 20 and npm, fuser (psmisc), curl, and
# PyPI and npm to install from. Everything listens on 127.0.0.1.
#
# The result: PATH_TO_A2A_ITK/itk-results.json (the service's answer) and a
# table on stdout; the agents' logs in PATH_TO_A2A_ITK/logs/.
set -euo pipefail

ITK=$(cd "${1:?usage: $0 PATH_TO_A2A_ITK [SCENARIOS_JSON] [PORT]}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
SCENARIOS=$(cd "$(dirname "${2:-$HERE/scenarios.json}")" && pwd)/$(basename "${2:-$HERE/scenarios.json}")
PORT=${3:-18000}

# 1. uv, in a venv of its own; Python from this machine, never downloaded.
UV_VENV=${A2A_ITK_UV_VENV:-$ITK/.uv-venv}
[ -x "$UV_VENV/bin/uv" ] || { python3 -m venv "$UV_VENV" && "$UV_VENV/bin/pip" install -q uv; }
export PATH="$UV_VENV/bin:$PATH" UV_PYTHON_DOWNLOADS=never
export UV_DEFAULT_INDEX=${UV_DEFAULT_INDEX:-https://pypi.org/simple}
if [ -z "${UV_PYTHON:-}" ]; then            # (a pyenv shim may name a version it cannot run)
    for candidate in $(command -v python3.13 python3.12 python3) \
                     $(ls -d "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3 2>/dev/null); do
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            UV_PYTHON=$candidate
            break
        fi
    done
    export UV_PYTHON=${UV_PYTHON:?the kit needs Python 3.12 or later: set UV_PYTHON}
fi
echo "uv $(uv --version | cut -d' ' -f2), Python $UV_PYTHON"

# 2. The kit's Python projects name a2a-sdk by a GitHub tag (not reachable
# from a machine that has only package registries): the same release from
# PyPI instead, and their locks made again against PyPI (the v0.3 lock names a
# private mirror).
sed -i 's#"a2a-sdk\[sqlite,grpc,http-server\] @ git+https://github.com/a2aproject/a2a-python.git@[^"]*"#"a2a-sdk[sqlite,grpc,http-server]==1.0.3"#' \
    "$ITK/pyproject.toml" "$ITK/agents/python/v10/pyproject.toml"
for dir in "$ITK" "$ITK/agents/python/v10" "$ITK/agents/python/v03"; do
    (cd "$dir" && uv lock -q && uv sync -q)
done

# 3. a2a_min as the kit's "current" agent: agents/repo is this checkout.
ln -sfn "$REPO" "$ITK/agents/repo"
(cd "$REPO/itk" && uv sync -q)

# The TypeScript agents listen on every interface (Express's app.listen(port),
# gRPC on 0.0.0.0): on 127.0.0.1 only here.
sed -i -e "s/app.listen(httpPort, () =>/app.listen(httpPort, '127.0.0.1', () =>/" \
       -e 's/`0.0.0.0:${grpcPort}`/`127.0.0.1:${grpcPort}`/' \
    "$ITK/agents/ts/v10/main.ts" "$ITK/agents/ts/v03/main.ts"

# 4. The TypeScript agents (their generated pb/ is in the kit; the dev tools
# that regenerate it are not needed, and one of them is not on npm any more).
for v in v10 v03; do
    [ -d "$ITK/agents/ts/$v/node_modules" ] || \
        (cd "$ITK/agents/ts/$v" && npm ci --omit=dev --no-audit --no-fund --loglevel=error)
done

# 5. Go, Java and Rust agents are not run: they build with toolchains and
# module repositories (Go proxy, Maven Central, crates.io) beyond PyPI and npm.
echo "skipped: go_v03 go_v10 java_v10 rust_v10 (not in the scenarios)"

# 6. The kit's orchestration service (itk_service.py: what the SDKs' CI posts
# scenarios.json to), on 127.0.0.1; the scenarios; the answer.
mkdir -p "$ITK/logs"
cd "$ITK"
export ITK_LOG_LEVEL=${ITK_LOG_LEVEL:-DEBUG}
uv run uvicorn itk_service:app --host 127.0.0.1 --port "$PORT" > "$ITK/logs/itk_service.log" 2>&1 &
SERVICE=$!
trap 'kill $SERVICE 2>/dev/null || true' EXIT
for _ in $(seq 60); do
    curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break
    sleep 1
done
curl -sS --max-time "${A2A_ITK_TIMEOUT:-3600}" -X POST "http://127.0.0.1:$PORT/run" \
    -H 'Content-Type: application/json' --data-binary @"$SCENARIOS" > "$ITK/itk-results.json"
python3 - "$ITK/itk-results.json" "$SCENARIOS" <<'EOF'
import json, sys
results = json.load(open(sys.argv[1]))
if "results" not in results:
    sys.exit(f"the kit answered: {results}")
tests = {t["name"]: t for t in json.load(open(sys.argv[2]))["tests"]}
for name, r in results["results"].items():
    t = tests.get(name, {})
    print(f"{'PASS' if r['passed'] else 'FAIL'}  {name}  sdks={','.join(r['sdks'])} "
          f"protocols={','.join(t.get('protocols') or [])} streaming={t.get('streaming', False)} "
          f"behavior={t.get('behavior')}")
passed = sum(r["passed"] for r in results["results"].values())
print(f"{passed} passed, {len(results['results']) - passed} failed")
EOF
