//! DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257) as Linux implements it
//! (net/ipv4/tcp_dctcp.c, net/ipv4/tcp_dctcp.h), over Linux's Reno.
//!
//! - `alpha`, the fraction of packets marked CE, in 1/1024, starts at `alpha_on_init`
//!   (1024) and is updated once per window of data (`dctcp_update_alpha`, from
//!   `in_ack_event`): `alpha = (1 - g) alpha + g F`, with g = 1/2^`shift_g` (1/16) and F
//!   the packets (S)ACKed by ACKs with ECE over all packets (S)ACKed in the window
//!   (`tp->delivered_ce`, `tp->delivered`).
//! - An ECE makes the core reduce once per window (`tcp_enter_cwr`) to
//!   `ssthresh = cwnd - cwnd alpha / 2` (`dctcp_ssthresh`), at least 2.
//! - A loss halves it as Reno would (`dctcp_react_to_loss`: entering Recovery, through
//!   `set_state`, and on an RTO, through `CA_EVENT_LOSS`).
//! - Growth is Reno's (`tcp_reno_cong_avoid`); undo restores the window before the last
//!   reduction (`dctcp_cwnd_undo`).
//! - DCTCP needs ECN (`TCP_CONG_NEEDS_ECN`): it asks for it on every connection, its
//!   packets are all ECN-capable, and its receiver echoes the mark of each segment
//!   (`dctcp_ece_ack_update`; the simulator's receiver does this for algorithms that need
//!   ECN, running the flow's algorithm at both ends). Without ECN negotiated (a peer that
//!   refuses it, or a retransmitted SYN) it runs as Linux's `dctcp-reno`: plain Reno
//!   (`dctcp_init`).

use crate::params::ParamError;
use crate::registry::{self, Algorithm, Family};
use crate::{CaEvent, CaState, CongestionControl, TcpSock};

/// `DCTCP_MAX_ALPHA`: alpha = 1 in its fixed point.
pub const MAX_ALPHA: u32 = 1024;

crate::param_table! {
    /// Module parameters of `tcp_dctcp.c` (`/sys/module/tcp_dctcp/parameters/*`), defaults as
    /// in Linux.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct DctcpParams {
        /// `dctcp_shift_g`: alpha's gain g = 1 / 2^shift_g, the weight of the last window's
        /// marked fraction in alpha (4: g = 1/16). Range 0..=10.
        pub shift_g: u32 = 4, unit "";
        /// `dctcp_alpha_on_init`: alpha at the start, in 1/1024 (1024: the first reduction
        /// halves the window, as Reno's). Range 0..=1024.
        pub alpha_on_init: u32 = MAX_ALPHA, unit "1/1024";
    }
}

/// DCTCP's entry in the registry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "dctcp",
    summary: "DCTCP as Linux implements it (net/ipv4/tcp_dctcp.c): Reno that cuts its window \
              by alpha/2 once per window of ECN marks, alpha the marked fraction averaged \
              with gain 1/16; needs ECN at both ends, Reno without it",
    family: Family::LossBased,
    linux_name: Some("dctcp"),
    params: <DctcpParams as crate::params::ParamTable>::params,
    normalize: |v| registry::to_table(&parse_checked(v)?),
    build: |v, _seed| Ok(Box::new(Dctcp::new(&parse_checked(v)?))),
};

fn parse_checked(params: &serde_json::Value) -> Result<DctcpParams, ParamError> {
    let p: DctcpParams = registry::parse(params)?;
    // dctcp_shift_g_set: param_set_uint_minmax(val, kp, 0, 10).
    if p.shift_g > 10 {
        return Err(ParamError::new(
            "shift_g",
            format!("must be in 0..=10 (g = 1/2^shift_g), got {}", p.shift_g),
        ));
    }
    // Linux takes min(dctcp_alpha_on_init, DCTCP_MAX_ALPHA); a larger value is a mistake.
    if p.alpha_on_init > MAX_ALPHA {
        return Err(ParamError::new(
            "alpha_on_init",
            format!(
                "must be in 0..=1024 (1/1024 units: 1024 is alpha = 1), got {}",
                p.alpha_on_init
            ),
        ));
    }
    Ok(p)
}

