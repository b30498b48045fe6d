"""The MatDNC (models/dnc/matdnc.hpp) in PyTorch eager mode, for tools/bench_train_torch.py.

Written from matmem's math (models/dnc/matdnc.hpp and .cpp, ops/dnc*.cpp, ops/cosine_similarity.cpp,
ops/memory_read.cpp, memory_write.cpp), one nn.Module per head, one nn.Parameter per U, V and bias, in the
style of bench_train_torch.py's MatNTM; the controller and the bilinear maps are that script's Controller and
Mat, passed in (so this file does not import the script). Shapes batch first: weightings [B,N], per-sample
scalars [B,1], the memory [B,N,r,c], the link matrix [B,N,N].

Per time step t, from M_{t-1}, u_{t-1}, p_{t-1}, L_{t-1}, w^w_{t-1} and per read head i w^{r,i}_{t-1}, R^i_{t-1}
(all zero at t = 0, none learned):
    H = controller(X, R^1..R^R_{t-1})
    interface, each part mat(H) with its own bias: read keys K^{r,i} [r,c], beta^{r,i} = softplus, free gates
        f^i = sigmoid, modes pi^i = softmax over 3 (backward, content, forward); write key K^w [r,c],
        beta^w = softplus, erase E = sigmoid [r,c], write matrix A [r,c], allocation gate g^a, write gate
        g^w = sigmoid
    usage        u = (u_{t-1} + w^w_{t-1} - u_{t-1} w^w_{t-1}) prod_i (1 - f^i w^{r,i}_{t-1}), w^w_{t-1} detached
                 (dnc.usage_gradient stop, DeepMind's) or not (full); dnc.free_gates false: every f^i = 0
    allocation   u^ = eps + (1 - eps) u (eps 1e-6), phi = the slots by ascending u^ (a stable sort: ties to the
                 lower slot), a[phi_j] = (1 - u^[phi_j]) prod_{k<j} u^[phi_k]; the gradient through the sorted
                 values, none through the order
    content      c = softmax(beta cos(K, M_i)), cos = <K, M_i>_F / (|K| |M_i| + eps), |x| = sqrt(||x||_F^2 + eps),
                 eps = dnc.cosine_eps (0: exact norms and 1e-8 on the product, the MatNTM's)
    write        w^w = g^w [g^a a + (1 - g^a) c^w], c^w on M_{t-1};  M = M_{t-1} (1 - w^w_i E) + w^w_i A
    links        L[i,j] = (1 - w^w_i - w^w_j) L_{t-1}[i,j] + w^w_i p_{t-1}[j], L[i,i] = 0;
                 p = (1 - sum_i w^w_i) p_{t-1} + w^w
    reads        f = L w^{r,i}_{t-1}, b = L^T w^{r,i}_{t-1}, c^{r,i} on M (after the write);
                 w^{r,i} = pi[0] b + pi[1] c^{r,i} + pi[2] f;  R^i = sum_j w^{r,i}_j M_j
    output       Y = mat(H, R^1..R^R)
Parameters under matmem's names: dnc/ctrl/l<k>/..., dnc/read<i>/{key,beta,free,modes}/h/{U,V}, .../B,
dnc/write/{key,beta,erase,add,allocation,gate}/h/{U,V}, .../B, dnc/out/{h,r<i>}/{U,V}, dnc/out/B.
The options that are off by default (dnc.masked_lookup, link_sharpness, deallocation, interface_norm,
read_fallback) are not ported: from_settings refuses them. An LSTM controller's forget gates start at bias 1,
as the MatDNC's (not a config key).
"""
import torch
import torch.nn as nn

ALLOCATION_EPS = 1e-6  # ops/dnc_allocation.cpp, as DeepMind's DNC

# matmem's defaults of the MatDNC's keys (models/registry.cpp kDncKeys), for a setting a description leaves out.
DEFAULTS = {"dnc.controller": "lstm", "dnc.slots": 16, "dnc.slot_rows": 6, "dnc.slot_cols": 6, "dnc.read_heads": 1,
            "dnc.usage_gradient": "stop", "dnc.free_gates": True, "dnc.cosine_eps": 1e-6}
