"""Table 1 (synthetic AE): the true decoders the Baseline starts from, and its three readings (adept:A-baseline)."""

import numpy as np
import pytest

from fedrepro.adept.ae import BASELINES, run_table1, synthetic_clients


def test_true_decoders_generate_the_rescaled_data():
    """x_i = W_i z + b_i exactly (no noise): the rescaled decoder's affine span holds every rescaled training sample;
    the decoder as drawn (s_i times the rescaled one) holds the training data as generated."""
    rng = np.random.default_rng(0)
    x_tr, _, wi, bi, s = synthetic_clients(4, 16, 3, 10, 5, 0.1, 0.05, rng)
    for i in range(4):
        for w, b, x in ((wi[i], bi[i], x_tr[i]), (s[i] * wi[i], s[i] * bi[i], s[i] * x_tr[i])):
            z, *_ = np.linalg.lstsq(w, (x - b).T, rcond=None)
            assert np.abs(w @ z + b[:, None] - x.T).max() < 1e-9
        assert abs(x_tr[i].std() - 1) < 1e-9


@pytest.mark.parametrize("reading", sorted(BASELINES))
def test_every_baseline_reading_runs(reading):
    p = dict(d=16, latent=3, m=3, n_train=10, n_test=5, sigma_mu=0.1, sigma_stars=[0.05], seeds=1,
             methods=["baseline"], baseline_decoder=reading, baseline_decoder_scale="as-drawn", epochs=3, tau=1,
             round_iters=2, sigma_grad="accumulated", lr=0.01, lr_global=0.01, lr_sigma=1e-3, sigma0=0.4,
             lazy_epochs=0, xi=1e-6, lambda_reg=0.1)
    rows = run_table1(p, lambda *k: np.random.default_rng(abs(hash(k)) % 2**32))
    assert len(rows) == 1 and np.isfinite(rows[0]["value"])
    with pytest.raises(ValueError):
        run_table1({**p, "baseline_decoder": "trained"}, lambda *k: np.random.default_rng(0))
