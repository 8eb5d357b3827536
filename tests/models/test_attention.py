"""SPEC section 6: the glossary seeds 000 (SDPA), 002 (sinks) and 003 (sliding windows)."""

from __future__ import annotations

import glossary
import pytest
import torch
import torch.nn.functional as F

from pipeline.models import attention


def seed_000_inputs(dtype: torch.dtype = torch.float32):
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 4, 8).unbind(0)
    return q.to(dtype), k.to(dtype), v.to(dtype)


# --- seed 000: scaled dot-product attention -------------------------------------------------


def test_seed_000_matches_torch_sdpa():
    q, k, v = seed_000_inputs()
    output, weights = glossary.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(output, F.scaled_dot_product_attention(q, k, v), atol=1e-6, rtol=0)
    assert [round(w, 3) for w in weights[0].tolist()] == [0.121, 0.741, 0.106, 0.032]


def test_seed_000_weights_by_hand():
    q, k, v = seed_000_inputs(torch.float64)
    _, weights = glossary.scaled_dot_product_attention(q, k, v)
    for i in range(4):
        scores = [sum(q[i, d] * k[j, d] for d in range(8)) / 8**0.5 for j in range(4)]
        exps = [torch.exp(s) for s in scores]
        expected = torch.stack([e / sum(exps) for e in exps])
        torch.testing.assert_close(weights[i], expected, rtol=1e-12, atol=1e-15)


def test_batched_heads_match_torch_sdpa():
    torch.manual_seed(1)
    q, k, v = torch.randn(3, 2, 5, 6, 4, dtype=torch.float64).unbind(0)
    output, weights = glossary.scaled_dot_product_attention(q, k, v)
    assert weights.shape == (2, 5, 6, 6)
    expected = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(output, expected, rtol=1e-12, atol=1e-12)


# --- seed 002: attention sinks ------------------------------------------------------------


def seed_002_inputs():
    torch.manual_seed(0)
    values = torch.randn(6, 4)
    scores = torch.tensor([0.1, -0.2, 0.0, 0.2, -0.1, 0.0])
    return values, scores


def test_seed_002_without_sink():
    values, scores = seed_002_inputs()
    weights = attention.attention_weights(scores)
    # The seed prints the Euclidean norm of the (4,) output vector.
    assert f"{weights.sum():.2f}" == "1.00"
    assert f"{(weights @ values).norm():.2f}" == "0.83"


def test_seed_002_with_sink_logit():
    values, scores = seed_002_inputs()
    weights = attention.attention_weights(scores, sink_logit=3.0)
    assert weights.shape == (6,)
    assert f"{weights.sum():.2f}" == "0.23"
    assert f"{(weights @ values).norm():.2f}" == "0.19"
    # The sink takes the rest: 77 % of the weight (seed 002's text).
    assert round(1 - float(weights.sum()), 2) == 0.77
    # Same as the seed's own construction: the sink logit prepended, its slot removed.
    expected = torch.cat([torch.tensor([3.0]), scores]).softmax(-1)[1:]
    torch.testing.assert_close(weights, expected, rtol=1e-6, atol=1e-7)


def test_sink_logit_by_hand_and_batched():
    scores = torch.tensor([[0.0, 0.0], [1.0, -1.0]], dtype=torch.float64)
    weights = attention.attention_weights(scores, sink_logit=0.0)
    e = torch.e
    expected = torch.tensor(
        [[1 / 3, 1 / 3], [e / (e + 1 / e + 1), (1 / e) / (e + 1 / e + 1)]], dtype=torch.float64
    )
    torch.testing.assert_close(weights, expected, rtol=1e-14, atol=1e-15)
    # One learned sink logit per head (gpt-oss): a (H, 1) tensor broadcasts over queries.
    per_head = attention.attention_weights(
        torch.zeros(2, 3, 4, dtype=torch.float64),
        sink_logit=torch.tensor([[0.0], [torch.log(torch.tensor(4.0))]], dtype=torch.float64),
    )
    torch.testing.assert_close(per_head.sum(-1)[0], torch.full((3,), 0.8, dtype=torch.float64))
    torch.testing.assert_close(per_head.sum(-1)[1], torch.full((3,), 0.5, dtype=torch.float64))


