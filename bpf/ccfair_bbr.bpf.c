// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * BBRv1 as a BPF congestion control (struct_ops), with every parameter of the simulator's
 * BBR (crates/ccfair-cc/src/bbr/params.rs) read from the socket's storage.
 *
 * Written for ccfair from the behaviour of Linux net/ipv4/tcp_bbr.c (6.18): each
 * function names the tcp_bbr.c function it follows, and does what that function does, in
 * Linux's units (bandwidth in packets/us << 24, gains in 1/256, min_rtt in us, stamps in
 * u32 jiffies). With stock parameters it is meant to behave as the kernel's own bbr; the
 * parameters add the simulator's options (version linux-4.13 / linux-4.15 and their flags,
 * tso_model none, lt_bw off, min_rtt_win_sec, probe_rtt_ms, bw_rtts, cwnd_gain,
 * fixed_start_phase) and the RTprop modifications of the simulator's BBR (forced expire,
 * RTprop update). The 4.x flags change the algorithm only: the host's TCP (its pacer above
 * all) stays the running kernel's. docs/kernel.md lists what differs from the kernel module.
 *
 * The state lives in socket storage rather than icsk_ca_priv (104 bytes): it holds the
 * parameters and the counters too, and user space reads it for the time series.
 */
#include "kernel_types.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ccfair_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

/* The kernel's HZ, for jiffies (libbpf reads it from the kernel configuration). */
extern unsigned int CONFIG_HZ __kconfig;

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ccfair_bbr_sk);
} ccfair_bbr_sk SEC(".maps");

#define BW_SCALE 24
#define BW_UNIT (1ULL << BW_SCALE)
#define BBR_SCALE 8
#define BBR_UNIT (1U << BBR_SCALE)

enum { BBR_STARTUP, BBR_DRAIN, BBR_PROBE_BW, BBR_PROBE_RTT };

#define CYCLE_LEN 8
/* Constants of tcp_bbr.c. */
#define HIGH_GAIN (BBR_UNIT * 2885 / 1000 + 1)
#define DRAIN_GAIN (BBR_UNIT * 1000 / 2885)
#define CYCLE_RAND 7
#define CWND_MIN_TARGET 4U
#define FULL_BW_THRESH (BBR_UNIT * 5 / 4)
#define FULL_BW_CNT 3
#define LT_INTVL_MIN_RTTS 4
#define LT_LOSS_THRESH 50
#define LT_BW_RATIO (BBR_UNIT / 8)
#define LT_BW_DIFF (4000 / 8)
#define LT_BW_MAX_RTTS 48
#define EXTRA_ACKED_WIN_RTTS 5
#define ACK_EPOCH_ACKED_RESET_THRESH (1U << 20)
#define EXTRA_ACKED_MAX_US (100 * 1000)
#define MIN_TSO_RATE 1200000
#define PACING_MARGIN_PERCENT 1
/* GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER with MAX_TCP_HEADER = 320 (x86-64 defconfig),
 * as the simulator takes it. */
#define GSO_MAX_BYTES (65536 - 1 - 320)

#define tcp_jiffies32 ((u32)bpf_jiffies64())
/* include/linux/jiffies.h time_after for u32 stamps. */
#define after32(a, b) ((s32)((b) - (a)) < 0)

/* bbr_pacing_gain[]: probe at 1.25, drain at 0.75, cruise at 1 for six phases. */
static __always_inline u32 cycle_pacing_gain(u32 idx)
{
	if (idx == 0)
		return BBR_UNIT * 5 / 4;
	if (idx == 1)
		return BBR_UNIT * 3 / 4;
	return BBR_UNIT;
}

struct ctx {
	struct sock *sk;
	struct tcp_sock *tp;
	struct ccfair_bbr_params *p;
	struct ccfair_bbr_state *b;
};

static __always_inline u32 min_u32(u32 a, u32 b) { return a < b ? a : b; }
static __always_inline u32 max_u32(u32 a, u32 b) { return a > b ? a : b; }
static __always_inline u64 min_u64(u64 a, u64 b) { return a < b ? a : b; }

/* tcp_packets_in_flight (include/net/tcp.h). */
static __always_inline u32 packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* msecs_to_jiffies / usecs_to_jiffies round up. */
static __always_inline u32 msecs_to_jiffies(u32 ms)
{
	u32 hz = CONFIG_HZ;
	return (u32)(((u64)ms * hz + 999) / 1000);
}

/* ------------------------------------------------------------- lib/win_minmax.c */

static __always_inline u32 minmax_reset(struct ccfair_bbr_state *b, u32 t, u32 v)
{
	b->bw_t[0] = b->bw_t[1] = b->bw_t[2] = t;
	b->bw_v[0] = b->bw_v[1] = b->bw_v[2] = v;
	return v;
}

