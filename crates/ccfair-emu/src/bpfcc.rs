//! ccfair's BPF congestion controls on the kernel backend: the simulator's BBR (with its
//! variants) and Copa, compiled from bpf/*.bpf.c and registered as struct_ops for the
//! lifetime of a run (docs/kernel.md, "BPF congestion controls").
//!
//! A run registers each program it needs once, under the name the Python backend chose
//! (`ccf<tag><algorithm>`). Each flow's sender selects it on its socket with TCP_CONGESTION
//! and writes the flow's parameters into the socket's storage before connecting
//! ([`attach`]); the program's init hook starts from them. Every sampling interval the
//! sender reads the storage back ([`read`]) for the algorithm's internals and counters,
//! under the names the simulator's algorithm reports; the shared recorder stores them in
//! the results schema's columns and units (crates/ccfair-sim/src/schema.rs), plus the
//! programs' own counters (`schema::BPF_COUNTERS`).

use std::os::fd::RawFd;
use std::sync::Arc;

use serde_json::Value;

use ccfair_cc::bbr::{BbrParams, RtpropAction, RtpropTrigger, TsoModel};
use ccfair_cc::copa::{CopaParams, ModeSignal, VelocityRule};

use crate::bpfsys::{self, StructOps};
use crate::error::{BpfError, EmuError};

/// `CCFAIR_BPF_ABI` of bpf/ccfair_cc.h.
const ABI: u32 = 2;
/// `COPA_WX_CAP` and `COPA_WX_COUNT` of bpf/ccfair_cc.h.
const COPA_WX_CAP: usize = 512;
const COPA_WX_COUNT: usize = 4;

/// An algorithm ccfair can run as a BPF congestion control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// The simulator's BBR (v1, with its version's options): bpf/ccfair_bbr.bpf.c.
    Bbr,
    /// The simulator's Copa: bpf/ccfair_copa.bpf.c.
    Copa,
}

impl Algorithm {
    /// Every algorithm with a BPF program (bpf/*.bpf.c).
    pub const ALL: [Algorithm; 2] = [Algorithm::Bbr, Algorithm::Copa];

    /// The ccfair algorithm it implements (an entry of `ccfair_cc::ALGORITHMS`).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Bbr => ccfair_cc::bbr::ALGORITHM.name,
            Algorithm::Copa => ccfair_cc::copa::ALGORITHM.name,
        }
    }

    /// The program of the ccfair algorithm `name` (`flows[].cca`), if there is one.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The program's object file, embedded at build time.
    fn object(self) -> Result<&'static [u8], BpfError> {
        #[cfg(ccfair_bpf)]
        {
            Ok(match self {
                Algorithm::Bbr => include_bytes!(concat!(env!("OUT_DIR"), "/ccfair_bbr.bpf.o")),
                Algorithm::Copa => {
                    include_bytes!(concat!(env!("OUT_DIR"), "/ccfair_copa.bpf.o"))
                }
            })
        }
        #[cfg(not(ccfair_bpf))]
        {
            Err(BpfError::NotBuilt(missing().unwrap_or("not built")))
        }
    }

    /// The name in the object that the run's name replaces: exactly 15 bytes, so that the
    /// NUL-terminated `tcp_congestion_ops.name[16]` keeps its size.
    fn placeholder(self) -> &'static [u8; 15] {
        match self {
            Algorithm::Bbr => b"ccfair_bbr_____",
            Algorithm::Copa => b"ccfair_copa____",
        }
    }

    fn maps(self) -> (&'static str, &'static str) {
        match self {
            Algorithm::Bbr => ("ccfair_bbr", "ccfair_bbr_sk"),
            Algorithm::Copa => ("ccfair_copa", "ccfair_copa_sk"),
        }
    }

    fn value_size(self) -> usize {
        match self {
            Algorithm::Bbr => std::mem::size_of::<BbrSk>(),
            Algorithm::Copa => std::mem::size_of::<CopaSk>(),
        }
    }
}

/// Why the BPF programs are not part of this build (None when they are).
pub fn missing() -> Option<&'static str> {
    option_env!("CCFAIR_BPF_MISSING")
}

