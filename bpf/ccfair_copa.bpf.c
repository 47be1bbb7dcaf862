// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Copa (Arun & Balakrishnan, "Copa: Practical Delay-Based Congestion Control for the
 * Internet", NSDI 2018) as a BPF congestion control (struct_ops): the simulator's Copa
 * (crates/ccfair-cc/src/copa/mod.rs) step for step, with the same parameters and variants
 * (paper / genericcc and each of their options), read from the socket's storage.
 *
 * BPF has no floating point: Copa's real-valued quantities are fixed point with 16
 * fractional bits (_q16: cwnd in packets, 1/delta, srtt in us, the parameters). Each
 * comparison is rearranged so that it needs no division (e.g. lambda <= lambda_t becomes
 * cwnd x dq <= RTTstanding / delta). The differences from the simulator's f64 arithmetic
 * are rounding in the 16th fractional bit. docs/kernel.md lists this and the other
 * differences.
 *
 * Copa paces at 2 cwnd / RTTstanding: the init hook asks TCP to pace (sk_pacing_status =
 * SK_PACING_NEEDED), which without the fq qdisc is TCP's internal pacing
 * (tcp_needs_internal_pacing, net/ipv4/tcp_output.c).
 */
#include "kernel_types.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ccfair_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ccfair_copa_sk);
} ccfair_copa_sk SEC(".maps");

#define ONE_Q16 (1ULL << 16)
#define MIN_CWND_Q16 (2ULL << 16)       /* genericCC max(2.0, window) */
#define MAX_VELOCITY 65536U             /* ccp_copa caps at 0xffff; numerical safety only */

enum { MODE_DEFAULT, MODE_COMPETITIVE };

static __always_inline u64 min_u64(u64 a, u64 b) { return a < b ? a : b; }
static __always_inline u64 max_u64(u64 a, u64 b) { return a > b ? a : b; }

/* a x b / c without overflowing when a x b does not fit but (a / c) x b does. */
static __always_inline u64 mul_div(u64 a, u64 b, u64 c)
{
	if (!c)
		return ~0ULL;
	return (a / c) * b + (a % c) * b / c;
}

/* ------------------------------------------------- windowed min / max (window.rs) */

struct wx_ctx {
	struct copa_wx *w;
	u32 now;
	u32 v;
	u32 window;
	u32 horizon;
	u32 is_max;
};

static __always_inline u32 wx_idx(u32 head, u32 k)
{
	return (head + k) & (COPA_WX_CAP - 1);
}

/* `a` at least as good as `b` (<= for a minimum, >= for a maximum). */
static __always_inline bool at_least_as_good(u32 is_max, u32 a, u32 b)
{
	return is_max ? a >= b : a <= b;
}

/* Drop history beyond the horizon (one entry per call; bpf_loop callback). */
static long wx_pop_front(u32 i, struct wx_ctx *c)
{
	struct copa_wx *w = c->w;
	u32 head = w->head & (COPA_WX_CAP - 1);

	if (w->len == 0)
		return 1;
	if (c->now - w->e[head].t_last <= c->horizon)
		return 1;
	w->head = wx_idx(head, 1);
	w->len--;
	return 0;
}

/* Entries the new sample beats can never be the answer again. */
static long wx_pop_back(u32 i, struct wx_ctx *c)
{
	struct copa_wx *w = c->w;
	u32 back;

	if (w->len == 0 || w->head >= COPA_WX_CAP || w->len > COPA_WX_CAP)
		return 1;
	back = wx_idx(w->head, w->len - 1);
	if (back >= COPA_WX_CAP)
		return 1;
	if (!at_least_as_good(c->is_max, c->v, w->e[back].v))
		return 1;
	w->len--;
	return 0;
}

/* The scalar arguments of wx_push_global (a global BPF function takes pointers only to
 * structs of scalars). */
struct wx_args {
	u32 now;
	u32 v;
	u32 window;
	u32 horizon;
	u32 is_max;
};

/* WindowedExtremum::push. When the ring is full (the window shrank a lot while samples kept
 * arriving) the sample is folded into the newest entry as if it were within the
 * resolution, and counted in `overflows`. A global function: the verifier checks it once,
 * not at every call site. */
