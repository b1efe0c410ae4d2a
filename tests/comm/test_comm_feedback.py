"""Error-feedback copies: CuteMaxVar's M̂/Ĝ, CHOCO/SQuARM's x̂, C-VFL's stale embeddings."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrepro.comm import Identity, StaleCopy, TrackedCopy, get_compressor


def test_gcca_scheme_initial_full_precision_round_then_difference_messages():
    """gcca §3.5: M̂⁰ = M⁰ sent at 32 bits/entry; then Δ = M - M̂ is sent and M̂ ← M̂ + C(Δ)."""
    rng = np.random.default_rng(0)
    I, J, K, q = 3, 50, 4, 3
    M0 = rng.standard_normal((I, J, K))
    copy = TrackedCopy(get_compressor("cutemaxvar", q=q))
    first = copy.update(M0, rng, compressor=Identity())
    np.testing.assert_array_equal(copy.value, M0)
    np.testing.assert_array_equal(first.bits, [32 * J * K] * I)
    M1 = M0 + 0.1 * rng.standard_normal((I, J, K))
    before = copy.value.copy()
    msg = copy.update(M1, np.random.default_rng(5))
    direct = get_compressor("cutemaxvar", q=q)(M1 - before, np.random.default_rng(5))
    np.testing.assert_array_equal(msg.value, direct.value)
    np.testing.assert_array_equal(copy.value, before + direct.value)
    np.testing.assert_array_equal(msg.bits, [q * J * K + 32] * I)


def test_error_feedback_sends_what_earlier_messages_dropped():
    """With a fixed target and Top_k, x̂ reaches x exactly after d/k messages: nothing is lost."""
    x = np.random.default_rng(1).standard_normal((4, 30))
    copy = TrackedCopy(get_compressor("topk", k=5))
    for _ in range(6):
        copy.update(x)
    np.testing.assert_array_equal(copy.value, x)


def test_server_downlink_copy_is_unbatched():
    """gcca's Ĝ is one matrix broadcast to all nodes: batched=False, bits of shape ()."""
    G = np.linalg.qr(np.random.default_rng(2).standard_normal((40, 3)))[0]
    copy = TrackedCopy(get_compressor("cutemaxvar", q=3), init=G, batched=False)
    out = copy.update(G + 0.01, np.random.default_rng(0))
    assert out.bits.shape == () and int(out.bits) == 3 * 120 + 32
    np.testing.assert_allclose(copy.value, G + out.value)


def test_trigger_mask_nodes_that_do_not_fire_send_nothing():
    """thesis_ch3 §3.1 / A-25: a node that does not fire sends 0 bits and keeps x̂."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 20))
    copy = TrackedCopy(get_compressor("sign_topk", k=3))
    copy.update(x)
    before = copy.value.copy()
    x2 = x + rng.standard_normal((5, 20))
    fire = np.array([True, False, True, False, False])
    out = copy.update(x2, mask=fire)
    np.testing.assert_array_equal(out.bits, [3 * 33 + 32, 0, 3 * 33 + 32, 0, 0])
    assert all(out.parts[k][1] == 0 for k in out.parts)
    np.testing.assert_array_equal(copy.value[~fire], before[~fire])
    expected = get_compressor("sign_topk", k=3)(x2[fire] - before[fire], None).value
    np.testing.assert_array_equal(copy.value[fire], before[fire] + expected)
    np.testing.assert_array_equal(out.value[~fire], 0)


def test_trigger_mask_with_random_compressor_draws_only_for_senders():
    x = np.random.default_rng(4).standard_normal((4, 12))
    fire = np.array([False, True, True, False])
    out = TrackedCopy(get_compressor("qsgd", s=2)).update(x, np.random.default_rng(9), mask=fire)
    direct = get_compressor("qsgd", s=2)(x[fire], np.random.default_rng(9))
    np.testing.assert_array_equal(out.value[fire], direct.value)


def test_tracked_copy_with_torch_and_bad_mask():
    x = torch.randn(3, 8, dtype=torch.float64)
    copy = TrackedCopy(get_compressor("qsgd", s=4))
    out = copy.update(x, torch.Generator().manual_seed(0), mask=torch.tensor([True, False, True]))
    assert isinstance(copy.value, torch.Tensor) and out.bits.tolist()[1] == 0
    with pytest.raises(ValueError, match="mask"):
        copy.update(x, torch.Generator(), mask=np.array([True, False]))


def test_stale_copy_views_mix_stale_compressed_and_fresh_own_embedding():
    """cvfl §3.1: party m uses the others' round-start compressed embeddings and its own fresh one."""
    rng = np.random.default_rng(6)
    H = rng.standard_normal((4, 10, 6))  # M = 4 parties, B = 10 rows, P = 6
    stale = StaleCopy(get_compressor("cvfl_vector", b=2))
    out = stale.refresh(H, rng)
    np.testing.assert_array_equal(out.bits, [2 * 60 + 32] * 4)
    fresh = rng.standard_normal((10, 6))
    view = stale.view(2, fresh)
    np.testing.assert_array_equal(view[2], fresh)
    np.testing.assert_array_equal(view[[0, 1, 3]], out.value[[0, 1, 3]])


def test_stale_copy_torch_gradient_flows_into_the_fresh_block_only():
    H = torch.randn(3, 5, 4)
    stale = StaleCopy(get_compressor("cvfl_scalar", b=3))
    stale.refresh(H, torch.Generator().manual_seed(0))
    fresh = torch.randn(5, 4, requires_grad=True)
    stale.view(1, fresh).sum().backward()
    assert torch.equal(fresh.grad, torch.ones(5, 4))
    with pytest.raises(ValueError, match="refresh"):
        StaleCopy(get_compressor("identity")).view(0, fresh)