/// What this machine lacks to run ccfair's BPF congestion controls, in one sentence, or
/// None: the programs in this build, libbpf, and a kernel with BTF and BPF struct_ops for
/// TCP congestion control (`bpf_struct_ops_tcp_congestion_ops` in its BTF, Linux 5.6+;
/// registration through a link needs 6.4+ and is checked when a run registers).
pub fn unavailable() -> Option<String> {
    if let Some(m) = missing() {
        return Some(format!(
            "ccfair's BPF congestion controls were not built: {m}"
        ));
    }
    if let Err(e) = bpfsys::libbpf_available() {
        return Some(e.to_string());
    }
    let btf = "/sys/kernel/btf/vmlinux";
    match std::fs::read(btf) {
        Err(e) => Some(format!(
            "this kernel exposes no BTF ({btf}: {e}); BPF congestion controls need \
             CONFIG_DEBUG_INFO_BTF"
        )),
        Ok(data) => {
            let needle = b"bpf_struct_ops_tcp_congestion_ops";
            if data.windows(needle.len()).any(|w| w == needle) {
                None
            } else {
                Some(
                    "this kernel has no BPF struct_ops for TCP congestion control \
                     (bpf_struct_ops_tcp_congestion_ops is not in its BTF)"
                        .into(),
                )
            }
        }
    }
}

/// A BPF congestion control registered under `name` until this is dropped.
pub struct Registered {
    /// The program registered.
    pub algorithm: Algorithm,
    /// The name it is registered under (what senders set with TCP_CONGESTION).
    pub name: String,
    ops: StructOps,
}

impl Registered {
    /// The socket-storage map senders write parameters into and read internals from.
    pub fn storage_fd(&self) -> RawFd {
        self.ops.storage_fd()
    }
}

/// Load `algorithm`'s program and register it as the congestion control `name` (1 to 15
/// letters, digits, '_' or '.', the kernel's rule for BPF object names).
pub fn register(algorithm: Algorithm, name: &str) -> Result<Registered, EmuError> {
    if name.is_empty()
        || name.len() > 15
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    {
        return Err(BpfError::BadName {
            name: name.to_string(),
        }
        .into());
    }
    let mut elf = algorithm.object()?.to_vec();
    let placeholder = algorithm.placeholder();
    let at: Vec<usize> = elf
        .windows(placeholder.len() + 1)
        .enumerate()
        .filter(|(_, w)| &w[..15] == placeholder && w[15] == 0)
        .map(|(i, _)| i)
        .collect();
    let [at] = at[..] else {
        return Err(BpfError::Placeholder {
            algorithm,
            copies: at.len(),
        }
        .into());
    };
    let mut bytes = [0u8; 15];
    bytes[..name.len()].copy_from_slice(name.as_bytes());
    elf[at..at + 15].copy_from_slice(&bytes);
    let (ops_map, storage_map) = algorithm.maps();
    let ops = StructOps::load(&elf, ops_map, storage_map)
        .map_err(|e| EmuError::bpf(format!("BPF congestion control {name} ({algorithm:?})"), e))?;
    let size = bpfsys::map_value_size(ops.storage_fd()).map_err(|e| BpfError::Map {
        op: "reading the socket storage's value size",
        source: Arc::new(e),
    })? as usize;
    if size != algorithm.value_size() {
        return Err(BpfError::StorageSize {
            name: name.to_string(),
            bytes: size,
            expected: algorithm.value_size(),
        }
        .into());
    }
    Ok(Registered {
        algorithm,
        name: name.to_string(),
        ops,
    })
}

// ------------------------------------------------------------------ shared layouts

/// `struct ccfair_bbr_params` (bpf/ccfair_cc.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BbrParamsC {
    abi: u32,
    edt: u32,
    tso_model_none: u32,
    lt_bw: u32,
    extra_acked_gain: u32,
    min_rtt_refresh_on_equal: u32,
    fixed_start_phase: i32,
    min_rtt_win_sec: u32,
    probe_rtt_ms: u32,
    bw_rtts: u32,
    probe_bw_cwnd_gain: u32,
    rtprop_trigger: u32,
    rtprop_action: u32,
    update_gain_a_q16: u32,
    rate_th_q16: u64,
    update_refresh_stamp: u32,
    trigger_once_per_round: u32,
    pacing_on_mtu: u32,
    min_rtt_skip_delayed_ack: u32,
    probe_bw_plus_two: u32,
    probe_rtt_cap_zero_acked: u32,
    probe_rtt_restore_at_exit: u32,
    idle_restart_needs_delivery: u32,
    ssthresh_at_drain: u32,
    gains_every_ack: u32,
    undo_resets_sampling: u32,
    lt_bw_freezes_cycle: u32,
}