__attribute__((noinline)) int wx_push_global(struct copa_wx *w, struct wx_args *a)
{
	struct wx_ctx c;
	u32 now, window, resolution, back, slot;

	if (!w || !a)
		return 0;
	c.w = w;
	c.now = now = a->now;
	c.v = a->v;
	c.window = window = a->window;
	c.horizon = a->horizon > window ? a->horizon : window;
	c.is_max = a->is_max;
	resolution = window / COPA_WX_BUCKETS;
	bpf_loop(COPA_WX_CAP, wx_pop_front, &c, 0);
	bpf_loop(COPA_WX_CAP, wx_pop_back, &c, 0);
	if (w->len > COPA_WX_CAP)
		return 0;
	if (w->len > 0) {
		back = wx_idx(w->head, w->len - 1);
		if (now - w->e[back].t_first < resolution || w->len == COPA_WX_CAP) {
			if (w->len == COPA_WX_CAP)
				w->overflows++;
			w->e[back].t_last = now;
			return 0;
		}
	}
	slot = wx_idx(w->head, w->len);
	w->e[slot].t_first = now;
	w->e[slot].t_last = now;
	w->e[slot].v = a->v;
	w->len++;
	return 0;
}

static __always_inline void wx_push(struct copa_wx *w, u32 is_max, u32 now, u32 v, u32 window,
				    u32 horizon)
{
	struct wx_args a = {
		.now = now, .v = v, .window = window, .horizon = horizon, .is_max = is_max,
	};

	wx_push_global(w, &a);
}

struct wx_search {
	struct copa_wx *w;
	u32 oldest;
	u32 lo;
	u32 hi;
};

/* One step of the binary search for the first entry with t_last >= oldest. */
static long wx_search_step(u32 i, struct wx_search *q)
{
	u32 mid;

	if (q->lo >= q->hi)
		return 1;
	mid = q->lo + (q->hi - q->lo) / 2;
	if (q->w->e[wx_idx(q->w->head, mid)].t_last < q->oldest)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
}

/* WindowedExtremum::get: the first entry whose t_last is within `window` of now (entries
 * are in time order). Returns 0 when there is none. */
__attribute__((noinline)) int wx_get_global(struct copa_wx *w, u32 now, u32 window, u32 *out)
{
	struct wx_search q;

	if (!w || !out || w->len > COPA_WX_CAP)
		return 0;
	q.w = w;
	q.oldest = now > window ? now - window : 0;
	q.lo = 0;
	q.hi = w->len;
	bpf_loop(11, wx_search_step, &q, 0); /* 2^10 > COPA_WX_CAP */
	if (q.lo >= w->len)
		return 0;
	*out = w->e[wx_idx(w->head, q.lo)].v;
	return 1;
}

static __always_inline bool wx_get(struct copa_wx *w, u32 now, u32 window, u32 *out)
{
	return wx_get_global(w, now, window, out) != 0;
}

/* ------------------------------------------------------------------------ Copa */

struct ctx {
	struct sock *sk;
	struct tcp_sock *tp;
	struct ccfair_copa_sk *s;
	struct ccfair_copa_params *p;
	struct ccfair_copa_state *st;
	u64 now_us;
};

/* Filter time: us since the connection started, in u32 (71 minutes). */
static __always_inline u32 rel(struct ctx *c, u64 t_us)
{
	return (u32)(t_us - c->st->base_us);
}

/* srtt (us x 2^16) for every "per RTT" rule: Copa's own EWMA (genericCC) or TCP's
 * (Linux tcp_rtt_estimator, the paper's "standard" srtt). */
static __always_inline u64 srtt_q16(struct ctx *c)
{
	if (c->p->srtt_gain_q16 > 0 && c->st->own_srtt_q16 > 0)
		return c->st->own_srtt_q16;
	if (c->tp->srtt_us > 0)
		return (u64)(c->tp->srtt_us >> 3) << 16;
	return c->st->latest_rtt_us << 16;
}

/* RTTmin window: paper 10 s; genericCC max(10 s, 20 RTTmin). */
static __always_inline u64 rtt_min_window_us(struct ctx *c)
{
	u64 by_rtt = (c->p->rtt_min_window_rtts_q16 * c->st->rtt_min_us) >> 16;

	return max_u64(c->p->rtt_min_window_us, by_rtt);
}

