"""Independent numpy reference for the RL engine's policy-gradient methods (REINFORCE++ baseline,
entropy-shaped advantages, GSPO, CISPO, Clip-Cov, KL-Cov, TIS/MIS rollout correction).

Everything is float64 plain numpy, written from the papers' equations, not from the C++ code. The tests in
tests/rl/test_methods.cpp run it (with GTPO_HF_PYTHON, as scripts/test.sh sets) and compare; its inputs are
copied there: change both together.
  .venv-hf/bin/python3 scripts/reference/rl_methods.py
Prints `name = value` and `name = {a, b, c}` (9 significant digits) per line; `#` lines are comments.
"""
import numpy as np

# ---- inputs ----------------------------------------------------------------------------------------
C_Q = [1, 1, 0, 0]
H_Q = [[2.0, 0.5, 1.0], [0.5, 1.5], [0.2, 1.0, 0.4], [1.0, 0.5]]
C_P = [1, 0, 0]
H_P = [[0.3, 0.7], [1.2], [0.9, 0.1, 0.6, 0.8]]
OLD = np.array([-1.0, -0.5, -2.0, -0.3, -1.2, -0.8, -1.5, -0.2, -2.5, -0.9])
LP = np.array([-0.9, -0.55, -1.7, -0.3, -1.0, -0.85, -1.6, -0.1, -2.0, -1.1])
SAMPLER = np.array([-1.0, -0.5, -2.9, -0.3, -1.2, -0.8, -1.5, -0.2, -3.2, -0.2])
LENS_A = np.array([len(h) for h in H_Q])
SEQ_A = np.repeat(np.arange(4), LENS_A)  # response index of each batch-A token
N = len(OLD)
W = np.full(N, 1.0 / N)  # token-mean weights


def fmt(x):
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    s = ", ".join(f"{v:.9g}" if v != 0 else "0" for v in x)
    return "{" + s + "}"


def show(name, x, scalar=False):
    print(f"{name} = {fmt(x)[1:-1] if scalar else fmt(x)}")


# ---- shared ----------------------------------------------------------------------------------------
def grpo_adv(c):
    # A_i = (c_i - mean c) / (std_pop c + 1e-6); 0 for the whole group if every c is equal
    c = np.asarray(c, dtype=np.float64)
    if np.all(c == c[0]):
        return np.zeros_like(c)
    return (c - c.mean()) / (c.std() + 1e-6)


def ppo_clip(adv, ratio, eps_low, eps_high):
    # l = max(-A r, -A clip(r, 1-eps_low, 1+eps_high)); dl/dlp = -A r if unclipped is max (ties: unclipped)
    unclipped = -adv * ratio
    clipped = -adv * np.clip(ratio, 1 - eps_low, 1 + eps_high)
    loss = np.maximum(unclipped, clipped)
    grad = np.where(unclipped >= clipped, -adv * ratio, 0.0)
    return loss, grad


# ---- methods ---------------------------------------------------------------------------------------
def reinforce_pp(groups):
    # a_i = c_i - mean_group c (group of 1: baseline 0); A_t = (a_t - mu) / sqrt(var_unbiased + 1e-8)
    tok = []
    for c, lens in groups:
        c = np.asarray(c, dtype=np.float64)
        a = c - c.mean() if len(c) > 1 else c
        tok.append(np.repeat(a, lens))
    a = np.concatenate(tok)
    return (a - a.mean()) / np.sqrt(a.var(ddof=1) + 1e-8)


def entropy_adv(c, h, alpha, kappa):
    # A_t = A_i + min(alpha H_t, |A_i| / kappa)
    a = np.repeat(grpo_adv(c), [len(x) for x in h])
    return a + np.minimum(alpha * np.concatenate(h), np.abs(a) / kappa)


def gspo(adv_seq, eps_low, eps_high, m_seq=None):
    # s_i = exp(mean_{t in i}(lp - old)); loss = sum_i 1/4 m_i max(-A_i s_i, -A_i clip(s_i))
    # dloss/dlp_t = 1/4 m_i (-A_i s_i / |o_i|) when unclipped, else 0
    m_seq = np.ones(4) if m_seq is None else m_seq
    s = np.exp(np.bincount(SEQ_A, LP - OLD) / LENS_A)
    l, g = ppo_clip(adv_seq, s, eps_low, eps_high)
    loss = np.sum(0.25 * m_seq * l)
    dlogp = (0.25 * m_seq * g / LENS_A)[SEQ_A]
    return s, loss, dlogp


def cispo(adv, eps_low, eps_high):
    # l_t = -sg[clip(r_t, 1-eps_low, 1+eps_high)] A_t lp_t; dl/dlp_t = -clip(r_t) A_t
    rc = np.clip(np.exp(LP - OLD), 1 - eps_low, 1 + eps_high)
    return np.sum(W * -rc * adv * LP), W * -rc * adv


def cov_old(adv):
    # cov_t = (A_t - mean A) (old_t - mean old)   (old log-probs)
    return (adv - adv.mean()) * (OLD - OLD.mean())


