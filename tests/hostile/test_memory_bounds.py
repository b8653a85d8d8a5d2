"""Issue 24 #20: memory bounded by the work, not by the input. ``convert X.npz --to safetensors`` streams
the npz member for its read-back (it read it whole: a MemoryError under an address-space limit ``verify``
passes); a long string in ``saved_model.pbtxt`` is tokenised in linear time and bounded memory (the
backtracking regex kept ~170 bytes a character). Each runs in a child process under RLIMIT_AS."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest

from .craft_saved_model import meta_graph, module_graph, saved_model, saved_model_dir
from .limits import MiB, assert_clean, run_limited

MEMBER = 300 * MiB


@pytest.fixture(scope="module")
def big_npz(tmp_path_factory):
    """An uncompressed .npz with one float32 member of 300 MiB of zeros, written a block at a time; removed after
    the module's tests."""
    path = tmp_path_factory.mktemp("big") / "big.npz"
    header = np.lib.format.header_data_from_array_1_0(np.zeros(0, dtype="<f4"))
    header["shape"] = (MEMBER // 4,)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf, zf.open("w.npy", "w", force_zip64=True) as f:
        np.lib.format.write_array_header_1_0(f, header)
        block = bytes(4 * MiB)
        for _ in range(MEMBER // len(block)):
            f.write(block)
    yield path
    path.unlink(missing_ok=True)


def test_npz_read_back_streams(big_npz, tmp_path):
    out = tmp_path / "big.safetensors"
    limit = 400 * MiB  # well below twice the member (the whole member plus its copy needed 600+)
    assert_clean(run_limited("verify", big_npz, memory=limit, seconds=120), 0)
    done = run_limited("convert", big_npz, "--to", "safetensors", "-o", out, memory=limit, seconds=120)
    assert_clean(done, 0)
    assert done.stdout == f"wrote {out}: 1 tensor, 300.0 MiB (safetensors), verified\n"
    with open(out, "rb") as f:
        assert out.stat().st_size == MEMBER + 8 + int.from_bytes(f.read(8), "little")


def test_npz_byte_chunks_never_read_the_whole_member(tmp_path, monkeypatch):
    import formats
    from formats.npz.reader import NpzTensor

    path = tmp_path / "a.npz"
    value = np.arange(1000, dtype="<f4")
    np.savez(path, w=value, big=value.astype(">f8"))
    with formats.open_checkpoint(path) as ckpt:
        assert b"".join(ckpt["big"].byte_chunks(1000)) == value.astype("<f8").tobytes()  # big-endian: converted
        monkeypatch.setattr(NpzTensor, "read", lambda self: pytest.fail("read whole"))
        chunks = list(ckpt["w"].byte_chunks(1000))
    assert [len(c) for c in chunks] == [1000] * 4 and b"".join(chunks) == value.tobytes()


def test_a_long_pbtxt_string_in_bounded_memory(tmp_path):
    model = saved_model_dir(tmp_path / "m", saved_model(meta_graph(graph=module_graph())))
    (model / "saved_model.pb").unlink()
    body = b"\\000" * (4 * MiB) + b"a" * (8 * MiB) + b"\\\"x" * MiB  # 27 MiB of string: escapes and plain runs
    (model / "saved_model.pbtxt").write_bytes(
        b'meta_graphs { meta_info_def { tags: "serve" } graph_def { node { name: "' + body + b'" } } }\n')
    done = run_limited("ls", model, memory=400 * MiB, seconds=120)  # the backtracking regex needed ~4.5 GiB
    assert_clean(done, 0)
    assert done.stdout.splitlines()[-1].startswith(f"{model}: saved-model, ")


def test_text_strings_tokenise_as_before():
    from formats.saved_model.textproto import text_to_wire

    text = b'meta_graphs { meta_info_def { tags: "se\\"r" \'v\\\'e\' tags: "\\101\\n" } }'
    assert text_to_wire(text) == b"\x12\x0f\x0a\x0d\x22\x07se\"rv'e\x22\x02A\n"