/* Copa::update_mode (paper 2.2; genericCC RTTWindow::is_copa). */
static __always_inline void update_mode(struct ctx *c, u32 now, u64 mode_w, u64 max_w,
					u64 signal)
{
	struct ccfair_copa_state *st = c->st;
	u64 history = c->now_us - st->first_sample_us;
	u32 hi32, lo32;
	u64 hi, dq_hi, lo, thr_q16;
	bool empty_within, empty_now;

	hi = wx_get(&c->s->wx[COPA_WX_MODE_MAX], now, (u32)max_w, &hi32) ? hi32 : signal;
	dq_hi = hi > st->rtt_min_us ? hi - st->rtt_min_us : 0;
	/* threshold = mode_threshold x dq_hi; compare x <= threshold as x << 16 <= thr_q16. */
	thr_q16 = c->p->mode_threshold_q16 * dq_hi;
	if (history < mode_w) {
		empty_within = true;
	} else {
		lo = wx_get(&c->s->wx[COPA_WX_MODE_MIN], now, (u32)mode_w, &lo32) ? lo32 : signal;
		lo = lo > st->rtt_min_us ? lo - st->rtt_min_us : 0;
		empty_within = (lo << 16) <= thr_q16;
	}
	empty_now = ((signal > st->rtt_min_us ? signal - st->rtt_min_us : 0) << 16) <= thr_q16;
	if (st->mode == MODE_DEFAULT && !empty_within) {
		st->mode = MODE_COMPETITIVE;
		st->mode_switches++;
	} else if (st->mode == MODE_COMPETITIVE &&
		   ((c->p->mode_return_needs_new_empty && empty_now) ||
		    (!c->p->mode_return_needs_new_empty && empty_within))) {
		/* "Switching back to default mode sets delta = default_delta." */
		st->mode = MODE_DEFAULT;
		st->inv_delta_q16 = c->p->inv_delta_q16;
		st->mode_switches++;
	}
}

/* Copa::on_rtt_sample (paper 2.1; genericCC RTTWindow). */
static __noinline void on_rtt_sample(struct ctx *c, u64 rtt_us)
{
	struct ccfair_copa_state *st = c->st;
	u32 now = rel(c, c->now_us), got;
	u64 srtt, long_w, standing_w, mode_w, max_w, signal, g;

	st->latest_rtt_us = rtt_us;
	if (!st->has_sample) {
		st->has_sample = 1;
		st->first_sample_us = c->now_us;
	}
	if (c->p->srtt_gain_q16 > 0) {
		/* srtt = rtt on the first sample, then an EWMA per sample. */
		if (st->own_srtt_q16 == 0)
			st->own_srtt_q16 = rtt_us << 16;
		g = c->p->srtt_gain_q16;
		st->own_srtt_q16 = (g * (rtt_us << 16) + (ONE_Q16 - g) * st->own_srtt_q16) >> 16;
	}
	srtt = srtt_q16(c);
	long_w = rtt_min_window_us(c);
	/* genericCC caps the short windows at the long one; the paper's never reach it. */
	standing_w = min_u64(srtt >> 17, long_w);
	mode_w = min_u64((srtt * c->p->mode_window_rtts_q16) >> 32, long_w);
	max_w = min_u64((srtt * c->p->mode_max_window_rtts_q16) >> 32, long_w);

	wx_push(&c->s->wx[COPA_WX_RTT_MIN], 0, now, (u32)rtt_us, (u32)long_w, (u32)long_w);
	wx_push(&c->s->wx[COPA_WX_STANDING], 0, now, (u32)rtt_us, (u32)standing_w,
		(u32)(2 * standing_w));
	st->rtt_min_us = wx_get(&c->s->wx[COPA_WX_RTT_MIN], now, (u32)long_w, &got) ? got : rtt_us;
	st->rtt_standing_us =
		wx_get(&c->s->wx[COPA_WX_STANDING], now, (u32)standing_w, &got) ? got : rtt_us;
	st->dq_us = st->rtt_standing_us > st->rtt_min_us ? st->rtt_standing_us - st->rtt_min_us
							 : 0;

	signal = c->p->mode_signal_raw ? rtt_us : st->rtt_standing_us;
	wx_push(&c->s->wx[COPA_WX_MODE_MIN], 0, now, (u32)signal, (u32)mode_w, (u32)(2 * mode_w));
	wx_push(&c->s->wx[COPA_WX_MODE_MAX], 1, now, (u32)signal, (u32)max_w, (u32)(2 * max_w));
	if (c->p->competitive)
		update_mode(c, now, mode_w, max_w, signal);
}

/* A loss in competitive mode: 1/delta halves, at most once per srtt unless
 * delta_halve_once_per_rtt is off; delta never above its default. */