def clip_cov(adv, lb, ub, ratio=1.0, eps=0.2):
    # candidates: lb < cov_t < ub; selected tokens give 0 loss and 0 gradient, others the PPO clip
    cov = cov_old(adv)
    cand = np.flatnonzero((cov > lb) & (cov < ub))
    assert max(1, int(np.floor(ratio * N))) >= len(cand), "ratio 1.0: every candidate is selected"
    l, g = ppo_clip(adv, np.exp(LP - OLD), eps, eps)
    keep = np.ones(N)
    keep[cand] = 0.0
    return cand, np.sum(W * keep * l), W * keep * g


def kl_cov(adv, ratio=0.2, coef=1.0):
    # top-k cov (k = max(1, floor(ratio N)), ties: lower index); l_t = -A r + [sel] coef |lp - old|
    k = max(1, int(np.floor(ratio * N)))
    sel = np.sort(np.argsort(-cov_old(adv), kind="stable")[:k])
    r = np.exp(LP - OLD)
    d = LP - OLD
    is_sel = np.zeros(N)
    is_sel[sel] = 1.0
    loss = np.sum(W * (-adv * r + is_sel * coef * np.abs(d)))
    dlogp = W * (-adv * r + is_sel * coef * np.sign(d))
    return sel, loss, dlogp


def rollout_is(adv, mode, cap=2.0, eps=0.2):
    # rho_t = exp(old - sampler); TIS m = min(rho, C); MIS m = rho if rho <= C else 0; loss = sum w m l
    rho = np.exp(OLD - SAMPLER)
    m = {"none": np.ones(N), "tis": np.minimum(rho, cap), "mis": np.where(rho <= cap, rho, 0.0)}[mode]
    l, g = ppo_clip(adv, np.exp(LP - OLD), eps, eps)
    return np.sum(W * m * l), W * m * g


# ---- cases -----------------------------------------------------------------------------------------
def main():
    adv_seq = grpo_adv(C_Q)
    adv = adv_seq[SEQ_A]

    print("# 1. reinforce_pp, batch B (17 tokens)")
    groups = [(C_Q, [len(h) for h in H_Q]), (C_P, [len(h) for h in H_P])]
    show("reinforce_pp.adv", reinforce_pp(groups))

    print("# 2. entropy_adv, batch A, alpha 0.4 kappa 2")
    show("entropy_adv.adv", entropy_adv(C_Q, H_Q, 0.4, 2.0))
    show("entropy_adv.adv_all_correct", entropy_adv([1, 1, 1, 1], H_Q, 0.4, 2.0))

    for tag, el, eh in [("gspo_tight", 3e-4, 4e-4), ("gspo_02", 0.2, 0.2)]:
        print(f"# 3. gspo, eps_low {el:g} eps_high {eh:g}")
        s, loss, dlogp = gspo(adv_seq, el, eh)
        show(f"{tag}.seq_ratio", s)
        show(f"{tag}.loss", loss, scalar=True)
        show(f"{tag}.dlogp", dlogp)

    for tag, el, eh in [("cispo_4", 1.0, 4.0), ("cispo_028", 1.0, 0.28)]:
        print(f"# 4. cispo, eps_low {el:g} eps_high {eh:g}")
        loss, dlogp = cispo(adv, el, eh)
        show(f"{tag}.loss", loss, scalar=True)
        show(f"{tag}.dlogp", dlogp)

    print("# 5. clip_cov, PPO eps 0.2/0.2, ratio 1.0")
    show("clip_cov.cov", cov_old(adv))
    cand, _, _ = clip_cov(adv, 1.0, 5.0)
    print(f"clip_cov.candidates_1_5 = {{{', '.join(map(str, cand))}}}")
    cand, loss, dlogp = clip_cov(adv, 0.1, 5.0)
    print(f"clip_cov.candidates_01_5 = {{{', '.join(map(str, cand))}}}")
    show("clip_cov.loss", loss, scalar=True)
    show("clip_cov.dlogp", dlogp)

    print("# 6. kl_cov, ratio 0.2, coef 1.0, no clipping")
    sel, loss, dlogp = kl_cov(adv)
    print(f"kl_cov.selected = {{{', '.join(map(str, sel))}}}")
    show("kl_cov.loss", loss, scalar=True)
    show("kl_cov.dlogp", dlogp)

    print("# 7. token TIS / MIS, C = 2, PPO eps 0.2/0.2")
    rho = np.exp(OLD - SAMPLER)
    show("rollout_is.rho", rho)
    print(f"rollout_is.n_over_cap = {int(np.sum(rho > 2.0))}")
    for mode in ["none", "tis", "mis"]:
        loss, dlogp = rollout_is(adv, mode)
        show(f"rollout_is.{mode}.loss", loss, scalar=True)
        show(f"rollout_is.{mode}.dlogp", dlogp)

    print("# 8. sequence TIS for gspo, eps 0.2/0.2, C = 2")
    rho_seq = np.exp(np.bincount(SEQ_A, OLD - SAMPLER) / LENS_A)
    _, loss, dlogp = gspo(adv_seq, 0.2, 0.2, m_seq=np.minimum(rho_seq, 2.0))
    show("gspo_seq_tis.rho", rho_seq)
    show("gspo_seq_tis.loss", loss, scalar=True)
    show("gspo_seq_tis.dlogp", dlogp)


if __name__ == "__main__":
    main()
