#!/usr/bin/env bash
# Regenerates tests/data/proto/tfckpt_bundle.desc, the descriptor set the tests build reference
# protobuf classes from (tests/proto_oracle.py), from formats/concepts/proto/tfckpt_bundle.proto.
# ckpt itself imports no protobuf: formats/concepts/proto/messages.py declares the same messages
# and encodes/decodes them by hand; keep the two in step. Needs grpcio-tools (pip install grpcio-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m grpc_tools.protoc --version
inc=$(python -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')
python -m grpc_tools.protoc -I formats/concepts/proto -I "$inc" --include_imports \
    --descriptor_set_out=tests/data/proto/tfckpt_bundle.desc formats/concepts/proto/tfckpt_bundle.proto