/// `struct ccfair_bbr_state`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BbrStateC {
    initialized: u32,
    mode: u32,
    min_rtt_us: u32,
    min_rtt_stamp: u32,
    probe_rtt_done_stamp: u32,
    rtt_cnt: u32,
    bw_t: [u32; 3],
    bw_v: [u32; 3],
    next_rtt_delivered: u32,
    prev_ca_state: u32,
    packet_conservation: u32,
    round_start: u32,
    idle_restart: u32,
    probe_rtt_round_done: u32,
    lt_is_sampling: u32,
    lt_rtt_cnt: u32,
    lt_use_bw: u32,
    lt_bw: u32,
    lt_last_delivered: u32,
    lt_last_stamp: u32,
    lt_last_lost: u32,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: u32,
    full_bw_cnt: u32,
    cycle_idx: u32,
    has_seen_rtt: u32,
    prior_cwnd: u32,
    full_bw: u32,
    extra_acked: [u32; 2],
    ack_epoch_acked: u32,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: u32,
    has_triggered: u32,
    last_trigger_round: u32,
    restore_cwnd: u32,
    pad: u32,
    cycle_mstamp: u64,
    ack_epoch_mstamp: u64,
    probe_rtt_entries: u64,
    forced_expiries: u64,
    forced_probe_rtt_entries: u64,
    rtprop_updates: u64,
    lt_bw_engagements: u64,
}

/// `struct ccfair_bbr_sk`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BbrSk {
    params: BbrParamsC,
    state: BbrStateC,
}

/// `struct ccfair_copa_params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct CopaParamsC {
    abi: u32,
    competitive: u32,
    velocity: u32,
    mode_signal_raw: u32,
    mode_return_needs_new_empty: u32,
    velocity_rule_genericcc: u32,
    velocity_rtts: u32,
    velocity_reset_on_opposite: u32,
    probe_acks: u32,
    loss_reduce: u32,
    delta_halve_once_per_rtt: u32,
    delta_ai_needs_lossless_rtt: u32,
    rto_restart: u32,
    pad: u32,
    inv_delta_q16: u64,
    rtt_min_window_us: u64,
    rtt_min_window_rtts_q16: u64,
    srtt_gain_q16: u64,
    mode_window_rtts_q16: u64,
    mode_max_window_rtts_q16: u64,
    mode_threshold_q16: u64,
}

/// `struct ccfair_copa_state`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct CopaStateC {
    initialized: u32,
    slow_start: u32,
    mode: u32,
    has_sample: u32,
    velocity: u32,
    direction: i32,
    same_direction_rounds: u32,
    loss_in_round: u32,
    has_halved: u32,
    init_cwnd: u32,
    base_us: u64,
    own_srtt_q16: u64,
    latest_rtt_us: u64,
    first_sample_us: u64,
    rtt_min_us: u64,
    rtt_standing_us: u64,
    dq_us: u64,
    cwnd_q16: u64,
    inv_delta_q16: u64,
    acks: u64,
    next_round_delivered: u64,
    rounds: u64,
    round_start_cwnd_q16: u64,
    g_last_update_us: u64,
    g_update_dir: i64,
    g_prev_update_dir: i64,
    last_halving_us: u64,
    rol_lost: u64,
    rol_pkts: u64,
    rol_window_start_us: u64,
    last_account_us: u64,
    time_in_mode_us: [u64; 2],
    mode_switches: u64,
}

/// `struct copa_wx`: only the overflow counter is read here.
#[repr(C)]
#[derive(Clone, Copy)]
struct CopaWxC {
    head: u32,
    len: u32,
    overflows: u32,
    pad: u32,
    entries: [[u32; 3]; COPA_WX_CAP],
}

/// `struct ccfair_copa_sk`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CopaSk {
    params: CopaParamsC,
    state: CopaStateC,
    wx: [CopaWxC; COPA_WX_COUNT],
}

// `Plain` is the promise that lets bpfsys copy these layouts to and from the kernel's
// socket storage as bytes; making it is the only unsafe code of this module.
// SAFETY: each struct above is #[repr(C)], made of integers only, and has no padding
// (every field is naturally aligned and the sizes add up; `layouts_have_the_c_sizes`).
#[allow(unsafe_code)]
unsafe impl bpfsys::Plain for BbrSk {}
// SAFETY: as `BbrSk` above.
#[allow(unsafe_code)]
unsafe impl bpfsys::Plain for CopaSk {}

// ---------------------------------------------------------------- parameters

fn q16(x: f64) -> u64 {
    (x * 65536.0).round().max(0.0) as u64
}