# Options this port does not implement: refused unless off (their default).
NOT_PORTED = ("dnc.masked_lookup", "dnc.link_sharpness", "dnc.deallocation", "dnc.interface_norm",
              "dnc.read_fallback")


def softplus(x):
    """ops/softplus.cpp: max(x, 0) + log1p(e^-|x|) (F.softplus returns x itself above 20)."""
    return torch.relu(x) + torch.log1p(torch.exp(-x.abs()))


def cosine_similarity(k, mem, eps):
    """ops/cosine_similarity.cpp with CosineEps::from_setting(eps): k [B,r,c], mem [B,N,r,c] -> [B,N],
    <K, M_i>_F / (|K| |M_i| + eps_p), |x| = sqrt(||x||_F^2 + eps_n); eps > 0: eps_p = eps_n = eps, else 1e-8, 0."""
    eps_p, eps_n = (eps, eps) if eps > 0 else (1e-8, 0.0)
    kf = k.flatten(1)  # [B, rc]
    mf = mem.flatten(2)  # [B, N, rc]
    dot = (mf @ kf.unsqueeze(2)).squeeze(2)
    if eps_n > 0:
        nk = torch.sqrt((kf * kf).sum(1, keepdim=True) + eps_n)  # [B,1]
        nm = torch.sqrt((mf * mf).sum(2) + eps_n)  # [B,N]
    else:  # exact norms; torch's norm takes the gradient at a zero norm as 0, as the op does
        nk, nm = kf.norm(dim=1, keepdim=True), mf.norm(dim=2)
    return dot / (nk * nm + eps_p)


def usage(u_prev, w_write_prev, free_gates, w_reads_prev, stop_gradient=True):
    """ops/dnc_usage.cpp: (u + w - u w) prod_i (1 - f_i w^r_i); u, w, w^r_i [B,N], f_i [B,1]. stop_gradient: no
    gradient to w (w^w_{t-1}), as the op (dnc.usage_gradient stop); else the composed form's (full)."""
    w = w_write_prev.detach() if stop_gradient else w_write_prev
    psi = 1 - free_gates[0] * w_reads_prev[0]
    for f, wr in zip(free_gates[1:], w_reads_prev[1:]):
        psi = psi * (1 - f * wr)
    return (u_prev + w - u_prev * w) * psi


def allocation(u):
    """ops/dnc_allocation.cpp: u^ = eps + (1 - eps) u, phi = argsort(u^) ascending and stable (equal usages: the
    lower slot first), a[phi_j] = (1 - u^[phi_j]) prod_{k<j} u^[phi_k]. u [B,N] -> [B,N]."""
    uh = ALLOCATION_EPS + (1 - ALLOCATION_EPS) * u
    s, phi = torch.sort(uh, dim=1, stable=True)
    before = torch.cat([torch.ones_like(s[:, :1]), torch.cumprod(s[:, :-1], dim=1)], dim=1)  # prod_{k<j} s_k
    return torch.zeros_like(u).scatter(1, phi, (1 - s) * before)


def memory_write(mem, w, erase, add):
    """ops/memory_write.cpp: M_i (1 - w_i E) + w_i A;  mem [B,N,r,c], w [B,N], E, A [B,r,c]."""
    wi = w[:, :, None, None]
    return mem * (1 - wi * erase.unsqueeze(1)) + wi * add.unsqueeze(1)


def memory_read(mem, w):
    """ops/memory_read.cpp: sum_i w_i M_i;  mem [B,N,r,c], w [B,N] -> [B,r,c]."""
    B, N, r, c = mem.shape
    return (w.unsqueeze(1) @ mem.reshape(B, N, r * c)).view(B, r, c)


def temporal_links(link, precedence, w, off_diagonal):
    """ops/dnc_link.cpp: L[i,j] = (1 - w_i - w_j) L_{t-1}[i,j] + w_i p_{t-1}[j], L[i,i] = 0, then
    p = (1 - sum_i w_i) p_{t-1} + w. link [B,N,N], precedence, w [B,N]; off_diagonal: 1 - I [N,N]."""
    wi = w.unsqueeze(2)
    new_link = ((1 - wi - w.unsqueeze(1)) * link + wi * precedence.unsqueeze(1)) * off_diagonal
    return new_link, (1 - w.sum(1, keepdim=True)) * precedence + w


