"""The SLIDE network: sparse input → hidden (ReLU) → LSH-sampled softmax output, trained by
Adam, one batch at a time (:meth:`SlideNetwork.step`).

Per sample (in parallel, HOGWILD over the batch's samples): the hidden activation
queries the L hash tables; the active output set is the union of the retrieved buckets
(or the top-k most frequent / those found in ≥ threshold tables), always with the true
labels, padded with random neurons to ``min_active``; the softmax runs over the active
set and the loss is the cross-entropy against the target spread uniformly over the
true labels (mean over the batch). Gradients exist only for the active rows.

Tables: refreshed on the paper's schedule (:class:`tables.Schedule`); between refreshes,
upkeep ``rising`` (default) re-buckets after each batch the output rows whose logit on the
batch's mean hidden vector the step raised, through the tables' delta (no CSR rebuild), so the
labels that now score high are found under their current codes; ``none`` leaves the tables
as the last refresh made them, as the paper does.

Adam: ``lazy`` (default) steps only the rows a batch touched, with the global step's
bias correction (the documented departure from the reference code, which sweeps Adam over
every parameter each batch); ``dense`` steps every parameter every batch, as the
reference code does. Both place ε as the reference code and TF's ``AdamOptimizer`` do
(ε-hat, added to sqrt(v) before the bias correction), not as ``torch.optim.Adam``.
"""
from __future__ import annotations

import numba
import numpy as np
import torch

from impls.slide.core import network_kernels as NK
from impls.slide.core.config import SlideConfig, TrainingDiverged
from impls.slide.data.dataset import XCData
from impls.slide.core.lsh import make_lsh
from impls.slide.core.tables import HashTables, Schedule, auto_range_pow

MODES = {"union": NK.UNION, "topk": NK.TOPK, "threshold": NK.THRESHOLD, "all": NK.ALL}