/// The socket-storage value a flow's sender writes before connecting: the algorithm's
/// parameters (from the spec's `cca_params`, resolved as the simulator resolves them) and
/// a zero state.
pub fn initial_value(algorithm: Algorithm, cca_params: &Value) -> Result<Vec<u8>, BpfError> {
    let params = if cca_params.is_null() {
        Value::Object(Default::default())
    } else {
        cca_params.clone()
    };
    match algorithm {
        Algorithm::Bbr => bbr_initial_value(params),
        Algorithm::Copa => copa_initial_value(params),
    }
}

/// A resolved flag of `BbrParams` (`BbrParams::resolved` fills every one) as 0 or 1.
fn resolved_flag(value: Option<bool>) -> u32 {
    u32::from(BbrParams::flag(value))
}

/// `struct ccfair_bbr_sk` with the flow's BBR parameters and a zero state.
fn bbr_initial_value(params: Value) -> Result<Vec<u8>, BpfError> {
    let bad = |e: &dyn std::fmt::Display| BpfError::Params {
        algorithm: "bbr",
        message: e.to_string(),
    };
    ccfair_cc::bbr::check_renamed(&params).map_err(|e| bad(&e))?;
    let p: BbrParams = serde_json::from_value(params).map_err(|e| bad(&e))?;
    p.validate().map_err(|e| bad(&e))?;
    let p = p.resolved();
    let c = BbrParamsC {
        abi: ABI,
        edt: resolved_flag(p.inflight_at_edt),
        tso_model_none: u32::from(p.tso_model == TsoModel::None),
        lt_bw: u32::from(p.lt_bw),
        extra_acked_gain: if p.extra_acked == Some(true) { 256 } else { 0 },
        min_rtt_refresh_on_equal: resolved_flag(p.min_rtt_refresh_on_equal),
        fixed_start_phase: p.fixed_start_phase.map_or(-1, i32::from),
        min_rtt_win_sec: p.min_rtt_win_sec,
        probe_rtt_ms: p.probe_rtt_ms,
        bw_rtts: p.bw_rtts,
        probe_bw_cwnd_gain: p.cwnd_gain_fixed(),
        rtprop_trigger: match p.rtprop_trigger {
            RtpropTrigger::Off => 0,
            RtpropTrigger::RttRatio => 1,
            RtpropTrigger::RttRatioOrLoss => 2,
        },
        rtprop_action: match p.rtprop_action {
            RtpropAction::Expire => 0,
            RtpropAction::Update => 1,
        },
        update_gain_a_q16: q16(p.update_gain_a) as u32,
        rate_th_q16: q16(p.rate_th),
        update_refresh_stamp: u32::from(p.update_refresh_stamp),
        trigger_once_per_round: u32::from(p.trigger_once_per_round),
        pacing_on_mtu: resolved_flag(p.pacing_on_mtu),
        min_rtt_skip_delayed_ack: resolved_flag(p.min_rtt_skip_delayed_ack),
        probe_bw_plus_two: resolved_flag(p.probe_bw_plus_two),
        probe_rtt_cap_zero_acked: resolved_flag(p.probe_rtt_cap_zero_acked),
        probe_rtt_restore_at_exit: resolved_flag(p.probe_rtt_restore_at_exit),
        idle_restart_needs_delivery: resolved_flag(p.idle_restart_needs_delivery),
        ssthresh_at_drain: resolved_flag(p.ssthresh_at_drain),
        gains_every_ack: resolved_flag(p.gains_every_ack),
        undo_resets_sampling: resolved_flag(p.undo_resets_sampling),
        lt_bw_freezes_cycle: resolved_flag(p.lt_bw_freezes_cycle),
    };
    let v = BbrSk {
        params: c,
        state: BbrStateC::default(),
    };
    Ok(bpfsys::bytes_of(&v).to_vec())
}