class ReadHead(nn.Module):
    """A read head's interface: key [r,c], beta, free gate [1,1], modes [1,3], each mat(H) with its bias."""

    def __init__(self, Mat, h_shape, slot_rows, slot_cols):
        super().__init__()
        hs = [h_shape]
        self.key = Mat(["h"], hs, slot_rows, slot_cols)
        self.beta = Mat(["h"], hs, 1, 1)
        self.free = Mat(["h"], hs, 1, 1)
        self.modes = Mat(["h"], hs, 1, 3)

    def named(self, path):
        for part in ("key", "beta", "free", "modes"):
            yield from getattr(self, part).named(f"{path}/{part}")


class WriteHead(nn.Module):
    """The write head's interface: key, erase, write matrix [r,c], beta, allocation gate, write gate [1,1]."""

    def __init__(self, Mat, h_shape, slot_rows, slot_cols):
        super().__init__()
        hs = [h_shape]
        self.key = Mat(["h"], hs, slot_rows, slot_cols)
        self.beta = Mat(["h"], hs, 1, 1)
        self.erase = Mat(["h"], hs, slot_rows, slot_cols)
        self.add = Mat(["h"], hs, slot_rows, slot_cols)
        self.allocation = Mat(["h"], hs, 1, 1)
        self.gate = Mat(["h"], hs, 1, 1)

    def named(self, path):
        for part in ("key", "beta", "erase", "add", "allocation", "gate"):
            yield from getattr(self, part).named(f"{path}/{part}")