def test_additive_mask_renormalises():
    scores = torch.tensor([0.3, -1.2, 2.0, 0.5], dtype=torch.float64)
    dropped = torch.tensor([False, True, False, True])
    weights = attention.attention_weights(scores, attention.drop_steps_mask(dropped))
    kept = torch.exp(torch.tensor([0.3, 2.0], dtype=torch.float64))
    expected = torch.tensor([kept[0], 0.0, kept[1], 0.0], dtype=torch.float64) / kept.sum()
    torch.testing.assert_close(weights, expected, rtol=1e-14, atol=0.0)


# --- seed 003: sliding-window attention ---------------------------------------------------


def kept(mask: torch.Tensor) -> torch.Tensor:
    return torch.isfinite(mask)


def test_seed_003_score_counts():
    window = glossary.sliding_window_mask(16, 4)
    causal = glossary.causal_mask(16)
    assert window.shape == causal.shape == (16, 16)
    assert int(kept(window).sum()) == 58
    assert int(kept(causal).sum()) == 136
    # Entries are exactly 0 (kept) or -inf (dropped).
    assert set(window.unique().tolist()) == {0.0, float("-inf")}


def test_sliding_window_pattern_by_hand():
    mask = kept(glossary.sliding_window_mask(7, 3))
    for i in range(7):
        assert [j for j in range(7) if mask[i, j]] == list(range(max(0, i - 2), i + 1))
    causal = kept(glossary.causal_mask(5))
    for i in range(5):
        assert [j for j in range(5) if causal[i, j]] == list(range(i + 1))
    # A window as long as the sequence is plain causal attention.
    assert torch.equal(glossary.sliding_window_mask(9, 9), glossary.causal_mask(9))


@pytest.mark.parametrize(("window", "length"), [(4, 16), (3, 20), (2, 9)])
def test_receptive_field_by_composing_masks(window, length):
    mask = kept(glossary.sliding_window_mask(length, window)).to(torch.int64)
    reach = mask
    for layers in range(1, 5):
        # Boolean reachability of the last token after `layers` stacked layers.
        reached = int((reach[-1] > 0).sum())
        assert reached == glossary.receptive_field(window, layers)
        reach = ((mask @ reach) > 0).to(torch.int64)


def test_seed_003_reach_numbers():
    assert [glossary.receptive_field(4, layers) for layers in range(1, 5)] == [4, 7, 10, 13]


def test_causal_mask_matches_torch_sdpa():
    torch.manual_seed(3)
    q, k, v = torch.randn(3, 2, 6, 5, dtype=torch.float64).unbind(0)
    output, weights = glossary.scaled_dot_product_attention(q, k, v, glossary.causal_mask(6))
    torch.testing.assert_close(
        output, F.scaled_dot_product_attention(q, k, v, is_causal=True), rtol=1e-12, atol=1e-12
    )
    boolean = torch.ones(6, 6, dtype=torch.bool).tril()  # torch's convention: True = keep
    torch.testing.assert_close(
        output, F.scaled_dot_product_attention(q, k, v, attn_mask=boolean), rtol=1e-12, atol=1e-12
    )
    assert torch.equal(weights.triu(1), torch.zeros_like(weights))


def test_sliding_window_mask_matches_torch_sdpa():
    torch.manual_seed(4)
    q, k, v = torch.randn(3, 16, 8, dtype=torch.float64).unbind(0)
    mask = glossary.sliding_window_mask(16, 4)
    output, _ = glossary.scaled_dot_product_attention(q, k, v, mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=kept(mask))
    torch.testing.assert_close(output, expected, rtol=1e-12, atol=1e-12)
    # The additive mask itself is accepted by torch too.
    torch.testing.assert_close(
        output, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), rtol=1e-12, atol=1e-12
    )


def test_causal_mask_with_float32_inputs():
    q, k, v = seed_000_inputs()
    output, _ = glossary.scaled_dot_product_attention(q, k, v, glossary.causal_mask(4))
    torch.testing.assert_close(
        output, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-6, rtol=0
    )
