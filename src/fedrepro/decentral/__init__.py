"""Decentralized training with compressed, event-triggered gossip: SQuARM-SGD (thesis ch. 3, Algorithm 1).

One engine (`engine.DecentralEngine`) runs every method of the chapter as a setting:
SQuARM-SGD (H local momentum steps, event trigger with threshold c_t, compressed x̂ copies, consensus γ),
CHOCO-SGD (H = 1, c = 0) and vanilla decentralized SGD (identity compressor, γ = 1).  All n nodes are one
stacked parameter matrix X of shape (n, d); the gradient oracle is batched over nodes.

Modules: topology (graphs, mixing matrices, spectral gap), schedules (learning rate, trigger threshold),
trigger, engine, linkmodel (100 Kbps airtime / wall clock), experiments (the
Fig. 3.1-3.4 runs), figures (the figures' data: curves, bits/rounds/time to target, savings) and artifacts
(one function per thesis figure: draws it and writes its outputs).
"""