class MatDNC(nn.Module):
    """models/dnc/matdnc.cpp's step (this file's docstring). Mat and Controller: bench_train_torch.py's."""

    def __init__(self, in_shape, out_shape, Mat, Controller, controller="lstm", layers=((15, 15), (15, 15)),
                 slots=16, slot_shape=(6, 6), read_heads=1, forget_bias=1.0, usage_gradient="stop",
                 free_gates=True, cosine_eps=1e-6):
        super().__init__()
        if usage_gradient not in ("stop", "full"):
            raise ValueError(f"MatDNC: usage_gradient {usage_gradient} (stop or full)")
        self.N, self.slot_shape, self.n_read = slots, tuple(slot_shape), read_heads
        self.stop_usage_gradient = usage_gradient == "stop"
        self.free_gates, self.cosine_eps = free_gates, cosine_eps
        reads = [f"r{k + 1}" for k in range(read_heads)]
        self.controller = Controller(controller, ["x"] + reads, [tuple(in_shape)] + [self.slot_shape] * read_heads,
                                     layers, forget_bias)
        h_shape = tuple(layers[-1])
        self.reads = nn.ModuleList([ReadHead(Mat, h_shape, *self.slot_shape) for _ in range(read_heads)])
        self.write = WriteHead(Mat, h_shape, *self.slot_shape)
        self.out = Mat(["h"] + reads, [h_shape] + [self.slot_shape] * read_heads, *out_shape)

    def named(self):
        yield from self.controller.named("dnc/ctrl")
        for k, head in enumerate(self.reads):
            yield from head.named(f"dnc/read{k + 1}")
        yield from self.write.named("dnc/write")
        yield from self.out.named("dnc/out")

    def initial(self, B):
        """Every state zero: controller, M_0, u_0, p_0, L_0, w^w_0, w^{r,i}_0, R^i_0; and 1 - I for the links."""
        like = self.out.B
        N, (r, c) = self.N, self.slot_shape
        zeros = lambda *shape: torch.zeros(*shape, dtype=like.dtype, device=like.device)
        off_diagonal = 1 - torch.eye(N, dtype=like.dtype, device=like.device)
        return (self.controller.initial(B), zeros(B, N, r, c), zeros(B, N), zeros(B, N), zeros(B, N, N),
                zeros(B, N), [zeros(B, N) for _ in self.reads], [zeros(B, r, c) for _ in self.reads], off_diagonal)

    def content(self, key, beta, mem):
        return torch.softmax(beta * cosine_similarity(key, mem, self.cosine_eps), dim=1)

    def forward(self, x, state, need_output):
        ctrl, mem, u_prev, precedence, link, w_write_prev, w_reads_prev, reads_prev, off_diagonal = state
        # 1. Controller: layer 1 reads the frame and every previous read.
        h, ctrl = self.controller([x] + reads_prev, ctrl)
        # 2. The interface.
        wh = self.write
        read_keys = [head.key(h) for head in self.reads]
        read_betas = [softplus(head.beta(h)).flatten(1) for head in self.reads]  # [B,1]
        write_key = wh.key(h)
        write_beta = softplus(wh.beta(h)).flatten(1)
        erase = torch.sigmoid(wh.erase(h))
        add = wh.add(h)
        if self.free_gates:
            frees = [torch.sigmoid(head.free(h)).flatten(1) for head in self.reads]
        else:  # held at 0 (dnc.free_gates false): no slot is ever freed
            frees = [torch.zeros_like(u_prev[:, :1]) for _ in self.reads]
        allocation_gate = torch.sigmoid(wh.allocation(h)).flatten(1)
        write_gate = torch.sigmoid(wh.gate(h)).flatten(1)
        modes = [torch.softmax(head.modes(h), dim=-1).flatten(1) for head in self.reads]  # [B,3]
        # 3-5. Usage, allocation, the write weighting (its content part on M_{t-1}).
        u = usage(u_prev, w_write_prev, frees, w_reads_prev, self.stop_usage_gradient)
        a = allocation(u)
        w_write = write_gate * (allocation_gate * a + (1 - allocation_gate) * self.content(write_key, write_beta, mem))
        # 6. Erase and add.
        mem = memory_write(mem, w_write, erase, add)
        # 7. L_t from p_{t-1}, then p_t.
        link, precedence = temporal_links(link, precedence, w_write, off_diagonal)
        # 8-9. Read weightings (content on M_t, directions through L_t from w^r_{t-1}), reads of M_t.
        w_reads, reads = [], []
        for key, beta, pi, w_prev in zip(read_keys, read_betas, modes, w_reads_prev):
            forward = (link @ w_prev.unsqueeze(2)).squeeze(2)  # L w
            backward = (w_prev.unsqueeze(1) @ link).squeeze(1)  # L^T w
            w = pi[:, 0:1] * backward + pi[:, 1:2] * self.content(key, beta, mem) + pi[:, 2:3] * forward
            w_reads.append(w)
            reads.append(memory_read(mem, w))
        # 10. Output from H_t and this step's reads.
        y = self.out(h, *reads) if need_output else None
        return y, (ctrl, mem, u, precedence, link, w_write, w_reads, reads, off_diagonal)


def from_settings(name, s, in_shape, out_shape, layers, Mat, Controller):
    """The MatDNC of a description's settings (matmem config keys; a dnc.* key left out takes matmem's default),
    refusing what this port does not implement."""
    for key in NOT_PORTED:
        if s.get(key, False):
            raise SystemExit(f"bench_train_torch.py: {name}: {key} = {s[key]} is not implemented in tools/torch_dnc.py "
                             "(only false)")
    g = lambda key: s.get(key, DEFAULTS[key])
    if g("dnc.usage_gradient") not in ("stop", "full"):
        raise SystemExit(f"bench_train_torch.py: {name}: dnc.usage_gradient = {g('dnc.usage_gradient')}")
    return MatDNC(in_shape, out_shape, Mat, Controller, controller=g("dnc.controller"), layers=layers,
                  slots=g("dnc.slots"), slot_shape=(g("dnc.slot_rows"), g("dnc.slot_cols")),
                  read_heads=g("dnc.read_heads"), usage_gradient=g("dnc.usage_gradient"),
                  free_gates=g("dnc.free_gates"), cosine_eps=g("dnc.cosine_eps"))
