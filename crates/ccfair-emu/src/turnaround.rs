//! How fast the hosts react, as the forwarder sees it on the packets it carries: the
//! measurement behind the simulator's host latency model (docs/model.md, "Host latency").
//!
//! - Receiver turnaround: a data segment is delivered to the receiving host (model time of
//!   its arrival) and the ACK that acknowledges exactly up to its end comes back out of that
//!   host (the time the forwarder read it). Linux ACKs every second full segment at once
//!   (`__tcp_ack_snd_check`), so most pairs are the kernel's immediate reaction.
//! - Sender turnaround, for flows Linux does not pace (Reno, CUBIC without fq): an ACK is
//!   delivered to the sending host and the next data segment comes out of it. A paced flow
//!   sends from its pacing timer, so its pairs would measure the pacing gap instead.
//!
//! Both include what a host adds on this backend: the forwarder's delivery lateness, the
//! kernel's processing of the packet, and the time until the forwarder reads the reply.
//! Reactions slower than `MAX_REACTION_NS` are timers (the 40 ms delayed ACK, a pacing or
//! retransmission timer), not turnarounds, and are left out.

use crate::lateness::Histogram;

/// Replies later than this answer a timer, not the packet.
const MAX_REACTION_NS: u64 = 5_000_000;

#[derive(Clone, Copy, Default)]
struct FlowState {
    /// The last data segment delivered to the receiver and not yet answered: (sequence
    /// number after its payload, model time of its delivery).
    data_delivered: Option<(u32, u64)>,
    /// Model time of the last ACK delivered to the sender and not yet answered by data.
    ack_delivered: Option<u64>,
}

/// The hosts' turnaround times over a run, from the packets the forwarder carries.
pub struct Turnaround {
    /// Receiver turnarounds: data delivered to the ACK it triggers.
    pub receiver: Histogram,
    /// Sender turnarounds (unpaced flows): ACK delivered to the data it releases.
    pub sender: Histogram,
    flows: Vec<FlowState>,
    /// Per flow: the sender is not paced, so its data answers ACKs.
    unpaced: Vec<bool>,
}

impl Turnaround {
    /// Nothing recorded yet; `unpaced[i]` says flow `i`'s sender is not paced, so that its
    /// data answers ACKs and its sender turnarounds are measured.
    pub fn new(unpaced: Vec<bool>) -> Self {
        Turnaround {
            receiver: Histogram::default(),
            sender: Histogram::default(),
            flows: vec![FlowState::default(); unpaced.len()],
            unpaced,
        }
    }

    /// A packet of `flow` was delivered to its host at model time `t`: data to the
    /// receiver (`seq_mark` = sequence after its payload) or an ACK to the sender.
    pub fn delivered(&mut self, flow: usize, ack: bool, payload: bool, seq_mark: u32, t: u64) {
        let st = &mut self.flows[flow];
        if ack {
            st.ack_delivered = Some(t);
        } else if payload {
            st.data_delivered = Some((seq_mark, t));
        }
    }

    /// A packet of `flow` came out of a host at time `t`: an ACK from the receiver
    /// (`seq_mark` = its acknowledgment number) or data from the sender.
    pub fn ingress(
        &mut self,
        flow: usize,
        ack: bool,
        payload: bool,
        syn: bool,
        seq_mark: u32,
        t: u64,
    ) {
        if syn {
            return;
        }
        let st = &mut self.flows[flow];
        if ack {
            if let Some((end, td)) = st.data_delivered {
                if end == seq_mark {
                    st.data_delivered = None;
                    record(&mut self.receiver, t.saturating_sub(td));
                }
            }
        } else if payload && self.unpaced[flow] {
            if let Some(ta) = st.ack_delivered.take() {
                record(&mut self.sender, t.saturating_sub(ta));
            }
        }
    }
}

fn record(h: &mut Histogram, reaction_ns: u64) {
    if reaction_ns <= MAX_REACTION_NS {
        h.record(reaction_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_an_ack_with_the_segment_it_acknowledges() {
        let mut t = Turnaround::new(vec![true]);
        t.delivered(0, false, true, 1000, 10_000);
        t.delivered(0, false, true, 2448, 20_000);
        // An ACK of the first segment only (not the latest) is not a turnaround pair.
        t.ingress(0, true, false, false, 1000, 25_000);
        t.ingress(0, true, false, false, 2448, 37_000);
        assert_eq!(t.receiver.summary().count, 1);
        assert_eq!(t.receiver.summary().max_us, 17.0);
        // Data after an ACK delivered to the sender; a second data packet is not paired.
        t.delivered(0, true, false, 2448, 40_000);
        t.ingress(0, false, true, false, 3896, 52_000);
        t.ingress(0, false, true, false, 5344, 53_000);
        assert_eq!(t.sender.summary().count, 1);
        assert_eq!(t.sender.summary().max_us, 12.0);
    }

    #[test]
    fn timer_driven_replies_and_paced_senders_are_left_out() {
        let mut t = Turnaround::new(vec![false]);
        t.delivered(0, false, true, 1000, 0);
        t.ingress(0, true, false, false, 1000, 40_000_000); // delayed ACK timer
        t.delivered(0, true, false, 1000, 50_000_000);
        t.ingress(0, false, true, false, 2448, 50_010_000); // paced sender
        assert_eq!(t.receiver.summary().count, 0);
        assert_eq!(t.sender.summary().count, 0);
    }
}