/// `struct dctcp`, the sender's part (the receiver's is the simulator's).
#[derive(Clone, Debug)]
pub struct Dctcp {
    p: DctcpParams,
    /// ECN was not negotiated: Linux's `dctcp_reno` (plain Reno).
    reno: bool,
    /// `dctcp_alpha`, in 1/1024.
    alpha: u32,
    /// `next_seq`: the window of the alpha update ends when `snd_una` reaches it.
    next_seq: u64,
    /// `old_delivered`, `old_delivered_ce`: the counters at the window's start.
    old_delivered: u64,
    old_delivered_ce: u64,
    /// `loss_cwnd`: cwnd before the last reduction (for undo).
    loss_cwnd: u32,
    /// Windows over which alpha was updated.
    alpha_updates: u64,
}

impl Dctcp {
    /// DCTCP with `p`'s parameters and alpha at `alpha_on_init` (as `dctcp_init` leaves it);
    /// `init` starts it afresh when the connection starts.
    pub fn new(p: &DctcpParams) -> Self {
        Dctcp {
            p: p.clone(),
            reno: false,
            alpha: p.alpha_on_init.min(MAX_ALPHA),
            next_seq: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            loss_cwnd: 0,
            alpha_updates: 0,
        }
    }

    /// `dctcp_alpha` in 1/1024.
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// Whether DCTCP runs as Reno because ECN was not negotiated.
    pub fn is_reno(&self) -> bool {
        self.reno
    }

    /// `dctcp_reset`: a new window for the alpha update.
    fn reset(&mut self, tp: &TcpSock) {
        self.next_seq = tp.snd_nxt;
        self.old_delivered = tp.delivered;
        self.old_delivered_ce = tp.delivered_ce;
    }

    /// `dctcp_react_to_loss`: Reno's halving.
    fn react_to_loss(&mut self, tp: &mut TcpSock) {
        self.loss_cwnd = tp.snd_cwnd;
        tp.snd_ssthresh = (tp.snd_cwnd >> 1).max(2);
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    /// `dctcp_init`: with ECN, alpha from `alpha_on_init` and a first window; without,
    /// `dctcp_reno`.
    fn init(&mut self, tp: &mut TcpSock) {
        *self = Dctcp::new(&self.p);
        if !tp.ecn_ok {
            self.reno = true;
            return;
        }
        self.reset(tp);
    }

    /// `dctcp_ssthresh`: cwnd - cwnd alpha / 2 (`tcp_reno_ssthresh` as `dctcp_reno`).
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        if self.reno {
            return (tp.snd_cwnd >> 1).max(2);
        }
        self.loss_cwnd = tp.snd_cwnd;
        let cut = (tp.snd_cwnd as u64 * self.alpha as u64) >> 11;
        (tp.snd_cwnd - cut as u32).max(2)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut TcpSock, _ack: u64, mut acked: u32) {
        if !tp.is_cwnd_limited() {
            return;
        }
        if tp.in_slow_start() {
            acked = tp.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let w = tp.snd_cwnd;
        tp.cong_avoid_ai(w, acked);
    }

    /// Neither `dctcp` nor `dctcp_reno` has `pkts_acked`.
    fn has_pkts_acked(&self) -> bool {
        false
    }

    /// `dctcp_update_alpha`: once `snd_una` passes the window's end, alpha moves by g
    /// towards the window's marked fraction (`dctcp_reno` has no `in_ack_event`).
    fn in_ack_event(&mut self, tp: &mut TcpSock, _flags: u32) {
        if self.reno || tp.snd_una < self.next_seq {
            return;
        }
        let shift_g = self.p.shift_g;
        let mut alpha = self.alpha;
        // alpha -= min_not_zero(alpha, alpha >> g): an alpha below 2^g drops to 0.
        let decay = match (alpha, alpha >> shift_g) {
            (a, 0) => a,
            (_, d) => d.min(alpha),
        };
        alpha -= decay;
        let delivered_ce = tp.delivered_ce - self.old_delivered_ce;
        if delivered_ce > 0 {
            let delivered = tp.delivered - self.old_delivered;
            // In 64 bits: Linux's u32 would overflow past 2^22 marked packets a window.
            let f = (delivered_ce << (10 - shift_g)) / delivered.max(1);
            alpha = (alpha as u64 + f).min(MAX_ALPHA as u64) as u32;
        }
        self.alpha = alpha;
        self.alpha_updates += 1;
        self.reset(tp);
    }

    fn has_in_ack_event(&self) -> bool {
        true
    }

    /// `dctcp_state`: entering Recovery is a loss (once; the RTO's is `cwnd_event`).
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if !self.reno && new_state == CaState::Recovery && new_state != tp.ca_state {
            self.react_to_loss(tp);
        }
    }