/* minmax_subwin_update */
static __always_inline u32 minmax_subwin_update(struct ccfair_bbr_state *b, u32 win, u32 t, u32 v)
{
	u32 dt = t - b->bw_t[0];

	if (dt > win) {
		/* Passed the whole window without a new best: promote the 2nd and 3rd. */
		b->bw_t[0] = b->bw_t[1]; b->bw_v[0] = b->bw_v[1];
		b->bw_t[1] = b->bw_t[2]; b->bw_v[1] = b->bw_v[2];
		b->bw_t[2] = t; b->bw_v[2] = v;
		if (t - b->bw_t[0] > win) {
			b->bw_t[0] = b->bw_t[1]; b->bw_v[0] = b->bw_v[1];
			b->bw_t[1] = b->bw_t[2]; b->bw_v[1] = b->bw_v[2];
			b->bw_t[2] = t; b->bw_v[2] = v;
		}
	} else if (b->bw_t[1] == b->bw_t[0] && dt > win / 4) {
		/* A quarter of the window without a new 2nd choice: take one. */
		b->bw_t[2] = b->bw_t[1] = t;
		b->bw_v[2] = b->bw_v[1] = v;
	} else if (b->bw_t[2] == b->bw_t[1] && dt > win / 2) {
		/* Half the window without a new 3rd choice: take one. */
		b->bw_t[2] = t;
		b->bw_v[2] = v;
	}
	return b->bw_v[0];
}

/* minmax_running_max */
static __always_inline u32 minmax_running_max(struct ccfair_bbr_state *b, u32 win, u32 t, u32 v)
{
	if (v >= b->bw_v[0] || t - b->bw_t[2] > win)
		return minmax_reset(b, t, v);
	if (v >= b->bw_v[1]) {
		b->bw_t[2] = b->bw_t[1] = t;
		b->bw_v[2] = b->bw_v[1] = v;
	} else if (v >= b->bw_v[2]) {
		b->bw_t[2] = t;
		b->bw_v[2] = v;
	}
	return minmax_subwin_update(b, win, t, v);
}

/* ------------------------------------------------------------------- estimates */

static __always_inline u32 max_bw(struct ctx *c) { return c->b->bw_v[0]; }

/* bbr_bw: lt_bw while policed, else the max filter. */
static __always_inline u32 bbr_bw(struct ctx *c)
{
	return c->b->lt_use_bw ? c->b->lt_bw : max_bw(c);
}

static __always_inline u32 extra_acked(struct ctx *c)
{
	return c->b->extra_acked[0] > c->b->extra_acked[1] ? c->b->extra_acked[0]
							   : c->b->extra_acked[1];
}

/* bbr_rate_bytes_per_sec: in u64 and in Linux's order of operations; with pacing_on_mtu
 * (4.x) on tcp_mss_to_mtu (TCP header with options + the 20-byte IPv4 header) without the
 * 1% margin. */
static __always_inline u64 rate_bytes_per_sec(struct ctx *c, u64 rate, u32 gain)
{
	if (c->p->pacing_on_mtu) {
		rate *= c->tp->mss_cache + c->tp->tcp_header_len + 20;
		rate *= gain;
		rate >>= BBR_SCALE;
		rate *= USEC_PER_SEC;
		return rate >> BW_SCALE;
	}
	rate *= c->tp->mss_cache;
	rate *= gain;
	rate >>= BBR_SCALE;
	rate *= USEC_PER_SEC / 100 * (100 - PACING_MARGIN_PERCENT);
	return rate >> BW_SCALE;
}

/* bbr_bw_to_pacing_rate */
static __always_inline u64 bw_to_pacing_rate(struct ctx *c, u32 bw, u32 gain)
{
	return min_u64(rate_bytes_per_sec(c, bw, gain), c->sk->sk_max_pacing_rate);
}

/* bbr_init_pacing_rate_from_rtt: high_gain x cwnd / srtt (or a nominal 1 ms). */
static __always_inline void init_pacing_rate_from_rtt(struct ctx *c)
{
	u32 rtt_us;
	u64 bw;

	if (c->tp->srtt_us) {
		rtt_us = max_u32(c->tp->srtt_us >> 3, 1);
		c->b->has_seen_rtt = 1;
	} else {
		rtt_us = USEC_PER_MSEC;
	}
	bw = (u64)c->tp->snd_cwnd * BW_UNIT;
	bw /= rtt_us;
	c->sk->sk_pacing_rate = bw_to_pacing_rate(c, (u32)bw, HIGH_GAIN);
}

/* bbr_set_pacing_rate: before the pipe is full the rate only goes up. */
static __always_inline void set_pacing_rate(struct ctx *c, u32 bw, u32 gain)
{
	u64 rate = bw_to_pacing_rate(c, bw, gain);

	if (!c->b->has_seen_rtt && c->tp->srtt_us)
		init_pacing_rate_from_rtt(c);
	if (c->b->full_bw_reached || rate > c->sk->sk_pacing_rate)
		c->sk->sk_pacing_rate = rate;
}

/* bbr_min_tso_segs */
static __always_inline u32 min_tso_segs(struct sock *sk)
{
	return sk->sk_pacing_rate < (MIN_TSO_RATE >> 3) ? 1 : 2;
}

/* bbr_tso_segs_goal, or one segment with tso_model "none". */
static __always_inline u32 tso_segs_goal(struct ctx *c)
{
	u64 bytes;
	u32 segs;

	if (c->p->tso_model_none)
		return 1;
	bytes = min_u64(c->sk->sk_pacing_rate >> c->sk->sk_pacing_shift, GSO_MAX_BYTES);
	segs = max_u32((u32)(bytes / max_u32(c->tp->mss_cache, 1)), min_tso_segs(c->sk));
	return min_u32(segs, 0x7F);
}

/* bbr_save_cwnd */
static __always_inline void save_cwnd(struct ctx *c)
{
	if (c->b->prev_ca_state < TCP_CA_Recovery && c->b->mode != BBR_PROBE_RTT)
		c->b->prior_cwnd = c->tp->snd_cwnd;
	else
		c->b->prior_cwnd = max_u32(c->b->prior_cwnd, c->tp->snd_cwnd);
}