/// `struct ccfair_copa_sk` with the flow's Copa parameters, a zero state and empty windows.
fn copa_initial_value(params: Value) -> Result<Vec<u8>, BpfError> {
    let bad = |e: &dyn std::fmt::Display| BpfError::Params {
        algorithm: "copa",
        message: e.to_string(),
    };
    let p: CopaParams = serde_json::from_value(params).map_err(|e| bad(&e))?;
    let r = p.resolve().map_err(|e| bad(&e))?;
    if r.ecn_response != ccfair_cc::copa::EcnResponse::None {
        return Err(BpfError::CopaEcnResponse);
    }
    let c = CopaParamsC {
        abi: ABI,
        competitive: u32::from(r.competitive),
        velocity: u32::from(r.velocity),
        mode_signal_raw: u32::from(r.mode_signal == ModeSignal::Raw),
        mode_return_needs_new_empty: u32::from(r.mode_return_needs_new_empty),
        velocity_rule_genericcc: u32::from(r.velocity_rule == VelocityRule::Genericcc),
        velocity_rtts: r.velocity_rtts,
        velocity_reset_on_opposite: u32::from(r.velocity_reset_on_opposite),
        probe_acks: r.probe_acks,
        loss_reduce: u32::from(r.loss_reduce),
        delta_halve_once_per_rtt: u32::from(r.delta_halve_once_per_rtt),
        delta_ai_needs_lossless_rtt: u32::from(r.delta_ai_needs_lossless_rtt),
        rto_restart: u32::from(r.rto_restart),
        pad: 0,
        inv_delta_q16: q16(1.0 / r.delta),
        rtt_min_window_us: (r.rtt_min_window_s * 1e6) as u64,
        rtt_min_window_rtts_q16: q16(r.rtt_min_window_rtts),
        srtt_gain_q16: q16(r.srtt_gain),
        mode_window_rtts_q16: q16(r.mode_window_rtts),
        mode_max_window_rtts_q16: q16(r.mode_max_window_rtts),
        mode_threshold_q16: q16(r.mode_threshold),
    };
    let v = CopaSk {
        params: c,
        state: CopaStateC::default(),
        wx: [CopaWxC {
            head: 0,
            len: 0,
            overflows: 0,
            pad: 0,
            entries: [[0; 3]; COPA_WX_CAP],
        }; COPA_WX_COUNT],
    };
    Ok(bpfsys::bytes_of(&v).to_vec())
}

/// Write a flow's initial value into its socket's storage (before connect()).
pub fn attach(storage_fd: RawFd, sock_fd: RawFd, value: &[u8]) -> Result<(), BpfError> {
    bpfsys::map_update(
        storage_fd,
        &sock_fd.to_ne_bytes(),
        value,
        bpfsys::BPF_NOEXIST,
    )
    .map_err(|e| BpfError::Map {
        op: "writing the BPF congestion control's parameters",
        source: Arc::new(e),
    })
}

// ------------------------------------------------------------------ internals