static __always_inline void on_loss_delta(struct ctx *c, u64 srtt_q)
{
	struct ccfair_copa_state *st = c->st;

	if (st->mode != MODE_COMPETITIVE)
		return;
	if (c->p->delta_halve_once_per_rtt && st->has_halved &&
	    ((c->now_us - st->last_halving_us) << 16) < srtt_q)
		return;
	st->inv_delta_q16 = max_u64(st->inv_delta_q16 >> 1, c->p->inv_delta_q16);
	st->last_halving_us = c->now_us;
	st->has_halved = 1;
}

/* End of a packet-timed round (one window, about one RTT). */
static __always_inline void on_round_end(struct ctx *c)
{
	struct ccfair_copa_state *st = c->st;
	s32 dir;

	if (st->mode == MODE_COMPETITIVE &&
	    !(c->p->delta_ai_needs_lossless_rtt && st->loss_in_round))
		st->inv_delta_q16 += ONE_Q16;
	/* Paper velocity rule: compare cwnd with its value at the start of the window. */
	if (!st->slow_start && !c->p->velocity_rule_genericcc) {
		dir = st->cwnd_q16 > st->round_start_cwnd_q16 ? 1
		      : st->cwnd_q16 < st->round_start_cwnd_q16 ? -1 : 0;
		if (dir != 0 && dir == st->direction) {
			st->same_direction_rounds++;
		} else {
			st->direction = dir;
			st->same_direction_rounds = dir != 0;
			st->velocity = 1;
		}
		if (c->p->velocity && st->same_direction_rounds >= c->p->velocity_rtts)
			st->velocity = st->velocity * 2 > MAX_VELOCITY ? MAX_VELOCITY
								 : st->velocity * 2;
	}
}

/* ccp_copa delay_control / mvfst changeDirection: a decision against the current direction
 * while v > 1 resets v and starts a new window in the new direction. */
static __always_inline void velocity_check_opposite(struct ctx *c, bool increase)
{
	struct ccfair_copa_state *st = c->st;
	s32 dir = increase ? 1 : -1;

	if (!c->p->velocity_reset_on_opposite || st->velocity <= 1)
		return;
	if (dir != st->direction) {
		st->velocity = 1;
		st->direction = dir;
		st->same_direction_rounds = 0;
		st->round_start_cwnd_q16 = st->cwnd_q16;
	}
}

static __always_inline void reset_velocity(struct ctx *c)
{
	struct ccfair_copa_state *st = c->st;

	st->velocity = 1;
	st->direction = 0;
	st->same_direction_rounds = 0;
	st->round_start_cwnd_q16 = st->cwnd_q16;
	st->g_last_update_us = c->now_us;
	st->g_update_dir = 1;
	st->g_prev_update_dir = 1;
}

/* genericCC update_intersend_time, velocity part. */
static __always_inline void genericcc_velocity(struct ctx *c)
{
	struct ccfair_copa_state *st = c->st;

	if (c->now_us - st->g_last_update_us > st->latest_rtt_us) {
		if (st->g_prev_update_dir * st->g_update_dir > 0) {
			if (c->p->velocity)
				st->velocity = st->velocity * 2 > MAX_VELOCITY ? MAX_VELOCITY
									 : st->velocity * 2;
		} else {
			st->velocity = 1;
			st->g_prev_update_dir = -st->g_prev_update_dir;
		}
		st->g_last_update_us = c->now_us;
		st->g_update_dir = 0;
	}
	/* v > delta x cwnd  <=>  v / delta > cwnd */
	if ((u64)st->velocity * st->inv_delta_q16 > st->cwnd_q16)
		st->velocity /= 2;
	if (st->velocity < 1)
		st->velocity = 1;
}

/* genericCC ReduceOnLoss::update: true when cwnd should be cut to 0.7x. */
static __always_inline bool reduce_on_loss(struct ctx *c, u64 lost, u64 acked)
{
	struct ccfair_copa_state *st = c->st;

	st->rol_lost += lost;
	st->rol_pkts += lost + acked;
	if (c->now_us > st->rol_window_start_us + 2 * st->latest_rtt_us && st->rol_pkts > 20) {
		bool high = st->rol_lost * 10 > st->rol_pkts * 3;

		st->rol_window_start_us = c->now_us;
		st->rol_lost = 0;
		st->rol_pkts = 0;
		return high;
	}
	return false;
}

static __always_inline void account_time(struct ctx *c)
{
	struct ccfair_copa_state *st = c->st;
	u64 dt = c->now_us > st->last_account_us ? c->now_us - st->last_account_us : 0;

	st->time_in_mode_us[st->mode & 1] += dt;
	st->last_account_us = max_u64(st->last_account_us, c->now_us);
}