/* bbr_bdp: ceil(bw x min_rtt x gain); TCP_INIT_CWND before any RTT sample. */
static __always_inline u32 bdp(struct ctx *c, u32 bw, u32 gain)
{
	u64 w;

	if (c->b->min_rtt_us == ~0U)
		return TCP_INIT_CWND;
	w = (u64)bw * c->b->min_rtt_us;
	return (u32)((((w * gain) >> BBR_SCALE) + BW_UNIT - 1) / BW_UNIT);
}

/* bbr_quantization_budget */
static __always_inline u32 quantization_budget(struct ctx *c, u32 cwnd)
{
	cwnd += 3 * tso_segs_goal(c);
	cwnd = (cwnd + 1) & ~1U;
	if (c->p->probe_bw_plus_two && c->b->mode == BBR_PROBE_BW && c->b->cycle_idx == 0)
		cwnd += 2;
	return cwnd;
}

/* bbr_inflight */
static __always_inline u32 inflight(struct ctx *c, u32 bw, u32 gain)
{
	return quantization_budget(c, bdp(c, bw, gain));
}

/* bbr_packets_in_net_at_edt; without inflight_at_edt (4.x) in-flight as is. */
static __always_inline u32 packets_in_net_at_edt(struct ctx *c, u32 inflight_now)
{
	u64 now_ns, edt_ns, interval_us;
	u32 interval_delivered, inflight_at_edt;

	if (!c->p->edt)
		return inflight_now;
	now_ns = c->tp->tcp_clock_cache;
	edt_ns = c->tp->tcp_wstamp_ns > now_ns ? c->tp->tcp_wstamp_ns : now_ns;
	interval_us = (edt_ns - now_ns) / NSEC_PER_USEC;
	interval_delivered = (u32)(((u64)bbr_bw(c) * interval_us) >> BW_SCALE);
	inflight_at_edt = inflight_now;
	if (c->b->pacing_gain > BBR_UNIT)
		inflight_at_edt += tso_segs_goal(c);
	if (interval_delivered >= inflight_at_edt)
		return 0;
	return inflight_at_edt - interval_delivered;
}

/* bbr_ack_aggregation_cwnd */
static __always_inline u32 ack_aggregation_cwnd(struct ctx *c)
{
	u32 max_aggr_cwnd, aggr_cwnd = 0;

	if (c->p->extra_acked_gain && c->b->full_bw_reached) {
		max_aggr_cwnd = (u32)(((u64)bbr_bw(c) * EXTRA_ACKED_MAX_US) / BW_UNIT);
		aggr_cwnd = (c->p->extra_acked_gain * extra_acked(c)) >> BBR_SCALE;
		aggr_cwnd = min_u32(aggr_cwnd, max_aggr_cwnd);
	}
	return aggr_cwnd;
}

/* ------------------------------------------------------------------------ cwnd */

/* bbr_set_cwnd_to_recover_or_restore; returns true under packet conservation. */
static __always_inline bool set_cwnd_to_recover_or_restore(struct ctx *c,
							   const struct rate_sample *rs,
							   u32 acked, u32 *new_cwnd)
{
	u32 prev_state = c->b->prev_ca_state;
	u32 state = BPF_CORE_READ_BITFIELD(inet_csk(c->sk), icsk_ca_state);
	u32 cwnd = c->tp->snd_cwnd;
	int losses = rs->losses;

	/* An ACK for P packets releases at most 2P: deduct losses first. */
	if (losses > 0)
		cwnd = (s32)(cwnd - losses) > 1 ? cwnd - losses : 1;

	if (state == TCP_CA_Recovery && prev_state != TCP_CA_Recovery) {
		/* First round of Recovery: packet conservation, a round starts now. */
		c->b->packet_conservation = 1;
		c->b->next_rtt_delivered = c->tp->delivered;
		cwnd = packets_in_flight(c->tp) + acked;
	} else if (prev_state >= TCP_CA_Recovery && state < TCP_CA_Recovery) {
		/* Leaving loss recovery: restore the cwnd saved when it began. */
		c->b->restore_cwnd = 1;
		c->b->packet_conservation = 0;
	}
	c->b->prev_ca_state = state;
	if (c->b->restore_cwnd) {
		/* Leaving recovery, or (4.x) PROBE_RTT on an earlier ACK. */
		cwnd = max_u32(cwnd, c->b->prior_cwnd);
		c->b->restore_cwnd = 0;
	}

	if (c->b->packet_conservation) {
		*new_cwnd = max_u32(cwnd, packets_in_flight(c->tp) + acked);
		return true;
	}
	*new_cwnd = cwnd;
	return false;
}

/* bbr_set_cwnd */
static __always_inline void set_cwnd(struct ctx *c, const struct rate_sample *rs, u32 acked,
				     u32 bw, u32 gain)
{
	u32 cwnd = c->tp->snd_cwnd, target;

	if (!acked && !c->p->probe_rtt_cap_zero_acked)
		return; /* 4.x: before the caps */
	if (!acked)
		goto done;
	if (set_cwnd_to_recover_or_restore(c, rs, acked, &cwnd))
		goto done;

	target = bdp(c, bw, gain);
	target += ack_aggregation_cwnd(c);
	target = quantization_budget(c, target);

	if (c->b->full_bw_reached)
		cwnd = min_u32(cwnd + acked, target);
	else if (cwnd < target || c->tp->delivered < TCP_INIT_CWND)
		cwnd = cwnd + acked;
	cwnd = max_u32(cwnd, CWND_MIN_TARGET);
done:
	c->tp->snd_cwnd = min_u32(cwnd, c->tp->snd_cwnd_clamp);
	if (c->b->mode == BBR_PROBE_RTT)
		c->tp->snd_cwnd = min_u32(c->tp->snd_cwnd, CWND_MIN_TARGET);
}

