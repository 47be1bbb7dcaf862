//! The Linux-like TCP substrate: one sender and one receiver per flow.

pub mod ecn;
pub mod rcvbuf;
pub mod receiver;
pub mod rtt;
pub mod sender;
