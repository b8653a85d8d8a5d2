#!/usr/bin/env bash
# Regenerates formats/concepts/proto/*_pb2.py from the .proto files beside them.
# Needs grpcio-tools (pip install grpcio-tools); the generated modules are committed,
# so users never need protoc. Keep the protobuf runtime pin in pyproject.toml at or
# above the protoc version this prints.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m grpc_tools.protoc --version
python -m grpc_tools.protoc -I formats/concepts/proto --python_out=formats/concepts/proto formats/concepts/proto/tfckpt_bundle.proto
