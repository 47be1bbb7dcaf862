/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * What ccfair's BPF congestion controls share with user space: the per-socket storage
 * value of each algorithm. The sender (crates/ccfair-emu/src/bpfcc.rs, which mirrors these
 * structs with #[repr(C)]) writes `params` into the socket's storage before connect(); the
 * algorithm's init hook starts from them; the sender reads the whole value back every
 * sampling interval for the algorithm's internals. Only fixed-width fields, every one
 * naturally aligned, so that C and Rust agree on the layout without padding rules.
 *
 * Real numbers of the simulator's parameter tables travel as fixed point: _q16 fields are
 * value x 2^16, rounded to the nearest integer (BPF has no floating point).
 */
#ifndef CCFAIR_CC_H
#define CCFAIR_CC_H

/* Bumped whenever a struct below changes; user space checks it against its own. */
#define CCFAIR_BPF_ABI 2

/* ----------------------------------------------------------------------------- BBR */

/* crates/ccfair-cc/src/bbr/params.rs, resolved against the version (linux-6.18, 4.15, 4.13). */
struct ccfair_bbr_params {
	__u32 abi;
	__u32 edt;                      /* inflight_at_edt: bbr_packets_in_net_at_edt */
	__u32 tso_model_none;           /* tso_model "none": one segment */
	__u32 lt_bw;                    /* long-term (policer) bandwidth sampling */
	__u32 extra_acked_gain;         /* 256 with extra_acked, else 0 */
	__u32 min_rtt_refresh_on_equal; /* rtt <= min_rtt refreshes the stamp (pre-5.10) */
	__s32 fixed_start_phase;        /* 0..7, or -1 for Linux's random phase */
	__u32 min_rtt_win_sec;
	__u32 probe_rtt_ms;
	__u32 bw_rtts;
	__u32 probe_bw_cwnd_gain;       /* cwnd_gain in 1/256 */
	__u32 rtprop_trigger;           /* 0 off, 1 rtt_ratio, 2 rtt_ratio_or_loss */
	__u32 rtprop_action;            /* 0 expire, 1 update */
	__u32 update_gain_a_q16;        /* 0..65536 */
	__u64 rate_th_q16;
	__u32 update_refresh_stamp;
	__u32 trigger_once_per_round;
	/* The version-dependent flags (each 1 in linux-6.18, see params.rs). */
	__u32 pacing_on_mtu;            /* 4.x: bw x MTU x gain, no 1% margin */
	__u32 min_rtt_skip_delayed_ack;
	__u32 probe_bw_plus_two;
	__u32 probe_rtt_cap_zero_acked;
	__u32 probe_rtt_restore_at_exit;
	__u32 idle_restart_needs_delivery;
	__u32 ssthresh_at_drain;
	__u32 gains_every_ack;
	__u32 undo_resets_sampling;
	__u32 lt_bw_freezes_cycle;
};

/* The fields of Linux `struct bbr` (net/ipv4/tcp_bbr.c), one u32 each instead of bit
 * fields, plus the RTprop modification's state and the counters of the flow summary. */
struct ccfair_bbr_state {
	__u32 initialized;
	__u32 mode;                     /* 0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT */
	__u32 min_rtt_us;
	__u32 min_rtt_stamp;            /* jiffies (u32, as tcp_jiffies32) */
	__u32 probe_rtt_done_stamp;
	__u32 rtt_cnt;
	__u32 bw_t[3];                  /* struct minmax, times in rounds */
	__u32 bw_v[3];                  /* pkts/us << 24 */
	__u32 next_rtt_delivered;
	__u32 prev_ca_state;
	__u32 packet_conservation;
	__u32 round_start;
	__u32 idle_restart;
	__u32 probe_rtt_round_done;
	__u32 lt_is_sampling;
	__u32 lt_rtt_cnt;
	__u32 lt_use_bw;
	__u32 lt_bw;
	__u32 lt_last_delivered;
	__u32 lt_last_stamp;
	__u32 lt_last_lost;
	__u32 pacing_gain;
	__u32 cwnd_gain;
	__u32 full_bw_reached;
	__u32 full_bw_cnt;
	__u32 cycle_idx;
	__u32 has_seen_rtt;
	__u32 prior_cwnd;
	__u32 full_bw;
	__u32 extra_acked[2];
	__u32 ack_epoch_acked;
	__u32 extra_acked_win_rtts;
	__u32 extra_acked_win_idx;
	__u32 has_triggered;            /* the RTprop modification fired at least once */
	__u32 last_trigger_round;
	__u32 restore_cwnd;             /* 4.x: restore prior_cwnd on the next ACK of data */
	__u32 pad;
	__u64 cycle_mstamp;             /* us */
	__u64 ack_epoch_mstamp;         /* us */
	__u64 probe_rtt_entries;
	__u64 forced_expiries;
	__u64 forced_probe_rtt_entries;
	__u64 rtprop_updates;
	__u64 lt_bw_engagements;
};

struct ccfair_bbr_sk {
	struct ccfair_bbr_params params;
	struct ccfair_bbr_state state;
};

/* ----------------------------------------------------------------------------- Copa */

/* crates/ccfair-cc/src/copa/params.rs `Resolved`. */
struct ccfair_copa_params {
	__u32 abi;
	__u32 competitive;
	__u32 velocity;
	__u32 mode_signal_raw;              /* 0 standing (paper), 1 raw (genericCC) */
	__u32 mode_return_needs_new_empty;
	__u32 velocity_rule_genericcc;
	__u32 velocity_rtts;
	__u32 velocity_reset_on_opposite;
	__u32 probe_acks;
	__u32 loss_reduce;
	__u32 delta_halve_once_per_rtt;
	__u32 delta_ai_needs_lossless_rtt;
	__u32 rto_restart;
	__u32 pad;
	__u64 inv_delta_q16;                /* 1 / delta */
	__u64 rtt_min_window_us;            /* rtt_min_window_s */
	__u64 rtt_min_window_rtts_q16;
	__u64 srtt_gain_q16;                /* 0: the TCP srtt */
	__u64 mode_window_rtts_q16;
	__u64 mode_max_window_rtts_q16;
	__u64 mode_threshold_q16;
};

/* Windowed minimum / maximum (crates/ccfair-cc/src/copa/window.rs): a monotonic deque in a
 * ring of COPA_WX_CAP entries. Times are us since the connection's start. */
#define COPA_WX_BUCKETS 256
/* A power of two, so that ring indices are masked (what the verifier can follow). Two
 * windows of horizon hold at most 2 x BUCKETS + 1 entries; more arrive only when the
 * window shrank a lot, and then fold (see wx_push). */
#define COPA_WX_CAP 512

struct copa_wx_entry {
	__u32 t_first;
	__u32 t_last;
	__u32 v;
};

struct copa_wx {
	__u32 head;
	__u32 len;
	__u32 overflows;                    /* pushes folded because the ring was full */
	__u32 pad;
	struct copa_wx_entry e[COPA_WX_CAP];
};

#define COPA_WX_RTT_MIN 0
#define COPA_WX_STANDING 1
#define COPA_WX_MODE_MIN 2
#define COPA_WX_MODE_MAX 3
#define COPA_WX_COUNT 4

struct ccfair_copa_state {
	__u32 initialized;
	__u32 slow_start;
	__u32 mode;                         /* 0 default, 1 competitive */
	__u32 has_sample;
	__u32 velocity;
	__s32 direction;
	__u32 same_direction_rounds;
	__u32 loss_in_round;
	__u32 has_halved;
	__u32 init_cwnd;
	__u64 base_us;                      /* filter times are relative to this */
	__u64 own_srtt_q16;                 /* us x 2^16 */
	__u64 latest_rtt_us;
	__u64 first_sample_us;
	__u64 rtt_min_us;
	__u64 rtt_standing_us;
	__u64 dq_us;
	__u64 cwnd_q16;                     /* packets x 2^16 */
	__u64 inv_delta_q16;
	__u64 acks;
	__u64 next_round_delivered;
	__u64 rounds;
	__u64 round_start_cwnd_q16;
	__u64 g_last_update_us;
	__s64 g_update_dir;
	__s64 g_prev_update_dir;
	__u64 last_halving_us;
	__u64 rol_lost;
	__u64 rol_pkts;
	__u64 rol_window_start_us;
	__u64 last_account_us;
	__u64 time_in_mode_us[2];
	__u64 mode_switches;
};

struct ccfair_copa_sk {
	struct ccfair_copa_params params;
	struct ccfair_copa_state state;
	struct copa_wx wx[COPA_WX_COUNT];
};

#endif
