#!/usr/bin/env bash
# Regenerates rpc/generated/ from rpc/proto/*.proto (needs grpcio-tools: pip install -e '.[test]').
# The generated modules are committed so installing yarnflow needs no protoc.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/generated"
rm -f "$out"/*_pb2*.py "$out"/*.pyi
python -m grpc_tools.protoc -I "$here/proto" --python_out="$out" --pyi_out="$out" \
  --grpc_python_out="$out" "$here"/proto/*.proto
# protoc writes "import common_pb2"; inside a package that must be relative.
sed -i -E 's/^import ([a-z_]+_pb2) as /from . import \1 as /' "$out"/*_pb2*.py
touch "$out/__init__.py"