/* ----------------------------------------------------------------- gain cycling */

/* bbr_is_next_cycle_phase */
static __always_inline bool is_next_cycle_phase(struct ctx *c, const struct rate_sample *rs)
{
	s64 delta_us = (s64)(c->tp->delivered_mstamp - c->b->cycle_mstamp);
	bool is_full_length = delta_us > (s64)c->b->min_rtt_us;
	u32 in_net, bw;

	if (c->b->pacing_gain == BBR_UNIT)
		return is_full_length;

	in_net = packets_in_net_at_edt(c, rs->prior_in_flight);
	bw = max_bw(c);
	if (c->b->pacing_gain > BBR_UNIT)
		return is_full_length &&
		       (rs->losses || in_net >= inflight(c, bw, c->b->pacing_gain));
	return is_full_length || in_net <= inflight(c, bw, BBR_UNIT);
}

/* bbr_advance_cycle_phase; without gains_every_ack (4.x) it sets the phase's gain: 1 while
 * lt_bw is in use (4.15), the cycle's own with lt_bw_freezes_cycle (4.13). */
static __always_inline void advance_cycle_phase(struct ctx *c)
{
	c->b->cycle_idx = (c->b->cycle_idx + 1) & (CYCLE_LEN - 1);
	c->b->cycle_mstamp = c->tp->delivered_mstamp;
	if (!c->p->gains_every_ack)
		c->b->pacing_gain = c->b->lt_use_bw && !c->p->lt_bw_freezes_cycle
					    ? BBR_UNIT
					    : cycle_pacing_gain(c->b->cycle_idx);
}

/* Both gains set at a mode change (4.x); with gains_every_ack update_gains does it. */
static __always_inline void set_gains_at_transition(struct ctx *c, u32 pacing_gain,
						    u32 cwnd_gain)
{
	if (!c->p->gains_every_ack) {
		c->b->pacing_gain = pacing_gain;
		c->b->cwnd_gain = cwnd_gain;
	}
}

/* bbr_reset_probe_bw_mode: a random phase other than 0.75 (get_random_u32_below(7)), or
 * the fixed start phase. */
static __always_inline void reset_probe_bw_mode(struct ctx *c)
{
	c->b->mode = BBR_PROBE_BW;
	set_gains_at_transition(c, BBR_UNIT, c->p->probe_bw_cwnd_gain);
	if (c->p->fixed_start_phase >= 0)
		c->b->cycle_idx = ((u32)c->p->fixed_start_phase + CYCLE_LEN - 1) & (CYCLE_LEN - 1);
	else
		c->b->cycle_idx = CYCLE_LEN - 1 -
				  (u32)(((u64)bpf_get_prandom_u32() * CYCLE_RAND) >> 32);
	advance_cycle_phase(c);
}

/* bbr_reset_mode */
static __always_inline void reset_mode(struct ctx *c)
{
	if (!c->b->full_bw_reached) {
		c->b->mode = BBR_STARTUP;
		set_gains_at_transition(c, HIGH_GAIN, HIGH_GAIN);
	} else {
		reset_probe_bw_mode(c);
	}
}

/* ----------------------------------------------------------------- long-term bw */

/* bbr_reset_lt_bw_sampling_interval */
static __always_inline void reset_lt_bw_sampling_interval(struct ctx *c)
{
	c->b->lt_last_stamp = (u32)(c->tp->delivered_mstamp / USEC_PER_MSEC);
	c->b->lt_last_delivered = c->tp->delivered;
	c->b->lt_last_lost = c->tp->lost;
	c->b->lt_rtt_cnt = 0;
}

/* bbr_reset_lt_bw_sampling */
static __always_inline void reset_lt_bw_sampling(struct ctx *c)
{
	c->b->lt_bw = 0;
	c->b->lt_use_bw = 0;
	c->b->lt_is_sampling = 0;
	reset_lt_bw_sampling_interval(c);
}

/* bbr_lt_bw_interval_done */
static __always_inline void lt_bw_interval_done(struct ctx *c, u32 bw)
{
	u32 diff;

	if (c->b->lt_bw) {
		diff = bw > c->b->lt_bw ? bw - c->b->lt_bw : c->b->lt_bw - bw;
		if ((diff * BBR_UNIT <= LT_BW_RATIO * c->b->lt_bw) ||
		    (rate_bytes_per_sec(c, diff, BBR_UNIT) <= LT_BW_DIFF)) {
			/* Policed: use the average of the two intervals. */
			c->b->lt_bw = (bw + c->b->lt_bw) >> 1;
			c->b->lt_use_bw = 1;
			c->b->pacing_gain = BBR_UNIT;
			c->b->lt_rtt_cnt = 0;
			c->b->lt_bw_engagements++;
			return;
		}
	}
	c->b->lt_bw = bw;
	reset_lt_bw_sampling_interval(c);
}

