"""Reading back what ``convert --to npz|safetensors`` and ``extract`` write, at many tensors: the parts of opening an
npz that are a Python step a member give what they gave before."""
from __future__ import annotations

import zipfile

import pytest

from formats.io.zipped import _encoded_name

_NAMES = ["w.npy", "model/layer_0/unit_0/w.npy", "caf\u00e9.npy", "\u00c7\u00fc\u00e9.npy", "\u2603.npy", "\ud800.npy",
          "tab\there.npy", "", "\x00\x7f.npy", "\u00a0\u00ff.npy"]


def _encoded_before(info: zipfile.ZipInfo) -> bytes:
    """The name a local header holds, as zipfile compares it (the code before ASCII names were encoded as ASCII)."""
    try:
        return info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")
    except UnicodeEncodeError:
        return b""


@pytest.mark.parametrize("flags", [0, 0x800])
@pytest.mark.parametrize("name", _NAMES)
def test_a_members_name_is_encoded_as_zipfile_encodes_it(name, flags):
    info = zipfile.ZipInfo(name)
    info.flag_bits = flags
    assert _encoded_name(info) == _encoded_before(info)