    /// `dctcp_cwnd_event`: an RTO is a loss (the receiver's CE events are the simulator's
    /// receiver's, `needs_ecn`).
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        if !self.reno && event == CaEvent::Loss {
            self.react_to_loss(tp);
        }
    }

    /// `dctcp_cwnd_undo` (`tcp_reno_undo_cwnd` as `dctcp_reno`).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        if self.reno {
            return tp.snd_cwnd.max(tp.prior_cwnd);
        }
        tp.snd_cwnd.max(self.loss_cwnd)
    }

    /// `TCP_CONG_NEEDS_ECN`.
    fn needs_ecn(&self) -> bool {
        true
    }

    /// alpha as a fraction (NaN when running as Reno).
    fn sample_metrics(&self, _tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        let alpha = if self.reno {
            f64::NAN
        } else {
            self.alpha as f64 / MAX_ALPHA as f64
        };
        out.push(("dctcp_alpha_frac", alpha));
    }

    /// Whether DCTCP ran as Reno (1: ECN was not negotiated), and the alpha updates.
    fn summary_counters(&self, _tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        out.push(("dctcp_reno_fallback", if self.reno { 1.0 } else { 0.0 }));
        out.push(("dctcp_alpha_update_count", self.alpha_updates as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Ack, TestSender};

    fn sender(ecn_ok: bool, p: DctcpParams) -> TestSender<Dctcp> {
        let mut tp = TcpSock::new(1448, 10, 1000);
        tp.ecn_ok = ecn_ok;
        TestSender::new(Dctcp::new(&p), tp)
    }

    /// A window of `w` packets kept in flight (one new packet per ACK, whatever cwnd says)
    /// for `windows` windows, every `every`-th ACK carrying ECE (0: none): a marked
    /// fraction F = 1/every. Returns alpha after each window's update.
    fn run(s: &mut TestSender<Dctcp>, w: u64, windows: u64, every: u64) -> Vec<u32> {
        let mut alphas = Vec::new();
        s.send(w);
        let mut updates = s.cc.alpha_updates;
        for i in 0..w * windows {
            s.advance(1_000_000);
            let mut a = Ack::to(s.tp.snd_una + 1);
            if every > 0 && i % every == 0 {
                a = a.ece();
            }
            s.ack(&a);
            s.send(1);
            if s.cc.alpha_updates > updates {
                updates = s.cc.alpha_updates;
                alphas.push(s.cc.alpha);
            }
        }
        alphas
    }

    /// alpha converges to the marked fraction F as alpha_n = F + (1 - g)^n (alpha_0 - F),
    /// within the fixed point's rounding (alpha >> 4 truncates: at most 16/1024 below F's
    /// fixed point for g = 1/16).
    #[test]
    fn alpha_converges_to_the_marked_fraction() {
        for every in [1u64, 2, 4, 8] {
            let f = 1.0 / every as f64;
            let mut s = sender(true, DctcpParams::default());
            let alphas = run(&mut s, 32, 120, every);
            assert!(alphas.len() >= 119, "{}", alphas.len());
            // The first update comes at the first ACK (the window started at init), then
            // one per window of 32.
            for (n, &a) in alphas.iter().enumerate().skip(1) {
                let closed = f + (1.0f64 - 1.0 / 16.0).powi(n as i32) * (1.0 - f);
                let got = a as f64 / 1024.0;
                assert!(
                    (got - closed).abs() <= 0.02 + 0.01 * n.min(20) as f64 / 20.0,
                    "F = {f}: window {n}: alpha {got}, closed form {closed}"
                );
            }
            let last = *alphas.last().unwrap() as f64 / 1024.0;
            assert!((last - f).abs() <= 16.0 / 1024.0, "F = {f}: {last}");
        }
        // No marks: alpha decays to 0 (an alpha below 16 drops to 0 at once).
        let mut s = sender(true, DctcpParams::default());
        let alphas = run(&mut s, 32, 120, 0);
        assert_eq!(*alphas.last().unwrap(), 0);
        assert!(alphas.windows(2).all(|w| w[1] <= w[0]));
    }

    /// dctcp_ssthresh: cwnd (1 - alpha / 2), floor 2; loss and RTO halve as Reno.
    #[test]
    fn ssthresh_cuts_by_half_alpha_and_losses_halve() {
        let mut s = sender(true, DctcpParams::default());
        let mut tp = s.tp.clone();
        tp.snd_cwnd = 100;
        s.cc.alpha = 1024;
        assert_eq!(s.cc.ssthresh(&mut tp), 50);
        s.cc.alpha = 256;
        assert_eq!(s.cc.ssthresh(&mut tp), 88, "100 - 100 * 256 / 2048 = 87.5");
        s.cc.alpha = 0;
        assert_eq!(s.cc.ssthresh(&mut tp), 100);
        tp.snd_cwnd = 2;
        s.cc.alpha = 1024;
        assert_eq!(s.cc.ssthresh(&mut tp), 2);
        // Entering Recovery after an ECE-sized ssthresh: Reno's halving wins.
        let mut s = sender(true, DctcpParams::default());
        s.send(40);
        s.tp.snd_cwnd = 40;
        s.cc.alpha = 0;
        s.ack(&Ack::to(0).sack(1..3).lose(0..1));
        assert_eq!(s.tp.ca_state, CaState::Recovery);
        assert_eq!(s.tp.snd_ssthresh, 20);
        // An RTO: CA_EVENT_LOSS halves too.
        let mut s = sender(true, DctcpParams::default());
        s.send(30);
        s.tp.snd_cwnd = 30;
        s.cc.alpha = 0;
        s.rto();
        assert_eq!(s.tp.snd_ssthresh, 15);
    }

    /// An ECE reduces once per window, to cwnd (1 - alpha / 2).
    #[test]
    fn an_ece_reduces_by_half_alpha_once_per_window() {
        let mut s = sender(true, DctcpParams::default());
        s.send(40);
        s.tp.snd_cwnd = 40;
        s.tp.snd_ssthresh = 40;
        s.cc.alpha = 512;
        // Freeze alpha: the window of the update ends beyond what is sent.
        s.cc.next_seq = 1_000;
        s.ack(&Ack::to(1).ece());
        assert_eq!(s.tp.ca_state, CaState::Cwr);
        assert_eq!(s.tp.snd_ssthresh, 30, "40 - 40 * 512 / 2048");
        s.ack(&Ack::to(2).ece());
        assert_eq!(s.tp.snd_ssthresh, 30, "once per window");
        assert_eq!(s.ecn_reductions, 1);
    }

    /// Without ECN negotiated DCTCP is Linux's dctcp-reno: Reno's halving, no alpha.
    #[test]
    fn without_ecn_it_is_reno() {
        let mut s = sender(false, DctcpParams::default());
        assert!(s.cc.is_reno());
        let alphas = run(&mut s, 16, 10, 1);
        assert!(alphas.is_empty(), "no alpha update");
        let mut tp = s.tp.clone();
        tp.snd_cwnd = 101;
        assert_eq!(s.cc.ssthresh(&mut tp), 50);
        let mut m = Vec::new();
        s.cc.sample_metrics(&tp, &mut m);
        assert!(m[0].1.is_nan());
        let mut c = Vec::new();
        s.cc.summary_counters(&tp, &mut c);
        assert_eq!(c[0], ("dctcp_reno_fallback", 1.0));
    }

    #[test]
    fn parameters_are_checked() {
        let e = crate::normalize_params("dctcp", &serde_json::json!({"shift_g": 11})).unwrap_err();
        assert!(e.to_string().contains("shift_g"), "{e}");
        let e = crate::normalize_params("dctcp", &serde_json::json!({"alpha_on_init": 1025}))
            .unwrap_err();
        assert!(e.to_string().contains("alpha_on_init"), "{e}");
        let v = crate::normalize_params("dctcp", &serde_json::Value::Null).unwrap();
        assert_eq!(v, serde_json::json!({"shift_g": 4, "alpha_on_init": 1024}));
        let mut s = sender(
            true,
            DctcpParams {
                alpha_on_init: 0,
                shift_g: 4,
            },
        );
        assert_eq!(s.cc.alpha, 0);
        let alphas = run(&mut s, 32, 60, 2);
        let last = *alphas.last().unwrap() as f64 / 1024.0;
        assert!((last - 0.5).abs() <= 16.0 / 1024.0, "{last}");
    }
}