/// What a sample of a BPF algorithm's storage says, under the simulator's names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Internals {
    /// Time-series columns (crates/ccfair-cc: `CongestionControl::sample_metrics`).
    pub metrics: Vec<(&'static str, f64)>,
    /// The algorithm's state name (`CongestionControl::state_name`).
    pub state: &'static str,
    /// Per-flow counters (`CongestionControl::summary_counters`).
    pub counters: Vec<(&'static str, f64)>,
}

/// Read a socket's storage. `mss` converts BBR's bandwidth to bit/s (tcpi_snd_mss).
pub fn read(
    algorithm: Algorithm,
    storage_fd: RawFd,
    sock_fd: RawFd,
    mss: u32,
) -> Result<Internals, BpfError> {
    let mut buf = vec![0u8; algorithm.value_size()];
    bpfsys::map_lookup(storage_fd, &sock_fd.to_ne_bytes(), &mut buf).map_err(|e| {
        BpfError::Map {
            op: "reading the BPF congestion control's state",
            source: Arc::new(e),
        }
    })?;
    Ok(match algorithm {
        Algorithm::Bbr => bbr_internals(&bpfsys::from_bytes::<BbrSk>(&buf).state, mss),
        Algorithm::Copa => {
            let sk = bpfsys::from_bytes::<CopaSk>(&buf);
            copa_internals(&sk)
        }
    })
}

const BW_UNIT: f64 = (1u64 << 24) as f64;

fn bw_bps(bw: u32, mss: u32) -> f64 {
    bw as f64 * mss as f64 * 8.0 * 1e6 / BW_UNIT
}

fn flag(b: u32) -> f64 {
    if b != 0 {
        1.0
    } else {
        0.0
    }
}

/// crates/ccfair-cc/src/bbr/mod.rs `sample_metrics`, `state_name`, `summary_counters`.
fn bbr_internals(s: &BbrStateC, mss: u32) -> Internals {
    let bw = if s.lt_use_bw != 0 { s.lt_bw } else { s.bw_v[0] };
    let rtprop = if s.min_rtt_us == u32::MAX {
        f64::NAN
    } else {
        s.min_rtt_us as f64
    };
    Internals {
        metrics: vec![
            ("bbr_btl_bw_bps", bw_bps(bw, mss)),
            ("bbr_max_bw_bps", bw_bps(s.bw_v[0], mss)),
            ("bbr_rtprop_us", rtprop),
            ("bbr_pacing_gain", s.pacing_gain as f64 / 256.0),
            ("bbr_cwnd_gain", s.cwnd_gain as f64 / 256.0),
            ("bbr_cycle_idx", s.cycle_idx as f64),
            ("bbr_round_count", s.rtt_cnt as f64),
            ("bbr_full_bw_reached", flag(s.full_bw_reached)),
            ("bbr_lt_sampling", flag(s.lt_is_sampling)),
            ("bbr_lt_use_bw", flag(s.lt_use_bw)),
            ("bbr_lt_bw_bps", bw_bps(s.lt_bw, mss)),
            (
                "bbr_extra_acked_pkts",
                s.extra_acked[0].max(s.extra_acked[1]) as f64,
            ),
            ("bbr_packet_conservation", flag(s.packet_conservation)),
        ],
        state: match s.mode {
            0 => "STARTUP",
            1 => "DRAIN",
            2 => "PROBE_BW",
            3 => "PROBE_RTT",
            _ => "unknown",
        },
        counters: vec![
            ("bbr_probe_rtt_entry_count", s.probe_rtt_entries as f64),
            ("bbr_forced_expiry_count", s.forced_expiries as f64),
            (
                "bbr_forced_probe_rtt_entry_count",
                s.forced_probe_rtt_entries as f64,
            ),
            ("bbr_rtprop_update_count", s.rtprop_updates as f64),
            ("bbr_lt_bw_engagement_count", s.lt_bw_engagements as f64),
            ("bbr_round_count", s.rtt_cnt as f64),
        ],
    }
}

/// crates/ccfair-cc/src/copa/mod.rs `sample_metrics`, `state_name`, `summary_counters`.
fn copa_internals(sk: &CopaSk) -> Internals {
    let s = &sk.state;
    let known = s.has_sample != 0;
    let us = |v: u64| if known { v as f64 } else { f64::NAN };
    let delta = if s.inv_delta_q16 > 0 {
        65536.0 / s.inv_delta_q16 as f64
    } else {
        f64::NAN
    };
    let target = if known && s.dq_us > 0 {
        1e6 / (delta * s.dq_us as f64)
    } else {
        f64::NAN
    };
    let overflows: u32 = sk.wx.iter().map(|w| w.overflows).sum();
    Internals {
        metrics: vec![
            ("copa_mode_competitive", flag(s.mode)),
            ("copa_delta", delta),
            ("copa_velocity", s.velocity as f64),
            ("copa_dq_us", us(s.dq_us)),
            ("copa_rtt_standing_us", us(s.rtt_standing_us)),
            ("copa_rtt_min_us", us(s.rtt_min_us)),
            ("copa_target_rate_pps", target),
        ],
        state: if s.slow_start != 0 {
            "slow_start"
        } else if s.mode != 0 {
            "competitive"
        } else {
            "default"
        },
        counters: vec![
            ("copa_time_default_s", s.time_in_mode_us[0] as f64 * 1e-6),
            (
                "copa_time_competitive_s",
                s.time_in_mode_us[1] as f64 * 1e-6,
            ),
            ("copa_mode_switch_count", s.mode_switches as f64),
            ("bpf_copa_filter_overflow_count", overflows as f64),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccfair_cc::TcpSock;
    use ccfair_sim::record::{self, FlowRecorder, FlowSample, FlowSummary};
    use ccfair_sim::schema;
    use serde_json::json;

    #[test]
    fn layouts_have_the_c_sizes() {
        // Sizes of bpf/ccfair_cc.h's structs (all fields naturally aligned, no padding).
        assert_eq!(std::mem::size_of::<BbrParamsC>(), 14 * 4 + 8 + 12 * 4);
        assert_eq!(std::mem::size_of::<BbrSk>(), 112 + 224);
        assert_eq!(std::mem::size_of::<BbrStateC>(), 42 * 4 + 7 * 8);
        assert_eq!(std::mem::size_of::<CopaParamsC>(), 14 * 4 + 7 * 8);
        assert_eq!(std::mem::size_of::<CopaStateC>(), 10 * 4 + 24 * 8);
        assert_eq!(std::mem::size_of::<CopaWxC>(), 16 + COPA_WX_CAP * 12);
        assert_eq!(std::mem::size_of::<CopaSk>(), 112 + 232 + 4 * 6160);
    }

    fn names_of(name: &str, params: Value) -> (Vec<&'static str>, Vec<&'static str>) {
        let cc = ccfair_cc::build(name, &params, 1).unwrap();
        let tp = TcpSock::new(1448, 10, 250);
        let mut m = Vec::new();
        cc.sample_metrics(&tp, &mut m);
        let mut c = Vec::new();
        cc.summary_counters(&tp, &mut c);
        (
            m.into_iter().map(|(n, _)| n).collect(),
            c.into_iter().map(|(n, _)| n).collect(),
        )
    }

    fn bpf_internals(alg: Algorithm, value: &[u8]) -> Internals {
        match alg {
            Algorithm::Bbr => bbr_internals(&bpfsys::from_bytes::<BbrSk>(value).state, 1448),
            Algorithm::Copa => copa_internals(&bpfsys::from_bytes::<CopaSk>(value)),
        }
    }

    #[test]
    fn internals_use_the_simulators_names_and_the_schemas_columns() {
        let columns = |table: &str| -> Vec<String> {
            schema::columns(table).into_iter().map(|c| c.name).collect()
        };
        let (timeseries, flows) = (columns("timeseries"), columns("flows"));
        let bpf_only: Vec<&str> = schema::BPF_COUNTERS.iter().map(|&(n, _)| n).collect();
        for (alg, name) in [(Algorithm::Bbr, "bbr"), (Algorithm::Copa, "copa")] {
            let (metrics, counters) = names_of(name, json!({}));
            let got = bpf_internals(alg, &initial_value(alg, &json!({})).unwrap());
            // The simulator's time-series internals, in its order; each a column of the
            // schema once the recorder converts its unit.
            let got_metrics: Vec<_> = got.metrics.iter().map(|(n, _)| *n).collect();
            assert_eq!(got_metrics, metrics, "{name}");
            for m in got_metrics {
                let (column, _) = schema::table_unit(m);
                assert!(
                    timeseries.contains(&column),
                    "{name}: {column} not in the schema"
                );
            }
            // Every simulator counter is there; the program's own are the schema's
            // BPF_COUNTERS; all are columns of the flows table.
            let got_counters: Vec<_> = got.counters.iter().map(|(n, _)| *n).collect();
            for c in &counters {
                assert!(got_counters.contains(c), "{name}: counter {c} missing");
            }
            for c in got_counters {
                assert!(
                    counters.contains(&c) || (bpf_only.contains(&c) && c.contains(name)),
                    "{name}: counter {c} is neither the simulator's nor a BPF_COUNTERS entry"
                );
                assert!(
                    flows.contains(&c.to_string()),
                    "{name}: {c} not in the schema"
                );
            }
        }
    }

    #[test]
    fn internals_land_in_the_recorders_columns_in_table_units() {
        // A BBR state as the program leaves it: bw 1 packet per 100 us in BW_UNITs, min RTT
        // 40 ms, 3 PROBE_RTT entries.
        let mut v = initial_value(Algorithm::Bbr, &json!({})).unwrap();
        let mut sk = bpfsys::from_bytes::<BbrSk>(&v);
        sk.state.bw_v[0] = (BW_UNIT / 100.0) as u32;
        sk.state.min_rtt_us = 40_000;
        sk.state.mode = 2;
        sk.state.probe_rtt_entries = 3;
        v = bpfsys::bytes_of(&sk).to_vec();
        let got = bpf_internals(Algorithm::Bbr, &v);
        assert_eq!(got.state, "PROBE_BW");
        let row = FlowSample {
            t_ns: 10_000_000,
            t_s: 0.01,
            flow: 0,
            cwnd_pkts: 10.0,
            ssthresh_pkts: f64::INFINITY,
            inflight_pkts: 0.0,
            srtt_ms: 40.0,
            min_rtt_ms: 40.0,
            rto_ms: 240.0,
            pacing_rate_mbps: f64::NAN,
            delivery_rate_mbps: 0.0,
            goodput_mbps: 0.0,
            retrans_pkts: 0,
            tcp_ca_state: "Open",
            cca_state: got.state,
        };
        let mut rec = FlowRecorder::new();
        rec.push(&row, &got.metrics);
        let ts = rec.into_table();
        // 1448 B per 100 us = 115.84 Mbit/s; 40 ms.
        let btl_bw = ts.f64("bbr_btl_bw_mbps").unwrap()[0];
        assert!((btl_bw - 115.84).abs() < 1e-3, "{btl_bw}");
        assert_eq!(ts.f64("bbr_rtprop_ms").unwrap(), &[40.0]);
        assert!(ts.f64("copa_delta").unwrap()[0].is_nan());

        let copa = bpf_internals(
            Algorithm::Copa,
            &initial_value(Algorithm::Copa, &json!({})).unwrap(),
        );
        let summary = |flow| FlowSummary {
            flow,
            ..FlowSummary::default()
        };
        let flows = record::flows_table(
            &[summary(0), summary(1), summary(2)],
            None,
            &[got.counters, copa.counters, Vec::new()],
        );
        let col = |name: &str| flows.f64(name).unwrap().to_vec();
        let is = |v: Vec<f64>, want: [f64; 3]| {
            v.iter()
                .zip(want)
                .all(|(a, b)| a == &b || (a.is_nan() && b.is_nan()))
        };
        let nan = f64::NAN;
        assert!(is(col("bbr_probe_rtt_entry_count"), [3.0, nan, nan]));
        assert!(is(col("copa_mode_switch_count"), [nan, 0.0, nan]));
        assert!(is(col("bpf_copa_filter_overflow_count"), [nan, 0.0, nan]));
        let names: Vec<&str> = flows.columns.iter().map(|(n, _)| n.as_str()).collect();
        let engine: Vec<String> = schema::columns("flows")
            .into_iter()
            .filter(|c| c.by == schema::By::Engine)
            .map(|c| c.name)
            .collect();
        assert_eq!(names, engine);
    }

    #[test]
    fn bbr_parameters_are_resolved_as_the_simulator_resolves_them() {
        let v = initial_value(
            Algorithm::Bbr,
            &json!({"version": "linux-4.13", "rtprop_trigger": "rtt_ratio", "rate_th": 1.5,
                    "rtprop_action": "update", "update_gain_a": 0.5, "cwnd_gain": 1.5,
                    "fixed_start_phase": 3}),
        )
        .unwrap();
        let p = bpfsys::from_bytes::<BbrSk>(&v).params;
        assert_eq!(p.abi, ABI);
        assert_eq!(
            (p.edt, p.extra_acked_gain, p.min_rtt_refresh_on_equal),
            (0, 0, 1)
        );
        // Every 4.13 flag, in the order of bpf/ccfair_cc.h.
        assert_eq!(
            [
                p.pacing_on_mtu,
                p.min_rtt_skip_delayed_ack,
                p.probe_bw_plus_two,
                p.probe_rtt_cap_zero_acked,
                p.probe_rtt_restore_at_exit,
                p.idle_restart_needs_delivery,
                p.ssthresh_at_drain,
                p.gains_every_ack,
                p.undo_resets_sampling,
                p.lt_bw_freezes_cycle
            ],
            [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        );
        let renamed = initial_value(Algorithm::Bbr, &json!({"profile": "linux-4.9"}));
        assert!(renamed.unwrap_err().to_string().contains("version"));
        assert_eq!((p.rtprop_trigger, p.rtprop_action), (1, 1));
        assert_eq!(p.rate_th_q16, 3 << 15);
        assert_eq!(p.update_gain_a_q16, 1 << 15);
        assert_eq!(p.probe_bw_cwnd_gain, 384);
        assert_eq!(p.fixed_start_phase, 3);
        let stock =
            bpfsys::from_bytes::<BbrSk>(&initial_value(Algorithm::Bbr, &Value::Null).unwrap())
                .params;
        assert_eq!(
            (stock.edt, stock.extra_acked_gain, stock.fixed_start_phase),
            (1, 256, -1)
        );
        assert_eq!(
            (stock.min_rtt_win_sec, stock.probe_rtt_ms, stock.bw_rtts),
            (10, 200, 10)
        );
        let e = initial_value(Algorithm::Bbr, &json!({"bw_rtts": 0}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("bw_rtts"), "{e}");
    }

    #[test]
    fn copa_parameters_follow_the_variant() {
        let v = initial_value(Algorithm::Copa, &json!({"variant": "genericcc"})).unwrap();
        let p = bpfsys::from_bytes::<CopaSk>(&v).params;
        assert_eq!(p.inv_delta_q16, 2 << 16);
        assert_eq!(
            (p.mode_signal_raw, p.velocity_rule_genericcc, p.probe_acks),
            (1, 1, 19)
        );
        assert_eq!(p.srtt_gain_q16, 4096);
        assert_eq!(p.mode_window_rtts_q16, 4 << 16);
        assert_eq!(p.rtt_min_window_rtts_q16, 20 << 16);
        let paper =
            bpfsys::from_bytes::<CopaSk>(&initial_value(Algorithm::Copa, &Value::Null).unwrap())
                .params;
        assert_eq!(
            (
                paper.mode_signal_raw,
                paper.srtt_gain_q16,
                paper.rto_restart
            ),
            (0, 0, 1)
        );
        assert_eq!(paper.rtt_min_window_us, 10_000_000);
    }
}