/* Write cwnd and the pacing rate (paper: pace at 2 cwnd / RTTstanding). */
static __always_inline void apply(struct ctx *c)
{
	struct ccfair_copa_state *st = c->st;
	u64 cwnd = (st->cwnd_q16 + (ONE_Q16 >> 1)) >> 16, clamp = c->tp->snd_cwnd_clamp;
	u64 rate;

	if (clamp < 2)
		clamp = 2;
	cwnd = cwnd < 2 ? 2 : cwnd > clamp ? clamp : cwnd;
	c->tp->snd_cwnd = (u32)cwnd;
	if (st->rtt_standing_us > 0) {
		rate = ((st->cwnd_q16 * c->tp->mss_cache) >> 16) * 2 * USEC_PER_SEC /
		       st->rtt_standing_us;
		rate = max_u64(rate, 1);
		c->sk->sk_pacing_rate = min_u64(rate, c->sk->sk_max_pacing_rate);
	} else {
		c->sk->sk_pacing_rate = c->sk->sk_max_pacing_rate;
	}
}

static __always_inline bool load(struct ctx *c, struct sock *sk)
{
	struct ccfair_copa_sk *s = bpf_sk_storage_get(&ccfair_copa_sk, sk, NULL, 0);

	if (!s || !s->state.initialized)
		return false;
	c->sk = sk;
	c->tp = tcp_sk(sk);
	c->s = s;
	c->p = &s->params;
	c->st = &s->state;
	c->now_us = c->tp->tcp_mstamp;
	return true;
}

/* The paper's defaults, for a socket that selected this algorithm without ccfair's sender
 * having written parameters. */
static __always_inline void default_params(struct ccfair_copa_params *p)
{
	__builtin_memset(p, 0, sizeof(*p));
	p->abi = CCFAIR_BPF_ABI;
	p->competitive = 1;
	p->velocity = 1;
	p->mode_return_needs_new_empty = 1;
	p->velocity_rtts = 3;
	p->velocity_reset_on_opposite = 1;
	p->delta_halve_once_per_rtt = 1;
	p->delta_ai_needs_lossless_rtt = 1;
	p->rto_restart = 1;
	p->inv_delta_q16 = 2 * ONE_Q16;
	p->rtt_min_window_us = 10 * USEC_PER_SEC;
	p->mode_window_rtts_q16 = 5 * ONE_Q16;
	p->mode_max_window_rtts_q16 = 5 * ONE_Q16;
	p->mode_threshold_q16 = 6554; /* 0.1 */
}

SEC("struct_ops")
void BPF_PROG(ccfair_copa_init, struct sock *sk)
{
	struct ccfair_copa_sk *s;
	struct ctx c;
	u32 i;

	s = bpf_sk_storage_get(&ccfair_copa_sk, sk, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s)
		return;
	if (s->params.abi != CCFAIR_BPF_ABI)
		default_params(&s->params);
	__builtin_memset(&s->state, 0, sizeof(s->state));
	for (i = 0; i < COPA_WX_COUNT; i++) {
		s->wx[i].head = 0;
		s->wx[i].len = 0;
		s->wx[i].overflows = 0;
	}
	c.sk = sk;
	c.tp = tcp_sk(sk);
	c.s = s;
	c.p = &s->params;
	c.st = &s->state;
	c.now_us = c.tp->tcp_mstamp;

	s->state.initialized = 1;
	s->state.base_us = c.now_us;
	s->state.slow_start = 1;
	s->state.mode = MODE_DEFAULT;
	s->state.velocity = 1;
	s->state.g_update_dir = 1;
	s->state.g_prev_update_dir = 1;
	s->state.inv_delta_q16 = s->params.inv_delta_q16;
	s->state.init_cwnd = c.tp->snd_cwnd;
	s->state.cwnd_q16 = max_u64((u64)c.tp->snd_cwnd << 16, MIN_CWND_Q16);
	s->state.round_start_cwnd_q16 = s->state.cwnd_q16;
	s->state.last_account_us = c.now_us;
	apply(&c);
	/* Ask TCP to pace (internal pacing without the fq qdisc). */
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
}

