"""Shared-GPU-memory transfer (vmm.py, transfer.py): the parts that hold without a GPU.
The GPU round trip itself runs in tests/gpu/vmm_roundtrip.py on the H200."""

import json
import os
import socket

import pytest
import torch

from kagent_harness import transfer, vmm


def test_layout_keeps_strides_and_aligns():
    a = torch.zeros(3, 5)              # contiguous: 15 floats
    b = torch.zeros(4, 6).t()          # transposed view: extent 24
    c = torch.zeros(0, 7)              # empty: one element reserved
    offsets, total = vmm.layout([a, 7, b, None, c])
    assert offsets[1] is None and offsets[3] is None
    assert offsets[0] == 0
    assert offsets[2] == 256                           # 60 bytes rounded up to 256
    assert offsets[4] == 512                           # 256 + 24 * 4 = 352 -> 512
    assert total == 512 + 4


def test_extent_template_matches_a_real_tensor():
    shape = [2, 3, 4]
    strides = transfer._contiguous_strides(shape)
    real = torch.zeros(shape, dtype=torch.bfloat16)
    assert strides == list(real.stride())
    ext = transfer._Extent(shape, strides, torch.bfloat16)
    assert vmm.layout([ext]) == vmm.layout([real])
    assert transfer._contiguous_strides([0, 3]) == [3, 1]


def _send(sock, token, fd):
    socket.send_fds(sock, [json.dumps({"token": token}).encode()], [fd])


def test_inbox_skips_unclaimed_descriptors_and_closes_them():
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    _send(parent, "stale", r1)     # a request that failed before its message was sent
    _send(parent, "wanted", r2)
    os.close(r1)
    os.close(r2)
    inbox = vmm.FdInbox(child, timeout_s=5)
    fd = inbox.take_fd("wanted")
    os.write(w2, b"x")
    assert os.read(fd, 1) == b"x"      # the descriptor sent with the token
    os.close(fd)
    with pytest.raises(BrokenPipeError):   # the stale one was closed: no reader is left
        os.write(w1, b"y")
    os.close(w1)
    parent.close()
    with pytest.raises(vmm.VmmError, match="closed"):
        inbox.take_fd("never")
    child.close()
    os.close(w2)


def test_inbox_times_out_with_a_reason():
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    inbox = vmm.FdInbox(child, timeout_s=0.2)
    with pytest.raises(vmm.VmmError, match="no descriptor"):
        inbox.take_fd("t")
    parent.close()
    child.close()