/* bbr_lt_bw_sampling; `losses` and `app_limited` stand for rs->losses and
 * rs->is_app_limited (bbr_set_state calls it with a sample of one loss). */
static __noinline void lt_bw_sampling(struct ctx *c, int losses, bool app_limited)
{
	u32 lost, delivered, t;
	u64 bw;

	if (!c->p->lt_bw)
		return;
	if (c->b->lt_use_bw) {
		if (c->b->mode == BBR_PROBE_BW && c->b->round_start &&
		    ++c->b->lt_rtt_cnt >= LT_BW_MAX_RTTS) {
			reset_lt_bw_sampling(c);
			reset_probe_bw_mode(c);
		}
		return;
	}
	/* Wait for the first loss: the policer's tokens are then exhausted. */
	if (!c->b->lt_is_sampling) {
		if (!losses)
			return;
		reset_lt_bw_sampling_interval(c);
		c->b->lt_is_sampling = 1;
	}
	if (app_limited) {
		reset_lt_bw_sampling(c);
		return;
	}
	if (c->b->round_start)
		c->b->lt_rtt_cnt++;
	if (c->b->lt_rtt_cnt < LT_INTVL_MIN_RTTS)
		return;
	if (c->b->lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS) {
		reset_lt_bw_sampling(c);
		return;
	}
	if (!losses)
		return;
	lost = c->tp->lost - c->b->lt_last_lost;
	delivered = c->tp->delivered - c->b->lt_last_delivered;
	if (!delivered || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered)
		return;
	t = (u32)(c->tp->delivered_mstamp / USEC_PER_MSEC) - c->b->lt_last_stamp;
	if ((s32)t < 1)
		return;
	if (t >= ~0U / USEC_PER_MSEC) {
		reset_lt_bw_sampling(c);
		return;
	}
	t *= USEC_PER_MSEC;
	bw = (u64)delivered * BW_UNIT;
	bw /= t;
	lt_bw_interval_done(c, (u32)bw);
}

/* ---------------------------------------------------------------- model update */

/* bbr_update_bw: packet-timed rounds and the max filter. */
static __always_inline void update_bw(struct ctx *c, const struct rate_sample *rs)
{
	s32 delivered = rs->delivered;
	long interval_us = rs->interval_us;
	u64 bw;

	c->b->round_start = 0;
	if (delivered < 0 || interval_us <= 0)
		return;
	if ((s32)(rs->prior_delivered - c->b->next_rtt_delivered) >= 0) {
		c->b->next_rtt_delivered = c->tp->delivered;
		c->b->rtt_cnt++;
		c->b->round_start = 1;
		c->b->packet_conservation = 0;
	}
	lt_bw_sampling(c, rs->losses, rs->is_app_limited);

	bw = (u64)delivered * BW_UNIT / (u64)interval_us;
	if (!rs->is_app_limited || bw >= max_bw(c))
		minmax_running_max(c->b, c->p->bw_rtts, c->b->rtt_cnt, (u32)bw);
}

/* bbr_update_ack_aggregation */
static __always_inline void update_ack_aggregation(struct ctx *c, const struct rate_sample *rs)
{
	u32 epoch_us, expected_acked, extra, idx;

	if (!c->p->extra_acked_gain || rs->acked_sacked <= 0 || rs->delivered < 0 ||
	    rs->interval_us <= 0)
		return;
	if (c->b->round_start) {
		c->b->extra_acked_win_rtts = min_u32(0x1F, c->b->extra_acked_win_rtts + 1);
		if (c->b->extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS) {
			c->b->extra_acked_win_rtts = 0;
			c->b->extra_acked_win_idx = c->b->extra_acked_win_idx ? 0 : 1;
			c->b->extra_acked[c->b->extra_acked_win_idx & 1] = 0;
		}
	}
	epoch_us = (u32)(c->tp->delivered_mstamp - c->b->ack_epoch_mstamp);
	expected_acked = (u32)(((u64)bbr_bw(c) * epoch_us) / BW_UNIT);
	if (c->b->ack_epoch_acked <= expected_acked ||
	    c->b->ack_epoch_acked + rs->acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH) {
		c->b->ack_epoch_acked = 0;
		c->b->ack_epoch_mstamp = c->tp->delivered_mstamp;
		expected_acked = 0;
	}
	c->b->ack_epoch_acked = min_u32(0xFFFFF, c->b->ack_epoch_acked + rs->acked_sacked);
	extra = c->b->ack_epoch_acked - expected_acked;
	extra = min_u32(extra, c->tp->snd_cwnd);
	idx = c->b->extra_acked_win_idx & 1;
	/* Linux keeps extra_acked[] in u16. */
	extra &= 0xFFFF;
	if (extra > c->b->extra_acked[idx])
		c->b->extra_acked[idx] = extra;
}

/* bbr_check_full_bw_reached */
static __always_inline void check_full_bw_reached(struct ctx *c, const struct rate_sample *rs)
{
	u32 bw_thresh;

	if (c->b->full_bw_reached || !c->b->round_start || rs->is_app_limited)
		return;
	bw_thresh = (u32)(((u64)c->b->full_bw * FULL_BW_THRESH) >> BBR_SCALE);
	if (max_bw(c) >= bw_thresh) {
		c->b->full_bw = max_bw(c);
		c->b->full_bw_cnt = 0;
		return;
	}
	++c->b->full_bw_cnt;
	c->b->full_bw_reached = c->b->full_bw_cnt >= FULL_BW_CNT;
}