class SlideNetwork:
    def __init__(self, config: SlideConfig, n_features: int, n_labels: int, max_labels_per_point: int,
                 weights: dict[str, np.ndarray] | None = None, label_counts: np.ndarray | None = None):
        config.check()
        self.config = c = config.resolved(n_labels, max_labels_per_point)
        self.n_features, self.n_labels = n_features, n_labels
        # padding_sampler "log-uniform": labels by training frequency, most frequent first
        self.rank_to_label = None
        if c.padding_sampler == "log-uniform" and c.padding == "batch" and c.mode != "all":
            if label_counts is None or len(label_counts) != n_labels:
                raise ValueError("padding_sampler='log-uniform' needs label_counts (one per label)")
            self.rank_to_label = np.argsort(-np.asarray(label_counts), kind="stable")
        rng = np.random.default_rng(c.seed)
        f32 = np.float32
        if weights is None:
            # scaled in place: a scaled copy would page in a second array of the output layer's size
            self.W1, self.b1, self.W2, self.b2 = (rng.standard_normal(shape, f32) for shape in
                                                  ((n_features, c.hidden), c.hidden, (n_labels, c.hidden), n_labels))
            for w in (self.W1, self.b1, self.W2, self.b2):
                w *= f32(c.init_std)
        else:
            self.W1, self.b1, self.W2, self.b2 = (np.array(weights[k], f32, order="C", copy=True)
                                                  for k in ("W1", "b1", "W2", "b2"))
            for k in ("W1", "b1", "W2", "b2"):
                if not np.isfinite(getattr(self, k)).all():
                    raise ValueError(f"weights[{k!r}] holds values that are not finite float32 numbers")
        if not c.output_bias:   # fixed at zero, whatever ``weights`` held
            self.b2[:] = 0.0
        # Adam's moments, zero; left unwritten (calloc) so that a network which never trains
        # (the table-refresh benchmarks) never pages them in: see page_in
        self.adam_state = {k: np.zeros(getattr(self, k).shape, f32) for k in ("W1", "b1", "W2", "b2")}
        self.adam_v = {k: np.zeros(getattr(self, k).shape, f32) for k in ("W1", "b1", "W2", "b2")}
        self.t = 0
        # hash tables over the output neurons. Mode "all" never hashes: its tables are an empty
        # placeholder (one table of one SimHash bit, never filled or queried) that only gives the
        # kernels arrays of the right types, so the configured hash parameters are not checked
        rp = c.range_pow if c.range_pow is not None else auto_range_pow(n_labels, c.bucket_load)
        self._lsh_seed = c.seed * 7919 + 17
        if c.mode == "all":
            lsh = make_lsh("simhash", 1, 1, c.hidden, self._lsh_seed, 1)
        else:
            lsh = make_lsh(c.lsh, c.K, c.L, c.hidden, self._lsh_seed, rp, binsize=c.binsize,
                           ratio=c.simhash_ratio, index=c.index, zeros=c.dwta_zeros)
        self.upkeep = c.upkeep == "rising" and c.mode != "all"
        self.tables = HashTables.create(lsh, n_labels, c.bucket_capacity, c.bucket_policy, c.seed,
                                        delta_rows=None if self.upkeep else 0)
        self.rehash_schedule = Schedule(c.rehash_every, c.schedule, c.schedule_growth)
        self.rebuild_schedule = Schedule(c.rebuild_every, c.schedule, c.schedule_growth,
                                         first=c.rehash_every if c.rebuild_at_first_rehash else None)
        self.n_rehash = self.n_rebuild = 0
        self.dirty = np.zeros(n_labels, np.uint8)  # output rows changed since the last (re)hash
        self.rise = np.zeros(n_labels, np.float32)  # last step's rise of each stepped row's logit on the mean h
        self.table_seconds = 0.0   # refreshes and upkeep, s
        self.upkeep_seconds = 0.0  # upkeep alone, s
        self.threads = c.threads or numba.config.NUMBA_NUM_THREADS
        self.n_chunks = max(1, self.threads * c.chunks_per_thread)
        if c.mode != "all":
            self.refresh_tables(rebuild=False)
        # per-chunk scratch (HOGWILD work units) and per-batch buffers, allocated once
        nc = self.n_chunks
        self.stamp = np.zeros((nc, n_labels), np.int32)
        self.freq = np.zeros((nc, n_labels), np.int32)
        self.hscratch = np.zeros((nc, lsh.K * lsh.L), np.int32)
        self.codes = np.zeros((nc, lsh.L), np.int32)
        self.cand = np.zeros((nc, max(1, lsh.L * c.bucket_capacity)), np.int32)
        self.tags = np.zeros(nc, np.int64)
        B, A = c.batch, c.max_active
        self.H = np.zeros((B, c.hidden), f32)
        self.DH = np.zeros((B, c.hidden), f32)
        self.act = np.zeros((B, A), np.int32)
        self.n_act = np.zeros(B, np.int64)
        self.n_true = np.zeros(B, np.int64)
        self.dz = np.zeros((B, A), f32)
        self.loss = np.zeros(B, f32)
        self.norm = np.zeros(B, f32)
        # d loss / d h by part of the rows; calloc'd, so only the parts a batch uses are paged in
        self.DHp = np.zeros(NK.DH_PARTS * B * c.hidden, f32)
        self.slot_out = np.full(n_labels, -1, np.int32)
        self.slot_in = np.full(n_features, -1, np.int32)
        self.touched_out = np.zeros(n_labels + 1, np.int32)
        self.cursor_out = np.zeros(n_labels + 1, np.int64)
        self.starts_out = np.zeros(n_labels + 2, np.int64)
        self.pool_of_slot = np.zeros(n_labels + 1, np.int32)
        self.contrib_out = np.zeros(B * A, np.int64)
        self.dz_pairs = np.zeros(B * A, f32)
        self.row_parts = np.zeros(2 * self.threads, np.int64)   # list_rows' ranges of rows
        n_pool = self._pool_size()
        self.Wp = np.zeros((n_pool, c.hidden), f32)
        self.zp = np.zeros((B, n_pool), f32)
        self.masked = np.zeros((B, A), np.int32)
        self.n_masked = np.zeros(B, np.int64)
        self.in_pool = np.full(n_labels, -1, np.int32)
        self.gpool = np.zeros((n_pool, c.hidden), f32)
        self.gbpool = np.zeros(n_pool, f32)
        self._grow_input_buffers(B * 128)
        self.active_total = 0
        self.samples_total = 0

    def _grow_input_buffers(self, nnz: int) -> None:
        n = min(self.n_features, nnz)
        self.touched_in = np.zeros(n, np.int32)
        self.counts_in = np.zeros(n + 1, np.int64)
        self.starts_in = np.zeros(n + 1, np.int64)
        self.contrib_in = np.zeros(2 * nnz, np.int64)

    def page_in(self) -> None:
        """Write every page of the optimizer state once (values stay zero), so that the
        first-touch page faults are paid here, on every thread, and not inside a timed step."""
        for state in (self.adam_state, self.adam_v):
            for moment in state.values():
                NK.zero_fill(moment.reshape(-1))

    def weights(self) -> dict[str, np.ndarray]:
        return {"W1": self.W1, "b1": self.b1, "W2": self.W2, "b2": self.b2}

    # -- hash tables --------------------------------------------------------------------
    def refresh_tables(self, rebuild: bool) -> None:
        """Re-insert every output neuron (``rebuild``: under new hash functions); nothing in
        mode "all", whose tables are a placeholder."""
        if self.config.mode == "all":
            return
        import time
        t0 = time.perf_counter()
        if rebuild:
            self._lsh_seed += 1
            self.tables.rebuild(self.W2, self._lsh_seed, self.n_chunks)
            self.n_rebuild += 1
        else:
            changed = np.flatnonzero(self.dirty) if self.tables.codes is not None else None
            self.tables.insert_all(self.W2, self.n_chunks, changed)
            self.n_rehash += 1
        self.dirty[:] = 0
        self.table_seconds += time.perf_counter() - t0

    def _maybe_refresh(self) -> bool:
        """Refresh the tables when the schedule says so; True when it did."""
        if self.config.mode == "all":
            return False
        rebuild = self.rebuild_schedule.due(self.t)
        rehash = self.rehash_schedule.due(self.t)
        if rebuild:
            self.refresh_tables(rebuild=True)
        elif rehash:
            self.refresh_tables(rebuild=False)
        return rebuild or rehash

    def _keep_up(self, touched: np.ndarray) -> None:
        """Upkeep "rising": re-bucket the rows the batch's gradient ``touched`` whose logit on the
        batch's mean hidden vector the step raised (the best-scoring wrong labels are rows that
        rose; a row the step pushed down can only be retrieved needlessly from its old bucket).
        Under dense Adam, the rows only momentum moved wait for the next refresh."""
        import time
        t0 = time.perf_counter()
        self.tables.move(self.W2, touched[self.rise[touched] > 0], self.n_chunks)
        dt = time.perf_counter() - t0
        self.upkeep_seconds += dt
        self.table_seconds += dt

    # -- training ------------------------------------------------------------------------
    def _pool_size(self) -> int:
        c = self.config
        if c.mode == "all":
            return self.n_labels
        return c.min_active if c.padding == "batch" else 0

    def _padding_pool(self) -> np.ndarray:
        """This batch's shared random padding neurons: distinct, sorted (all neurons in mode "all")."""
        c = self.config
        p = self._pool_size()
        if c.mode == "all":
            return np.arange(self.n_labels, dtype=np.int32)
        if p == 0:
            return np.zeros(0, np.int32)
        rng = np.random.default_rng([c.seed, 7, self.t])
        if self.rank_to_label is not None:
            return log_uniform_distinct(rng, self.rank_to_label, p)
        return np.sort(rng.choice(self.n_labels, p, replace=False)).astype(np.int32)

    def step(self, data: XCData, rows: np.ndarray) -> float:
        """One Adam step on the samples ``rows`` of ``data``; returns the mean loss."""
        c = self.config
        rows = np.ascontiguousarray(rows, np.int64)
        B = rows.shape[0]
        if B > c.batch:
            raise ValueError(f"batch of {B} > configured {c.batch}")
        nnz = int((data.indptr[rows + 1] - data.indptr[rows]).sum())
        if 2 * nnz > self.contrib_in.shape[0]:
            self._grow_input_buffers(2 * nnz)
        lsh = self.tables.lsh
        H, DH, act, n_act, dz = self.H[:B], self.DH[:B], self.act[:B], self.n_act[:B], self.dz[:B]
        pool = self._padding_pool()
        P = pool.shape[0]
        zp, Wp = self.zp[:B, :P], self.Wp[:P]
        gpool, gbpool = self.gpool[:P], self.gbpool[:P]
        self.in_pool[pool] = np.arange(P, dtype=np.int32)
        # until the update, in_pool marks this batch's pool and slot_out the listed rows' slots
        try:
            # own active sets (HOGWILD over samples)
            NK.forward_own(rows, data.indptr, data.indices, data.values, data.label_indptr, data.labels,
                           self.W1, self.b1, self.n_labels, *lsh.kernel_args(),
                           *self.tables.kernel_args(), MODES[c.mode], c.topk, c.threshold,
                           c.min_active, c.max_active, self.in_pool, c.padding == "sample", np.uint64(c.seed),
                           self.t, self.n_chunks, self.stamp, self.freq, self.hscratch, self.codes, self.cand,
                           self.tags, H, act, n_act, self.n_true[:B], self.masked[:B], self.n_masked[:B])
            # the touched output rows in row order, each with its (sample, position) pairs
            m_out = NK.list_rows(act, n_act, self.in_pool, self.slot_out, self.touched_out, self.cursor_out,
                                 self.starts_out, self.contrib_out, self.pool_of_slot, self.row_parts)
            NK.own_logits(m_out, self.touched_out, self.starts_out, self.contrib_out,
                          self.W2, self.b2, H, dz, self.n_chunks)
            # the batch's shared pool of padding neurons: dense GEMMs on a contiguous copy of its rows
            tH = torch.from_numpy(H)
            if P:
                np.take(self.W2, pool, axis=0, out=Wp)
                tWp, tzp = torch.from_numpy(Wp), torch.from_numpy(zp)
                torch.mm(tH, tWp.T, out=tzp)
                tzp += torch.from_numpy(self.b2[pool])
            NK.softmax_backward(n_act, self.n_true[:B], dz, zp, self.masked[:B], self.n_masked[:B],
                                self.loss[:B], self.norm[:B], self.n_chunks)
            # a NaN or +inf logit makes its sample's normaliser NaN, every logit below the
            # floor makes it 0: no update from either
            norm = self.norm[:B]
            if not (np.isfinite(self.loss[:B]).all() and np.isfinite(norm).all() and (norm > 0).all()):
                raise TrainingDiverged(self.t + 1, "the loss" if not np.isfinite(self.loss[:B]).all()
                                       else "a logit")
            NK.by_pair(m_out, self.starts_out, self.contrib_out, dz, self.dz_pairs, self.n_chunks)
            if P:
                torch.mm(tzp, tWp, out=torch.from_numpy(DH))
                torch.mm(tzp.T, tH, out=torch.from_numpy(gpool))
                torch.sum(tzp, 0, out=torch.from_numpy(gbpool))
            else:
                DH[:] = 0.0
            # updates: every touched row once, in parallel over rows
            self.t += 1
            bc1 = 1.0 - c.beta1 ** self.t
            bc2 = 1.0 - c.beta2 ** self.t
            step_size = c.lr * np.sqrt(bc2) / bc1   # TF's lr_t: ε is added to sqrt(v) as is
            dense = c.adam == "dense"
            m, v = self.adam_state, self.adam_v
            pairs = int(self.starts_out[m_out])   # the own pairs; dense Adam also steps every row
            parts = NK.dh_parts(max(pairs, self.n_labels) if dense else pairs, B)
            DHp = self.DHp[:parts * B * c.hidden].reshape(parts, B, c.hidden)   # contiguous at any B
            NK.update_output_rows(m_out, self.touched_out, self.starts_out, self.contrib_out,
                                  H, self.dz_pairs, self.pool_of_slot, gpool, gbpool, self.W2, self.b2,
                                  m["W2"], v["W2"], m["b2"], v["b2"], step_size, c.beta1, c.beta2,
                                  c.eps, dense, self.slot_out, c.output_bias,
                                  H.mean(axis=0), self.rise, DHp)
        except BaseException:
            self.slot_out[:] = -1   # as a step finds it (update_output_rows resets it otherwise)
            raise
        finally:
            self.in_pool[pool] = -1
        NK.add_partials(DHp, DH)
        NK.relu_backward(H, DH)
        if not np.isfinite(DH).all():   # finite logits and weights give a finite one: a safeguard,
            # after the output rows' step (W1 and b1 untouched)
            raise TrainingDiverged(self.t, "the hidden layer's gradient")
        m_in = NK.gather_features(rows, data.indptr, data.indices, self.slot_in, self.touched_in,
                                  self.counts_in, self.starts_in, self.contrib_in)
        order = np.argsort(self.touched_in[:m_in]).astype(np.int32)
        NK.update_input_rows(m_in, self.touched_in, order, self.starts_in, self.contrib_in, data.values, DH,
                             self.W1, self.b1, m["W1"], v["W1"], m["b1"], v["b1"],
                             step_size, c.beta1, c.beta2, c.eps, dense, self.slot_in,
                             self.n_chunks)
        self.active_total += int(n_act.sum()) + int(P * B - self.n_masked[:B].sum())
        self.samples_total += B
        self.last_touched_rows = m_out
        touched = self.touched_out[:m_out]
        if dense:
            self.dirty[:] = 1
        else:
            self.dirty[touched] = 1
        if not self._maybe_refresh() and self.upkeep:
            self._keep_up(touched)
        return float(self.loss[:B].mean())

    @property
    def active_fraction(self) -> float:
        return self.active_total / max(1, self.samples_total) / self.n_labels

    # -- inference -------------------------------------------------------------------
    def hidden(self, data: XCData, rows: np.ndarray) -> np.ndarray:
        rows = np.ascontiguousarray(rows, np.int64)
        out = np.empty((rows.shape[0], self.config.hidden), np.float32)
        NK.hidden_dense(rows, data.indptr, data.indices, data.values, self.W1, self.b1, out)
        return out


def log_uniform_distinct(rng: np.random.Generator, rank_to_label: np.ndarray, p: int) -> np.ndarray:
    """``p`` distinct labels (sorted int32), rank k drawn with probability
    log((k+2)/(k+1)) / log(L+1) (TF's log-uniform candidate sampler) until ``p`` are distinct;
    ``rank_to_label[k]`` is the label of rank k (most frequent first)."""
    n = rank_to_label.shape[0]
    p = min(int(p), n)
    got = np.zeros(0, np.int64)
    while got.size < p:
        got = np.union1d(got, rank_to_label[log_uniform_ranks(rng, n, 2 * (p - got.size) + 16)])
    if got.size > p:  # drop a uniform random excess, so no rank range is favoured by the cut
        got = np.sort(rng.choice(got, p, replace=False))
    return got.astype(np.int32)


def log_uniform_ranks(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """``size`` ranks in [0, n) (int64, with repeats), rank k drawn with probability
    log((k+2)/(k+1)) / log(n+1): TF's log-uniform candidate sampler."""
    u = rng.random(size)
    return np.clip(np.floor(np.exp(u * np.log(n + 1))).astype(np.int64) - 1, 0, n - 1)