SEC("struct_ops")
void BPF_PROG(ccfair_copa_cong_control, struct sock *sk, u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct ccfair_copa_state *st;
	u64 srtt, acked_pkts, acked_q16, change, v;
	long rtt_us = rs->rtt_us;
	bool increase, probing;
	struct ctx c;

	if (!load(&c, sk))
		return;
	st = c.st;
	account_time(&c);

	if (rtt_us > 0)
		on_rtt_sample(&c, (u64)rtt_us);
	srtt = srtt_q16(&c);

	/* Packet-timed rounds, as bbr_update_bw. */
	if (rs->acked_sacked > 0 && (s32)(rs->prior_delivered - (u32)st->next_round_delivered) >= 0) {
		st->next_round_delivered = c.tp->delivered;
		st->rounds++;
		if (st->rounds > 1)
			on_round_end(&c);
		st->loss_in_round = 0;
		st->round_start_cwnd_q16 = st->cwnd_q16;
	}

	if (rs->losses > 0) {
		st->loss_in_round = 1;
		on_loss_delta(&c, srtt);
	}

	if (!st->has_sample) {
		apply(&c);
		return;
	}

	acked_pkts = rs->acked_sacked;
	probing = st->acks < c.p->probe_acks;
	if (acked_pkts > 0)
		st->acks++;

	/* lambda <= lambda_t  <=>  cwnd x delta x dq <= RTTstanding
	 *                     <=>  cwnd x dq <= RTTstanding / delta (dq = 0: always). */
	increase = st->cwnd_q16 * st->dq_us <= st->rtt_standing_us * st->inv_delta_q16;

	if (acked_pkts > 0 && !probing) {
		/* A stretch ACK moves cwnd by at most one window's worth of ACKs. */
		acked_q16 = min_u64(acked_pkts << 16, max_u64(st->cwnd_q16, ONE_Q16));
		if (st->slow_start) {
			if (increase) {
				st->cwnd_q16 += acked_q16;
			} else {
				st->slow_start = 0;
				reset_velocity(&c);
			}
		}
		if (!st->slow_start) {
			if (c.p->velocity_rule_genericcc) {
				genericcc_velocity(&c);
				st->g_update_dir += increase ? 1 : -1;
			} else {
				velocity_check_opposite(&c, increase);
			}
			v = c.p->velocity ? st->velocity : 1;
			/* change = v x acked / (delta x cwnd) = v x acked x (1/delta) / cwnd */
			change = mul_div(v * acked_q16, st->inv_delta_q16, st->cwnd_q16);
			if (increase)
				st->cwnd_q16 += change;
			else
				st->cwnd_q16 = st->cwnd_q16 > change ? st->cwnd_q16 - change : 0;
		}
	}

	if (c.p->loss_reduce && reduce_on_loss(&c, rs->losses > 0 ? rs->losses : 0, acked_pkts))
		st->cwnd_q16 = st->cwnd_q16 * 7 / 10;

	st->cwnd_q16 = max_u64(st->cwnd_q16, MIN_CWND_Q16);
	apply(&c);
}

/* RTO (tcp_enter_loss): a loss for delta; with rto_restart, init cwnd and slow start. */
SEC("struct_ops")
void BPF_PROG(ccfair_copa_set_state, struct sock *sk, u8 new_state)
{
	struct ctx c;

	if (new_state != TCP_CA_Loss || !load(&c, sk))
		return;
	c.st->loss_in_round = 1;
	on_loss_delta(&c, srtt_q16(&c));
	if (c.p->rto_restart) {
		c.st->cwnd_q16 = max_u64((u64)c.st->init_cwnd << 16, MIN_CWND_Q16);
		c.st->slow_start = 1;
		reset_velocity(&c);
		apply(&c);
	}
}

/* Copa keeps no ssthresh; like BBR, leave the socket's unchanged. */
SEC("struct_ops")
u32 BPF_PROG(ccfair_copa_ssthresh, struct sock *sk)
{
	return tcp_sk(sk)->snd_ssthresh;
}

/* Copa's window lives in the module; an undo restores nothing beyond it. */
SEC("struct_ops")
u32 BPF_PROG(ccfair_copa_undo_cwnd, struct sock *sk)
{
	return tcp_sk(sk)->snd_cwnd;
}

/* The name is a placeholder of the full 15 characters, replaced by the run's name. */
SEC(".struct_ops")
struct tcp_congestion_ops ccfair_copa = {
	.init = (void *)ccfair_copa_init,
	.cong_control = (void *)ccfair_copa_cong_control,
	.set_state = (void *)ccfair_copa_set_state,
	.ssthresh = (void *)ccfair_copa_ssthresh,
	.undo_cwnd = (void *)ccfair_copa_undo_cwnd,
	.name = "ccfair_copa____",
};