/* bbr_check_drain */
static __always_inline void check_drain(struct ctx *c)
{
	if (c->b->mode == BBR_STARTUP && c->b->full_bw_reached) {
		c->b->mode = BBR_DRAIN;
		set_gains_at_transition(c, DRAIN_GAIN, HIGH_GAIN);
		if (c->p->ssthresh_at_drain)
			c->tp->snd_ssthresh = inflight(c, max_bw(c), BBR_UNIT);
	}
	if (c->b->mode == BBR_DRAIN &&
	    packets_in_net_at_edt(c, packets_in_flight(c->tp)) <= inflight(c, max_bw(c), BBR_UNIT))
		reset_probe_bw_mode(c);
}

/* bbr_check_probe_rtt_done */
static __noinline void check_probe_rtt_done(struct ctx *c)
{
	if (!(c->b->probe_rtt_done_stamp && after32(tcp_jiffies32, c->b->probe_rtt_done_stamp)))
		return;
	c->b->min_rtt_stamp = tcp_jiffies32;
	if (c->p->probe_rtt_restore_at_exit)
		c->tp->snd_cwnd = max_u32(c->tp->snd_cwnd, c->b->prior_cwnd);
	else
		c->b->restore_cwnd = 1; /* 4.x: on the next ACK of data */
	reset_mode(c);
}

enum { MOD_NONE, MOD_FORCED_EXPIRY, MOD_UPDATED };

/* The RTprop modification of the simulator's BBR (crates/ccfair-cc/src/bbr/mod.rs
 * `rtprop_modification`): forced expire or RTprop update when rtt > rate_th x min_rtt
 * (or, with rtt_ratio_or_loss, on an ACK that marks losses). */
static __always_inline int rtprop_modification(struct ctx *c, const struct rate_sample *rs,
					       bool stock_expired)
{
	struct ccfair_bbr_params *p = c->p;
	long rtt_us = rs->rtt_us;
	bool ratio, loss;
	u64 v;

	if (p->rtprop_trigger == 0 || stock_expired)
		return MOD_NONE;
	ratio = rtt_us >= 0 && c->b->min_rtt_us != ~0U &&
		((u64)rtt_us << 16) > p->rate_th_q16 * (u64)c->b->min_rtt_us;
	loss = p->rtprop_trigger == 2 && rs->losses > 0;
	if (!(ratio || loss))
		return MOD_NONE;
	if (p->trigger_once_per_round && c->b->has_triggered &&
	    c->b->last_trigger_round == c->b->rtt_cnt)
		return MOD_NONE;
	if (p->rtprop_action == 0) {
		c->b->has_triggered = 1;
		c->b->last_trigger_round = c->b->rtt_cnt;
		c->b->forced_expiries++;
		return MOD_FORCED_EXPIRY;
	}
	/* The update needs a sample above RTprop. */
	if (rtt_us < 0 || (u64)rtt_us <= c->b->min_rtt_us)
		return MOD_NONE;
	c->b->has_triggered = 1;
	c->b->last_trigger_round = c->b->rtt_cnt;
	/* RTprop <- a x RTT + (1 - a) x RTprop, to the nearest us. */
	v = ((u64)p->update_gain_a_q16 * (u64)rtt_us +
	     (u64)(65536 - p->update_gain_a_q16) * c->b->min_rtt_us + 32768) >> 16;
	c->b->min_rtt_us = v > 0xFFFFFFFEULL ? 0xFFFFFFFEU : (u32)v;
	if (p->update_refresh_stamp)
		c->b->min_rtt_stamp = tcp_jiffies32;
	c->b->rtprop_updates++;
	return MOD_UPDATED;
}

/* bbr_update_min_rtt: the min-RTT filter, its expiry (stock or forced) and PROBE_RTT. */
static __noinline void update_min_rtt(struct ctx *c, const struct rate_sample *rs)
{
	u32 now = tcp_jiffies32;
	u32 hz = CONFIG_HZ;
	long rtt_us = rs->rtt_us;
	bool stock_expired, filter_expired, new_min;
	int mod;

	stock_expired = after32(now, c->b->min_rtt_stamp + c->p->min_rtt_win_sec * hz);
	mod = rtprop_modification(c, rs, stock_expired);
	filter_expired = stock_expired || mod == MOD_FORCED_EXPIRY;

	if (c->p->min_rtt_refresh_on_equal)
		new_min = rtt_us <= (long)c->b->min_rtt_us;
	else
		new_min = rtt_us < (long)c->b->min_rtt_us;
	if (mod != MOD_UPDATED && rtt_us >= 0 &&
	    (new_min ||
	     (filter_expired && !(rs->is_ack_delayed && c->p->min_rtt_skip_delayed_ack)))) {
		c->b->min_rtt_us = (u32)rtt_us;
		c->b->min_rtt_stamp = now;
	}

	if (c->p->probe_rtt_ms > 0 && filter_expired && !c->b->idle_restart &&
	    c->b->mode != BBR_PROBE_RTT) {
		c->b->mode = BBR_PROBE_RTT;
		set_gains_at_transition(c, BBR_UNIT, BBR_UNIT);
		save_cwnd(c);
		c->b->probe_rtt_done_stamp = 0;
		c->b->probe_rtt_entries++;
		if (mod == MOD_FORCED_EXPIRY)
			c->b->forced_probe_rtt_entries++;
	}

	if (c->b->mode == BBR_PROBE_RTT) {
		u32 al = c->tp->delivered + packets_in_flight(c->tp);

		/* Samples taken at 4 packets say nothing about the bottleneck. */
		c->tp->app_limited = al ? al : 1;
		if (!c->b->probe_rtt_done_stamp && packets_in_flight(c->tp) <= CWND_MIN_TARGET) {
			c->b->probe_rtt_done_stamp =
				now + msecs_to_jiffies(c->p->probe_rtt_ms);
			c->b->probe_rtt_round_done = 0;
			c->b->next_rtt_delivered = c->tp->delivered;
		} else if (c->b->probe_rtt_done_stamp) {
			if (c->b->round_start)
				c->b->probe_rtt_round_done = 1;
			if (c->b->probe_rtt_round_done)
				check_probe_rtt_done(c);
		}
	}
	if (rs->delivered > 0 || !c->p->idle_restart_needs_delivery)
		c->b->idle_restart = 0;
}

