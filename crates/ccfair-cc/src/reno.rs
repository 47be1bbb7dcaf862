//! Reno as Linux implements it (`tcp_reno_*` in net/ipv4/tcp_cong.c).

use crate::registry::{self, Algorithm, Family};
use crate::{CongestionControl, TcpSock};

crate::param_table! {
    /// Reno has no module parameters in Linux; the struct exists so that every algorithm has
    /// a parameter table (and unknown keys are rejected).
    #[derive(Clone, Debug)]
    pub struct RenoParams {}
}

/// Reno's entry in the registry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "reno",
    summary: "Reno as Linux implements it (tcp_reno_* in net/ipv4/tcp_cong.c): slow start, \
              one packet per RTT in congestion avoidance, half the window on a loss",
    family: Family::LossBased,
    linux_name: Some("reno"),
    params: <RenoParams as crate::params::ParamTable>::params,
    normalize: |v| registry::to_table(&registry::parse::<RenoParams>(v)?),
    build: |v, _seed| Ok(Box::new(Reno::new(&registry::parse::<RenoParams>(v)?))),
};

/// Reno (RFC 5681 with Linux's details): slow start, then one segment per RTT in congestion
/// avoidance (`tcp_reno_cong_avoid`), half the window on loss (`tcp_reno_ssthresh`). No state
/// of its own: everything it reads and writes is in [`TcpSock`].
#[derive(Debug, Default)]
pub struct Reno;

impl Reno {
    /// Reno; it has no parameters (the table exists so that unknown keys are rejected).
    pub fn new(_params: &RenoParams) -> Self {
        Reno
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    /// `tcp_reno_ssthresh`: half of cwnd (not of the flight size), at least 2.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        (tp.snd_cwnd >> 1).max(2)
    }

    /// `tcp_reno` has no `pkts_acked`.
    fn has_pkts_acked(&self) -> bool {
        false
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut TcpSock, _ack: u64, mut acked: u32) {
        if !tp.is_cwnd_limited() {
            return;
        }
        // In "safe" area, increase.
        if tp.in_slow_start() {
            acked = tp.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        // In dangerous area, increase slowly.
        let w = tp.snd_cwnd;
        tp.cong_avoid_ai(w, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(cwnd: u32, ssthresh: u32) -> TcpSock {
        let mut tp = TcpSock::new(1448, 10, 1000);
        tp.snd_cwnd = cwnd;
        tp.snd_ssthresh = ssthresh;
        tp.is_cwnd_limited = true;
        tp.max_packets_out = cwnd;
        tp
    }

    #[test]
    fn ssthresh_is_half_cwnd_floor_two() {
        let mut r = Reno;
        assert_eq!(r.ssthresh(&mut sock(101, 1000)), 50);
        assert_eq!(r.ssthresh(&mut sock(3, 1000)), 2);
    }

    #[test]
    fn slow_start_adds_acked_then_ca_one_per_window() {
        let mut r = Reno;
        let mut tp = sock(10, 15);
        r.cong_avoid(&mut tp, 0, 8); // 10 -> 15 (cap), leftover 3 into CA
        assert_eq!(tp.snd_cwnd, 15);
        assert_eq!(tp.snd_cwnd_cnt, 3);
        r.cong_avoid(&mut tp, 0, 12);
        assert_eq!(tp.snd_cwnd, 16);
        assert_eq!(tp.snd_cwnd_cnt, 0);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut r = Reno;
        let mut tp = sock(20, 10);
        tp.is_cwnd_limited = false;
        r.cong_avoid(&mut tp, 0, 10);
        assert_eq!(tp.snd_cwnd, 20);
    }
}
