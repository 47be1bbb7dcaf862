/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The few kernel types ccfair's BPF congestion controls touch, declared by hand instead of a
 * generated vmlinux.h. Every struct carries preserve_access_index: libbpf relocates each
 * field access against the running kernel's BTF (/sys/kernel/btf/vmlinux) at load time, so
 * only the names and types below must match the kernel, not the layout. The field types are
 * those of Linux 6.x (include/linux/tcp.h, include/net/sock.h,
 * include/net/inet_connection_sock.h, include/net/tcp.h).
 */
#ifndef CCFAIR_KERNEL_TYPES_H
#define CCFAIR_KERNEL_TYPES_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef _Bool bool;
#define true 1
#define false 0
#define NULL ((void *)0)

/* enum bpf_map_type and map flags (include/uapi/linux/bpf.h). */
#define BPF_MAP_TYPE_SK_STORAGE 24
#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_LOCAL_STORAGE_GET_F_CREATE (1ULL << 0)

/* enum sk_pacing (include/net/sock.h). */
#define SK_PACING_NONE 0
#define SK_PACING_NEEDED 1

/* enum tcp_ca_state (include/uapi/linux/tcp.h). */
#define TCP_CA_Open 0
#define TCP_CA_Disorder 1
#define TCP_CA_CWR 2
#define TCP_CA_Recovery 3
#define TCP_CA_Loss 4

/* enum tcp_ca_event (include/net/tcp.h). */
#define CA_EVENT_TX_START 0

#define TCP_INFINITE_SSTHRESH 0x7fffffffU
#define TCP_INIT_CWND 10U
#define USEC_PER_SEC 1000000ULL
#define USEC_PER_MSEC 1000ULL
#define NSEC_PER_USEC 1000ULL

struct sock_common {
	unsigned char skc_state;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
	u32 sk_pacing_status;
	unsigned long sk_pacing_rate;
	unsigned long sk_max_pacing_rate;
	u8 sk_pacing_shift;
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u8 icsk_ca_state : 5;
} __attribute__((preserve_access_index));

struct minmax_sample {
	u32 t;
	u32 v;
};

struct minmax {
	struct minmax_sample s[3];
};

struct tcp_sock {
	u16 tcp_header_len;
	u32 mss_cache;
	u32 snd_cwnd;
	u32 snd_cwnd_clamp;
	u32 snd_ssthresh;
	u32 packets_out;
	u32 sacked_out;
	u32 lost_out;
	u32 retrans_out;
	u32 delivered;
	u32 lost;
	u32 app_limited;
	u32 srtt_us;
	struct minmax rtt_min;
	u64 delivered_mstamp;
	u64 tcp_mstamp;
	u64 tcp_wstamp_ns;
	u64 tcp_clock_cache;
} __attribute__((preserve_access_index));

struct rate_sample {
	u64 prior_mstamp;
	u32 prior_delivered;
	s32 delivered;
	long interval_us;
	long rtt_us;
	int losses;
	u32 acked_sacked;
	u32 prior_in_flight;
	bool is_app_limited;
	bool is_retrans;
	bool is_ack_delayed;
} __attribute__((preserve_access_index));

struct ack_sample;
union tcp_cc_info;
struct module;
struct list_head {
	struct list_head *next, *prev;
};

/* The hooks a module may set (include/net/tcp.h). libbpf matches members by name against
 * the kernel's struct; hooks left NULL keep the kernel's behaviour. */
struct tcp_congestion_ops {
	u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, u32 ack, u32 acked);
	void (*set_state)(struct sock *sk, u8 new_state);
	void (*cwnd_event)(struct sock *sk, int ev);
	void (*in_ack_event)(struct sock *sk, u32 flags);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	u32 (*min_tso_segs)(struct sock *sk);
	void (*cong_control)(struct sock *sk, u32 ack, int flag, const struct rate_sample *rs);
	u32 (*undo_cwnd)(struct sock *sk);
	u32 (*sndbuf_expand)(struct sock *sk);
	char name[16];
	u32 key;
	u32 flags;
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

static inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

#endif