/* bbr_update_gains */
static __always_inline void update_gains(struct ctx *c)
{
	switch (c->b->mode) {
	case BBR_STARTUP:
		c->b->pacing_gain = HIGH_GAIN;
		c->b->cwnd_gain = HIGH_GAIN;
		break;
	case BBR_DRAIN:
		c->b->pacing_gain = DRAIN_GAIN;
		c->b->cwnd_gain = HIGH_GAIN;
		break;
	case BBR_PROBE_BW:
		c->b->pacing_gain =
			c->b->lt_use_bw ? BBR_UNIT : cycle_pacing_gain(c->b->cycle_idx);
		c->b->cwnd_gain = c->p->probe_bw_cwnd_gain;
		break;
	default:
		c->b->pacing_gain = BBR_UNIT;
		c->b->cwnd_gain = BBR_UNIT;
		break;
	}
}

/* ------------------------------------------------------------------------ hooks */

static __always_inline bool load(struct ctx *c, struct sock *sk)
{
	struct ccfair_bbr_sk *s = bpf_sk_storage_get(&ccfair_bbr_sk, sk, NULL, 0);

	if (!s || !s->state.initialized)
		return false;
	c->sk = sk;
	c->tp = tcp_sk(sk);
	c->p = &s->params;
	c->b = &s->state;
	return true;
}

/* Stock parameters for a socket that selected this algorithm without ccfair's sender
 * having written any (e.g. a user's own program): Linux's bbr. */
static __always_inline void default_params(struct ccfair_bbr_params *p)
{
	p->abi = CCFAIR_BPF_ABI;
	p->edt = 1;
	p->tso_model_none = 0;
	p->lt_bw = 1;
	p->extra_acked_gain = BBR_UNIT;
	p->min_rtt_refresh_on_equal = 0;
	p->fixed_start_phase = -1;
	p->min_rtt_win_sec = 10;
	p->probe_rtt_ms = 200;
	p->bw_rtts = CYCLE_LEN + 2;
	p->probe_bw_cwnd_gain = BBR_UNIT * 2;
	p->rtprop_trigger = 0;
	p->rtprop_action = 0;
	p->update_gain_a_q16 = 65536;
	p->rate_th_q16 = 2ULL << 16;
	p->update_refresh_stamp = 0;
	p->trigger_once_per_round = 0;
	p->pacing_on_mtu = 0;
	p->min_rtt_skip_delayed_ack = 1;
	p->probe_bw_plus_two = 1;
	p->probe_rtt_cap_zero_acked = 1;
	p->probe_rtt_restore_at_exit = 1;
	p->idle_restart_needs_delivery = 1;
	p->ssthresh_at_drain = 1;
	p->gains_every_ack = 1;
	p->undo_resets_sampling = 1;
	p->lt_bw_freezes_cycle = 0;
}

/* bbr_init */
SEC("struct_ops")
void BPF_PROG(ccfair_bbr_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct ccfair_bbr_sk *s;
	struct ctx c;

	s = bpf_sk_storage_get(&ccfair_bbr_sk, sk, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s)
		return;
	if (s->params.abi != CCFAIR_BPF_ABI)
		default_params(&s->params);
	__builtin_memset(&s->state, 0, sizeof(s->state));
	s->state.initialized = 1;
	c.sk = sk;
	c.tp = tp;
	c.p = &s->params;
	c.b = &s->state;

	c.b->prior_cwnd = 0;
	tp->snd_ssthresh = TCP_INFINITE_SSTHRESH;
	c.b->rtt_cnt = 0;
	c.b->next_rtt_delivered = tp->delivered;
	c.b->prev_ca_state = TCP_CA_Open;
	c.b->packet_conservation = 0;
	c.b->probe_rtt_done_stamp = 0;
	c.b->probe_rtt_round_done = 0;
	c.b->min_rtt_us = tp->rtt_min.s[0].v; /* tcp_min_rtt() */
	c.b->min_rtt_stamp = tcp_jiffies32;
	minmax_reset(c.b, c.b->rtt_cnt, 0);
	c.b->has_seen_rtt = 0;
	init_pacing_rate_from_rtt(&c);
	c.b->round_start = 0;
	c.b->idle_restart = 0;
	c.b->full_bw_reached = 0;
	c.b->full_bw = 0;
	c.b->full_bw_cnt = 0;
	c.b->cycle_mstamp = 0;
	c.b->cycle_idx = 0;
	reset_lt_bw_sampling(&c);
	c.b->mode = BBR_STARTUP;
	set_gains_at_transition(&c, HIGH_GAIN, HIGH_GAIN);
	c.b->ack_epoch_mstamp = tp->tcp_mstamp;
	c.b->ack_epoch_acked = 0;
	c.b->extra_acked_win_rtts = 0;
	c.b->extra_acked_win_idx = 0;
	c.b->extra_acked[0] = 0;
	c.b->extra_acked[1] = 0;
	/* Ask TCP to pace (internal pacing without the fq qdisc, tcp_needs_internal_pacing). */
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
}

/* bbr_main */
SEC("struct_ops")
void BPF_PROG(ccfair_bbr_main, struct sock *sk, u32 ack, int flag, const struct rate_sample *rs)
{
	struct ctx c;
	u32 bw;

	if (!load(&c, sk))
		return;
	/* bbr_update_model: the order matters. */
	update_bw(&c, rs);
	update_ack_aggregation(&c, rs);
	/* With lt_bw_freezes_cycle (4.13) the cycle stands still while lt_bw is in use. */
	if (c.b->mode == BBR_PROBE_BW && !(c.p->lt_bw_freezes_cycle && c.b->lt_use_bw) &&
	    is_next_cycle_phase(&c, rs))
		advance_cycle_phase(&c);
	check_full_bw_reached(&c, rs);
	check_drain(&c);
	update_min_rtt(&c, rs);
	if (c.p->gains_every_ack)
		update_gains(&c);

	bw = bbr_bw(&c);
	set_pacing_rate(&c, bw, c.b->pacing_gain);
	set_cwnd(&c, rs, rs->acked_sacked, bw, c.b->cwnd_gain);
}

/* bbr_ssthresh: entering Recovery or Loss, save cwnd; ssthresh unchanged (4.x, without
 * ssthresh_at_drain: TCP_INFINITE_SSTHRESH). */
SEC("struct_ops")
u32 BPF_PROG(ccfair_bbr_ssthresh, struct sock *sk)
{
	struct ctx c;

	if (load(&c, sk)) {
		save_cwnd(&c);
		if (!c.p->ssthresh_at_drain)
			return TCP_INFINITE_SSTHRESH;
	}
	return tcp_sk(sk)->snd_ssthresh;
}

/* bbr_undo_cwnd */
SEC("struct_ops")
u32 BPF_PROG(ccfair_bbr_undo_cwnd, struct sock *sk)
{
	struct ctx c;

	if (load(&c, sk) && c.p->undo_resets_sampling) {
		c.b->full_bw = 0;
		c.b->full_bw_cnt = 0;
		reset_lt_bw_sampling(&c);
	}
	return tcp_sk(sk)->snd_cwnd;
}

/* bbr_cwnd_event: restart from idle while app-limited. */
SEC("struct_ops")
void BPF_PROG(ccfair_bbr_cwnd_event, struct sock *sk, int event)
{
	struct ctx c;

	if (event != CA_EVENT_TX_START || !tcp_sk(sk)->app_limited || !load(&c, sk))
		return;
	c.b->idle_restart = 1;
	c.b->ack_epoch_mstamp = c.tp->tcp_mstamp;
	c.b->ack_epoch_acked = 0;
	if (c.b->mode == BBR_PROBE_BW)
		set_pacing_rate(&c, bbr_bw(&c), BBR_UNIT);
	else if (c.b->mode == BBR_PROBE_RTT && c.p->probe_rtt_restore_at_exit)
		check_probe_rtt_done(&c);
}

/* bbr_set_state: an RTO is the end of a round with a loss. */
SEC("struct_ops")
void BPF_PROG(ccfair_bbr_set_state, struct sock *sk, u8 new_state)
{
	struct ctx c;

	if (new_state != TCP_CA_Loss || !load(&c, sk))
		return;
	c.b->prev_ca_state = TCP_CA_Loss;
	c.b->full_bw = 0;
	c.b->round_start = 1;
	lt_bw_sampling(&c, 1, false);
}

/* bbr_min_tso_segs */
SEC("struct_ops")
u32 BPF_PROG(ccfair_bbr_min_tso_segs, struct sock *sk)
{
	return min_tso_segs(sk);
}

/* bbr_sndbuf_expand: 3 x cwnd, BBR may slow-start even in recovery. */
SEC("struct_ops")
u32 BPF_PROG(ccfair_bbr_sndbuf_expand, struct sock *sk)
{
	return 3;
}

/* The name is a placeholder of the full 15 characters: the loader writes the run's name
 * (crates/ccfair-emu/src/bpfcc.rs) over it before the object is opened. */
SEC(".struct_ops")
struct tcp_congestion_ops ccfair_bbr = {
	.init = (void *)ccfair_bbr_init,
	.cong_control = (void *)ccfair_bbr_main,
	.ssthresh = (void *)ccfair_bbr_ssthresh,
	.undo_cwnd = (void *)ccfair_bbr_undo_cwnd,
	.cwnd_event = (void *)ccfair_bbr_cwnd_event,
	.set_state = (void *)ccfair_bbr_set_state,
	.min_tso_segs = (void *)ccfair_bbr_min_tso_segs,
	.sndbuf_expand = (void *)ccfair_bbr_sndbuf_expand,
	.name = "ccfair_bbr_____",
};
